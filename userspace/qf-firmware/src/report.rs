//! The printed report: the image, its load segments, the table entry by entry, the channel
//! names found, then warnings, defects (each with its rule: `[linux]` or `[qfabric]`) and the
//! verdict.

use std::fmt::Write;

use qf_resource_table::{
    name_bytes, vring_size, FW_RSC_ADDR_ANY, VIRTIO_ID_RPMSG, VIRTIO_RPMSG_F_NS,
};

use crate::elf::machine_name;
use crate::table::Resource;
use crate::{Defect, Rejected, Report};

/// Linux's page size on the ARM boards qfabric targets: vrings are allocated in whole pages
/// (`PAGE_ALIGN(vring_size(num, align))` in `rproc_alloc_vring`).
pub const PAGE_SIZE: u64 = 4096;

/// The whole report for `name` (a path, printed as given).
pub fn render(name: &str, result: &Result<Report, Rejected>) -> String {
    let (report, defects): (&Report, &[Defect]) = match result {
        Ok(report) => (report, &[]),
        Err(rejected) => (&*rejected.report, &rejected.defects),
    };
    let mut out = String::new();
    body(&mut out, name, report);
    if !report.warnings.is_empty() {
        let _ = writeln!(out, "warnings:");
        for warning in &report.warnings {
            let _ = writeln!(out, "  {warning}");
        }
    }
    if !report.advice.is_empty() {
        let _ = writeln!(
            out,
            "advice (Linux loads and starts the image; [linux-runtime]: a later step fails; \
             [qfabric]: qfabric's advice; refused only with --strict):"
        );
        for advice in &report.advice {
            let _ = writeln!(out, "  {advice}");
        }
    }
    if !defects.is_empty() {
        let _ = writeln!(
            out,
            "defects ([linux]: Linux 6.12 does not load and start the image; others: advice \
             refused under --strict):"
        );
        for defect in defects {
            let _ = writeln!(out, "  {defect}");
        }
    }
    let _ = match result {
        Ok(_) => writeln!(
            out,
            "verdict: accepted: Linux 6.12's remoteproc core loads and starts it ({} advice, {} \
             warning(s))",
            report.advice.len(),
            report.warnings.len()
        ),
        Err(rejected) => {
            let linux = rejected
                .defects
                .iter()
                .filter(|defect| defect.kind.rule().refuses())
                .count();
            writeln!(
                out,
                "verdict: refused, {} defect(s): {linux} [linux] (Linux 6.12 does not load and \
                 start it), {} advice (--strict)",
                rejected.defects.len(),
                rejected.defects.len() - linux
            )
        }
    };
    out
}

fn address(da: u32) -> String {
    if da == FW_RSC_ADDR_ANY {
        "any".to_string()
    } else {
        format!("{da:#010x}")
    }
}

fn body(out: &mut String, name: &str, report: &Report) {
    if let Some(elf) = &report.elf {
        let _ = writeln!(
            out,
            "{name}: ELF{} little-endian, {} (e_machine {}), entry {:#x}, {} program headers, \
             {} sections",
            if elf.is_64 { 64 } else { 32 },
            machine_name(elf.machine),
            elf.machine,
            elf.entry,
            elf.program_headers,
            elf.sections
        );
        let _ = writeln!(out, "load segments (Linux loads each at p_paddr):");
        for segment in &elf.segments {
            let _ = writeln!(
                out,
                "  [{}] file {:#x}+{:#x} -> da {:#010x}..{:#010x} (memsz {:#x}){}{}{}",
                segment.index,
                segment.offset,
                segment.filesz,
                segment.paddr,
                segment.paddr.saturating_add(segment.memsz),
                segment.memsz,
                if segment.flags & object::elf::PF_R != 0 {
                    " R"
                } else {
                    ""
                },
                if segment.flags & object::elf::PF_W != 0 {
                    " W"
                } else {
                    ""
                },
                if segment.flags & object::elf::PF_X != 0 {
                    " X"
                } else {
                    ""
                },
            );
        }
        if let Some(table) = &elf.table {
            let _ = writeln!(
                out,
                ".resource_table: file {:#x}, {} bytes, sh_addr {:#x}",
                table.offset, table.size, table.addr
            );
        }
    } else if report.table.is_some() {
        let _ = writeln!(out, "{name}: a bare resource table (no ELF)");
    } else {
        let _ = writeln!(out, "{name}:");
    }
    if let Some(table) = &report.table {
        let _ = writeln!(
            out,
            "resource table v{}, {} entries (offsets from the table start; file offsets in brackets)",
            table.header.ver, table.header.num
        );
        for entry in &table.entries {
            let _ = write!(
                out,
                "  [{}] offset {} [{:#x}] ",
                entry.index, entry.offset, entry.at
            );
            resource(out, &entry.resource, entry.rsc_type);
        }
    }
    for hit in &report.channels {
        let _ = writeln!(
            out,
            "rpmsg channel \"{}\": found in {} at file {:#x} (heuristic: a whole NUL-terminated \
             string in read-only data)",
            hit.name, hit.section, hit.at
        );
    }
}

fn resource(out: &mut String, resource: &Resource, rsc_type: u32) {
    let name = |bytes: &[u8; 32]| String::from_utf8_lossy(name_bytes(bytes)).into_owned();
    let _ = match resource {
        Resource::Carveout(region) | Resource::Devmem(region) => writeln!(
            out,
            "{} \"{}\": da {}, pa {}, len {:#x}, flags {:#x}",
            if matches!(resource, Resource::Carveout(_)) {
                "carveout"
            } else {
                "devmem"
            },
            name(&region.name),
            address(region.da),
            address(region.pa),
            region.len,
            region.flags
        ),
        Resource::Trace(trace) => writeln!(
            out,
            "trace \"{}\": da {}, len {:#x}",
            name(&trace.name),
            address(trace.da),
            trace.len
        ),
        Resource::Vdev {
            vdev,
            vrings,
            complete,
        } => {
            let id = if vdev.id == VIRTIO_ID_RPMSG {
                " (rpmsg)"
            } else {
                ""
            };
            let ns = if vdev.dfeatures & (1 << VIRTIO_RPMSG_F_NS) != 0 {
                " = VIRTIO_RPMSG_F_NS"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "vdev: id {}{id}, dfeatures {:#x}{ns}, config_len {}, {} vrings{}",
                vdev.id,
                vdev.dfeatures,
                vdev.config_len,
                vdev.num_of_vrings,
                if *complete { "" } else { " (truncated)" }
            );
            for (k, vring) in vrings.iter().enumerate() {
                let bytes = vring_size(u64::from(vring.num), u64::from(vring.align));
                let _ = writeln!(
                    out,
                    "        vring{k}: da {}, align {}, num {}, notifyid {} -> vring_size {} bytes, \
                     {} KiB in {}-byte pages",
                    address(vring.da),
                    vring.align,
                    vring.num,
                    vring.notifyid,
                    bytes,
                    bytes.div_ceil(PAGE_SIZE) * PAGE_SIZE / 1024,
                    PAGE_SIZE
                );
            }
            Ok(())
        }
        Resource::Vendor => writeln!(out, "vendor type {rsc_type}"),
        Resource::Unknown => writeln!(out, "unknown type {rsc_type}"),
        Resource::Truncated => writeln!(out, "type {rsc_type}, truncated"),
    };
}
