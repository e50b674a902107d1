//! `wsp` as the integration tests drive it: `wsp serve` started on a free port of 127.0.0.1,
//! its address and the admin key of a first start read from what it prints, killed when the
//! test ends; and the one-shot commands the tests run beside it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// The `wsp` binary under test.
pub const WSP: &str = env!("CARGO_BIN_EXE_wsp");

/// A running `wsp serve` and what it printed at start; killed and waited for when dropped.
pub struct Server {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:PORT` (`https://` with `--tls-cert`).
    pub url: String,
    /// The admin key a first start prints; `None` when the data directory already had keys.
    pub first_key: Option<String>,
    /// The whole `wsp listening on ...` line.
    pub listening: String,
    /// `http://127.0.0.1:PORT/metrics` of `--metrics-addr`, when given.
    pub metrics_url: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `127.0.0.1:PORT`, for raw sockets.
    pub fn addr(&self) -> &str {
        self.url
            .strip_prefix("http://")
            .or_else(|| self.url.strip_prefix("https://"))
            .expect("wsp serve speaks http or https")
    }

    /// The admin key of a first start.
    pub fn key(&self) -> &str {
        self.first_key
            .as_deref()
            .expect("a first start prints an admin key")
    }

    /// Sends SIGTERM, as an operator stopping the server does.
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// Sends SIGHUP, as an operator who renewed the TLS certificate does.
    pub fn hang_up(&self) {
        self.signal("HUP");
    }

    /// Sends the signal `name` (`TERM`, `HUP`, ...) with `kill`.
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
    }
}

/// `wsp serve --addr 127.0.0.1:0 --data DATA EXTRA` with `WSP_LOG=warn`, logging to the test's
/// standard error; for [`start`], after any change a test needs.
pub fn serve_command(data: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(WSP);
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data)
        .args(extra)
        .env("WSP_LOG", "warn")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    command
}

/// Starts [`serve_command`]`(data, extra)`.
pub fn serve(data: &Path, extra: &[&str]) -> Server {
    start(&mut serve_command(data, extra))
}

/// Spawns `command` (a `wsp serve`, possibly wrapped) with standard output piped and returns once
/// it listens; its standard output is drained from then on, so the server never blocks on a
/// full pipe.
#[expect(
    clippy::zombie_processes,
    reason = "Server's Drop kills and waits for the child"
)]
pub fn start(command: &mut Command) -> Server {
    let mut child = command.stdout(Stdio::piped()).spawn().expect("wsp starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut first_key = None;
    let mut metrics_url = None;
    loop {
        let line = lines
            .next()
            .expect("wsp serve reports its address")
            .unwrap();
        if line.starts_with("wsp_") {
            first_key = Some(line.clone());
        }
        if let Some(rest) = line.strip_prefix("wsp metrics on ") {
            metrics_url = rest.split_whitespace().next().map(str::to_owned);
        }
        if let Some(rest) = line.strip_prefix("wsp listening on ") {
            let url = rest.split_whitespace().next().unwrap().to_owned();
            std::thread::spawn(move || lines.for_each(drop));
            return Server {
                child,
                url,
                first_key,
                listening: line,
                metrics_url,
            };
        }
    }
}

/// Runs `wsp ARGS` with `env` on top of the test's environment (less the client settings
/// `WSP_URL`, `WSP_API_KEY` and `WSP_CACERT`), `stdin` (if any) on its standard input.
pub fn wsp(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
    let mut command = Command::new(WSP);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in ["WSP_URL", "WSP_API_KEY", "WSP_CACERT"] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// `wsp keys create ARGS` (the store or data directory, tenant, workspace, ...): the key it
/// prints on its last line. Panics with its standard error when it fails.
pub fn create_key(args: &[&str]) -> String {
    let out = wsp(&[&["keys", "create"][..], args].concat(), &[], None);
    assert!(
        out.status.success(),
        "wsp keys create {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned()
}

/// A PostgreSQL schema name no other test run uses: `PREFIX_PID_NANOS`.
pub fn unique_schema(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

/// A key of tenant `t`, workspace `w`, created through the PostgreSQL store `db`, schema
/// `schema` (which this migrates when it is new).
pub fn store_key(db: &str, schema: &str) -> String {
    create_key(&[
        "--store",
        db,
        "--pg-schema",
        schema,
        "--tenant",
        "t",
        "--workspace",
        "w",
    ])
}

/// Drops `schema` and everything in it from the database `db`.
pub async fn drop_schema(db: &str, schema: &str) {
    let (client, conn) = tokio_postgres::connect(db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .unwrap();
}

/// A pseudo-terminal: its controller, and the path of its terminal side.
pub fn pty() -> (std::fs::File, std::path::PathBuf) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&controller).unwrap();
    unlockpt(&controller).unwrap();
    let name = ptsname(&controller, Vec::new()).unwrap();
    let path = std::path::PathBuf::from(name.into_string().unwrap());
    (std::fs::File::from(controller), path)
}

/// A host on 127.0.0.1 that answers every request with `answer(request head)`, a whole HTTP/1.1
/// response (head and body), on threads of its own; for what a real `wsp serve` never sends.
/// Returns its base URL. The listener lives as long as the test process.
pub fn fake_host<F>(answer: F) -> String
where
    F: Fn(&str) -> Vec<u8> + Send + Sync + 'static,
{
    use std::io::Read as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                // A client that stops reading (a bound reached) closes: nothing to do then.
                let _ = stream.write_all(&answer(&String::from_utf8_lossy(&head)));
            });
        }
    });
    url
}

/// A whole HTTP/1.1 answer: `status`, a JSON `body`, the connection closed after it.
pub fn json_answer(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A discovery document advertising `maxFileBytes` (and nothing optional else).
pub fn discovery_with_max_file_bytes(max: u64) -> String {
    format!(
        r#"{{"protocolVersion":"1.0","schemaVersions":{{}},"supportedEnvelopes":[],
        "limits":{{"clarificationRounds":0,"envelopesPerTurn":0,"schemaRounds":0}},
        "workspace":{{"supported":true,"maxFileBytes":{max},"maxFiles":10}}}}"#
    )
}

/// Runs `wsp ARGS` with `env` (as [`wsp`] does) and its standard output a pipe whose reader
/// is already closed: every write to it fails with `EPIPE`.
pub fn wsp_into_closed_pipe(args: &[&str], env: &[(&str, &str)]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut command = Command::new(WSP);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped());
    for var in ["WSP_URL", "WSP_API_KEY", "WSP_CACERT"] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    command.output().unwrap()
}
