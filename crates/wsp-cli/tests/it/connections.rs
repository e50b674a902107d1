//! The `wsp` binary against clients that hold connections without using them: under a small
//! open-file limit, idle sockets never lock out a client that sends its request, the accept
//! loop survives running out of descriptors, and `wsp mcp --http` takes the connection and
//! origin flags.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WSP: &str = env!("CARGO_BIN_EXE_wsp");

/// Long enough for anything that should happen to have happened, on a busy machine.
const PATIENCE: Duration = Duration::from_secs(5);

/// Kills the server when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` (a `wsp` command) with standard error into `log`; returns once `ready`
/// (a stdout line prefix) is printed, with the rest of that line.
fn start(command: &mut Command, log: &Path, ready: &str) -> (Running, String) {
    let mut child = command
        .env("WSP_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("wsp starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let running = Running(child);
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix(ready) {
            let rest = rest.to_owned();
            std::thread::spawn(move || for _ in lines {});
            return (running, rest);
        }
    }
    panic!(
        "wsp exited before printing {ready:?}: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// `wsp serve` on a fresh memory store, under `ulimit -n FDS` (soft and hard, so it cannot be
/// raised); its `host:port`.
fn serve(dir: &Path, fds: Option<u32>, extra: &[&str], log: &Path) -> (Running, String) {
    let limit = fds.map_or(String::new(), |n| format!("ulimit -n {n} && "));
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{limit}exec \"$0\" \"$@\""))
        .arg(WSP)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--store",
            "memory",
            "--data",
        ])
        .arg(dir.join("data"))
        .args(extra)
        .env_remove("WSP_MCP_TOKEN");
    let (running, rest) = start(&mut command, log, "wsp listening on http://");
    let addr = rest.split_whitespace().next().unwrap().to_owned();
    (running, addr)
}

/// Opens `n` connections to `addr` that never send a request; half of them send half a
/// request line.
fn idle_sockets(addr: &str, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|i| {
            let mut s = TcpStream::connect(addr).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            }
            s
        })
        .collect()
}

/// The status of `GET path` on a fresh connection, or `None` when no answer came within
/// [`PATIENCE`].
fn get(addr: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    String::from_utf8_lossy(&head[9..12]).parse().ok()
}

#[test]
fn idle_sockets_beyond_the_open_file_limit_do_not_lock_out_a_client() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    // 256 descriptors: the derived cap is 128 connections; 400 idle sockets are far more
    // than the process could even accept.
    let (_server, addr) = serve(dir.path(), Some(256), &[], &log);
    let _idle = idle_sockets(&addr, 400);
    assert_eq!(
        get(&addr, "/.well-known/openwop"),
        Some(200),
        "a client was locked out by idle sockets"
    );
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(
        stderr.contains("open_files=256"),
        "the open-file limit is logged: {stderr}"
    );
    assert!(stderr.contains("max_connections=128"), "{stderr}");
}

#[test]
fn running_out_of_descriptors_closes_idle_connections_and_keeps_accepting() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    // A cap far above what 256 descriptors allow: accept itself fails (EMFILE).
    let (_server, addr) = serve(dir.path(), Some(256), &["--max-connections", "5000"], &log);
    let _idle = idle_sockets(&addr, 400);
    let started = Instant::now();
    assert_eq!(
        get(&addr, "/.well-known/openwop"),
        Some(200),
        "out of descriptors, the server stopped serving"
    );
    // And again: the accept loop is alive, not stuck or ended.
    let _more = idle_sockets(&addr, 100);
    assert_eq!(get(&addr, "/.well-known/openwop"), Some(200));
    let stderr = std::fs::read_to_string(&log).unwrap();
    let warnings = stderr.matches("accepting connections failed").count();
    // Logged at most once per 10 s, however many accepts failed.
    let allowed = 1 + started.elapsed().as_secs() as usize / 10;
    assert!(
        (1..=allowed).contains(&warnings),
        "{warnings} accept warnings: {stderr}"
    );
}

/// `wsp mcp --http` on loopback with `extra` flags and `WSP_MCP_TOKEN=token`; its
/// `host:port`.
fn mcp(dir: &Path, extra: &[&str], log: &Path, token: &str) -> (Running, String) {
    let table = dir.join("mounts.toml");
    std::fs::write(
        &table,
        "[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = { virtual = \"p\" }\n",
    )
    .unwrap();
    let mut command = Command::new(WSP);
    command
        .args(["mcp", "--mounts"])
        .arg(&table)
        .arg("--data")
        .arg(dir.join("data"))
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .env("WSP_MCP_TOKEN", token);
    let (running, rest) = start(&mut command, log, "wsp mcp listening on http://");
    let addr = rest
        .strip_suffix("/mcp")
        .unwrap_or_else(|| panic!("listening on {rest:?}"))
        .to_owned();
    (running, addr)
}

/// Whether the server closes `stream` (end of file or reset) within [`PATIENCE`].
fn closed(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

/// The status of an MCP `initialize` POST to `addr` with `token` and, if given, an `Origin`.
fn initialize(addr: &str, token: &str, origin: Option<&str>) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{origin}Authorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn mcp_http_takes_the_connection_and_origin_flags() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let token = "t".repeat(40);
    let extra = [
        "--header-timeout",
        "1",
        "--allow-origin",
        "https://app.example.com",
    ];
    let (_server, addr) = mcp(dir.path(), &extra, &log, &token);
    assert_eq!(initialize(&addr, &token, None), 200);
    assert_eq!(
        initialize(&addr, &token, Some("https://app.example.com")),
        200
    );
    assert_eq!(
        initialize(&addr, &token, Some("http://localhost:5173")),
        200
    );
    assert_eq!(initialize(&addr, &token, Some("https://evil.example")), 403);

    // --header-timeout 1: half a header is closed.
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"POST /mcp HTTP/1.1\r\nHo").unwrap();
    assert!(closed(&mut half), "half a header stayed open");
}

#[test]
fn bad_connection_flags_are_refused_with_a_message() {
    let check = |args: &[&str], needle: &str| {
        let out = Command::new(WSP).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    };
    check(&["serve", "--header-timeout", "0"], "--header-timeout");
    check(
        &["serve", "--cors-origin", "https://app.example/"],
        "is not a web origin",
    );
    check(&["serve", "--cors-origin", "*"], "--cors-origin");
    check(&["serve", "--max-connections", "0"], "--max-connections");
    check(
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--allow-origin",
            "app.example.com",
        ],
        "is not an origin",
    );
    check(
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--allow-host",
            "user@example.com",
        ],
        "is not a host",
    );
}
