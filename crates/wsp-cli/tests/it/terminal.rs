//! `wsp` for a person at a terminal: suggestions for a misspelt command or flag, errors that name
//! their cause on one line (or, with `--json`, as one JSON object), the hint to set
//! `WSP_API_KEY`, host names in `--addr`, shell completions, man pages, and colours only for a
//! terminal that does not set `NO_COLOR`.

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{WSP, serve, start, wsp};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The failure's standard error, which must be exactly one line; the exit status must be `code`.
fn one_line_failure(o: &Output, code: i32) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    err
}

/// The JSON object on standard error of a failed `--json` command; nothing on standard output.
fn json_failure(o: &Output, code: i32) -> serde_json::Value {
    let err = one_line_failure(o, code);
    assert_eq!(stdout(o), "", "a failure prints no result");
    serde_json::from_str(&err).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"))
}

/// A port of 127.0.0.1 nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn misspelt_commands_and_flags_get_a_suggestion() {
    let out = wsp(&["serv"], &[], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("similar subcommand exists: 'serve'"),
        "{}",
        stderr(&out)
    );
    let out = wsp(&["files", "ls", "--prefx", "notes/"], &[], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("similar argument exists: '--prefix'"),
        "{}",
        stderr(&out)
    );
    // Nothing close: no suggestion, only the error.
    let out = wsp(&["zzzzzz"], &[], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("similar"), "{}", stderr(&out));
}

#[test]
fn transport_errors_name_their_cause_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let port = closed_port();
    let refused = format!("http://127.0.0.1:{port}");
    let plain_as_https = format!("https://{}", server.addr());
    let cases = [
        (
            refused.as_str(),
            format!("cannot reach 127.0.0.1:{port}: connection refused"),
        ),
        (
            "http://wsp-test.invalid:8787",
            "cannot reach wsp-test.invalid:8787: the host name does not resolve".to_owned(),
        ),
        (
            plain_as_https.as_str(),
            format!("cannot reach {}: the TLS handshake failed", server.addr()),
        ),
    ];
    for (url, expected) in &cases {
        for args in [
            &["files", "ls", "--url", url][..],
            &["context", "render", "--url", url],
            &["agents", "ls", "--url", url],
        ] {
            let out = wsp(args, &[("WSP_API_KEY", server.key())], None);
            let err = one_line_failure(&out, 8);
            assert!(
                err.starts_with(&format!("error: {expected}")),
                "{args:?}: {err}"
            );
            // The cause, not reqwest's and hyper's layers one after the other.
            for layer in ["client error", "tcp connect error", "error sending request"] {
                assert!(!err.contains(layer), "{args:?}: {err}");
            }
        }
    }
    // A URL's password never appears in the message.
    let out = wsp(
        &[
            "files",
            "ls",
            "--url",
            &format!("http://me:hunter2@127.0.0.1:{port}"),
        ],
        &[],
        None,
    );
    let err = one_line_failure(&out, 8);
    assert!(err.contains("connection refused"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn a_401_without_a_key_says_to_set_wsp_api_key() {
    let dir = tempfile::tempdir().unwrap();
    // With an [agents] section, so that `wsp agents ls` reaches the key check.
    let config = dir.path().join("wsp.toml");
    std::fs::write(&config, "[agents]\ninstall_scope = \"host\"\n").unwrap();
    let server = serve(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
    );
    for args in [
        &["files", "ls", "--url", &server.url][..],
        &["files", "watch", "--url", &server.url],
        &["context", "render", "--url", &server.url],
        &["agents", "ls", "--url", &server.url],
    ] {
        // No key at all, and an empty WSP_API_KEY (an empty value counts as unset).
        for env in [&[][..], &[("WSP_API_KEY", "")]] {
            let out = wsp(args, env, None);
            let err = one_line_failure(&out, 3);
            assert!(
                err.contains("unauthenticated (HTTP 401)"),
                "{args:?} {env:?}: {err}"
            );
            assert!(
                err.contains("no API key was given: set WSP_API_KEY or pass --key"),
                "{args:?} {env:?}: {err}"
            );
        }
    }
    // A key that is refused is not a missing key.
    let out = wsp(
        &["files", "ls", "--url", &server.url],
        &[("WSP_API_KEY", "wsp_000000000000_nope")],
        None,
    );
    let err = one_line_failure(&out, 3);
    assert!(err.contains("unauthenticated (HTTP 401)"), "{err}");
    assert!(!err.contains("WSP_API_KEY"), "{err}");
}

#[test]
fn json_errors_are_one_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];

    let v = json_failure(&wsp(&["files", "get", "none.md", "--json"], &env, None), 5);
    assert_eq!(v["error"], "not_found", "{v}");
    assert_eq!(v["status"], 404, "{v}");
    assert!(v["message"].is_string(), "{v}");

    let put = wsp(&["files", "put", "a.md"], &env, Some("one"));
    assert!(put.status.success(), "{}", stderr(&put));
    let v = json_failure(
        &wsp(
            &["files", "put", "a.md", "--json", "--if-match", "\"stale\""],
            &env,
            Some("two"),
        ),
        6,
    );
    assert_eq!(v["error"], "workspace_conflict", "{v}");
    assert_eq!(v["details"]["currentVersion"], 1, "{v}");

    let v = json_failure(
        &wsp(
            &["files", "ls", "--json"],
            &[("WSP_URL", server.url.as_str())],
            None,
        ),
        3,
    );
    assert_eq!(v["error"], "unauthenticated", "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("WSP_API_KEY"),
        "{v}"
    );

    let url = format!("http://127.0.0.1:{}", closed_port());
    for args in [
        &["files", "ls", "--json", "--url", &url][..],
        &["agents", "ls", "--json", "--url", &url],
        &["context", "render", "--json", "--url", &url],
    ] {
        let v = json_failure(&wsp(args, &env[1..], None), 8);
        assert_eq!(v["error"], "connection_refused", "{args:?}: {v}");
        assert!(v.get("status").is_none(), "{v}");
    }

    // A local failure and a usage error, too.
    let v = json_failure(&wsp(&["files", "get", "../x", "--json"], &env, None), 2);
    assert_eq!(v["error"], "invalid_argument", "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("invalid path"),
        "{v}"
    );
    let v = json_failure(&wsp(&["files", "get", "--json"], &env, None), 2);
    assert_eq!(v["error"], "usage", "{v}");
    let missing = dir.path().join("none");
    let v = json_failure(
        &wsp(
            &[
                "keys",
                "list",
                "--json",
                "--data",
                missing.to_str().unwrap(),
            ],
            &[],
            None,
        ),
        1,
    );
    assert_eq!(v["error"], "failed", "{v}");
    // Without --json the same failure is a line of text.
    let out = wsp(&["files", "get", "none.md"], &env, None);
    assert!(
        one_line_failure(&out, 5).starts_with("error: not_found (HTTP 404)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn serve_and_mcp_listen_on_a_host_name() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let mut command = Command::new(WSP);
    command
        .args(["serve", "--addr", "localhost:0", "--data"])
        .arg(dir.path().join("data"))
        .env("WSP_LOG", "info")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let server = start(&mut command);
    let addr = server.addr();
    assert!(
        addr.starts_with("127.0.0.1:") || addr.starts_with("[::1]:"),
        "{}",
        server.listening
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("localhost resolves to ")
            && logged.contains(&format!("; listening on {addr}")),
        "says what the name resolved to and which address it bound: {logged}"
    );
    let out = wsp(
        &["files", "ls", "--url", &server.url],
        &[("WSP_API_KEY", server.key())],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let out = Command::new(WSP)
        .args(["serve", "--addr", "wsp-test.invalid:8787", "--data"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = one_line_failure(&out, 1);
    assert!(
        err.contains("cannot listen on wsp-test.invalid:8787: the host name does not resolve"),
        "{err}"
    );
    let out = wsp(&["serve", "--addr", "localhost"], &[], None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a port is required: {}",
        stderr(&out)
    );

    let mut mcp = Command::new(WSP)
        .args([
            "mcp",
            "--profile",
            "items",
            "--http",
            "localhost:0",
            "--data",
        ])
        .arg(dir.path().join("mcp"))
        .env("WSP_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(mcp.stdout.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    mcp.kill().unwrap();
    mcp.wait().unwrap();
    assert!(
        line.starts_with("wsp mcp listening on http://127.0.0.1:")
            || line.starts_with("wsp mcp listening on http://[::1]:"),
        "{line}"
    );
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = wsp(&["completions", shell], &[], None);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        // fish names a flag `-l json`, the others `--json`.
        for name in ["serve", "files", "watch", "completions", "json"] {
            assert!(script.contains(name), "{shell} script lacks {name}");
        }
        if shell == "bash" {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("wsp.bash");
            std::fs::write(&file, &script).unwrap();
            let checked = Command::new("bash").arg("-n").arg(&file).output().unwrap();
            assert!(checked.status.success(), "{}", stderr(&checked));
        }
    }
    let out = wsp(&["completions", "tcsh"], &[], None);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_pages_cover_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = wsp(&["man", "--out", dir.path().to_str().unwrap()], &[], None);
    assert!(out.status.success(), "{}", stderr(&out));
    for page in [
        "wsp.1",
        "wsp-serve.1",
        "wsp-files.1",
        "wsp-files-watch.1",
        "wsp-keys-create.1",
        "wsp-completions.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    let top = std::fs::read_to_string(dir.path().join("wsp.1")).unwrap();
    assert!(
        top.contains("wsp\\-serve(1)"),
        "the top page names the others"
    );
    let serve = std::fs::read_to_string(dir.path().join("wsp-serve.1")).unwrap();
    assert!(serve.contains("\\-\\-addr"), "pages list the flags");
}

/// What `wsp serve` logs at start to its standard error, a terminal, with `no_color` as
/// `NO_COLOR` (`None`: unset).
fn logs_at_a_terminal(no_color: Option<&str>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (mut controller, terminal) = crate::support::pty();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(terminal)
        .unwrap();
    let mut command = Command::new(WSP);
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(dir.path())
        .env("WSP_LOG", "info")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stderr(Stdio::from(terminal));
    if let Some(value) = no_color {
        command.env("NO_COLOR", value);
    }
    let server = start(&mut command);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // The terminal side closes when the server exits: the read then fails.
        while let Ok(n) = controller.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut text = Vec::new();
    while !String::from_utf8_lossy(&text).contains("connection cap") {
        let chunk = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("wsp serve logs its connection cap");
        text.extend(chunk);
    }
    drop(server);
    String::from_utf8_lossy(&text).into_owned()
}

#[test]
fn colours_only_at_a_terminal_without_no_color() {
    const ESC: char = '\u{1b}';
    let coloured = logs_at_a_terminal(None);
    assert!(
        coloured.contains(ESC),
        "a terminal gets colours: {coloured:?}"
    );
    let empty = logs_at_a_terminal(Some(""));
    assert!(empty.contains(ESC), "an empty NO_COLOR is unset: {empty:?}");
    for value in ["1", "true", "no"] {
        let plain = logs_at_a_terminal(Some(value));
        assert!(plain.contains("connection cap"), "{plain:?}");
        assert!(!plain.contains(ESC), "NO_COLOR={value}: {plain:?}");
    }
    // Not a terminal: no colours whatever NO_COLOR says.
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(WSP)
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(dir.path())
        .env("WSP_LOG", "info")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    while !seen.contains("connection cap") {
        seen.push_str(&lines.next().expect("wsp serve logs").unwrap());
        seen.push('\n');
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!seen.contains(ESC), "{seen:?}");
    // Help and errors never carry colours.
    let out = wsp(&["serve", "--help"], &[], None);
    assert!(!stdout(&out).contains(ESC));
    let out = wsp(&["serv"], &[], None);
    assert!(!stderr(&out).contains(ESC));
}
