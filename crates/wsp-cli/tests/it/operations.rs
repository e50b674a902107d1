//! Operating `wsp serve`: the access log on standard error (one INFO line per request with the
//! request id the response echoes, never the key), JSON log lines, and flags set by the
//! environment (a flag on the command line beats the variable).

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use crate::support;
use crate::support::WSP;

/// A started server: its address, first admin key and its standard error, line by line.
struct Server {
    /// Killed when the test ends.
    _running: support::Server,
    addr: String,
    key: String,
    /// The `wsp listening on ...` line.
    listening: String,
    stderr: Receiver<String>,
}

impl Server {
    /// Reads standard error until a line containing every one of `needles` (all lines read
    /// so far are returned too, for checks on everything logged).
    fn wait_for_line(&self, needles: &[&str], seen: &mut Vec<String>) -> String {
        loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no log line with {needles:?}; saw {seen:#?}"));
            seen.push(line.clone());
            if needles.iter().all(|n| line.contains(n)) {
                return line;
            }
        }
    }
}

/// Starts `wsp serve` with `args` and `envs` on top of a fresh data directory.
fn serve(args: &[&str], envs: &[(&str, &str)]) -> Server {
    let mut running = support::start(
        Command::new(WSP)
            .arg("serve")
            .args(args)
            .env("WSP_LOG", "info")
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let (tx, stderr) = channel();
    let err = BufReader::new(running.child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Server {
        addr: running.addr().to_owned(),
        key: running.key().to_owned(),
        listening: running.listening.clone(),
        stderr,
        _running: running,
    }
}

/// `wsp serve` on a free port of 127.0.0.1 over the data directory `data`, with `envs`.
fn serve_in(data: &std::path::Path, envs: &[(&str, &str)]) -> Server {
    serve(
        &["--addr", "127.0.0.1:0", "--data", data.to_str().unwrap()],
        envs,
    )
}

/// One HTTP/1.1 request; the whole response as text.
fn request(addr: &str, target: &str, headers: &[(&str, &str)]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut req = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp
}

/// The value of header `name` in a raw response.
fn header(resp: &str, name: &str) -> Option<String> {
    resp.split("\r\n\r\n").next()?.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

#[test]
fn each_request_logs_one_access_line_with_its_id_and_never_the_key() {
    let data = tempfile::tempdir().unwrap();
    let server = serve_in(data.path(), &[]);
    let auth = format!("Bearer {}", server.key);
    let mut seen = Vec::new();

    // The client's id, on an authenticated request.
    let resp = request(
        &server.addr,
        "/v1/host/workspace/files",
        &[("Authorization", &auth), ("x-request-id", "ops-test-7")],
    );
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert_eq!(header(&resp, "x-request-id").as_deref(), Some("ops-test-7"));
    let line = server.wait_for_line(&["request done", "ops-test-7"], &mut seen);
    for part in [
        "INFO",
        "GET",
        "/v1/host/workspace/files",
        "status=200",
        "latency_ms=",
    ] {
        assert!(line.contains(part), "{part} in {line}");
    }

    // A generated id: the one echoed is the one logged; a 404 is logged too.
    let resp = request(&server.addr, "/no/such/route", &[("Authorization", &auth)]);
    assert!(resp.starts_with("HTTP/1.1 404"), "{resp}");
    let id = header(&resp, "x-request-id").expect("an id");
    let line = server.wait_for_line(&["request done", &id], &mut seen);
    assert!(
        line.contains("status=404") && line.contains("/no/such/route"),
        "{line}"
    );

    // Nothing logged so far (the lines of both requests) holds the key or its secret part.
    let secret = server.key.rsplit('_').next().unwrap();
    for l in &seen {
        assert!(!l.contains(&server.key) && !l.contains(secret), "{l}");
        assert!(!l.to_ascii_lowercase().contains("authorization"), "{l}");
    }
}

#[test]
fn wsp_addr_and_wsp_data_configure_the_server() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("from-env");
    let server = serve(
        &[],
        &[
            ("WSP_ADDR", "127.0.0.1:0"),
            ("WSP_DATA", dir.to_str().unwrap()),
        ],
    );
    assert!(
        server
            .listening
            .contains(&format!("data: {}", dir.display())),
        "{}",
        server.listening
    );
    assert!(dir.join("wsp.sqlite3").exists(), "the store is in WSP_DATA");
    let resp = request(&server.addr, "/healthz", &[]);
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
}

#[test]
fn a_flag_beats_its_environment_variable() {
    let data = tempfile::tempdir().unwrap();
    let (env_dir, flag_dir) = (data.path().join("env"), data.path().join("flag"));
    // Port 1 cannot be bound by a test: the server only starts if --addr wins.
    let server = serve(
        &[
            "--addr",
            "127.0.0.1:0",
            "--data",
            flag_dir.to_str().unwrap(),
        ],
        &[
            ("WSP_ADDR", "127.0.0.1:1"),
            ("WSP_DATA", env_dir.to_str().unwrap()),
        ],
    );
    assert!(!server.addr.ends_with(":1"), "{}", server.addr);
    assert!(flag_dir.join("wsp.sqlite3").exists());
    assert!(
        !env_dir.exists(),
        "WSP_DATA is ignored when --data is given"
    );
}

#[test]
fn json_log_lines_parse_and_carry_the_request_id() {
    let data = tempfile::tempdir().unwrap();
    let server = serve_in(data.path(), &[("WSP_LOG_FORMAT", "json")]);
    let resp = request(&server.addr, "/readyz", &[("x-request-id", "ops-json-1")]);
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let mut seen = Vec::new();
    let line = server.wait_for_line(&["request done", "ops-json-1"], &mut seen);
    let access: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
    assert_eq!(access["level"], "INFO", "{line}");
    assert_eq!(access["status"], 200, "{line}");
    assert!(access["latency_ms"].is_u64(), "{line}");
    assert_eq!(access["span"]["id"], "ops-json-1", "{line}");
    assert_eq!(access["span"]["method"], "GET", "{line}");
    assert_eq!(access["span"]["path"], "/readyz", "{line}");
    for l in &seen {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(v.is_object(), "{l}");
    }
}

#[test]
fn readyz_follows_the_postgresql_schema_version() {
    let db = wsp_pgtest::database_url().to_owned();
    let schema = format!("ops_ready_{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let server = serve(
        &[
            "--addr",
            "127.0.0.1:0",
            "--data",
            data.path().to_str().unwrap(),
            "--store",
            &db,
            "--pg-schema",
            &schema,
        ],
        &[],
    );
    assert!(request(&server.addr, "/readyz", &[]).starts_with("HTTP/1.1 200"));

    let rt = tokio::runtime::Runtime::new().unwrap();
    let sql = |statement: String| {
        rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
                .await
                .expect("the test database answers");
            let conn = tokio::spawn(conn);
            client.batch_execute(&statement).await.unwrap();
            drop(client);
            let _ = conn.await;
        });
    };
    let table = format!("\"{schema}\".wsp_schema_migrations");
    // The newest migration unrecorded: this build's schema is not there, so not ready.
    sql(format!(
        "CREATE TABLE \"{schema}\".held AS SELECT * FROM {table} \
         WHERE version = (SELECT max(version) FROM {table}); \
         DELETE FROM {table} WHERE version IN (SELECT version FROM \"{schema}\".held)"
    ));
    let resp = request(&server.addr, "/readyz", &[]);
    assert!(resp.starts_with("HTTP/1.1 503"), "{resp}");
    assert!(
        resp.contains("\"service_unavailable\"") && resp.contains("\"store\""),
        "{resp}"
    );
    assert!(
        !resp.contains(&schema) && !resp.contains("migration"),
        "no internals: {resp}"
    );
    // Recorded again: ready again, without a restart.
    sql(format!(
        "INSERT INTO {table} SELECT * FROM \"{schema}\".held; DROP TABLE \"{schema}\".held"
    ));
    assert!(request(&server.addr, "/readyz", &[]).starts_with("HTTP/1.1 200"));
    drop(server);
    sql(format!("DROP SCHEMA \"{schema}\" CASCADE"));
}

/// The access line has its own log target, `wsp::access`: `WSP_LOG=info,wsp::access=off` drops
/// it (as nginx's `access_log off` would) and keeps every other line.
#[test]
fn the_access_log_can_be_turned_off_alone() {
    let data = tempfile::tempdir().unwrap();
    let server = serve_in(data.path(), &[("WSP_LOG", "info,wsp::access=off")]);
    let auth = format!("Bearer {}", server.key);
    let resp = request(
        &server.addr,
        "/v1/host/workspace/files",
        &[("Authorization", &auth), ("x-request-id", "ops-quiet-1")],
    );
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    server._running.terminate();
    let mut seen = Vec::new();
    server.wait_for_line(&["shutting down"], &mut seen);
    assert!(
        !seen.iter().any(|l| l.contains("request done")),
        "an access line was logged: {seen:#?}"
    );
}
