//! Binding the emulator's Unix sockets: a stale socket file from an earlier run (nobody accepts
//! a connection on it) is replaced; a socket something still listens on (another emulator) and
//! any other file at the path are refused and left alone, and the error names the path. The socket
//! appears at its path already listening (bound under a temporary name beside it, then renamed),
//! so a client that connects as soon as the path exists is never refused.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
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
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "{what} {shown}: another process is listening on it (a running \
                     qf-mcu-emu?); stop it or choose another path"
                ),
            ));
        }
        std::fs::remove_file(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{what} {shown}: removing the stale socket: {e}"),
            )
        })?;
    }
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{what} {shown}: {e}"));
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}~", std::process::id()));
    let temporary = Path::new(&temporary);
    let _ = std::fs::remove_file(temporary);
    match UnixListener::bind(temporary) {
        Ok(listener) => {
            if let Err(e) = std::fs::rename(temporary, path) {
                let _ = std::fs::remove_file(temporary);
                return Err(named(e));
            }
            Ok(listener)
        }
        // A path near the 107-byte limit of a socket address has no room for the suffix: bind
        // it directly (a client may then meet it a moment before it listens).
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            UnixListener::bind(path).map_err(named)
        }
        Err(e) => Err(named(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("qf-listen-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_socket_appears_listening_and_no_temporary_name_is_left() {
        let dir = scratch("appears");
        let path = dir.join("s.sock");
        let _listener = bind(&path, "test socket").unwrap();
        UnixStream::connect(&path).expect("listening as soon as the path exists");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["s.sock"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stale_socket_is_replaced_and_any_other_file_refused_by_name() {
        let dir = scratch("stale");
        let path = dir.join("s.sock");
        drop(bind(&path, "test socket").unwrap());
        let _listener = bind(&path, "test socket").expect("the stale socket is replaced");
        UnixStream::connect(&path).unwrap();
        let file = dir.join("plain");
        std::fs::write(&file, b"keep").unwrap();
        let e = bind(&file, "control socket").unwrap_err();
        assert!(e.to_string().starts_with("control socket "), "{e}");
        assert!(e.to_string().contains("is not a socket"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"keep");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_socket_someone_listens_on_is_refused_by_name_and_keeps_serving() {
        let dir = scratch("live");
        let path = dir.join("s.sock");
        let live = bind(&path, "unix socket").unwrap();
        let e = bind(&path, "unix socket").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert_eq!(
            e.to_string(),
            format!(
                "unix socket {}: another process is listening on it (a running qf-mcu-emu?); \
                 stop it or choose another path",
                path.display()
            )
        );
        // The first listener still owns the path: a client reaches it.
        let _client = UnixStream::connect(&path).expect("still there");
        live.accept().expect("the first listener gets the client");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_with_no_room_for_the_temporary_suffix_is_bound_directly() {
        let dir = scratch("long");
        // 107 bytes in all, the longest a socket address holds.
        let room = 107 - dir.as_os_str().len() - 1;
        let path = dir.join("x".repeat(room));
        assert_eq!(path.as_os_str().len(), 107);
        let _listener = bind(&path, "test socket").unwrap();
        UnixStream::connect(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
