//! Binding the emulator's Unix sockets: a stale socket file from an earlier run is replaced, any
//! other file at the path is refused and left alone, and the error names the path.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::Path;

/// Listens on `path`; `what` names the socket in errors (e.g. "control socket").
pub fn bind(path: &Path, what: &str) -> io::Result<UnixListener> {
    let shown = path.display();
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{what} {shown} exists and is not a socket; refusing to replace it"),
            ));
        }
        std::fs::remove_file(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{what} {shown}: removing the stale socket: {e}"),
            )
        })?;
    }
    UnixListener::bind(path).map_err(|e| io::Error::new(e.kind(), format!("{what} {shown}: {e}")))
}
