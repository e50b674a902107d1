//! `wsp mcp` as an MCP host starts it: newline-delimited JSON-RPC on stdin and stdout.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const WSP: &str = env!("CARGO_BIN_EXE_wsp");

/// Runs `wsp mcp ARGS` for one stdio session: `initialize`, then each request in `requests`
/// (ids 2, 3, ...), then closes stdin. Returns the responses in order and what went to stderr.
fn session(args: &[&str], requests: &[(&str, Value)]) -> (Vec<Value>, String) {
    let mut child = Command::new(WSP)
        .arg("mcp")
        .args(args)
        .env("WSP_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wsp starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |msg: Value| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    };
    let mut read = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: stdout {line:?}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "wsp-cli-test", "version": "0"}}}),
    );
    let mut responses = vec![read()];
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (i, (method, params)) in requests.iter().enumerate() {
        send(json!({"jsonrpc": "2.0", "id": i + 2, "method": method, "params": params}));
        responses.push(read());
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "wsp mcp exited with {}", out.status);
    assert!(
        out.stdout.is_empty(),
        "stdout after the session: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    (responses, String::from_utf8(out.stderr).unwrap())
}

fn write_table(dir: &Path, text: &str) -> String {
    let path = dir.join("mounts.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn call(name: &str, args: Value) -> (&'static str, Value) {
    ("tools/call", json!({"name": name, "arguments": args}))
}

#[test]
fn stdio_session_lists_the_catalogue_and_virtual_files_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("README.md"), "# Demo\n").unwrap();
    let table = write_table(
        dir.path(),
        &format!(
            "[[workspace]]\npath = \"/project\"\nscope = \"ro\"\nmount = {{ physical = {:?} }}\n\n\
             [[workspace]]\npath = \"/outbox\"\nscope = \"rw\"\nmount = {{ virtual = \"outbox\" }}\n",
            project.display().to_string()
        ),
    );
    let data = dir.path().join("data").display().to_string();
    let args = ["--mounts", &table, "--data", &data];

    let (responses, stderr) = session(
        &args,
        &[
            ("tools/list", json!({})),
            call(
                "write_file",
                json!({"path": "/outbox/plan.md", "content": "ship it\n"}),
            ),
            call(
                "write_file",
                json!({"path": "/project/x.md", "content": "x"}),
            ),
        ],
    );
    let init = &responses[0]["result"];
    let instructions = init["instructions"].as_str().unwrap();
    assert!(instructions.starts_with("## Filesystem map"), "{init}");
    assert!(!instructions.contains(&project.display().to_string()));
    let names: Vec<&str> = responses[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ls",
            "read_file",
            "glob",
            "grep",
            "write_file",
            "edit_file",
            "delete_file"
        ]
    );
    assert_eq!(responses[2]["result"]["isError"], false, "{}", responses[2]);
    let refused = &responses[3]["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["error"]["code"],
        "permission_denied"
    );
    assert!(!project.join("x.md").exists());
    assert!(stderr.contains("wsp mcp ready"), "{stderr}");

    // A new process over the same data directory still has the virtual file.
    let (responses, _) = session(
        &args,
        &[call("read_file", json!({"path": "/outbox/plan.md"}))],
    );
    let text = responses[1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("     1\tship it\n"), "{text}");
}

#[test]
fn a_bad_mount_table_is_one_line_on_stderr_and_nothing_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let check = |table: &str, want: &str| {
        let path = write_table(dir.path(), table);
        let out = Command::new(WSP)
            .args(["mcp", "--mounts", &path, "--data"])
            .arg(dir.path().join("data"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{table}");
        assert!(out.stdout.is_empty(), "{table}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(want), "{stderr:?} lacks {want:?}");
    };
    check(
        "[[workspace]]\npath = \"/p/\"\nscope = \"ro\"\nmount = { virtual = \"p\" }\n",
        "workspace entry 1 (path \"/p/\"): path is not in normal form",
    );
    check(
        "[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = { physical = \"/does/not/exist\" }\n",
        "the physical directory does not exist",
    );
    check(
        "[[workspace]]\npath = \"/p\"\nscope = \n",
        "TOML parse error at line 3",
    );
    check(
        "[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = { virtual = \"p\" }\n\n\
         [[workspace]]\npath = \"/p\"\nscope = \"rw\"\nmount = { virtual = \"q\" }\n",
        "duplicate prefix",
    );
    // A refused table leaves no data directory behind.
    assert!(!dir.path().join("data").exists());
}
