//! What the board's programs (`qf-mcu-emu`, `qf-board-bridge`) share as processes: log lines on
//! stderr with the program's name, sizes on the command line, and worker threads run until
//! SIGTERM/SIGINT or until one of them ends.

use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::thread::ScopedJoinHandle;

use anyhow::{Context, Result};

struct StderrLogger {
    program: &'static str,
    level: log::LevelFilter,
}

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= self.level
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            // A closed stderr (the harness went away) must not take the program down.
            let level = record.level().as_str().to_lowercase();
            let _ = writeln!(
                std::io::stderr(),
                "{}: {level}: {}",
                self.program,
                record.args()
            );
        }
    }
    fn flush(&self) {}
}

/// Sends `log` records to stderr as `PROGRAM: level: message` (debug too if `verbose`).
pub fn init_log(program: &'static str, verbose: bool) {
    let level = if verbose {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Info
    };
    let logger: &'static StderrLogger = Box::leak(Box::new(StderrLogger { program, level }));
    let _ = log::set_logger(logger).map(|()| log::set_max_level(level));
}

/// A size such as `4M`, `16M`, `512K`, `1G` or a byte count.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, shift) = match text.char_indices().last() {
        Some((i, 'K' | 'k')) => (&text[..i], 10),
        Some((i, 'M' | 'm')) => (&text[..i], 20),
        Some((i, 'G' | 'g')) => (&text[..i], 30),
        _ => (text, 0),
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 4M, 2097152)"))?;
    value
        .checked_shl(shift)
        .filter(|v| v >> shift == value)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// A socket that becomes readable when SIGTERM or SIGINT arrives.
pub fn signal_socket() -> Result<UnixStream> {
    let (signal_rx, signal_tx) = UnixStream::pair().context("creating the signal pipe")?;
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::low_level::pipe::register(signal, signal_tx.try_clone()?)
            .with_context(|| format!("installing the handler for signal {signal}"))?;
    }
    Ok(signal_rx)
}

/// Returns when `signal` is readable or one of `workers` has ended on its own (an error).
pub fn wait_for_signal_or_end<T>(signal: BorrowedFd<'_>, workers: &[ScopedJoinHandle<'_, T>]) {
    loop {
        let mut fds = [nix::poll::PollFd::new(
            signal.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(200u16));
        if fds[0].revents().is_some_and(|r| !r.is_empty())
            || workers.iter().any(|w| w.is_finished())
        {
            return;
        }
    }
}

/// Joins every worker: the last error, or one for a panicked worker.
pub fn join_all(workers: Vec<ScopedJoinHandle<'_, Result<()>>>) -> Result<()> {
    let mut result = Ok(());
    for worker in workers {
        match worker.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(_) => result = Err(anyhow::anyhow!("a worker thread panicked")),
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_their_suffix_or_are_refused_by_name() {
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("2097152"), Ok(2 << 20));
        assert!(parse_size("lots").unwrap_err().contains("'lots'"));
        assert!(parse_size("99999999999G")
            .unwrap_err()
            .contains("too large"));
    }
}
