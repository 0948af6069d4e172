//! The control socket: fault knobs and lifecycle commands at run time, one text line per
//! command, one line back (`ok ...` or `error: ...`). Commands:
//! `latency-us N`, `drop-every N` (0 = off), `silent on|off`, `crash`, `hang`, `restart`,
//! `garbage N` (N frames that answer nothing, see [`crate::garbage`]), `defect KIND|none`
//! (restart as a broken image, see [`crate::defect`], or a good one), `status`. Resident chains
//! are installed and started by control frames from Linux (`qf resident`), not here.

use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::board::{BoardControl, Command};
use crate::defect::Defect;
use crate::mcu::Mcu;

/// A parsed control command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    LatencyUs(u64),
    DropEvery(u64),
    Silent(bool),
    Crash,
    Hang,
    Restart,
    /// Send this many garbage frames to the endpoint that last wrote to the channel.
    Garbage(u64),
    /// Restart as this broken image, or a good one (`None`).
    Defect(Option<Defect>),
    Status,
}

/// Most garbage frames one command sends: fewer than Linux's 256 receive buffers, so all of
/// them are delivered at once.
pub const MAX_GARBAGE: u64 = 200;

/// Parses one command line; the error names the offending word.
pub fn parse(line: &str) -> Result<Request, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |what: &str, word: Option<&&str>| -> Result<u64, String> {
        let word = word.ok_or_else(|| format!("{what} needs a number"))?;
        word.parse()
            .map_err(|_| format!("{what}: '{word}' is not a non-negative integer"))
    };
    let request = match words.first().copied() {
        Some("latency-us") => Request::LatencyUs(number("latency-us", words.get(1))?),
        Some("drop-every") => Request::DropEvery(number("drop-every", words.get(1))?),
        Some("silent") => match words.get(1).copied() {
            Some("on") => Request::Silent(true),
            Some("off") => Request::Silent(false),
            other => {
                return Err(format!(
                    "silent: expected 'on' or 'off', got '{}'",
                    other.unwrap_or("")
                ))
            }
        },
        Some("crash") => Request::Crash,
        Some("hang") => Request::Hang,
        Some("restart") => Request::Restart,
        Some("status") => Request::Status,
        Some("garbage") => match number("garbage", words.get(1))? {
            n @ 1..=MAX_GARBAGE => Request::Garbage(n),
            n => return Err(format!("garbage: {n} is not in 1..={MAX_GARBAGE}")),
        },
        Some("defect") => match words.get(1).copied() {
            Some("none") => Request::Defect(None),
            Some(name) => Request::Defect(Some(Defect::parse(name)?)),
            None => return Err("defect needs a kind or 'none'".to_string()),
        },
        Some(other) => return Err(unknown(other)),
        None => return Err("empty command".to_string()),
    };
    let expected_words = match request {
        Request::LatencyUs(_)
        | Request::DropEvery(_)
        | Request::Silent(_)
        | Request::Garbage(_)
        | Request::Defect(_) => 2..=2,
        _ => 1..=1,
    };
    if !expected_words.contains(&words.len()) {
        let (least, most) = (expected_words.start() - 1, expected_words.end() - 1);
        let count = if least == most {
            least.to_string()
        } else {
            format!("{least} or {most}")
        };
        return Err(format!("'{}' takes {count} argument(s)", words[0]));
    }
    Ok(request)
}

fn unknown(word: &str) -> String {
    let known = "latency-us, drop-every, silent, crash, hang, restart, garbage, defect, status";
    format!("unknown command '{word}' ({known})")
}

/// Produces the `status` line.
pub type StatusFn = Box<dyn Fn() -> String + Send + Sync>;

/// The control-socket server.
pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
    mcu: Arc<Mcu>,
    board: Option<Arc<BoardControl>>,
    status: StatusFn,
}

impl ControlServer {
    /// Binds `path`; crash/restart go to `board` when there is one, else to `mcu` directly.
    pub fn bind(
        path: &Path,
        mcu: Arc<Mcu>,
        board: Option<Arc<BoardControl>>,
        status: StatusFn,
    ) -> io::Result<ControlServer> {
        let listener = crate::listen::bind(path, "control socket")?;
        Ok(ControlServer {
            listener,
            path: path.to_path_buf(),
            mcu,
            board,
            status,
        })
    }

    /// Executes one command and returns the reply line.
    pub fn execute(&self, line: &str) -> String {
        let request = match parse(line) {
            Ok(request) => request,
            Err(e) => return format!("error: {e}"),
        };
        let faults = self.mcu.faults();
        match request {
            Request::LatencyUs(us) => faults.set_latency_us(us),
            Request::DropEvery(n) => faults.set_drop_every(n),
            Request::Silent(on) => faults.set_silent(on),
            Request::Crash => match &self.board {
                Some(board) => board.send(Command::Crash),
                None => self.mcu.crash(),
            },
            Request::Hang => match &self.board {
                Some(board) => board.send(Command::Hang),
                None => self.mcu.crash(),
            },
            Request::Restart => match &self.board {
                Some(board) => board.send(Command::Restart),
                None => self.mcu.restart(),
            },
            Request::Garbage(n) => match &self.board {
                Some(board) => board.send(Command::Garbage(n)),
                None => {
                    return "error: garbage: needs the rpmsg board (--ivshmem-socket)".to_string()
                }
            },
            Request::Defect(defect) => match &self.board {
                Some(board) => board.send(Command::Defect(defect)),
                None => {
                    return "error: defect: needs the rpmsg board (--ivshmem-socket)".to_string()
                }
            },
            Request::Status => return format!("ok {}", (self.status)()),
        }
        log::info!("control: {}", line.trim());
        "ok".to_string()
    }

    /// Serves clients one at a time until `stop` is readable.
    pub fn run(&self, stop: BorrowedFd<'_>) -> io::Result<()> {
        loop {
            let mut fds = [
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(self.listener.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::Error::EINTR) => continue,
                Err(e) => return Err(io::Error::from(e)),
                Ok(_) => {}
            }
            if fds[0].revents().is_some_and(|r| !r.is_empty()) {
                return Ok(());
            }
            if let Ok((stream, _)) = self.listener.accept() {
                if let Err(e) = self.serve_client(stream) {
                    log::debug!("control: client: {e}");
                }
            }
        }
    }

    fn serve_client(&self, stream: UnixStream) -> io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut writer = stream.try_clone()?;
        for line in BufReader::new(stream).lines() {
            let reply = self.execute(&line?);
            writeln!(writer, "{reply}")?;
        }
        Ok(())
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends one command to a control socket and returns the reply line.
pub fn send_command(path: &Path, command: &str) -> io::Result<String> {
    let mut stream = UnixStream::connect(path)
        .map_err(|e| io::Error::new(e.kind(), format!("control socket {}: {e}", path.display())))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    writeln!(stream, "{command}")?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply)?;
    Ok(reply.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_parses_and_bad_ones_name_the_problem() {
        assert_eq!(parse("latency-us 250"), Ok(Request::LatencyUs(250)));
        assert_eq!(parse("drop-every 0"), Ok(Request::DropEvery(0)));
        assert_eq!(parse("silent on"), Ok(Request::Silent(true)));
        assert_eq!(parse(" crash "), Ok(Request::Crash));
        assert_eq!(parse("hang"), Ok(Request::Hang));
        assert_eq!(parse("restart"), Ok(Request::Restart));
        assert_eq!(parse("status"), Ok(Request::Status));
        assert_eq!(
            parse("latency-us -3"),
            Err("latency-us: '-3' is not a non-negative integer".into())
        );
        assert_eq!(
            parse("silent maybe"),
            Err("silent: expected 'on' or 'off', got 'maybe'".into())
        );
        assert!(parse("reboot")
            .unwrap_err()
            .contains("unknown command 'reboot'"));
        assert!(parse("crash now").unwrap_err().contains("takes 0 argument"));
    }

    #[test]
    fn garbage_parses_and_chain_is_no_command_any_more() {
        assert_eq!(parse("garbage 200"), Ok(Request::Garbage(200)));
        assert!(parse("garbage 0").unwrap_err().contains("not in 1..=200"));
        assert!(parse("garbage 201").unwrap_err().contains("201"));
        assert!(parse("garbage x").unwrap_err().contains("'x'"));
        assert!(parse("garbage 5 6")
            .unwrap_err()
            .contains("takes 1 argument"));
        // Chains are started by control frames (`qf resident`).
        let e = parse("chain start 10000 00").unwrap_err();
        assert!(e.contains("unknown command 'chain'"), "{e}");
    }
}
