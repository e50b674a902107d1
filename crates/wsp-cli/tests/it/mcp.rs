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

/// A table whose read-only and read-write Workspaces reach the same host directory: a
/// warning naming both on standard error and a working session, or with `--strict` one line
/// and no session.
#[test]
fn workspaces_reaching_one_directory_under_two_scopes_warn_or_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("project");
    std::fs::create_dir(&host).unwrap();
    let table = write_table(
        dir.path(),
        &format!(
            "[[workspace]]\npath = \"/docs\"\nscope = \"ro\"\nmount = {{ physical = {h:?} }}\n\n\
             [[workspace]]\npath = \"/work\"\nscope = \"rw\"\nmount = {{ physical = {h:?} }}\n",
            h = host.display().to_string()
        ),
    );
    let (responses, stderr) = session(&["--mounts", &table], &[("tools/list", json!({}))]);
    assert!(responses[1]["result"]["tools"].is_array(), "{responses:?}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("workspace entries 1 (/docs, read-only) and 2 (/work, read-write)")
            && warnings[0]
                .contains("the agent can change through /work what /docs shows as read-only"),
        "{stderr}"
    );
    let refused = Command::new(WSP)
        .args(["mcp", "--strict", "--mounts", &table])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty());
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("(refused by --strict)"), "{stderr}");
}

/// `--context-root` adds the prompt `run_start_context`; a root that is not a readable
/// Workspace is refused with one line before anything is served.
#[test]
fn the_context_prompt_is_offered_over_a_readable_workspace_only() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("agent");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("AGENTS.md"), "# Reviewer\nBe brief.\n").unwrap();
    let table = write_table(
        dir.path(),
        &format!(
            "[[workspace]]\npath = \"/workspace\"\nscope = \"ro\"\nmount = {{ physical = {h:?} }}\n",
            h = host.display().to_string()
        ),
    );
    let (responses, _) = session(
        &["--mounts", &table, "--context-root", "/workspace"],
        &[
            ("prompts/list", json!({})),
            (
                "prompts/get",
                json!({"name": "run_start_context", "arguments": {"budget": "400"}}),
            ),
        ],
    );
    assert_eq!(
        responses[1]["result"]["prompts"][0]["name"], "run_start_context",
        "{responses:?}"
    );
    let text = responses[2]["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Be brief."), "{text}");
    assert!(text.contains("[MISSING: /workspace/MEMORY.md]"), "{text}");
    let refused = Command::new(WSP)
        .args(["mcp", "--mounts", &table, "--context-root", "/elsewhere"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr
            .contains("--context-root: the context root /elsewhere is not the path of a Workspace"),
        "{stderr}"
    );
}

/// Seed 003's layout as one mount table: the workspace read-only on disk, its `memory/` and the
/// agent's sessions writable in the data directory. `--context-root` offers memory_append,
/// memory_search and session_record (for `--agent`), and what they write survives a restart.
#[test]
fn the_memory_tools_write_back_under_the_context_root() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("agent");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("MEMORY.md"), "- Friday deploys are off.\n").unwrap();
    let table = write_table(
        dir.path(),
        &format!(
            "[[workspace]]\npath = \"/workspace\"\nscope = \"ro\"\nmount = {{ physical = {h:?} }}\n\n\
             [[workspace]]\npath = \"/workspace/memory\"\nscope = \"rw\"\nmount = {{ virtual = \"memory\" }}\n\n\
             [[workspace]]\npath = \"/workspace/agents/reviewer/sessions\"\nscope = \"rw\"\nmount = {{ virtual = \"sessions\" }}\n",
            h = host.display().to_string()
        ),
    );
    let data = dir.path().join("data").display().to_string();
    let args = [
        "--mounts",
        &table,
        "--data",
        &data,
        "--context-root",
        "/workspace",
        "--agent",
        "reviewer",
    ];
    let (responses, _) = session(
        &args,
        &[
            ("tools/list", json!({})),
            call(
                "memory_append",
                json!({"text": "The Friday freeze ends in March."}),
            ),
            call(
                "session_record",
                json!({"session_id": "s-1", "summary": "planned the release"}),
            ),
        ],
    );
    let names: Vec<&str> = responses[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in ["memory_append", "memory_search", "session_record"] {
        assert!(names.contains(&tool), "{tool} in {names:?}");
    }
    for r in &responses[2..] {
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    let (responses, _) = session(
        &args,
        &[
            call("memory_search", json!({"query": "friday"})),
            call(
                "read_file",
                json!({"path": "/workspace/agents/reviewer/sessions/sessions.json"}),
            ),
        ],
    );
    let found = &responses[1]["result"]["structuredContent"];
    assert_eq!(found["total"], 2, "{found}");
    assert_eq!(
        found["matches"][0]["snippet"],
        "The Friday freeze ends in March."
    );
    let index = responses[2]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(index.contains("planned the release"), "{index}");
    // Without --context-root, none of them.
    let (responses, _) = session(
        &["--mounts", &table, "--data", &data],
        &[("tools/list", json!({}))],
    );
    let listed = responses[1]["result"]["tools"].to_string();
    assert!(!listed.contains("memory_"), "{listed}");
}

/// The status code of one MCP `initialize` POST to `url` (`http://ADDR/mcp`) over plain TCP.
fn http_initialize(url: &str, token: Option<&str>) -> u16 {
    use std::io::Read;
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("not an MCP URL: {url}"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "wsp-cli-test", "version": "0"}}})
    .to_string();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    let status = String::from_utf8_lossy(&head[9..12]).into_owned();
    status
        .parse()
        .unwrap_or_else(|_| panic!("status line {head:?}"))
}

/// Starts `wsp mcp --http 127.0.0.1:0` (with `WSP_MCP_TOKEN` when given); the child and the
/// two lines it prints.
fn http_server(
    table: &str,
    data: &Path,
    token: Option<&str>,
) -> (std::process::Child, String, String) {
    let mut cmd = Command::new(WSP);
    cmd.args(["mcp", "--mounts", table, "--http", "127.0.0.1:0", "--data"])
        .arg(data)
        .env_remove("WSP_MCP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(token) = token {
        cmd.env("WSP_MCP_TOKEN", token);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line.trim_end().to_owned()
    };
    let (url, token_line) = (line(), line());
    let url = url
        .strip_prefix("wsp mcp listening on ")
        .unwrap_or_else(|| panic!("first line {url:?}"))
        .to_owned();
    (child, url, token_line)
}

#[test]
fn http_needs_the_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let table = write_table(
        dir.path(),
        "[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = { virtual = \"p\" }\n",
    );
    let data = dir.path().join("data");

    // No WSP_MCP_TOKEN: a fresh token, printed once.
    let (mut child, url, line) = http_server(&table, &data, None);
    let token = line
        .strip_prefix("bearer token: ")
        .unwrap_or_else(|| panic!("second line {line:?}"));
    assert_eq!(token.len(), 64, "{line}");
    assert_eq!(http_initialize(&url, None), 401);
    assert_eq!(http_initialize(&url, Some(&"0".repeat(64))), 401);
    assert_eq!(http_initialize(&url, Some(token)), 200);
    child.kill().unwrap();
    child.wait().unwrap();

    // WSP_MCP_TOKEN given: used, and not printed.
    let given = "a-token-chosen-by-the-operator-0123456789";
    let (mut child, url, line) = http_server(&table, &data, Some(given));
    assert_eq!(line, "bearer token: from WSP_MCP_TOKEN");
    assert_eq!(http_initialize(&url, Some(given)), 200);
    assert_eq!(http_initialize(&url, None), 401);
    child.kill().unwrap();
    child.wait().unwrap();

    // A token too short to be a secret stops the server before it listens.
    let out = Command::new(WSP)
        .args(["mcp", "--mounts", &table, "--http", "127.0.0.1:0", "--data"])
        .arg(&data)
        .env("WSP_MCP_TOKEN", "short")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("WSP_MCP_TOKEN: the token is 5 characters; it must have at least 32"),
        "{stderr}"
    );
}

const SECRET: &str = "sk-live-1234567890";

/// A `wsp serve` configuration file with one secret of tenant `default`.
fn write_config(dir: &Path) -> String {
    let path = dir.join("wsp.toml");
    std::fs::write(
        &path,
        format!("[[secrets]]\ntenant = \"default\"\nid = \"openai\"\nvalue = \"{SECRET}\"\n"),
    )
    .unwrap();
    path.display().to_string()
}

/// Every live file of `owner` in the SQLite file of `data`, with every retained version, as
/// `path@version: "content"` lines: what `wsp serve` over the same directory would serve.
fn stored(data: &Path, tenant: &str, workspace: &str) -> String {
    use wsp_store::WorkspaceStore;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = wsp_store_sqlite::SqliteStore::open(
            &data.join("wsp.sqlite3"),
            wsp_store::Limits::default(),
        )
        .unwrap();
        let owner = wsp_types::Owner::parse(tenant, workspace).unwrap();
        let mut out = String::new();
        let files = store
            .list(&owner, &wsp_types::WorkspacePrefix::all())
            .await
            .unwrap();
        for meta in files {
            for version in store.history(&owner, &meta.path).await.unwrap() {
                let file = store
                    .get(&owner, &meta.path, Some(version.version))
                    .await
                    .unwrap();
                out.push_str(&format!(
                    "{}@{}: {:?}\n",
                    meta.path.as_str(),
                    version.version,
                    file.content
                ));
            }
        }
        out
    })
}

#[test]
fn with_the_servers_config_every_write_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let table = write_table(
        dir.path(),
        "[[workspace]]\npath = \"/outbox\"\nscope = \"rw\"\nmount = { virtual = \"outbox\" }\n",
    );
    let data = dir.path().join("data");
    let data_arg = data.display().to_string();

    let (responses, _) = session(
        &["--mounts", &table, "--data", &data_arg, "--config", &config],
        &[
            call(
                "write_file",
                json!({"path": "/outbox/plan.md", "content": format!("key={SECRET}\n")}),
            ),
            call(
                "edit_file",
                json!({"path": "/outbox/plan.md", "old_string": "key=",
                       "new_string": format!("old={SECRET} key=")}),
            ),
            call(
                "write_file",
                json!({"path": format!("/outbox/{SECRET}.md"), "content": "x"}),
            ),
            call("read_file", json!({"path": "/outbox/plan.md"})),
        ],
    );
    assert_eq!(responses[1]["result"]["isError"], false, "{}", responses[1]);
    assert_eq!(responses[2]["result"]["isError"], false, "{}", responses[2]);
    let refused = &responses[3]["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "invalid_path",
        "{refused}"
    );
    let text = responses[4]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("old=[REDACTED:openai] key=[REDACTED:openai]"),
        "{text}"
    );

    // The items profile, over the same data directory.
    let (responses, _) = session(
        &[
            "--profile",
            "items",
            "--agent",
            "main",
            "--user",
            "u1",
            "--data",
            &data_arg,
            "--config",
            &config,
        ],
        &[
            call(
                "workspace_write",
                json!({"key": "memory", "value": format!("the key is {SECRET}")}),
            ),
            call("workspace_write", json!({"key": SECRET, "value": "x"})),
        ],
    );
    assert_eq!(responses[1]["result"]["isError"], false, "{}", responses[1]);
    let refused = &responses[2]["result"];
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "invalid_path",
        "{refused}"
    );
    assert!(
        refused
            .to_string()
            .contains("a configured secret appears in the path"),
        "{refused}"
    );
    assert!(!refused.to_string().contains(SECRET), "{refused}");

    let outbox = stored(&data, "default", "outbox");
    assert_eq!(
        outbox,
        "plan.md@2: \"old=[REDACTED:openai] key=[REDACTED:openai]\\n\"\n\
         plan.md@1: \"key=[REDACTED:openai]\\n\"\n"
    );
    assert_eq!(
        stored(&data, "default", "user-u1"),
        "memory@1: \"the key is [REDACTED:openai]\"\n"
    );
}

#[test]
fn the_store_limits_flags_are_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    let table = write_table(
        dir.path(),
        "[[workspace]]\npath = \"/outbox\"\nscope = \"rw\"\nmount = { virtual = \"outbox\" }\n",
    );
    let data = dir.path().join("data").display().to_string();
    let args = [
        "--mounts",
        &table,
        "--data",
        &data,
        "--max-file-bytes",
        "16",
        "--max-files",
        "1",
        "--max-versions",
        "1",
    ];
    let (responses, _) = session(
        &args,
        &[
            call(
                "write_file",
                json!({"path": "/outbox/big.md", "content": "x".repeat(17)}),
            ),
            call(
                "write_file",
                json!({"path": "/outbox/a.md", "content": "one"}),
            ),
            call(
                "write_file",
                json!({"path": "/outbox/b.md", "content": "two"}),
            ),
        ],
    );
    for (i, want) in [(1, Some("too_large")), (2, None), (3, Some("too_large"))] {
        let result = &responses[i]["result"];
        match want {
            Some(code) => assert_eq!(
                result["structuredContent"]["error"]["code"], code,
                "{result}"
            ),
            None => assert_eq!(result["isError"], false, "{result}"),
        }
    }
    let big = responses[1]["result"].to_string();
    assert!(big.contains("16 bytes"), "{big}");
}

#[test]
fn a_bad_config_is_one_line_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let table = write_table(
        dir.path(),
        "[[workspace]]\npath = \"/p\"\nscope = \"rw\"\nmount = { virtual = \"p\" }\n",
    );
    let config = dir.path().join("wsp.toml");
    std::fs::write(
        &config,
        "[[secrets]]\ntenant = \"default\"\nid = \"short\"\nvalue = \"1234\"\n",
    )
    .unwrap();
    let out = Command::new(WSP)
        .args(["mcp", "--mounts", &table, "--config"])
        .arg(&config)
        .arg("--data")
        .arg(dir.path().join("data"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("shorter than 8 characters"), "{stderr}");
    assert!(!dir.path().join("data").exists());
}
