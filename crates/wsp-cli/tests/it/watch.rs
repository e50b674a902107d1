//! `wsp files watch` across server restarts: it reconnects with a bounded back-off, says so on
//! standard error, and resumes after the last event it printed, so that no change is lost or
//! printed twice.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use crate::support;
use crate::support::{Server, WSP, start, wsp};

/// `wsp serve` on exactly `addr` (`127.0.0.1:PORT`) over `data`.
fn serve_at(addr: &str, data: &Path) -> Server {
    let mut command = Command::new(WSP);
    command
        .args(["serve", "--addr", addr, "--data"])
        .arg(data)
        .env("WSP_LOG", "warn")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    start(&mut command)
}

/// The lines of a pipe, as they come.
fn lines_of(pipe: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next line, within a minute.
fn next(lines: &Receiver<String>, what: &str) -> String {
    lines
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("no {what}: {e}"))
}

/// Reads standard-error lines until one contains `needle`; returns them all.
fn stderr_until(lines: &Receiver<String>, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = next(
            lines,
            &format!("stderr line with {needle:?} after {seen:?}"),
        );
        let found = line.contains(needle);
        seen.push(line);
        if found {
            return seen;
        }
    }
}

struct Watcher(Child);

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn watch_reconnects_and_resumes_without_loss_or_repetition() {
    let dir = tempfile::tempdir().unwrap();
    let first = serve_at("127.0.0.1:0", dir.path());
    let addr = first.addr().to_owned();
    let url = first.url.clone();
    let key = first.key().to_owned();
    let env = [("WSP_URL", url.as_str()), ("WSP_API_KEY", key.as_str())];
    let put = |path: &str| {
        let out = wsp(&["files", "put", path], &env, Some("text"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    put("a.md");

    let mut child = Command::new(WSP)
        .args(["files", "watch", "--since", "0"])
        .env("WSP_URL", &url)
        .env("WSP_API_KEY", &key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(child.stdout.take().unwrap());
    let err = lines_of(child.stderr.take().unwrap());
    let _watcher = Watcher(child);
    let mut printed = vec![next(&out, "event 1")];
    put("b.md");
    printed.push(next(&out, "event 2"));

    // Killed: the stream breaks, and while nothing listens each attempt is refused.
    drop(first);
    let lost = stderr_until(&err, "connection refused");
    assert!(
        lost[0].starts_with("change feed lost") && lost[0].contains("after sequence 2"),
        "{lost:?}"
    );
    let second = serve_at(&addr, dir.path());
    // Written while the watcher waits to retry: it gets them by resuming after 2.
    put("c.md");
    let rm = wsp(&["files", "rm", "b.md"], &env, None);
    assert!(rm.status.success());
    stderr_until(&err, "change feed reconnected; resuming after sequence 2");
    printed.push(next(&out, "event 3"));
    printed.push(next(&out, "event 4"));

    // Stopped cleanly: the server's closing `service_unavailable` event is not the end either.
    second.terminate();
    let closed = stderr_until(&err, "change feed lost");
    assert!(
        closed.last().unwrap().contains("service_unavailable")
            && closed.last().unwrap().contains("after sequence 4"),
        "{closed:?}"
    );
    drop(second);
    let _third = serve_at(&addr, dir.path());
    put("d.md");
    stderr_until(&err, "change feed reconnected; resuming after sequence 4");
    printed.push(next(&out, "event 5"));
    put("e.md");
    printed.push(next(&out, "event 6"));

    assert_eq!(
        printed,
        [
            "1\ta.md\tv1",
            "2\tb.md\tv1",
            "3\tc.md\tv1",
            "4\tb.md\tv2",
            "5\td.md\tv1",
            "6\te.md\tv1",
        ]
    );
    assert!(
        out.recv_timeout(Duration::from_millis(300)).is_err(),
        "nothing is printed twice"
    );
}

#[test]
fn watch_stops_when_it_cannot_start_or_must_not_go_on() {
    // Never connected: the URL or the key is wrong, so retrying would only hide it.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let out = wsp(
        &[
            "files",
            "watch",
            "--url",
            &format!("http://127.0.0.1:{port}"),
        ],
        &[("WSP_API_KEY", "wsp_000000000000_x")],
        None,
    );
    assert_eq!(out.status.code(), Some(8));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connection refused"), "{err}");
    assert!(!err.contains("reconnect"), "{err}");

    // A revoked key: the server ends the stream with `unauthenticated`; retrying cannot mend it.
    let dir = tempfile::tempdir().unwrap();
    let server = serve_at("127.0.0.1:0", dir.path());
    let data = dir.path().to_str().unwrap();
    let key = support::create_key(&["--data", data, "--tenant", "t", "--workspace", "w"]);
    let mut child = Command::new(WSP)
        .args(["files", "watch", "--url", &server.url, "--key", &key])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines_of(child.stderr.take().unwrap());
    let mut watcher = Watcher(child);
    // Most likely the stream is open by then; a key revoked before it opens is refused at
    // connect, with the same one line.
    std::thread::sleep(Duration::from_millis(500));
    let id = key.split('_').nth(1).unwrap();
    let revoked = wsp(&["keys", "revoke", "--data", data, id], &[], None);
    assert!(revoked.status.success());
    let status = watcher.0.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    let lines: Vec<String> = err.iter().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("unauthenticated"), "{lines:?}");
}

/// `wsp files watch | head -n 1`: once its reader is gone, the next change ends the watcher
/// quietly with status 0, as a Unix filter ends; it does not panic on the closed pipe.
#[test]
fn watch_ends_quietly_when_its_reader_goes() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_at("127.0.0.1:0", dir.path());
    let key = server.key().to_owned();
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", key.as_str()),
    ];
    let put = |path: &str| {
        let out = wsp(&["files", "put", path], &env, Some("text"));
        assert!(out.status.success());
    };
    put("a.md");
    let mut child = Command::new(WSP)
        .args(["files", "watch", "--since", "0"])
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "1\ta.md\tv1\n");
    // The reader is dropped: the pipe is closed. The next changes are printed into it.
    let err = lines_of(child.stderr.take().unwrap());
    let mut watcher = Watcher(child);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = watcher.0.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still running");
        put("b.md");
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr: Vec<String> = err.iter().collect();
    assert_eq!(status.code(), Some(0), "{stderr:?}");
    assert!(stderr.is_empty(), "{stderr:?}");
}
