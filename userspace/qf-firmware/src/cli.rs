//! The `qf firmware` subcommands. The `qf` binary (qf-cli) only parses arguments into
//! [`FirmwareArgs`] and calls [`run`].

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};

use crate::{DefectKind, Options, Rule, QFABRIC_CHANNEL};

/// `qf firmware ...`
#[derive(Debug, clap::Args)]
pub struct FirmwareArgs {
    #[command(subcommand)]
    pub command: FirmwareCommand,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum FirmwareCommand {
    /// Check a remoteproc firmware ELF and its .resource_table as Linux will load it, print
    /// the table, and exit non-zero with every defect (file offset, rule) if it is refused.
    Check {
        /// The firmware image (an ELF), or with --table a bare resource table.
        file: PathBuf,
        /// rpmsg channel name to look for in read-only data (repeatable).
        #[arg(long = "channel", default_value = QFABRIC_CHANNEL)]
        channels: Vec<String>,
        /// Report this qfabric rule as a warning instead of a defect (repeatable), e.g.
        /// carveout-outside-image. Linux's rules cannot be allowed.
        #[arg(long = "allow")]
        allow: Vec<String>,
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
            table,
        } => {
            let options = Options {
                channels: channels.clone(),
                allow: allowed(allow)?,
            };
            let bytes =
                std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
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

/// Parses `--allow` names: qfabric rules only.
fn allowed(names: &[String]) -> Result<Vec<DefectKind>> {
    names
        .iter()
        .map(|name| {
            let Some(kind) = DefectKind::from_name(name) else {
                let known: Vec<&str> = DefectKind::ALL
                    .iter()
                    .filter(|kind| kind.rule() == Rule::Qfabric)
                    .map(|kind| kind.name())
                    .collect();
                bail!(
                    "--allow {name}: no such defect; qfabric's rules are {}",
                    known.join(", ")
                );
            };
            if kind.rule() == Rule::Linux {
                bail!("--allow {name}: a rule of Linux's, which Linux enforces whatever this check says");
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
        assert!(linux.contains("a rule of Linux's"), "{linux}");
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
}
