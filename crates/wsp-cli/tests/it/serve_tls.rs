//! `wsp serve` and `wsp mcp --http` terminating TLS themselves (`--tls-cert`, `--tls-key`),
//! with a certificate a CA made here signed: real processes, real TLS clients (wsp-client,
//! the `wsp files` commands with `--cacert`, a rustls client); SIGHUP re-reads the files, and
//! bad files stop the server at start with one line naming the file.

#![cfg(unix)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConnection, StreamOwned};
use wsp_client::{CaCerts, Client, PutOptions};
use wsp_testca::{Files, TestCa};
use wsp_types::WorkspacePath;

use crate::support::{Server, WSP, serve_command, start, wsp};

/// Long enough for anything that should happen to have happened, on a busy machine.
const PATIENCE: Duration = Duration::from_secs(10);

/// The `--tls-cert` and `--tls-key` flags naming `files`.
fn tls_flags(files: &Files) -> [&str; 4] {
    [
        "--tls-cert",
        files.cert().to_str().unwrap(),
        "--tls-key",
        files.key().to_str().unwrap(),
    ]
}

/// The lines a server writes on standard error, as they come.
struct Log {
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Log {
    /// Reads the standard error of `server` (which must be piped) from now on.
    fn of(server: &mut Server) -> Self {
        Self::of_stream(server.child.stderr.take().expect("stderr is piped"))
    }

    fn of_stream(stderr: impl std::io::Read + Send + 'static) -> Self {
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                eprintln!("{line}");
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line containing `needle`, waiting at most [`PATIENCE`].
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    panic!("no log line with {needle:?}; lines: {:#?}", self.seen)
                }
            }
        }
    }
}

/// `wsp serve --tls-cert --tls-key` on a memory store, logging at INFO into a pipe.
fn serve_tls(dir: &Path, files: &Files) -> (Server, Log) {
    let mut command = serve_command(&dir.join("data"), &tls_flags(files));
    command
        .args(["--store", "memory"])
        .env("WSP_LOG", "info")
        .stderr(Stdio::piped());
    let mut server = start(&mut command);
    let log = Log::of(&mut server);
    (server, log)
}

type TlsStream = StreamOwned<ClientConnection, TcpStream>;

/// A TLS connection to `addr` (`127.0.0.1:PORT`) trusting `ca` alone, its handshake done.
fn tls_connect(addr: &str, ca: &TestCa) -> std::io::Result<TlsStream> {
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = ClientConnection::new(ca.client_config(), name).unwrap();
    let mut tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(PATIENCE))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)?;
    }
    Ok(StreamOwned::new(conn, tcp))
}

/// The certificate the server presents to a new connection.
fn presented(addr: &str, ca: &TestCa) -> CertificateDer<'static> {
    let stream = tls_connect(addr, ca).expect("a TLS handshake");
    stream.conn.peer_certificates().unwrap()[0].clone()
}

/// One response on `stream`: the status and the body (by `Content-Length`).
fn read_response(stream: &mut impl std::io::Read) -> (u16, String) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed before a response: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed in a response body");
        body.extend_from_slice(&chunk[..n]);
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `GET /healthz` on a kept-alive `stream`: its status.
fn healthz(stream: &mut TlsStream) -> u16 {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    read_response(stream).0
}

/// Whether the process is still running.
fn alive(child: &mut Child) -> bool {
    child.try_wait().unwrap().is_none()
}

/// A process of the test, killed and waited for when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_speaks_https_to_clients_that_trust_its_ca_and_to_no_one_else() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("wsp test CA");
    let leaf = ca.leaf();
    let files = leaf.files();
    let (server, _log) = serve_tls(dir.path(), &files);
    assert!(
        server
            .listening
            .starts_with("wsp listening on https://127.0.0.1:"),
        "{}",
        server.listening
    );
    assert_eq!(presented(server.addr(), &ca), leaf.der);

    // wsp-client with the CA.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let path = WorkspacePath::parse("notes/tls.md").unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .ca_certs(CaCerts::from_pem(ca.pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    runtime.block_on(async {
        client
            .put(&path, "over TLS\n", PutOptions::default())
            .await
            .unwrap();
        let got = client.get(&path, None).await.unwrap();
        assert_eq!(got.content, "over TLS\n");
    });

    // The CLI with --cacert.
    let ca_file = files.add("ca.pem", ca.pem());
    let ca_file = ca_file.to_str().unwrap();
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let put = wsp(
        &["files", "put", "notes/cli.md", "--cacert", ca_file],
        &env,
        Some("from the CLI\n"),
    );
    assert!(put.status.success(), "{put:?}");
    let got = wsp(
        &["files", "get", "notes/tls.md", "--cacert", ca_file],
        &env,
        None,
    );
    assert!(got.status.success(), "{got:?}");
    assert_eq!(String::from_utf8_lossy(&got.stdout), "over TLS\n");

    // Without the CA (only the system's), or trusting another CA: refused.
    let refused = wsp(&["files", "ls"], &env, None);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("certificate was refused"), "{stderr}");
    let stranger = Client::builder(&server.url)
        .key(server.key())
        .ca_certs(CaCerts::from_pem(TestCa::new("another CA").pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    let e = runtime.block_on(stranger.get(&path, None)).unwrap_err();
    assert!(matches!(e, wsp_client::Error::Certificate { .. }), "{e:?}");

    // Plain HTTP to the TLS port is told to use https://.
    let mut plain = TcpStream::connect(server.addr()).unwrap();
    plain.set_read_timeout(Some(PATIENCE)).unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let (status, body) = read_response(&mut plain);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("https://"), "{body}");

    // And still serves.
    let mut stream = tls_connect(server.addr(), &ca).unwrap();
    assert_eq!(healthz(&mut stream), 200);
}

#[test]
fn sighup_reloads_the_certificate_and_a_bad_file_keeps_the_one_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("wsp test CA");
    let (first, second) = (ca.leaf(), ca.leaf());
    let files = first.files();
    let (mut server, mut log) = serve_tls(dir.path(), &files);
    let addr = server.addr().to_owned();
    let mut before = tls_connect(&addr, &ca).unwrap();
    assert_eq!(before.conn.peer_certificates().unwrap()[0], first.der);
    assert_eq!(healthz(&mut before), 200);

    // A renewal: new files, then SIGHUP.
    files.write(&second);
    server.hang_up();
    let line = log.wait_for("TLS certificate reloaded");
    assert!(line.contains("INFO"), "{line}");
    assert_eq!(presented(&addr, &ca), second.der);
    // The connection made before keeps its certificate and is still served.
    assert_eq!(healthz(&mut before), 200);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let ca_file = files.add("ca.pem", ca.pem());
    let ls = wsp(
        &["files", "ls", "--cacert", ca_file.to_str().unwrap()],
        &env,
        None,
    );
    assert!(ls.status.success(), "{ls:?}");

    // Garbage over the key: the reload fails, says why, and the second certificate stays.
    std::fs::write(files.key(), "garbage\n").unwrap();
    server.hang_up();
    let line = log.wait_for("TLS certificate not reloaded");
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains(files.key().to_str().unwrap()), "{line}");
    assert!(line.contains("not a PEM file"), "{line}");
    assert!(alive(&mut server.child));
    assert_eq!(presented(&addr, &ca), second.der);
    let mut after = tls_connect(&addr, &ca).unwrap();
    assert_eq!(healthz(&mut after), 200);

    // A key of another certificate: refused the same way.
    std::fs::write(files.key(), ca.leaf().key_pem).unwrap();
    server.hang_up();
    let line = log.wait_for("TLS certificate not reloaded");
    assert!(line.contains("does not match the certificate"), "{line}");
    assert_eq!(presented(&addr, &ca), second.der);
    assert!(alive(&mut server.child));
}

#[test]
fn sighup_without_tls_is_logged_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = serve_command(&dir.path().join("data"), &["--store", "memory"]);
    command.env("WSP_LOG", "info").stderr(Stdio::piped());
    let mut server = start(&mut command);
    let mut log = Log::of(&mut server);
    server.hang_up();
    log.wait_for("SIGHUP: no TLS certificate to reload");
    assert!(alive(&mut server.child));
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut stream).0, 200);
}

#[test]
fn mcp_http_serves_tls_and_reloads_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("wsp test CA");
    let (first, second) = (ca.leaf(), ca.leaf());
    let files = first.files();
    let table = dir.path().join("mounts.toml");
    std::fs::write(
        &table,
        "[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = { virtual = \"p\" }\n",
    )
    .unwrap();
    let token = "t".repeat(40);
    let mut child = Command::new(WSP)
        .args(["mcp", "--mounts"])
        .arg(&table)
        .arg("--data")
        .arg(dir.path().join("data"))
        .args(["--http", "127.0.0.1:0"])
        .args(tls_flags(&files))
        .env("WSP_MCP_TOKEN", &token)
        .env("WSP_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut log = Log::of_stream(child.stderr.take().unwrap());
    let mut mcp = Running(child);
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .trim_end()
        .strip_prefix("wsp mcp listening on https://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("first line {line:?}"))
        .to_owned();
    std::thread::spawn(move || stdout.lines().for_each(drop));

    let initialize = |stream: &mut TlsStream| {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).unwrap();
        String::from_utf8_lossy(&head[9..12])
            .parse::<u16>()
            .unwrap()
    };
    let mut stream = tls_connect(&addr, &ca).unwrap();
    assert_eq!(stream.conn.peer_certificates().unwrap()[0], first.der);
    assert_eq!(initialize(&mut stream), 200);

    files.write(&second);
    let sent = Command::new("kill")
        .arg("-HUP")
        .arg(mcp.0.id().to_string())
        .status()
        .unwrap();
    assert!(sent.success());
    log.wait_for("TLS certificate reloaded");
    let mut stream = tls_connect(&addr, &ca).unwrap();
    assert_eq!(stream.conn.peer_certificates().unwrap()[0], second.der);
    assert_eq!(initialize(&mut stream), 200);
    assert!(alive(&mut mcp.0));
}

/// Runs `wsp ARGS` with `env`; its exit code and standard error.
fn failed(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut command = Command::new(WSP);
    command
        .args(args)
        .env_remove("WSP_TLS_CERT")
        .env_remove("WSP_TLS_KEY")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    let out = command.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_tls_files_stop_the_server_at_start_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("wsp test CA");
    let leaf = ca.leaf();
    let files = leaf.files();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (cert, key) = (
        files.cert().to_str().unwrap(),
        files.key().to_str().unwrap(),
    );
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    let not_pem = write("not-pem.txt", "hello\n");
    let other_key = write("other-key.pem", &ca.leaf().key_pem);
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();

    let cases = [
        (
            missing,
            key,
            format!("TLS certificate {missing}: cannot be read"),
        ),
        (
            cert,
            missing,
            format!("TLS private key {missing}: cannot be read"),
        ),
        (
            cert,
            not_pem.as_str(),
            format!("TLS private key {not_pem}: not a PEM file"),
        ),
        (
            key,
            key,
            format!("TLS certificate {key}: no certificate in it"),
        ),
        (
            cert,
            cert,
            format!("TLS private key {cert}: no private key in it"),
        ),
        (
            cert,
            other_key.as_str(),
            format!("TLS private key {other_key}: it does not match the certificate in {cert}"),
        ),
    ];
    for (cert, key, want) in &cases {
        let args = [
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data",
            data,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ];
        let (code, stdout, stderr) = failed(&args, &[]);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        let errors: Vec<_> = stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(errors[0].starts_with(&format!("error: {want}")), "{stderr}");
        // Nothing was created or announced: no admin key shown and lost, no listening line.
        assert_eq!(stdout, "", "{args:?}");
        assert!(
            !Path::new(data).exists(),
            "{args:?} created the data directory"
        );
    }

    // The same check in wsp mcp --http, and the variables instead of the flags.
    let (code, _, stderr) = failed(
        &[
            "mcp",
            "--profile",
            "items",
            "--http",
            "127.0.0.1:0",
            "--data",
            data,
        ],
        &[("WSP_TLS_CERT", cert), ("WSP_TLS_KEY", &other_key)],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("does not match the certificate"),
        "{stderr}"
    );
    // TLS without --http has nothing to secure.
    let (code, _, stderr) = failed(
        &[
            "mcp",
            "--profile",
            "items",
            "--data",
            data,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("are for --http"), "{stderr}");
    // One without the other is a usage error.
    let (code, _, stderr) = failed(&["serve", "--data", data, "--tls-cert", cert], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--tls-key"), "{stderr}");
    let (code, _, stderr) = failed(&["serve", "--data", data], &[("WSP_TLS_KEY", key)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--tls-cert"), "{stderr}");
}

#[test]
fn the_variables_turn_tls_on_like_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("wsp test CA");
    let leaf = ca.leaf();
    let files = leaf.files();
    let mut command = serve_command(&dir.path().join("data"), &["--store", "memory"]);
    command
        .env("WSP_TLS_CERT", files.cert())
        .env("WSP_TLS_KEY", files.key());
    let server = start(&mut command);
    assert!(server.url.starts_with("https://"), "{}", server.listening);
    assert_eq!(presented(server.addr(), &ca), leaf.der);
}
