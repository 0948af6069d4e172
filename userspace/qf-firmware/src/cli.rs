//! The `qf firmware` subcommands. The `qf` binary (qf-cli) only parses arguments into
//! [`FirmwareArgs`] and calls [`run`].

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::{DefectKind, Options, QFABRIC_CHANNEL};

/// `qf firmware ...`
#[derive(Debug, clap::Args)]
pub struct FirmwareArgs {
    #[command(subcommand)]
    pub command: FirmwareCommand,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum FirmwareCommand {
    /// Check a remoteproc firmware ELF and its .resource_table as Linux 6.12 will load it,
    /// print the table, and exit 1 with every defect (file offset, rule) if Linux refuses it
    /// (advice is printed and refuses only with --strict).
    Check {
        /// The firmware image (an ELF), or with --table a bare resource table.
        file: PathBuf,
        /// rpmsg channel name to look for in read-only data (repeatable).
        #[arg(long = "channel", default_value = QFABRIC_CHANNEL)]
        channels: Vec<String>,
        /// With --strict, keep this piece of advice as advice (repeatable), e.g.
        /// carveout-outside-image. Rules Linux refuses for cannot be allowed.
        #[arg(long = "allow")]
        allow: Vec<String>,
        /// Refuse for advice too: qfabric's rules and what fails after Linux starts the image.
        #[arg(long)]
        strict: bool,
        /// FILE is a bare resource table, not an ELF: only the table and entry rules apply.
        #[arg(long)]
        table: bool,
    },
}

/// Runs a `qf firmware` subcommand, printing to stdout.
pub fn run(args: &FirmwareArgs) -> Result<()> {
    match &args.command {
        FirmwareCommand::Check {
            file,
            channels,
            allow,
            strict,
            table,
        } => {
            let options = Options {
                channels: channels.clone(),
                allow: allowed(allow)?,
                strict: *strict,
            };
            let bytes = read_image(file)?;
            let result = if *table {
                crate::check_table(&bytes, &options)
            } else {
                crate::check(&bytes, &options)
            };
            let text = crate::report::render(&file.display().to_string(), &result);
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error of the check.
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(error).context("writing the report");
                }
                _ => {}
            }
            match result {
                Ok(_) => Ok(()),
                Err(rejected) => Err(anyhow!(
                    "{}: refused with {} defect(s)",
                    file.display(),
                    rejected.defects.len()
                )),
            }
        }
    }
}

/// The largest file `qf firmware check` reads: 64 MiB. An MCU image is far smaller (the
/// Cortex-M4 of an STM32MP157 has under 1 MiB of memory to load into, and even an image with
/// full debug sections is a few MiB), so a bigger file is not a firmware image; the bound keeps
/// a device or a wrong path from being read into memory.
pub const MAX_IMAGE_BYTES: u64 = 64 << 20;

/// Reads a regular file of at most [`MAX_IMAGE_BYTES`]. A FIFO, a device or any other special
/// file is refused without reading from it (it can stream forever), and opening does not wait
/// for a FIFO's writer (`O_NONBLOCK`; the type is checked on the opened file). A file that grows
/// past the limit while it is read is refused as well.
pub fn read_image(path: &Path) -> Result<Vec<u8>> {
    let file = qf_input::open(path).with_context(|| format!("opening {}", path.display()))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("reading the type of {}", path.display()))?;
    if !metadata.is_file() {
        let what = qf_input::special_kind(&metadata.file_type()).unwrap_or("not a regular file");
        bail!(
            "{}: {what}, not a regular file: refused without reading it (a firmware image is a \
             file of at most {MAX_IMAGE_BYTES} bytes)",
            path.display()
        );
    }
    if metadata.len() > MAX_IMAGE_BYTES {
        bail!(
            "{}: {} bytes, over the {MAX_IMAGE_BYTES}-byte (64 MiB) limit for a firmware image",
            path.display(),
            metadata.len()
        );
    }
    let Some(bytes) = qf_input::read_at_most(file, MAX_IMAGE_BYTES)
        .with_context(|| format!("reading {}", path.display()))?
    else {
        bail!(
            "{}: grew past the {MAX_IMAGE_BYTES}-byte (64 MiB) limit for a firmware image while \
             it was read",
            path.display()
        );
    };
    Ok(bytes)
}

/// Parses `--allow` names: advice only.
fn allowed(names: &[String]) -> Result<Vec<DefectKind>> {
    names
        .iter()
        .map(|name| {
            let Some(kind) = DefectKind::from_name(name) else {
                let known: Vec<&str> = DefectKind::ALL
                    .iter()
                    .filter(|kind| !kind.rule().refuses())
                    .map(|kind| kind.name())
                    .collect();
                bail!(
                    "--allow {name}: no such defect; the advice that can be allowed is {}",
                    known.join(", ")
                );
            };
            if kind.rule().refuses() {
                bail!(
                    "--allow {name}: a rule Linux refuses the image for, whatever this check says"
                );
            }
            Ok(kind)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{image, sample_table, Layout};

    fn check_args(file: PathBuf, allow: &[&str]) -> FirmwareArgs {
        FirmwareArgs {
            command: FirmwareCommand::Check {
                file,
                channels: vec![QFABRIC_CHANNEL.to_string()],
                allow: allow.iter().map(|name| name.to_string()).collect(),
                strict: false,
                table: false,
            },
        }
    }

    #[test]
    fn only_qfabric_rules_can_be_allowed_and_unknown_names_list_them() {
        assert_eq!(
            allowed(&["carveout-outside-image".to_string()]).unwrap(),
            [DefectKind::CarveoutOutsideImage]
        );
        let linux = allowed(&["bad-version".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            linux.contains("a rule Linux refuses the image for"),
            "{linux}"
        );
        assert_eq!(
            allowed(&["vring-zero".to_string()]).unwrap(),
            [DefectKind::VringZero]
        );
        let unknown = allowed(&["no-such".to_string()]).unwrap_err().to_string();
        assert!(unknown.contains("no such defect"), "{unknown}");
        assert!(unknown.contains("missing-ns-feature"), "{unknown}");
        assert!(!unknown.contains("bad-version"), "{unknown}");
    }

    #[test]
    fn run_accepts_a_good_image_and_names_the_file_it_refuses_or_cannot_read() {
        let dir = std::env::temp_dir().join(format!("qf-firmware-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.elf");
        let built = image(&sample_table(), &Layout::default()).unwrap();
        std::fs::write(&good, &built.bytes).unwrap();
        run(&check_args(good, &[])).unwrap();

        let bad = dir.join("bad.elf");
        let mut bytes = built.bytes.clone();
        bytes[built.table_at as usize] = 2; // ver 2
        std::fs::write(&bad, &bytes).unwrap();
        let refused = run(&check_args(bad.clone(), &[])).unwrap_err().to_string();
        assert_eq!(
            refused,
            format!("{}: refused with 1 defect(s)", bad.display())
        );

        let missing = dir.join("missing.elf");
        let error = format!("{:#}", run(&check_args(missing.clone(), &[])).unwrap_err());
        assert!(error.contains(&missing.display().to_string()), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn special_files_are_refused_without_reading_or_waiting_for_a_writer() {
        // a character device that never ends
        let error = format!("{:#}", read_image(Path::new("/dev/zero")).unwrap_err());
        assert!(error.contains("/dev/zero: a character device"), "{error}");
        assert!(error.contains(&MAX_IMAGE_BYTES.to_string()), "{error}");
        // a FIFO nobody writes to: open() must not wait for a writer
        let dir = std::env::temp_dir().join(format!("qf-firmware-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = format!("{:#}", read_image(&fifo).unwrap_err());
        assert!(error.contains("a FIFO, not a regular file"), "{error}");
        let error = format!("{:#}", read_image(&dir).unwrap_err());
        assert!(error.contains("a directory"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_over_the_limit_is_refused_by_its_size_before_it_is_read() {
        let dir = std::env::temp_dir().join(format!("qf-firmware-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.elf");
        // sparse: no disk space, and reading it would take 64 MiB of memory
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let error = format!("{:#}", read_image(&big).unwrap_err());
        assert!(
            error.contains("67108865 bytes, over the 67108864-byte (64 MiB) limit"),
            "{error}"
        );
        // a small one is read whole
        file.set_len(100).unwrap();
        assert_eq!(read_image(&big).unwrap(), vec![0; 100]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn run_exits_0_for_advice_and_1_for_it_under_strict() {
        let dir = std::env::temp_dir().join(format!("qf-firmware-strict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut table = sample_table();
        // a carve-out at a fixed address outside the image's memory
        table[crate::fixture::CARVEOUT_FIXED + 4..crate::fixture::CARVEOUT_FIXED + 8]
            .copy_from_slice(&0x3000_0000u32.to_le_bytes());
        let path = dir.join("fixed.elf");
        std::fs::write(&path, image(&table, &Layout::default()).unwrap().bytes).unwrap();
        run(&check_args(path.clone(), &[])).unwrap();
        let mut strict = check_args(path.clone(), &[]);
        let FirmwareCommand::Check { strict: flag, .. } = &mut strict.command;
        *flag = true;
        let refused = run(&strict).unwrap_err().to_string();
        assert!(refused.contains("refused with 1 defect(s)"), "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
