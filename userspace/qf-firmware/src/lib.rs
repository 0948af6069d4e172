//! `qf firmware check`: reads a remoteproc firmware ELF and its `.resource_table` and validates
//! them the way Linux's remoteproc core will when the image is copied to `/lib/firmware` and
//! started (`rproc_elf_sanity_check`, `find_table`, `rproc_handle_resources` and its handlers,
//! `rproc_elf_load_segments`), then applies qfabric's own rules (an rpmsg vdev with the name
//! service, power-of-two vrings, addresses inside the image). Every finding is named, placed at
//! a file offset and marked with whose rule it is ([`Rule`]). The verdict is Linux's: an image is
//! refused exactly for [`Rule::Linux`] findings; the others are advice, refusing only with
//! [`Options::strict`]. No input makes the check panic.
//!
//! - [`elf`]: the ELF header, segments and the table's section (read with the `object` crate).
//! - [`table`]: the table header and entries (layout from `qf-resource-table`).
//! - [`channel`]: the heuristic that finds the announced rpmsg channel name.
//! - [`report`]: the printed report. [`cli`]: `qf firmware` arguments and `run`.
//! - [`fixture`]: small valid images with a full table, for tests, fuzzing and examples.

pub mod channel;
pub mod cli;
pub mod defect;
pub mod elf;
pub mod fixture;
pub mod report;
pub mod table;

use std::fmt;

pub use defect::{Defect, DefectKind, Rule, Warning};

/// The rpmsg channel the qfabric MCU executor announces.
pub const QFABRIC_CHANNEL: &str = "qfabric";

/// What to look for and what to let pass. [`Options::default`] is strict: every rule refuses,
/// which is what a caller asking "is this table right" wants (the emulator's table test); the
/// command line's default, and [`Options::linux`], give Linux's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Channel names to look for in read-only data (a missing one is a warning).
    pub channels: Vec<String>,
    /// Advice that stays advice under `strict` (rules Linux refuses for cannot be allowed).
    pub allow: Vec<DefectKind>,
    /// Refuse for advice too ([`Rule::LinuxRuntime`] and [`Rule::Qfabric`] findings), except
    /// the kinds in `allow`.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            channels: vec![QFABRIC_CHANNEL.to_string()],
            allow: Vec::new(),
            strict: true,
        }
    }
}

impl Options {
    /// Linux's verdict: refused only for [`Rule::Linux`] findings, the rest is advice.
    pub fn linux() -> Options {
        Options {
            strict: false,
            ..Options::default()
        }
    }
}

/// Everything the check read, for printing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `None` for a bare table ([`check_table`]) or when the ELF headers stopped the check.
    pub elf: Option<elf::ElfInfo>,
    /// `None` when no table could be read.
    pub table: Option<table::TableInfo>,
    pub channels: Vec<channel::ChannelHit>,
    /// Findings that do not refuse the image: [`Rule::LinuxRuntime`] and [`Rule::Qfabric`]
    /// ones without `strict`, and the allowed ones with it.
    pub advice: Vec<Defect>,
    pub warnings: Vec<Warning>,
}

/// A refused image: the defects (at least one) and what was read before and around them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub defects: Vec<Defect>,
    pub report: Box<Report>,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} defect(s)", self.defects.len())?;
        if let Some(first) = self.defects.first() {
            write!(f, ", first: {first}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Rejected {}

/// Checks a firmware ELF image.
pub fn check(image: &[u8], options: &Options) -> Result<Report, Rejected> {
    let mut defects = Vec::new();
    let mut report = Report {
        elf: None,
        table: None,
        channels: Vec::new(),
        advice: Vec::new(),
        warnings: Vec::new(),
    };
    if let Some(info) = elf::read(image, &mut defects) {
        if let Some(section) = &info.table {
            elf::check_table_loaded(&info, section, &mut defects);
            if info.table_sections > 1 {
                report.warnings.push(Warning {
                    at: section.header_at,
                    text: format!(
                        "{} sections are named .resource_table: Linux (find_table) uses the \
                         first, at file offset {:#x}",
                        info.table_sections, section.offset
                    ),
                });
            }
            // elf::read checked that the section lies in the file. Linux reads these bytes
            // whatever the section's sh_type.
            let bytes = usize::try_from(section.offset)
                .ok()
                .zip(usize::try_from(section.size).ok())
                .and_then(|(start, len)| image.get(start..start.checked_add(len)?))
                .unwrap_or_default();
            report.table = table::check(
                bytes,
                section.offset,
                Some(&info.segments),
                &mut defects,
                &mut report.warnings,
            );
        }
        report.channels = channel::find(image, &info.read_only, &options.channels);
        for name in &options.channels {
            if !report.channels.iter().any(|hit| &hit.name == name) {
                report.warnings.push(Warning {
                    at: 0,
                    text: format!(
                        "channel name \"{name}\" not found as a string in read-only data \
                         (heuristic: the firmware may build it at run time or announce another)"
                    ),
                });
            }
        }
        report.elf = Some(info);
    }
    verdict(defects, report, options)
}

/// Checks a bare resource table (no ELF around it): the table and entry rules only, offsets
/// counted from the table's first byte.
pub fn check_table(table: &[u8], options: &Options) -> Result<Report, Rejected> {
    let mut defects = Vec::new();
    let mut warnings = Vec::new();
    let table = table::check(table, 0, None, &mut defects, &mut warnings);
    let report = Report {
        elf: None,
        table,
        channels: Vec::new(),
        advice: Vec::new(),
        warnings,
    };
    verdict(defects, report, options)
}

fn verdict(
    defects: Vec<Defect>,
    mut report: Report,
    options: &Options,
) -> Result<Report, Rejected> {
    let (defects, advice): (Vec<Defect>, Vec<Defect>) = defects.into_iter().partition(|defect| {
        defect.kind.rule().refuses() || (options.strict && !options.allow.contains(&defect.kind))
    });
    report.advice = advice;
    if defects.is_empty() {
        Ok(report)
    } else {
        Err(Rejected {
            defects,
            report: Box::new(report),
        })
    }
}
