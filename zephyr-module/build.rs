//! Turns the Kconfig values the module's CMake passes in the environment into Rust constants
//! (`$OUT_DIR/config.rs`): the pool size, the trace ring and switch log sizes, the CBS and
//! admission switches and the executor's chain table size; and
//! `cfg(qf_thread_field)` when the patched kernel keeps a control-block pointer in every thread.
//!
//! It also runs bindgen over the C headers of the FFI boundary (`src/bindings.h`: qfabric's API,
//! the executor's and the C ports' headers) into `$OUT_DIR/bindings.rs`, the `sys` module: the C
//! headers are the one source of every foreign declaration and `repr(C)` type the Rust side uses.

use std::{
    env, fs,
    io::ErrorKind,
    path::{Path, PathBuf},
    process::Command,
};

fn number(name: &str, default: u32) -> u32 {
    println!("cargo:rerun-if-env-changed={name}");
    match env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} is not a number")),
        Err(_) => default,
    }
}

fn main() {
    let threads = number("QFABRIC_MAX_THREADS", 8);
    let events = number("QFABRIC_TRACE_EVENTS", 0);
    let switches = number("QFABRIC_TRACE_SWITCHES", 0);
    let admission = number("QFABRIC_ADMISSION", 0) != 0;
    let cbs = number("QFABRIC_CBS", 1) != 0;
    let chains = number("QFABRIC_EXECUTOR_MAX_CHAINS", 0);
    println!("cargo::rustc-check-cfg=cfg(qf_thread_field)");
    if number("QFABRIC_THREAD_FIELD", 0) != 0 {
        println!("cargo::rustc-cfg=qf_thread_field");
    }
    assert!(
        (1..=255).contains(&threads),
        "QFABRIC_MAX_THREADS={threads} is outside 1..=255"
    );
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("config.rs");
    fs::write(
        out,
        format!(
            "/// CONFIG_QFABRIC_MAX_THREADS.\npub const MAX_THREADS: usize = {threads};\n\
             /// CONFIG_QFABRIC_TRACE_EVENTS (0 without CONFIG_QFABRIC_TRACE).\n\
             pub const TRACE_EVENTS: usize = {events};\n\
             /// CONFIG_QFABRIC_TRACE_SWITCHES (0 without CONFIG_QFABRIC_TRACE).\n\
             pub const TRACE_SWITCHES: usize = {switches};\n\
             /// CONFIG_QFABRIC_ADMISSION.\npub const ADMISSION: bool = {admission};\n\
             /// CONFIG_QFABRIC_CBS.\npub const CBS: bool = {cbs};\n\
             /// CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS (0 without the executor).\n\
             #[allow(dead_code)]\npub const MAX_CHAINS: usize = {chains};\n"
        ),
    )
    .expect("write config.rs");
    bindings();
}

/// C functions the Rust side calls (the ports) or implements (`#[no_mangle]` exports, checked
/// against these declarations in `src/exports_check.rs`).
const FUNCTIONS: &[&str] = &[
    // include/qfabric/port.h
    "qf_port_lock",
    "qf_port_unlock",
    "qf_port_now",
    "qf_port_cycles_to_ticks",
    "qf_port_current",
    "qf_port_timer_arm",
    "qf_port_timer_cancel",
    "qf_port_slot_release",
    "qf_port_deadline_set",
    "qf_port_deadline_set_reschedule",
    "qf_port_deadline_set_relative",
    "qf_port_sleep_until",
    "qf_port_throttle",
    "qf_port_reschedule",
    "qf_port_miss_callback",
    "qf_port_print",
    "qf_port_panic",
    "qf_port_thread_control_get",
    "qf_port_thread_control_set",
    "qf_rs_init",
    "qf_rs_timer_expired",
    "qf_rs_timer_reaimed",
    "qf_rs_miss_report",
    "qf_rs_thread_exit",
    "z_qf_switched_in",
    "z_qf_switched_out",
    // include/qfabric/api.h
    "qf_thread_deadline_set",
    "qf_thread_period_set",
    "qf_thread_deadline_miss_callback_set",
    "qf_thread_cbs_budget_set",
    "qf_thread_wcet_set",
    "qf_thread_slot",
    "qf_trace_pop",
    "qf_trace_lost",
    "qf_trace_dump",
    "qf_switch_pop",
    // include/qfabric/executor_port.h
    "qf_executor_port_lock",
    "qf_executor_port_unlock",
    "qf_executor_port_now_ns",
    "qf_executor_port_send",
    "qf_executor_port_chain_create",
    "qf_executor_port_chain_start",
    "qf_executor_port_chain_started",
    "qf_executor_port_chain_wait_started",
    "qf_executor_port_chain_abort",
    "qf_executor_port_chain_join",
    "qf_executor_port_chain_wake",
    "qf_executor_port_sleep_us",
    "qf_executor_port_tick_ns",
    "qf_executor_port_us_to_cycles",
    "qf_executor_port_cycles_to_us",
    "qf_executor_port_chain_priority",
    "qf_rs_chain_main",
    "qf_rs_chain_start",
    // include/qfabric/executor.h
    "qf_executor_serve",
    "qf_executor_replay_reset",
    "qf_request_encode",
    "qf_chain_start",
    "qf_chain_stop",
    "qf_chain_stats_get",
    "qf_chain_thread",
];

/// C variables the Rust side reads or writes (include/qfabric/port.h).
const VARS: &[&str] = &[
    "qf_errno_einval",
    "qf_errno_enomem",
    "qf_errno_ebusy",
    "qf_errno_enospc",
    "qf_errno_etimedout",
    "qf_errno_enotsup",
    "z_qf_switch_tick_valid",
    "qf_expiry_miss_due",
];

/// C types the Rust side builds or reads (the rest come in as what these functions use).
const TYPES: &[&str] = &[
    "k_thread",
    "qf_deadline_miss_cb_t",
    "qf_event",
    "qf_switch",
    "qf_served",
    "qf_chain_config",
    "qf_chain_stats",
];

/// Clang's name for the Rust target: rustc's RISC-V triples carry the ISA extensions, clang
/// takes them as options that do not change any type's layout (as zephyr-sys does).
fn clang_target(rust_target: &str) -> &str {
    if rust_target.starts_with("riscv32") {
        "riscv32-unknown-none-elf"
    } else if rust_target.starts_with("riscv64") {
        "riscv64-unknown-none-elf"
    } else {
        rust_target
    }
}

/// Runs the bindgen CLI (`QFABRIC_BINDGEN`, default `bindgen` on PATH) over src/bindings.h.
/// In a Zephyr build `QFABRIC_BINDGEN_ARGS` names a file of clang arguments, one a line: the
/// image's include directories, compile definitions and Kconfig macros (written by
/// cmake/rust-staticlib.cmake), so the headers are read as the image's C compiler reads them.
fn bindings() {
    let crate_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let crate_dir = Path::new(&crate_dir);
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("bindings.rs");
    let target = env::var("TARGET").expect("cargo sets TARGET");
    println!("cargo:rerun-if-env-changed=QFABRIC_BINDGEN");
    println!("cargo:rerun-if-env-changed=QFABRIC_BINDGEN_ARGS");
    let wrapper = crate_dir.join("src/bindings.h");
    println!("cargo:rerun-if-changed={}", wrapper.display());
    println!(
        "cargo:rerun-if-changed={}",
        crate_dir.join("include/qfabric").display()
    );

    let bindgen = env::var("QFABRIC_BINDGEN").unwrap_or_else(|_| "bindgen".into());
    let mut command = Command::new(&bindgen);
    command
        .arg(&wrapper)
        .arg("--output")
        .arg(&out)
        .args(["--use-core", "--ctypes-prefix", "core::ffi"])
        // `_Noreturn` becomes `-> !` (qf_port_panic).
        .arg("--enable-function-attribute-detection")
        .args([
            "--no-layout-tests",
            "--with-derive-default",
            "--with-derive-eq",
        ])
        .arg("--with-derive-partialeq");
    for name in FUNCTIONS {
        command.args(["--allowlist-function", name]);
    }
    for name in VARS {
        command.args(["--allowlist-var", name]);
    }
    for name in TYPES {
        command.args(["--allowlist-type", name]);
    }
    command
        .arg("--")
        .arg(format!("--target={}", clang_target(&target)))
        .arg("-ffreestanding")
        .arg(format!("-I{}", crate_dir.join("include").display()));
    let builtins = Builtins::find(&bindgen);
    if let Ok(dir) = &builtins.dir {
        command.arg("-isystem").arg(dir.join("include"));
    }
    if let Ok(file) = env::var("QFABRIC_BINDGEN_ARGS") {
        println!("cargo:rerun-if-changed={file}");
        let text = fs::read_to_string(&file)
            .unwrap_or_else(|e| fail(&format!("QFABRIC_BINDGEN_ARGS={file}: {e}")));
        command.args(text.lines().map(str::trim).filter(|line| !line.is_empty()));
    }

    let output = match command.output() {
        Ok(output) => output,
        Err(e) if e.kind() == ErrorKind::NotFound => fail(&format!(
            "bindgen not found (QFABRIC_BINDGEN={bindgen}). The Rust side's C bindings are \
             generated at build time: install it with `cargo install --locked bindgen-cli` \
             (or scripts/install/bindgen.sh) and set QFABRIC_BINDGEN to its path if it is not \
             on PATH"
        )),
        Err(e) => fail(&format!("running {bindgen}: {e}")),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let hint = if stderr.contains("libclang") {
            "\nbindgen needs libclang: install it with `apt-get install libclang-dev` (Debian) \
             or point LIBCLANG_PATH at the directory holding libclang.so"
                .to_string()
        } else if stderr.contains("file not found") {
            builtins.missing_hint()
        } else {
            String::new()
        };
        fail(&format!(
            "{bindgen} failed on {} ({}):\n{stderr}{hint}",
            wrapper.display(),
            output.status
        ));
    }
    // Clang's warnings about the headers (a successful run still reports them).
    for line in String::from_utf8_lossy(&output.stderr).lines() {
        println!("cargo:warning=bindgen: {line}");
    }
}

/// Clang's resource directory (its builtin headers: `stddef.h`, `stdint.h`, ...) for the
/// libclang that bindgen loads; its `include` is passed as `-isystem`. libclang looks for it
/// beside its own file, which misses where the library and the headers are installed apart
/// (Debian's `libclang-14.so` in `/usr/lib/x86_64-linux-gnu`, the headers of
/// `libclang-common-14-dev` in `/usr/lib/llvm-14/lib/clang/14.0.6`); bindgen then asks a `clang`
/// binary for its include paths, so without one every cross `--target` run stopped at
/// `'stddef.h' file not found`. (`-resource-dir` would not do: libclang appends its own, which
/// wins for `x86_64-unknown-none`.)
struct Builtins {
    /// The loaded libclang's version (`14.0.6`), from `bindgen -V --verbose`.
    version: Option<String>,
    /// The directory found, or every one looked at.
    dir: Result<PathBuf, Vec<PathBuf>>,
}

impl Builtins {
    fn find(bindgen: &str) -> Self {
        println!("cargo:rerun-if-env-changed=CLANG_PATH");
        println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");
        let version = Command::new(bindgen)
            .args(["-V", "--verbose"])
            .output()
            .ok()
            .and_then(|out| libclang_version(&String::from_utf8_lossy(&out.stdout)));
        let Some(version) = version else {
            // No libclang, or a bindgen that does not say: its own run reports it.
            return Self {
                version: None,
                dir: Err(Vec::new()),
            };
        };
        let major = version.split('.').next().unwrap_or_default().to_string();
        let mut candidates = Vec::new();
        // A clang of the same major version says where its headers are.
        let clangs = env::var("CLANG_PATH")
            .map(|path| vec![path])
            .unwrap_or_else(|_| vec![format!("clang-{major}"), "clang".into()]);
        for clang in clangs {
            if let Ok(out) = Command::new(&clang).arg("-print-resource-dir").output() {
                let text = String::from_utf8_lossy(&out.stdout);
                let dir = PathBuf::from(text.trim());
                let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
                if out.status.success()
                    && name.is_some_and(|n| n.split('.').next() == Some(major.as_str()))
                {
                    candidates.push(dir);
                }
            }
        }
        // Where the distributions install them: `<libdir>/clang/<version or major>`.
        let mut libdirs = Vec::new();
        if let Ok(path) = env::var("LIBCLANG_PATH") {
            let path = PathBuf::from(path);
            libdirs.extend(path.parent().map(Path::to_path_buf));
            libdirs.push(path);
        }
        libdirs.extend(
            [
                format!("/usr/lib/llvm-{major}/lib"),
                "/usr/lib".into(),
                "/usr/lib64".into(),
                "/usr/local/lib".into(),
            ]
            .map(PathBuf::from),
        );
        for libdir in libdirs {
            candidates.push(libdir.join("clang").join(&version));
            candidates.push(libdir.join("clang").join(&major));
        }
        let dir = candidates
            .iter()
            .find(|dir| dir.join("include/stddef.h").is_file())
            .cloned()
            .ok_or(candidates);
        Self {
            version: Some(version),
            dir,
        }
    }

    /// What to install when a header is missing: the builtin headers when none were found.
    fn missing_hint(&self) -> String {
        let (Some(version), Err(looked)) = (&self.version, &self.dir) else {
            return String::new();
        };
        let major = version.split('.').next().unwrap_or_default();
        let looked: Vec<String> = looked.iter().map(|d| d.display().to_string()).collect();
        format!(
            "\nclang's builtin headers (stddef.h, stdint.h, ...) for bindgen's libclang {version} \
             are missing: no clang {major} binary answered -print-resource-dir and none of \
             {} holds include/stddef.h. Install them with `apt-get install \
             libclang-common-{major}-dev` or `apt-get install clang-{major}` (Debian; \
             scripts/install/bindgen.sh installs them), or set CLANG_PATH to a clang {major} \
             binary",
            looked.join(", ")
        )
    }
}

/// `14.0.6` from `bindgen -V --verbose`'s `Clang: Debian clang version 14.0.6` line.
fn libclang_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("Clang:"))?;
    let after = &line[line.find("version ")? + "version ".len()..];
    let version: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    version
        .split('.')
        .next()
        .is_some_and(|m| !m.is_empty())
        .then_some(version)
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1)
}
