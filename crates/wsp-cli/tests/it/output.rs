//! The rules every `wsp` command follows when it prints: a closed standard output ends it
//! quietly, the exit status says what kind of failure it was, and control characters from a
//! host or a file never reach the terminal (standard error always escaped; standard output at a
//! terminal, except the exact bytes `wsp files get` was asked for).

use std::io::Read as _;
use std::process::{Command, Output, Stdio};

use crate::support::{self, WSP, serve, wsp};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `wsp files ls | head -1`, `wsp keys list | head`, `wsp context render --json | head`: the
/// reader closes the pipe; the command ends with status 0 and says nothing.
#[test]
fn a_closed_standard_output_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve(&data, &[]);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    for i in 0..3 {
        let put = wsp(&["files", "put", &format!("f{i}.md")], &env, Some("x"));
        assert!(put.status.success(), "{}", stderr(&put));
    }
    let data = data.to_str().unwrap();
    for args in [
        &["files", "ls"][..],
        &["files", "ls", "--json"],
        &["files", "get", "f0.md"],
        &["keys", "list", "--data", data],
        &["keys", "list", "--data", data, "--json"],
        &["context", "render"],
        &["context", "render", "--json"],
        &["completions", "bash"],
        &["conformance", "--list"],
    ] {
        let out = support::wsp_into_closed_pipe(args, &env);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("Broken pipe") && !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // The summary on standard error is not standard output: it still appears.
    let out = support::wsp_into_closed_pipe(&["context", "render"], &env);
    assert!(!stderr(&out).contains("error"), "{}", stderr(&out));
}

/// Each kind of failure has its own status, the same for every command; `wsp --help` lists
/// them.
#[test]
fn exit_statuses_tell_failures_apart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve(&data, &["--max-file-bytes", "100"]);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let data = data.to_str().unwrap();
    let reader = support::create_key(&[
        "--data",
        data,
        "--tenant",
        "default",
        "--workspace",
        "default",
        "--scopes",
        "workspace:read",
    ]);
    let put = wsp(&["files", "put", "a.md"], &env, Some("one"));
    assert!(put.status.success(), "{}", stderr(&put));
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    // The command, its environment and standard input; the status and the JSON code.
    type Case<'a> = (
        &'a [&'a str],
        &'a [(&'a str, &'a str)],
        Option<&'a str>,
        i32,
        &'a str,
    );
    let cases: [Case; 9] = [
        (&["files", "ls", "--bogus"], &env, None, 2, "usage"),
        (&["files", "get", "../x"], &env, None, 2, "invalid_argument"),
        (
            &["files", "ls"],
            &[
                ("WSP_URL", &server.url),
                ("WSP_API_KEY", "wsp_000000000000_x"),
            ],
            None,
            3,
            "unauthenticated",
        ),
        (
            &["files", "put", "b.md"],
            &[("WSP_URL", &server.url), ("WSP_API_KEY", &reader)],
            Some("x"),
            4,
            "forbidden",
        ),
        (&["files", "get", "none.md"], &env, None, 5, "not_found"),
        (
            &["files", "put", "a.md", "--if-match", "\"stale\""],
            &env,
            Some("two"),
            6,
            "workspace_conflict",
        ),
        (
            &["files", "put", "big.md"],
            &env,
            Some(&"x".repeat(101)),
            7,
            "workspace_too_large",
        ),
        (
            &["files", "ls"],
            &[("WSP_URL", &closed), ("WSP_API_KEY", "k")],
            None,
            8,
            "connection_refused",
        ),
        (
            &["runs", "show", "0123456789abcdef0123456789abcdef"],
            &env,
            None,
            5,
            "not_found",
        ),
    ];
    for (args, env, stdin, code, wire) in cases {
        let out = wsp(args, env, stdin);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        let json = wsp(&[args, &["--json"]].concat(), env, stdin);
        assert_eq!(
            json.status.code(),
            Some(code),
            "{args:?}: {}",
            stderr(&json)
        );
        let v: serde_json::Value = serde_json::from_str(&stderr(&json))
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&json)));
        assert_eq!(v["error"], wire, "{args:?}: {v}");
    }
    let out = wsp(
        &["keys", "revoke", "--data", data, "000000000000"],
        &[],
        None,
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    // The file too large was refused before it was sent, naming the limit that applies.
    let out = wsp(&["files", "put", "big.md"], &env, Some(&"x".repeat(101)));
    assert!(
        stderr(&out).contains("maxFileBytes) is 100 bytes"),
        "{}",
        stderr(&out)
    );
    let help = wsp(&["--help"], &[], None);
    let text = String::from_utf8_lossy(&help.stdout);
    for row in ["Exit status:", "3    unauthenticated", "8    unreachable"] {
        assert!(text.contains(row), "{text}");
    }
}

/// Escape sequences in stored text and in a host's messages reach the terminal as visible
/// text: they cannot set the clipboard (OSC 52), retitle the window or clear the screen. A
/// pipe gets the exact bytes of a file it asked for.
#[test]
fn control_characters_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let hostile = "tuesday \u{1b}]52;c;cm0gLXJmIH4=\u{7} \u{1b}[2J\u{9b}31m done\n";
    let put = wsp(&["files", "put", "notes/day.md"], &env, Some(hostile));
    assert!(put.status.success(), "{}", stderr(&put));

    // At a terminal: escaped.
    let (mut controller, terminal) = support::pty();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(terminal)
        .unwrap();
    let searched = Command::new(WSP)
        .args(["memory", "search", "tuesday"])
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::from(terminal))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(searched.status.success(), "{}", stderr(&searched));
    let mut shown = Vec::new();
    let mut buf = [0u8; 4096];
    // The terminal side is closed once the command ended: reading stops there.
    while let Ok(n @ 1..) = controller.read(&mut buf) {
        shown.extend_from_slice(&buf[..n]);
    }
    let shown = String::from_utf8_lossy(&shown).into_owned();
    assert!(shown.contains("\\x1b]52;c;cm0gLXJmIH4=\\x07"), "{shown:?}");
    assert!(shown.contains("\\u{9b}31m"), "{shown:?}");
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{9b}'),
        "{shown:?}"
    );

    // Into a pipe: the file's exact bytes.
    let got = wsp(&["files", "get", "notes/day.md"], &env, None);
    assert_eq!(String::from_utf8(got.stdout).unwrap(), hostile);

    // A host's message on standard error: escaped, always.
    let host = support::fake_host(|head| {
        if head.starts_with("GET /.well-known/openwop ") {
            return support::json_answer(404, r#"{"error":"not_found","message":"none"}"#);
        }
        support::json_answer(
            404,
            "{\"error\":\"not_found\",\"message\":\"gone \\u001b]0;owned\\u0007\\u001b[2J \u{9b}1m\"}",
        )
    });
    let out = wsp(
        &["files", "get", "x.md", "--url", &host, "--key", "k"],
        &[],
        None,
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("gone \\x1b]0;owned\\x07\\x1b[2J \\u{9b}1m"),
        "{err:?}"
    );
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{9b}'),
        "{err:?}"
    );
    assert_eq!(err.lines().count(), 1, "{err:?}");
    // With --json: still one valid JSON object, holding the same text, and no control character.
    let out = wsp(
        &[
            "files", "get", "x.md", "--url", &host, "--key", "k", "--json",
        ],
        &[],
        None,
    );
    let err = stderr(&out);
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
    let v: serde_json::Value = serde_json::from_str(&err).unwrap();
    assert_eq!(
        v["message"],
        "not_found (HTTP 404): gone \u{1b}]0;owned\u{7}\u{1b}[2J \u{9b}1m"
    );
}

/// An answer larger than the host's advertised `maxFileBytes` allows fails clearly, without
/// reading it whole.
#[test]
fn an_answer_over_the_hosts_bound_is_refused() {
    let host = support::fake_host(|head| {
        if head.starts_with("GET /.well-known/openwop ") {
            return support::json_answer(200, &support::discovery_with_max_file_bytes(1000));
        }
        let content = "x".repeat(20 * 1024 * 1024);
        support::json_answer(
            200,
            &format!(
                r#"{{"path":"a.md","content":"{content}","contentType":"text/markdown","version":1}}"#
            ),
        )
    });
    let out = wsp(
        &["files", "get", "a.md", "--url", &host, "--key", "k"],
        &[],
        None,
    );
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("larger than") && stderr(&out).contains("maxFileBytes"),
        "{}",
        stderr(&out)
    );
}
