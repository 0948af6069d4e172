//! What `qfabricd` refuses at start, and how it says so: a configuration or chain file that is
//! a device, a FIFO or too big; a state or journal directory it cannot write; and a stop signal
//! during start-up always ends it.

mod common;

use common::write_config;
use qf_agent::daemon::{Daemon, DaemonConfig, CONFIG_MAX_BYTES};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Waits for `child` at most `limit` (an upper bound, never a timing); kills it and fails
/// naming `what` if it is still running then.
fn wait_at_most(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: qfabricd still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `qfabricd --config PATH` with its address space limited to 1 GiB (`ulimit -v`), so a daemon
/// that reads an endless file fails by allocation instead of taking the machine's memory.
fn qfabricd_limited(config: &Path) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" --config \"$1\"")
        .arg(env!("CARGO_BIN_EXE_qfabricd"))
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `--config /dev/zero` read until it had 2.1 GB; `--config FIFO` blocked in open() for good.
/// Both are refused at once, by what they are, before anything is read.
#[test]
fn a_device_or_fifo_configuration_is_refused_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("qfabricd.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for (path, kind) in [
        (Path::new("/dev/zero"), "a character device"),
        (fifo.as_path(), "a FIFO"),
    ] {
        let output = wait_at_most(qfabricd_limited(path), Duration::from_secs(20), kind);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "configuration {}: {kind}, not a regular file",
                path.display()
            )),
            "{stderr}"
        );
    }
}

/// A configuration over the limit is refused by its size (named with the limit) before it is
/// read; one at the limit is read (and refused as TOML, by field).
#[test]
fn a_configuration_over_the_size_limit_is_refused_by_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qfabricd.toml");
    let over = usize::try_from(CONFIG_MAX_BYTES).unwrap() + 1;
    std::fs::write(&path, "#".repeat(over)).unwrap();
    let error = format!("{:#}", DaemonConfig::load(&path).unwrap_err());
    assert!(
        error.contains(&format!(
            "qfabricd.toml: {over} bytes, over the limit of {CONFIG_MAX_BYTES} bytes (1 MiB)"
        )),
        "{error}"
    );
    std::fs::write(&path, "#".repeat(over - 1)).unwrap();
    let error = format!("{:#}", DaemonConfig::load(&path).unwrap_err());
    assert!(error.contains("missing field"), "{error}");
}

/// A chain file that is a FIFO no one writes to held start-up in open() for good; one over
/// the limit was read whole. Both are refused at once, naming the file and what it is or the
/// limit (the oversized one a sparse 1 TiB file: reading it would never end).
#[test]
fn a_fifo_or_oversized_chain_file_is_refused_at_once() {
    use qf_evidence::chain::MAX_CHAIN_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "linux", "", "");
    let chain = dir.path().join("chain.toml");
    std::fs::remove_file(&chain).unwrap();
    nix::unistd::mkfifo(&chain, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let output = wait_at_most(
        qfabricd_limited(&config),
        Duration::from_secs(20),
        "FIFO chain",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "reading chain file {}: a FIFO, not a regular file",
            chain.display()
        )),
        "{stderr}"
    );
    std::fs::remove_file(&chain).unwrap();
    std::fs::File::create(&chain)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let output = wait_at_most(
        qfabricd_limited(&config),
        Duration::from_secs(20),
        "huge chain",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "reading chain file {}: 1099511627776 bytes (1048576 MiB), over the limit of \
             {MAX_CHAIN_BYTES} bytes (1 MiB)",
            chain.display()
        )),
        "{stderr}"
    );
}

/// SIGTERM while start-up waits: the signal was blocked for the watcher thread, which only
/// raised a flag the run loop never got to read, so qfabricd ignored SIGTERM and SIGINT for
/// good. It now dies by the signal.
///
/// Start-up waits here on its MCU endpoint, a Unix socket whose listener never accepts and
/// whose backlog (0) one queued connection fills: `connect` then waits for the listener, and
/// since the test never accepts, the wait cannot end before the signal, whenever it comes.
/// (Every file start-up reads is refused at once if it is a FIFO, so none can hold it.)
#[test]
fn a_stop_signal_during_start_up_ends_qfabricd() {
    use nix::sys::signal::Signal;
    use nix::sys::socket::{bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType};
    use std::os::fd::AsRawFd;
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let endpoint = dir.path().join("mcu.sock");
        let listener = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .unwrap();
        bind(
            listener.as_raw_fd(),
            &nix::sys::socket::UnixAddr::new(&endpoint).unwrap(),
        )
        .unwrap();
        listen(&listener, Backlog::new(0).unwrap()).unwrap();
        let _queued = std::os::unix::net::UnixStream::connect(&endpoint).unwrap();
        let config = write_config(
            dir.path(),
            "linux",
            &format!("mcu_socket = \"{}\"\n", endpoint.display()),
            "",
        );
        let mut command = Command::new(env!("CARGO_BIN_EXE_qfabricd"));
        command.arg("--config").arg(&config).stderr(Stdio::piped());
        // A test run started in the background of a non-interactive shell inherits SIGINT
        // ignored, and qfabricd then ends by exit status 130 instead (as documented at
        // `die_by`): give it the default action so the signal's own end is what is checked.
        // SAFETY: between fork and exec only async-signal-safe signal(2) calls are made.
        unsafe {
            command.pre_exec(|| {
                for signal in [Signal::SIGTERM, Signal::SIGINT] {
                    nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigDfl)?;
                }
                Ok(())
            });
        }
        let daemon = command.spawn().unwrap();
        let pid = daemon.id();
        // The watcher thread exists once the signals are blocked: from then on the signal
        // reaches only it.
        common::wait_for(Duration::from_secs(20), "the signal watcher", || {
            std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| tasks.count() >= 2)
        });
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
        let output = wait_at_most(daemon, Duration::from_secs(20), signal.as_str());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.signal(), Some(signal as i32), "{stderr}");
        assert!(
            stderr.contains(&format!("{signal} before the daemon was serving")),
            "{stderr}"
        );
    }
}

/// The error of a daemon started on `config`.
fn start_error(config: &Path) -> String {
    let config = DaemonConfig::load(config).unwrap();
    match Daemon::new(config) {
        Ok(_) => panic!("qfabricd started"),
        Err(error) => format!("{error:#}"),
    }
}

/// A state or journal directory qfabricd cannot write was reported as "another qfabricd uses
/// this state directory". The error now names the lock file and the OS's reason: /sys (which
/// refuses new files even to root) as the state directory and then as the journal's, and a lock
/// path that is a directory.
#[test]
fn an_unwritable_state_or_journal_directory_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let unwritable = Path::new("/sys/kernel");
    let config = write_config(
        root,
        "linux",
        &format!("state_dir = \"{}\"\n", unwritable.display()),
        "",
    );
    let error = start_error(&config);
    assert!(
        error.contains(
            "state directory /sys/kernel: cannot take the lock /sys/kernel/qfabricd.lock: "
        ) && error.contains("os error"),
        "{error}"
    );
    assert!(!error.contains("another qfabricd"), "{error}");

    let config = write_config(
        root,
        "linux",
        &format!(
            "state_dir = \"state\"\njournal = \"{}/decisions.jsonl\"\n",
            unwritable.display()
        ),
        "",
    );
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "journal = \"state/decisions.jsonl\"\n",
        "",
        1,
    );
    std::fs::write(&config, text).unwrap();
    let error = start_error(&config);
    assert!(
        error.contains("cannot take the lock /sys/kernel/decisions.jsonl.lock: ")
            && error.contains("os error"),
        "{error}"
    );

    let config = write_config(root, "linux", "state_dir = \"busy\"\n", "");
    std::fs::create_dir_all(root.join("busy/qfabricd.lock")).unwrap();
    let error = start_error(&config);
    assert!(
        error.contains(&format!(
            "cannot take the lock {}: Is a directory",
            root.join("busy/qfabricd.lock").display()
        )),
        "{error}"
    );
    assert!(!error.contains("another qfabricd"), "{error}");
}
