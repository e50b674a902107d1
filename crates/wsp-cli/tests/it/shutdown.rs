//! `wsp serve` stops on SIGTERM even while change-feed (SSE) clients are connected: each open
//! stream gets a closing `error` event and the process exits 0. A second SIGTERM during the
//! drain stops it at once.

#![cfg(unix)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::Server;

/// Starts `wsp serve` on a fresh data directory; its address and first admin key.
fn serve(data: &std::path::Path, extra: &[&str]) -> (Server, String, String) {
    let server = support::serve(data, extra);
    let (addr, key) = (server.addr().to_owned(), server.key().to_owned());
    (server, addr, key)
}

/// Opens the change feed and returns once the response head has arrived.
fn open_feed(addr: &str, key: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /v1/host/workspace/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "the feed answers");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    s
}

fn wait_for_exit(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn sigterm_with_a_connected_feed_client_ends_its_stream_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, addr, key) = serve(dir.path(), &[]);
    let mut feeds = [open_feed(&addr, &key), open_feed(&addr, &key)];
    server.terminate();
    // Well inside the 30 s drain timeout: the streams do not hold the drain up.
    let status = wait_for_exit(&mut server.child, Duration::from_secs(10))
        .expect("wsp serve exits after SIGTERM although feed clients are connected");
    assert!(status.success(), "exit after SIGTERM: {status}");
    for feed in &mut feeds {
        let mut rest = String::new();
        feed.read_to_string(&mut rest).unwrap();
        assert!(rest.contains("event: error"), "{rest:?}");
        assert!(rest.contains("service_unavailable"), "{rest:?}");
    }
}

#[test]
fn a_second_sigterm_during_the_drain_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // A drain that would outlast the test by far.
    let (mut server, addr, key) = serve(
        dir.path(),
        &["--drain-timeout", "600", "--body-timeout", "600"],
    );
    // A request in progress that holds the drain up: its body never comes.
    let mut slow = TcpStream::connect(&addr).unwrap();
    write!(
        slow,
        "PUT /v1/host/workspace/files/slow.md HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"content\": \""
    )
    .unwrap();
    // The head reached the server: a feed on another connection answers after it.
    drop(open_feed(&addr, &key));
    server.terminate();
    assert!(
        wait_for_exit(&mut server.child, Duration::from_secs(1)).is_none(),
        "the first SIGTERM drains: the slow request is still in progress"
    );
    server.terminate();
    let status = wait_for_exit(&mut server.child, Duration::from_secs(10))
        .expect("a second SIGTERM stops wsp serve without waiting for the drain");
    assert_eq!(status.code(), Some(143), "128 + SIGTERM: {status}");
}
