//! The status socket is bounded at both ends: `qf status` against a peer that streams forever or
//! trickles, and a real `qfabricd` against clients that stream without a newline, trickle, or
//! hold connections open (sizes are counted in bytes and the daemon's VmRSS, never timed).

mod common;

use common::{wait_for, write_config, Live};
use qf_agent::daemon::{query_status, query_status_within};
use qf_agent::status_socket::{CLIENTS_MAX, CLIENT_DEADLINE, REPLY_MAX, REQUEST_MAX};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

/// The daemon's resident set (VmRSS), in bytes.
fn vm_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Writes `chunk` to `stream` until a write fails or `total` bytes are out; returns the count.
fn stream_until_refused(stream: &mut UnixStream, total: usize, chunk: &[u8]) -> usize {
    let mut written = 0;
    while written < total {
        match stream.write(chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => written += n,
        }
    }
    written
}

/// Reads what the peer sends until it closes (or 20 s pass, an upper bound, not a timing).
fn read_to_close(stream: &mut UnixStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut reply = Vec::new();
    let _ = stream.take(1 << 20).read_to_end(&mut reply);
    String::from_utf8_lossy(&reply).into_owned()
}

/// A "daemon" that streams bytes without a newline: `qf status` read them all (20.8 GB in
/// 30 s). It now stops at the reply limit, names it, and closes: the peer gets to write the
/// limit plus what the two socket buffers hold, not the 64 MiB it offers.
#[test]
fn qf_status_refuses_a_reply_over_the_limit_without_buffering_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streaming.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_write_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream_until_refused(&mut stream, 64 << 20, &[b'x'; 64 << 10])
    });
    // `qf status --socket PATH`, as the qf binary runs it.
    let qf_status = qf_agent::cli::status::StatusArgs {
        socket: path.clone(),
        json: false,
    };
    let error = format!("{:#}", qf_status.run().unwrap_err());
    let written = server.join().unwrap();
    assert!(
        error.contains(&format!("exceeds {REPLY_MAX} bytes")) && error.contains("streaming.sock"),
        "{error}"
    );
    assert!(
        written < REPLY_MAX + (8 << 20),
        "the peer wrote {written} bytes before qf status stopped reading"
    );
}

/// A "daemon" that trickles a byte every 20 ms: each read came within the per-read time-out, so
/// `qf status` waited for as long as the bytes came. The deadline is the whole exchange's.
#[test]
fn qf_status_has_one_deadline_for_the_whole_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trickling.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        for _ in 0..1000 {
            if stream.write_all(b"{").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let error = format!(
        "{:#}",
        query_status_within(&path, Duration::from_millis(300)).unwrap_err()
    );
    assert!(
        error.contains("did not answer within 300 ms") && error.contains("trickling.sock"),
        "{error}"
    );
}

/// A daemon with a plain chain on Linux; returns it once its status socket answers.
fn live_daemon(root: &Path) -> (Live, std::path::PathBuf) {
    let config = write_config(root, "linux", "", "");
    let daemon = Live::spawn(&config);
    let socket = root.join("run/qfabricd.sock");
    wait_for(Duration::from_secs(30), "the status socket", || {
        query_status(&socket).is_ok()
    });
    (daemon, socket)
}

/// 300 MB without a newline grew the daemon from 3.9 MB to 682 MB, kept after the client left.
/// Now the daemon reads at most the request limit, answers with an error naming it and closes:
/// the client cannot push 64 MiB, and the daemon's VmRSS stays within 16 MiB of what it was.
#[test]
fn the_daemon_refuses_a_request_over_the_limit_and_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, socket) = live_daemon(dir.path());
    let before = vm_rss(daemon.id());
    let mut client = UnixStream::connect(&socket).unwrap();
    client
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let written = stream_until_refused(&mut client, 64 << 20, &[b'x'; 64 << 10]);
    let during = vm_rss(daemon.id());
    let reply = read_to_close(&mut client);
    drop(client);
    let after = vm_rss(daemon.id());
    eprintln!(
        "the client wrote {written} bytes; daemon VmRSS {before} -> {during} -> {after} bytes"
    );
    assert!(
        reply.contains(&format!("no newline within {REQUEST_MAX} bytes")),
        "{reply:?}"
    );
    assert!(
        written < 16 << 20,
        "the daemon took {written} bytes of a request"
    );
    for rss in [during, after] {
        assert!(
            rss < before + (16 << 20),
            "VmRSS {before} -> {during} -> {after} bytes"
        );
    }
    // It still answers.
    query_status(&socket).unwrap();
    daemon.stop();
}

/// One client trickling a byte every 500 ms (inside the old per-read time-out of 2 s) held the
/// daemon's only server, so every `qf status` failed. Now each connection has its own slot and
/// deadline: `qf status` is answered beside four tricklers, each of which is closed at its
/// deadline with a reply naming it; and beside as many silent connections as the daemon serves
/// at once, the oldest of which is closed, saying why.
#[test]
fn trickling_and_idle_clients_do_not_starve_qf_status() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, socket) = live_daemon(dir.path());
    let (started, started_rx) = std::sync::mpsc::channel();
    let tricklers: Vec<_> = (0..4)
        .map(|_| {
            let (socket, started) = (socket.clone(), started.clone());
            std::thread::spawn(move || {
                let mut stream = UnixStream::connect(&socket).unwrap();
                let mut sent = 0;
                for byte in b"statusstatusstatusstatus" {
                    if stream.write_all(&[*byte]).is_err() {
                        break;
                    }
                    sent += 1;
                    if sent == 1 {
                        started.send(()).unwrap();
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                (sent, read_to_close(&mut stream))
            })
        })
        .collect();
    for _ in 0..4 {
        started_rx.recv().unwrap();
    }
    for _ in 0..3 {
        let status = query_status(&socket).unwrap();
        assert_eq!(status.pid, daemon.id());
    }
    let deadline_ms = CLIENT_DEADLINE.as_millis();
    for trickler in tricklers {
        let (sent, reply) = trickler.join().unwrap();
        assert!(
            reply.contains(&format!("within {deadline_ms} ms")),
            "{reply:?}"
        );
        assert!(sent < 24, "a trickler kept its connection for {sent} bytes");
    }
    let mut idle: Vec<UnixStream> = (0..CLIENTS_MAX)
        .map(|_| UnixStream::connect(&socket).unwrap())
        .collect();
    let status = query_status(&socket).unwrap();
    assert_eq!(status.pid, daemon.id());
    let oldest = read_to_close(&mut idle[0]);
    assert!(
        oldest.contains(&format!("{CLIENTS_MAX} connections at once")),
        "{oldest:?}"
    );
    daemon.stop();
}

/// The README and the systemd unit state the limits the code enforces.
#[test]
fn the_documented_limits_are_the_code_s() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: &str| {
        let text = std::fs::read_to_string(manifest.join(path)).unwrap();
        // One line of prose, comment markers gone.
        text.replace("\n# ", " ").replace('\n', " ")
    };
    let config_max = usize::try_from(qf_agent::daemon::CONFIG_MAX_BYTES).unwrap();
    for (path, clients) in [
        ("../../README.md", format!("{CLIENTS_MAX} at once")),
        (
            "systemd/qfabricd.service",
            format!("{CLIENTS_MAX} connections at once"),
        ),
    ] {
        let text = read(path);
        for stated in [
            format!("of at most {REQUEST_MAX} bytes"),
            format!("at most {} MiB", REPLY_MAX >> 20),
            format!("{} s per connection", CLIENT_DEADLINE.as_secs()),
            clients,
            format!("regular file of at most {} MiB", config_max >> 20),
        ] {
            assert!(text.contains(&stated), "{path}: {stated:?} not stated");
        }
    }
    let query = qf_agent::status_socket::QUERY_TIMEOUT.as_secs();
    assert!(read("../../README.md").contains(&format!(
        "`qf status` waits {query} s for the whole exchange"
    )));
}
