//! Bounded reading of files, pipes and stdin, the one reader of every input the tools take
//! (declarations, frames, chain files, traces, task sets, firmware images, the agent's
//! configuration, journal key and anchor, a campaign's results):
//! * a regular file is opened without blocking (a FIFO with no writer would block `open`
//!   forever, a device would never end), refused by size before it is read, and read through
//!   the limit in case it grows meanwhile ([`open_regular`], [`open_bounded`], [`read_regular`],
//!   [`read_at_most`]);
//! * a special file (directory, device, socket, FIFO where none is expected) is refused by what
//!   it is ([`special_kind`]);
//! * a pipe or stdin is read for at most a total time ([`Deadline`]) and, with
//!   [`Read::take`] or [`read_at_most`], a size.
//!
//! Each caller keeps its own limits and names the file in its error; these errors name what
//! the file is or its size and the limit.

use std::io::{Error, ErrorKind, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// A byte count in words: `1048576 bytes (1 MiB)`.
pub fn bytes(count: u64) -> String {
    if count >= 1 << 20 && count % (1 << 20) == 0 {
        format!("{count} bytes ({} MiB)", count >> 20)
    } else if count >= 1 << 10 && count % (1 << 10) == 0 {
        format!("{count} bytes ({} KiB)", count >> 10)
    } else {
        format!("{count} bytes")
    }
}

/// The regular file `path`, opened for reading without blocking, and its metadata; anything
/// else is refused by what it is ("a FIFO, not a regular file"; the error does not name the path).
pub fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let file = open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = special_kind(&kind).unwrap_or("a special file");
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what}, not a regular file"),
        ));
    }
    Ok((file, meta))
}

/// The file `path`, whatever it is, opened for reading without blocking: opening a FIFO does
/// not wait for a writer, and a terminal does not become the controlling one. Check what it is
/// on the opened file ([`special_kind`]) before reading it.
pub fn open(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOCTTY).bits())
        .open(path)
}

/// What a file other than a regular one is, in words ("a directory", "a FIFO", "a character
/// device", "a block device", "a socket"); `None` for a regular file or a kind without a name.
pub fn special_kind(kind: &std::fs::FileType) -> Option<&'static str> {
    if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// `reader` read to its end through at most `max` bytes: `None` when it holds more (what was
/// read past `max` is one byte, so nothing over the limit is buffered).
pub fn read_at_most(reader: impl Read, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    reader.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// The regular file `path` ([`open_regular`]) to be read, streaming, through at most `max`
/// bytes: refused by its size before a byte is read, and a read that passes `max` (the file
/// grew meanwhile) fails. The errors say what the file is, or its size and the limit; they do
/// not name the path.
pub fn open_bounded(path: &Path, max: u64) -> std::io::Result<Bounded> {
    let (file, meta) = open_regular(path)?;
    if meta.len() > max {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("{}, over the limit of {}", bytes(meta.len()), bytes(max)),
        ));
    }
    Ok(Bounded {
        inner: file.take(max.saturating_add(1)),
        max,
        read: 0,
    })
}

/// A regular file read through a limit ([`open_bounded`]).
#[derive(Debug)]
pub struct Bounded {
    inner: std::io::Take<std::fs::File>,
    max: u64,
    read: u64,
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let count = self.inner.read(buf)?;
        self.read += count as u64;
        if self.read > self.max {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!(
                    "grew past the limit of {} while it was read",
                    bytes(self.max)
                ),
            ));
        }
        Ok(count)
    }
}

/// The whole of the regular file `path`, at most `max` bytes ([`open_bounded`]).
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut content = Vec::new();
    open_bounded(path, max)?.read_to_end(&mut content)?;
    Ok(content)
}

/// The whole of the regular file `path` as UTF-8 text, at most `max` bytes ([`read_regular`]).
pub fn read_regular_text(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, max)?).map_err(|e| {
        Error::new(
            ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// A stream (stdin, a pipe) read for at most a total time: each read first waits in `poll` for
/// what is left of it, and once it has passed the read fails (`TimedOut`, "no end within
/// 10 s"), so a writer that keeps a pipe open without writing or closing it cannot hold the
/// reader. Bound the size with [`Read::take`] as well.
pub struct Deadline<R> {
    inner: R,
    wait: Duration,
    until: Instant,
}

impl<R: Read + AsFd> Deadline<R> {
    /// `inner`, read until `wait` from now at most.
    pub fn new(inner: R, wait: Duration) -> Deadline<R> {
        Deadline {
            inner,
            wait,
            until: Instant::now() + wait,
        }
    }
}

impl<R: Read + AsFd> Read for Deadline<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        loop {
            let left = self.until.saturating_duration_since(Instant::now());
            let mut fds = [PollFd::new(self.inner.as_fd(), PollFlags::POLLIN)];
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(0) if left.is_zero() => {
                    return Err(Error::new(
                        ErrorKind::TimedOut,
                        format!("no end within {} s", self.wait.as_secs_f64()),
                    ))
                }
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => match self.inner.read(buf) {
                    // A non-blocking pipe polled readable may still have nothing: wait again.
                    Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                    result => return result,
                },
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// For tests of readers that must not block: `f`'s result, panicking if it has none within
/// 20 s (an upper bound for a call that must return at once, never a timing), so a blocked
/// call fails its test instead of hanging the suite.
#[doc(hidden)]
pub fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(f()));
    result
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("still blocked after 20 s")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO with no writer, a device and a directory are refused by kind without blocking; a
    /// file over the limit by size; one at the limit is read.
    #[test]
    fn only_a_regular_file_within_the_limit_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for (path, kind) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
        ] {
            let owned = path.to_owned();
            let error = within(move || read_regular(&owned, 1 << 20)).unwrap_err();
            assert_eq!(error.to_string(), format!("{kind}, not a regular file"));
        }
        let file = dir.path().join("file");
        std::fs::write(&file, [b'x'; 2049]).unwrap();
        assert_eq!(
            read_regular(&file, 2048).unwrap_err().to_string(),
            "2049 bytes, over the limit of 2048 bytes (2 KiB)"
        );
        assert_eq!(read_regular(&file, 2049).unwrap().len(), 2049);
        // A file that grows past the limit after it was opened fails its read.
        std::fs::write(&file, [b'x'; 2048]).unwrap();
        let mut opened = open_bounded(&file, 2048).unwrap();
        std::fs::write(&file, [b'x'; 4096]).unwrap();
        assert_eq!(
            opened.read_to_end(&mut Vec::new()).unwrap_err().to_string(),
            "grew past the limit of 2048 bytes (2 KiB) while it was read"
        );
        std::fs::write(&file, [b'x', 0xff]).unwrap();
        assert_eq!(
            read_regular_text(&file, 2048).unwrap_err().to_string(),
            "not UTF-8 text (byte 1)"
        );
    }

    /// A pipe whose writer neither writes nor closes is refused once the time is up (here none
    /// is given, so at once); what was written before the end is read.
    #[test]
    fn a_silent_pipe_is_refused_when_its_time_is_up() {
        let pipe = || {
            let (reader, writer) = nix::unistd::pipe().unwrap();
            (std::fs::File::from(reader), std::fs::File::from(writer))
        };
        let (reader, writer) = pipe();
        let error = within(move || {
            let _writer = writer;
            let mut bytes = Vec::new();
            Deadline::new(reader, Duration::ZERO)
                .read_to_end(&mut bytes)
                .unwrap_err()
        });
        assert_eq!(error.kind(), ErrorKind::TimedOut);
        assert_eq!(error.to_string(), "no end within 0 s");

        let (reader, mut writer) = pipe();
        std::io::Write::write_all(&mut writer, b"00ff").unwrap();
        drop(writer);
        let mut bytes = Vec::new();
        Deadline::new(reader, Duration::from_secs(20))
            .read_to_end(&mut bytes)
            .unwrap();
        assert_eq!(bytes, b"00ff");
    }
}
