//! The `qf abi` subcommands: `decode`, `encode`, `check`, `generate`. The `qf` binary (qf-cli)
//! only parses arguments into [`AbiArgs`] and calls [`run`].

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use qf_abi::{
    decode_frame, decode_payload_seed, encode_frame, encode_frame_raw, Header, MessageKind, Status,
};
use serde::Serialize;
use serde_json::Value;

use crate::dynamic::{DynSeed, DynValue};
use crate::{load, load_str, Schema, TypeExpr};

/// The task declarations of `crates/qf-tasks` (the tasks the executors serve), used when no
/// `--decl` file is given.
pub const QF_TASKS_DECLARATIONS: &str = include_str!("../../../crates/qf-tasks/qtasks.toml");

/// `qf abi ...`
#[derive(Debug, clap::Args)]
pub struct AbiArgs {
    #[command(subcommand)]
    pub command: AbiCommand,
}

/// Request or response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KindArg {
    Request,
    Response,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AbiCommand {
    /// Decode a frame given as hex (or read from stdin or a file); print one JSON object
    /// (header fields and the payload).
    Decode {
        /// The frame as hex (whitespace and a leading 0x are ignored); `-` reads it from stdin.
        #[arg(required_unless_present = "file", conflicts_with = "file")]
        hex: Option<String>,
        /// Read the frame from this file (hex text, or raw bytes with --raw).
        #[arg(long, value_name = "F")]
        file: Option<PathBuf>,
        /// The frame read from stdin (`-`) or --file is raw bytes, not hex.
        #[arg(long)]
        raw: bool,
        /// Declaration file for payload types (default: built-ins + crates/qf-tasks/qtasks.toml).
        #[arg(long)]
        decl: Option<PathBuf>,
    },
    /// Encode a frame for a declared task from a JSON payload; print it as lowercase hex.
    Encode {
        /// Task name, e.g. `add`.
        #[arg(long)]
        task: String,
        #[arg(long, value_enum)]
        kind: KindArg,
        #[arg(long, default_value_t = 0)]
        invocation: u64,
        #[arg(long, default_value_t = 0)]
        epoch: u32,
        #[arg(long, default_value_t = 0)]
        contract: u32,
        #[arg(long, default_value_t = 0)]
        deadline_us: u32,
        /// Response status name (`ok`, `malformed`, ...); requests always carry `ok`.
        #[arg(long)]
        status: Option<String>,
        /// Declaration file (default: built-ins + crates/qf-tasks/qtasks.toml).
        #[arg(long)]
        decl: Option<PathBuf>,
        /// The payload as JSON, e.g. '{"a": 1, "b": 2}'; `null` for an error response's empty payload.
        json: String,
    },
    /// Validate a declaration file (TOML, or the reference's JSON).
    Check { file: PathBuf },
    /// Generate the Rust types and the C header from a declaration file.
    Generate {
        file: PathBuf,
        /// Directory to write `<name>.rs` and `<name>.h` into (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
}

/// Runs a subcommand, printing to stdout.
pub fn run(args: &AbiArgs) -> Result<()> {
    let stdout = std::io::stdout();
    execute(args, &mut stdout.lock())
}

/// Runs a subcommand, printing to `out`.
pub fn execute(args: &AbiArgs, out: &mut dyn Write) -> Result<()> {
    match &args.command {
        AbiCommand::Decode {
            hex,
            file,
            raw,
            decl,
        } => {
            let schema = schema_for(decl.as_deref())?;
            let mut stdin = qf_input::Deadline::new(std::io::stdin(), MAX_STDIN_WAIT);
            let frame = frame_input(hex.as_deref(), file.as_deref(), *raw, &mut stdin)?;
            let decoded = decode(&schema, &frame)?;
            writeln!(out, "{}", serde_json::to_string(&decoded)?)?;
        }
        AbiCommand::Encode {
            task,
            kind,
            invocation,
            epoch,
            contract,
            deadline_us,
            status,
            decl,
            json,
        } => {
            let schema = schema_for(decl.as_deref())?;
            let header = EncodeHeader {
                kind: *kind,
                invocation_id: *invocation,
                epoch: *epoch,
                contract_id: *contract,
                deadline_us: *deadline_us,
                status: status.as_deref(),
            };
            let frame = encode(&schema, task, &header, json)?;
            writeln!(out, "{}", to_hex(&frame))?;
        }
        AbiCommand::Check { file } => {
            let schema =
                load(file).map_err(|errors| anyhow!("{}", errors.to_string().trim_end()))?;
            writeln!(
                out,
                "{}: ok, {} tasks, {} types",
                file.display(),
                schema.tasks.len(),
                schema.types.len()
            )?;
            for task in &schema.tasks {
                writeln!(
                    out,
                    "  task {} id {} {}: {} ({} bytes) -> {} ({} bytes)",
                    task.name,
                    task.id,
                    task.effect,
                    task.request,
                    task.request_size,
                    task.response,
                    task.response_size
                )?;
            }
        }
        AbiCommand::Generate {
            file,
            out: directory,
        } => {
            for written in generate_files(file, directory)? {
                writeln!(out, "wrote {}", written.display())?;
            }
        }
    }
    Ok(())
}

/// Longest `qf abi decode -` waits for stdin to end: 60 s, time to paste a frame; a pipe
/// whose writer neither writes nor closes is refused then.
pub const MAX_STDIN_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Most bytes `qf abi decode` reads from stdin or a file: far more than any frame (an oversized
/// one is still read whole, so the decoder reports its real length), bounded all the same.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// The frame `decode` was given: the `hex` argument, or (`-`) stdin, or `file`, as hex text or
/// (`raw`) bytes; stdin and files are read through [`MAX_INPUT_BYTES`].
pub fn frame_input(
    hex: Option<&str>,
    file: Option<&Path>,
    raw: bool,
    stdin: &mut dyn Read,
) -> Result<Vec<u8>> {
    let (bytes, source) = match (hex, file) {
        (Some("-"), None) => (read_bounded(stdin, "stdin")?, "stdin".to_string()),
        (None, Some(path)) => {
            let name = path.display().to_string();
            let bytes = qf_input::read_regular(path, MAX_INPUT_BYTES)
                .with_context(|| format!("cannot read {name}"))?;
            (bytes, name)
        }
        (Some(text), None) if !raw => return parse_hex(text),
        (Some(_), None) => bail!("--raw applies to a frame read from stdin (-) or --file"),
        _ => bail!("give the frame as hex, `-` for stdin, or --file F"),
    };
    if raw {
        return Ok(bytes);
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{source}: not hex text (byte {} is not ASCII); pass --raw for a binary frame",
            e.utf8_error().valid_up_to()
        )
    })?;
    parse_hex(&text).with_context(|| format!("{source} (pass --raw for a binary frame)"))
}

fn read_bounded(reader: &mut dyn Read, name: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {name}"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        bail!(
            "cannot read {name}: more than {} MiB, far more than a frame ({} bytes at most)",
            MAX_INPUT_BYTES >> 20,
            qf_abi::MAX_FRAME_LEN
        );
    }
    Ok(bytes)
}

fn schema_for(decl: Option<&Path>) -> Result<Schema> {
    match decl {
        Some(path) => load(path).map_err(|errors| anyhow!("{}", errors.to_string().trim_end())),
        None => default_schema(),
    }
}

/// Built-ins plus the declarations of `crates/qf-tasks`.
pub fn default_schema() -> Result<Schema> {
    load_str(QF_TASKS_DECLARATIONS, "crates/qf-tasks/qtasks.toml", false)
        .map_err(|errors| anyhow!("{}", errors.to_string().trim_end()))
}

/// Validates `file` and writes `<stem>.rs` and `<stem>.h` into `directory`.
pub fn generate_files(file: &Path, directory: &Path) -> Result<Vec<PathBuf>> {
    let schema = load(file).map_err(|errors| anyhow!("{}", errors.to_string().trim_end()))?;
    let stem = file
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or_else(|| {
            anyhow!(
                "{}: cannot derive an output name from this path",
                file.display()
            )
        })?;
    std::fs::create_dir_all(directory)
        .with_context(|| format!("creating {}", directory.display()))?;
    let origin = file.display().to_string();
    let guard = crate::c::upper_identifier(&format!("{stem}_H"));
    let rust_path = directory.join(format!("{stem}.rs"));
    let c_path = directory.join(format!("{stem}.h"));
    std::fs::write(&rust_path, crate::rust::generate(&schema, &origin))
        .with_context(|| format!("writing {}", rust_path.display()))?;
    std::fs::write(&c_path, crate::c::generate(&schema, &origin, &guard))
        .with_context(|| format!("writing {}", c_path.display()))?;
    Ok(vec![rust_path, c_path])
}

/// One decoded frame as printed by `qf abi decode`.
#[derive(Debug, Serialize)]
pub struct DecodedFrame {
    pub version: u8,
    pub kind: &'static str,
    pub effect: &'static str,
    pub status: &'static str,
    pub task_id: u32,
    pub invocation_id: u64,
    pub epoch: u32,
    pub contract_id: u32,
    pub deadline_us: u32,
    pub flags: u16,
    pub payload_len: usize,
    /// The declared task name, when the task id is declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The decoded payload, for a declared task whose frame carries its type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// The raw payload otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_hex: Option<String>,
}

/// Decodes a frame and, for a declared task, its payload.
pub fn decode(schema: &Schema, bytes: &[u8]) -> Result<DecodedFrame> {
    let frame = decode_frame(bytes).map_err(|error| anyhow!("bad frame: {error}"))?;
    let header = frame.header;
    let task = schema.task_by_id(header.task_id);
    let payload_type = task.map(|task| match header.kind {
        MessageKind::Request => &task.request,
        MessageKind::Response => &task.response,
    });
    // Rejections (any status but OK) carry no payload.
    let typed = payload_type.filter(|_| header.status == Status::Ok || !frame.payload.is_empty());
    let payload = match typed {
        Some(type_name) => {
            let ty = TypeExpr::Named(type_name.clone());
            let value = decode_payload_seed(DynSeed { schema, ty: &ty }, frame.payload).map_err(
                |error| {
                    let path = schema.path_at(&ty, error.offset);
                    anyhow!(
                        "bad payload: {} at offset {} (field `{type_name}{}{path}`): {}",
                        error.status,
                        error.offset + qf_abi::HEADER_LEN,
                        if path.is_empty() || path.starts_with('[') {
                            ""
                        } else {
                            "."
                        },
                        error.problem
                    )
                },
            )?;
            Some(value.to_json())
        }
        None => None,
    };
    // A resident-chain control frame: its payload is qf_abi::chain's, not a declaration's.
    let control = crate::chain::decode_payload(&header, frame.payload).transpose()?;
    let (task, payload) = match control {
        Some((op, value)) => (Some(op.to_string()), value),
        None => (task.map(|task| task.name.clone()), payload),
    };
    Ok(DecodedFrame {
        version: qf_abi::PROTOCOL_VERSION,
        kind: header.kind.name(),
        effect: header.effect.name(),
        status: header.status.name(),
        task_id: header.task_id,
        invocation_id: header.invocation_id,
        epoch: header.epoch,
        contract_id: header.contract_id,
        deadline_us: header.deadline_us,
        flags: 0,
        payload_len: frame.payload.len(),
        task,
        payload_hex: payload.is_none().then(|| to_hex(frame.payload)),
        payload,
    })
}

/// Header fields for `encode`.
#[derive(Debug, Clone, Copy)]
pub struct EncodeHeader<'a> {
    pub kind: KindArg,
    pub invocation_id: u64,
    pub epoch: u32,
    pub contract_id: u32,
    pub deadline_us: u32,
    pub status: Option<&'a str>,
}

/// Encodes a frame for the declared task `task_name` from JSON payload text.
pub fn encode(
    schema: &Schema,
    task_name: &str,
    fields: &EncodeHeader<'_>,
    json: &str,
) -> Result<Vec<u8>> {
    let task = schema.task_by_name(task_name).ok_or_else(|| {
        let known: Vec<&str> = schema.tasks.iter().map(|t| t.name.as_str()).collect();
        anyhow!(
            "--task {task_name}: no such task (declared: {})",
            known.join(", ")
        )
    })?;
    let status = match fields.status {
        None => Status::Ok,
        Some(name) => Status::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Status::ALL.iter().map(|s| s.name()).collect();
            anyhow!(
                "--status {name}: no such status (known: {})",
                known.join(", ")
            )
        })?,
    };
    let (kind, type_name) = match fields.kind {
        KindArg::Request => (MessageKind::Request, &task.request),
        KindArg::Response => (MessageKind::Response, &task.response),
    };
    if kind == MessageKind::Request && status != Status::Ok {
        bail!("--status {}: a request always carries status ok", status);
    }
    let header = Header {
        kind,
        effect: task.effect,
        status,
        task_id: task.id,
        invocation_id: fields.invocation_id,
        epoch: fields.epoch,
        contract_id: fields.contract_id,
        deadline_us: fields.deadline_us,
    };
    let json: Value =
        serde_json::from_str(json).with_context(|| format!("payload JSON `{json}`"))?;
    let mut buffer = vec![0u8; qf_abi::MAX_FRAME_LEN];
    let len = if json.is_null() && status != Status::Ok {
        encode_frame_raw(&header, &[], &mut buffer)
    } else {
        let ty = TypeExpr::Named(type_name.clone());
        let value = DynValue::from_json(schema, &ty, &json, type_name)
            .map_err(|error| anyhow!("payload for task `{}`: {error}", task.name))?;
        encode_frame(&header, &value, &mut buffer)
    }
    .map_err(|error| anyhow!("cannot encode: {error}"))?;
    buffer.truncate(len);
    Ok(buffer)
}

/// Lowercase hex.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses hex, ignoring whitespace and a leading `0x`; errors name the offending position.
pub fn parse_hex(text: &str) -> Result<Vec<u8>> {
    let digits: Vec<(usize, char)> = text
        .trim()
        .trim_start_matches("0x")
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .collect();
    if digits.len() % 2 != 0 {
        bail!(
            "hex: odd number of digits ({}); a frame is whole bytes",
            digits.len()
        );
    }
    digits
        .chunks(2)
        .map(|pair| {
            let (position, high) = pair[0];
            let (_, low) = pair[1];
            let value = |c: char| {
                c.to_digit(16).ok_or_else(|| {
                    anyhow!("hex: `{c}` near character {position} is not a hex digit")
                })
            };
            Ok((value(high)? * 16 + value(low)?) as u8)
        })
        .collect()
}
