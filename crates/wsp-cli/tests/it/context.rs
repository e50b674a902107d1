//! `wsp context render` against a real `wsp serve`: live, through a run's snapshot, as JSON.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output};

use crate::support;
use crate::support::{Server, WSP, serve};

/// `wsp ARGS` against `server`, with its admin key.
fn wsp(server: &Server, args: &[&str], stdin: Option<&str>) -> Output {
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    support::wsp(args, &env, stdin)
}

fn put(server: &Server, path: &str, content: &str) {
    let out = wsp(server, &["files", "put", path], Some(content));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `POST /v1/runs` over a plain socket; returns the run id.
fn create_run(server: &Server) -> String {
    let authority = server.addr();
    let body = r#"{"workflowId":"context-test"}"#;
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "POST /v1/runs HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.key(),
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, mut payload) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 201"), "{response}");
    let dechunked;
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = payload;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        dechunked = out;
        payload = &dechunked;
    }
    let v: serde_json::Value = serde_json::from_str(payload).unwrap();
    v["runId"].as_str().unwrap().to_owned()
}

fn memory() -> String {
    (1..=200)
        .map(|i| format!("- fact {i:03}: the team prefers small pull requests.\n"))
        .collect()
}

#[test]
fn render_live_and_from_a_run_snapshot_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    put(&server, "AGENTS.md", "# Reviewer\nReview pull requests.\n");
    put(&server, "MEMORY.md", &memory());
    put(&server, "knowledge/KNOWLEDGE.md", "# Payments\n");
    put(
        &server,
        "skills/deploy/SKILL.md",
        "# Deploy to staging\nsteps\n",
    );

    let out = wsp(
        &server,
        &[
            "context", "render", "--live", "--budget", "400", "--extra", "SOUL.md",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let context = text(&out.stdout);
    assert!(context.chars().count().div_ceil(4) <= 400, "{context}");
    assert!(context.starts_with("<workspace_context>\n"), "{context}");
    assert!(context.contains("Review pull requests."));
    assert!(context.contains("tokens omitted, read MEMORY.md]"));
    assert!(context.contains("[MISSING: SOUL.md]"));
    assert!(context.contains("- deploy (skills/deploy/SKILL.md): Deploy to staging"));
    let summary = text(&out.stderr);
    assert!(summary.starts_with("context: "), "{summary}");
    assert!(summary.contains("/400 tokens (chars/4)"), "{summary}");
    assert!(summary.contains("truncated (MEMORY.md)"), "{summary}");
    assert!(summary.contains("missing (SOUL.md)"), "{summary}");
    assert_eq!(summary.lines().count(), 1, "{summary}");

    let out = wsp(
        &server,
        &["context", "render", "--budget", "400", "--json"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["budgetTokens"], 400);
    assert!(report["usedTokens"].as_u64().unwrap() <= 400);
    assert_eq!(report["entries"][1]["path"], "MEMORY.md");
    assert_eq!(report["entries"][1]["outcome"], "truncated");

    // A run sees the workspace as it was when it started.
    let run = create_run(&server);
    put(&server, "AGENTS.md", "# Changed after the run started\n");
    let pinned = wsp(&server, &["context", "render", "--run", &run], None);
    assert!(pinned.status.success(), "{}", text(&pinned.stderr));
    assert!(text(&pinned.stdout).contains("Review pull requests."));
    assert!(!text(&pinned.stdout).contains("Changed after"));
    let live = wsp(&server, &["context", "render"], None);
    assert!(text(&live.stdout).contains("Changed after the run started"));
    let json = wsp(
        &server,
        &["context", "render", "--run", &run, "--json"],
        None,
    );
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["source"], format!("run {run} at {}", server.url));
}

#[test]
fn bad_input_is_refused_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let unknown = wsp(
        &server,
        &[
            "context",
            "render",
            "--run",
            "0123456789abcdef0123456789abcdef",
        ],
        None,
    );
    assert!(!unknown.status.success());
    let err = text(&unknown.stderr);
    assert!(
        err.contains("run 0123456789abcdef0123456789abcdef") && err.contains("not_found"),
        "{err}"
    );

    let both = wsp(
        &server,
        &["context", "render", "--run", "x", "--live"],
        None,
    );
    assert!(!both.status.success());
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );

    let bad = wsp(
        &server,
        &["context", "render", "--extra", "../etc/passwd"],
        None,
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("invalid extra path"),
        "{}",
        text(&bad.stderr)
    );

    let no_key = Command::new(WSP)
        .args(["context", "render", "--url", &server.url])
        .env_remove("WSP_API_KEY")
        .output()
        .unwrap();
    assert!(!no_key.status.success());
    assert!(
        text(&no_key.stderr).contains("401"),
        "{}",
        text(&no_key.stderr)
    );
}

/// `--dir` renders a workspace folder on disk (no host needed); without a value it reads
/// seed 003's `.agentscope/workspace` under the working directory; a missing folder is one
/// clear line.
#[test]
fn render_a_folder_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join(".agentscope/workspace");
    std::fs::create_dir_all(ws.join("knowledge")).unwrap();
    std::fs::write(ws.join("AGENTS.md"), "# Reviewer\nBe brief.\n").unwrap();
    std::fs::write(ws.join("knowledge/style.md"), "Tabs.\n").unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wsp"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("WSP_URL")
            .env_remove("WSP_API_KEY")
            .output()
            .unwrap()
    };
    let named = run(&[
        "context",
        "render",
        "--dir",
        ws.to_str().unwrap(),
        "--budget",
        "400",
    ]);
    assert!(named.status.success(), "{}", text(&named.stderr));
    let out = text(&named.stdout);
    assert!(out.contains("Be brief."), "{out}");
    assert!(out.contains("[MISSING: MEMORY.md]"), "{out}");
    assert!(out.contains("- knowledge/style.md"), "{out}");
    let opened = run(&[
        "context",
        "render",
        "--dir",
        "--budget",
        "400",
        "--session",
        "s-2",
        "--guidance",
    ]);
    assert!(opened.status.success(), "{}", text(&opened.stderr));
    let opened = text(&opened.stdout);
    assert!(
        opened.starts_with("## Session Context\n\n- Date: "),
        "{opened}"
    );
    assert!(
        opened.contains("- Session: s-2\n\n## Workspace guidance\n"),
        "{opened}"
    );
    let default = run(&["context", "render", "--dir", "--budget", "400"]);
    assert!(default.status.success(), "{}", text(&default.stderr));
    assert_eq!(text(&default.stdout), out);
    let missing = run(&["context", "render", "--dir", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    let stderr = text(&missing.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot open the workspace folder nope"),
        "{stderr}"
    );
    let both = run(&["context", "render", "--dir", "x", "--live"]);
    assert_eq!(both.status.code(), Some(2), "--dir and --live conflict");
}
