//! `wsp serve --config` with `[agents]`, `wsp agents` and agent keys, as a user drives them.

use std::path::Path;
use std::process::Output;

use crate::support;
use crate::support::{create_key, serve};

/// The configuration of the issue, plus a pack with a shared and a private agent.
const CONFIG: &str = r#"
[agents]
install_scope = "tenant"            # or "host"

[[agents.packs]]
name = "acme.reviewer"
version = "1.0.0"

[[agents.packs.agents]]
id = "acme.reviewer.default"
persona = "Code Reviewer"
label = "Code Reviewer"             # optional, defaults to persona
model_class = "coding"
tool_allowlist = ["fs.read"]
shared = false                       # true: the agent has its own workspace agent-<id>
system_prompt_ref = "prompts/reviewer.md"   # never served

[[agents.packs]]
name = "acme.kitchen"
version = "2.0.0"

[[agents.packs.agents]]
id = "acme.cook"
persona = "Cook"
model_class = "general"
tool_allowlist = []
shared = true
system_prompt_ref = "prompts/cook.md"

[[agents.packs.agents]]
id = "acme.main"
persona = "Main"
model_class = "general"
tool_allowlist = []
system_prompt_ref = "prompts/main.md"

[[agents.approvals]]
tenant = "t-a"
workspace = "w-a"
packs = ["acme.reviewer"]
"#;

fn wsp(args: &[&str]) -> Output {
    support::wsp(args, &[], None)
}

fn ok(args: &[&str]) -> String {
    let out = wsp(args);
    assert!(
        out.status.success(),
        "wsp {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str], code: i32) -> String {
    let out = wsp(args);
    assert_eq!(out.status.code(), Some(code), "wsp {args:?}");
    String::from_utf8(out.stderr).unwrap()
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Creates a key and returns its plaintext (the last line).
fn key(data: &str, args: &[&str]) -> String {
    create_key(&[&["--data", data][..], args].concat())
}

fn setup() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("wsp.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let data = dir.path().join("data");
    (
        dir,
        data.to_str().unwrap().to_owned(),
        config.to_str().unwrap().to_owned(),
    )
}

#[test]
fn the_inventory_is_scoped_and_approvals_count_at_once() {
    let (_dir, data, config) = setup();
    let key_a = key(&data, &["--tenant", "t-a", "--workspace", "w-a"]);
    let key_b = key(&data, &["--tenant", "t-b", "--workspace", "w-b"]);
    let server = serve(Path::new(&data), &["--config", &config]);
    let url = server.url.as_str();
    let ls = |k: &str| json(&ok(&["agents", "ls", "--url", url, "--key", k, "--json"]));

    let a = ls(&key_a);
    assert_eq!(a["total"], 1);
    assert_eq!(a["agents"][0]["agentId"], "acme.reviewer.default");
    assert_eq!(a["agents"][0]["label"], "Code Reviewer");
    assert!(!a.to_string().contains("prompts/"), "{a}");
    let table = ok(&["agents", "ls", "--url", url, "--key", &key_a]);
    assert!(table.contains("acme.reviewer.default\tacme.reviewer\t1.0.0\tcoding\tCode Reviewer"));
    let b = ls(&key_b);
    assert_eq!(
        (b["total"].as_u64(), b["agents"].as_array().map(Vec::len)),
        (Some(0), Some(0))
    );
    let err = fails(
        &[
            "agents",
            "get",
            "acme.reviewer.default",
            "--url",
            url,
            "--key",
            &key_b,
        ],
        5,
    );
    assert!(err.contains("not_found (HTTP 404)"), "{err}");
    let err = fails(&["agents", "ls", "--url", url], 3);
    assert!(err.contains("unauthenticated (HTTP 401)"), "{err}");

    // Approve for B while the server runs: it counts at once.
    let out = ok(&[
        "agents",
        "approve",
        "--data",
        &data,
        "--config",
        &config,
        "--tenant",
        "t-b",
        "--workspace",
        "w-b",
        "acme.reviewer",
        "acme.kitchen",
    ]);
    assert!(
        out.contains("approved pack acme.reviewer for tenant t-b workspace w-b"),
        "{out}"
    );
    let b = ls(&key_b);
    assert_eq!(b["total"], 3);
    let ids: Vec<&str> = b["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agentId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["acme.cook", "acme.main", "acme.reviewer.default"]);
    let one = json(&ok(&[
        "agents",
        "get",
        "acme.cook",
        "--url",
        url,
        "--key",
        &key_b,
        "--json",
    ]));
    assert_eq!(one["packName"], "acme.kitchen");

    let listed = json(&ok(&[
        "agents",
        "approvals",
        "--data",
        &data,
        "--config",
        &config,
        "--json",
    ]));
    let rows: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{} {} {}",
                r["tenant"], r["workspace"], r["pack"], r["source"]
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            r#""t-a"/"w-a" "acme.reviewer" "config""#,
            r#""t-b"/"w-b" "acme.kitchen" "stored""#,
            r#""t-b"/"w-b" "acme.reviewer" "stored""#,
        ]
    );

    let out = ok(&[
        "agents",
        "revoke",
        "--data",
        &data,
        "--tenant",
        "t-b",
        "--workspace",
        "w-b",
        "acme.kitchen",
    ]);
    assert!(out.contains("revoked pack acme.kitchen"), "{out}");
    assert_eq!(ls(&key_b)["total"], 1);
    let err = fails(
        &[
            "agents",
            "revoke",
            "--data",
            &data,
            "--tenant",
            "t-b",
            "--workspace",
            "w-b",
            "acme.kitchen",
        ],
        1,
    );
    assert!(
        err.contains("no stored approval of pack acme.kitchen"),
        "{err}"
    );
    let err = fails(
        &[
            "agents",
            "revoke",
            "--data",
            &data,
            "--config",
            &config,
            "--tenant",
            "t-a",
            "--workspace",
            "w-a",
            "acme.reviewer",
        ],
        1,
    );
    assert!(err.contains("approves it; remove it there"), "{err}");
    let err = fails(
        &[
            "agents",
            "approve",
            "--data",
            &data,
            "--config",
            &config,
            "--tenant",
            "t-b",
            "--workspace",
            "w-b",
            "acme.nope",
        ],
        1,
    );
    assert!(err.contains("\"acme.nope\" is not declared"), "{err}");

    // Discovery advertises the scope.
    let d = reqwest_get(&format!("{url}/.well-known/openwop"));
    assert_eq!(
        json(&d)["agents"]["manifestRuntime"]["installScope"],
        "tenant"
    );
}

/// A plain HTTP GET without extra dependencies: `wsp files` cannot fetch discovery.
fn reqwest_get(url: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.trim_start_matches("http://");
    let (authority, path) = rest.split_once('/').unwrap();
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n").unwrap().1.to_owned()
}

#[test]
fn agent_keys_publish_one_way_into_shared_workspaces() {
    let (_dir, data, config) = setup();
    let main = key(
        &data,
        &["--tenant", "t-a", "--user", "u1", "--agent", "acme.main"],
    );
    let cook = key(
        &data,
        &["--tenant", "t-a", "--user", "u1", "--agent", "acme.cook"],
    );
    let ghost = key(
        &data,
        &["--tenant", "t-a", "--user", "u1", "--agent", "acme.ghost"],
    );
    let listed = json(&ok(&["keys", "list", "--data", &data, "--json"]));
    let agents: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["agent"].as_str())
        .collect();
    assert_eq!(agents, ["acme.main", "acme.cook", "acme.ghost"]);
    assert_eq!(listed[0]["workspace"], "user-u1");
    assert_eq!(listed[0]["principal"], "acme.main");
    // Where each agent key works is the server's to resolve from its [agents] section: with
    // the same configuration file, the list shows it (a shared agent works in agent-<id>).
    let resolved = json(&ok(&[
        "keys", "list", "--data", &data, "--config", &config, "--json",
    ]));
    let workspaces: Vec<&serde_json::Value> = resolved
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["resolvedWorkspace"])
        .collect();
    assert_eq!(
        workspaces,
        [
            &serde_json::json!("user-u1"),
            &serde_json::json!("agent-acme.cook"),
            &serde_json::Value::Null
        ],
        "{resolved}"
    );
    assert_eq!(
        resolved[1]["workspace"], "user-u1",
        "the stored owner stays"
    );
    let table = ok(&["keys", "list", "--data", &data, "--config", &config]);
    let rows: Vec<&str> = table.lines().collect();
    assert!(rows[0].contains("WORKSPACE\tAGENT"), "{table}");
    assert!(
        rows[2].contains("\tagent-acme.cook\tacme.cook\t"),
        "{table}"
    );
    assert!(
        rows[3].contains("\tuser-u1 (acme.ghost is not declared)\tacme.ghost\t"),
        "{table}"
    );
    // Without it, the list says what it cannot know.
    let unresolved = ok(&["keys", "list", "--data", &data]);
    assert!(
        unresolved
            .lines()
            .nth(2)
            .unwrap()
            .contains("\tuser-u1 or agent-acme.cook if shared (give --config)\tacme.cook\t"),
        "{unresolved}"
    );
    let server = serve(Path::new(&data), &["--config", &config]);
    let url = server.url.as_str();
    let notes = std::path::Path::new(&data).join("notes.md");
    std::fs::write(&notes, "buy eggs").unwrap();
    ok(&[
        "files",
        "put",
        "list.md",
        "--file",
        notes.to_str().unwrap(),
        "--url",
        url,
        "--key",
        &main,
    ]);
    ok(&[
        "files",
        "put",
        "diary.md",
        "--file",
        notes.to_str().unwrap(),
        "--url",
        url,
        "--key",
        &main,
    ]);
    // Under install_scope tenant, the publisher's workspace must approve the shared agent's pack.
    ok(&[
        "agents",
        "approve",
        "--data",
        &data,
        "--config",
        &config,
        "--tenant",
        "t-a",
        "--workspace",
        "user-u1",
        "acme.kitchen",
    ]);
    let out = ok(&[
        "agents",
        "publish",
        "list.md",
        "--to",
        "acme.cook",
        "--url",
        url,
        "--key",
        &main,
    ]);
    assert!(
        out.contains("published list.md to acme.cook as inbox/list.md\tv1"),
        "{out}"
    );
    let copy = ok(&[
        "files",
        "get",
        "inbox/list.md",
        "--url",
        url,
        "--key",
        &cook,
    ]);
    assert_eq!(copy, "buy eggs");
    // The shared agent never sees the private workspace its key names.
    let err = fails(
        &["files", "get", "diary.md", "--url", url, "--key", &cook],
        5,
    );
    assert!(err.contains("not_found (HTTP 404)"), "{err}");
    // Reverse and non-shared targets are refused.
    let err = fails(
        &[
            "agents",
            "publish",
            "list.md",
            "--to",
            "acme.main",
            "--url",
            url,
            "--key",
            &cook,
        ],
        4,
    );
    assert!(err.contains("forbidden (HTTP 403)"), "{err}");
    let err = fails(
        &[
            "agents",
            "publish",
            "diary.md",
            "--to",
            "acme.reviewer.default",
            "--url",
            url,
            "--key",
            &main,
        ],
        4,
    );
    assert!(err.contains("forbidden (HTTP 403)"), "{err}");
    // A key for an agent the server does not know authenticates to nothing.
    let err = fails(&["files", "ls", "--url", url, "--key", &ghost], 3);
    assert!(err.contains("unauthenticated (HTTP 401)"), "{err}");
}

#[test]
fn agent_keys_need_user_and_agent_and_no_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    for args in [
        &["--tenant", "t", "--workspace", "w", "--agent", "a"][..],
        &[
            "--tenant",
            "t",
            "--workspace",
            "w",
            "--user",
            "u",
            "--agent",
            "a",
        ],
        &["--tenant", "t", "--user", "u"],
        &["--tenant", "t", "--agent", "a"],
        &["--tenant", "t"],
    ] {
        let mut all = vec!["keys", "create", "--data", data];
        all.extend_from_slice(args);
        fails(&all, 2);
    }
    let long_agent = "a".repeat(123);
    let err = fails(
        &[
            "keys",
            "create",
            "--data",
            data,
            "--tenant",
            "t",
            "--user",
            "u",
            "--agent",
            &long_agent,
        ],
        2,
    );
    assert!(err.contains("--agent"), "{err}");
    let err = fails(
        &[
            "keys", "create", "--data", data, "--tenant", "t", "--user", "u/x", "--agent", "a",
        ],
        2,
    );
    assert!(err.contains("--user"), "{err}");
}

#[test]
fn a_bad_agents_section_stops_the_server_with_one_line_naming_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("wsp.toml");
    for (text, expected) in [
        (
            CONFIG.replace("packs = [\"acme.reviewer\"]", "packs = [\"acme.nope\"]"),
            "agents.approvals[0] (tenant \"t-a\", workspace \"w-a\"): pack \"acme.nope\" is not declared in [[agents.packs]]",
        ),
        (
            CONFIG.replace("id = \"acme.main\"", "id = \"acme.cook\""),
            "agents.packs[1].agents[1] (id \"acme.cook\"): another agent has the same id",
        ),
        (
            CONFIG.replace("persona = \"Cook\"", "persona = \"\""),
            "agents.packs[1].agents[0] (id \"acme.cook\"): persona is empty",
        ),
        (
            CONFIG.replace("install_scope = \"tenant\"", "install_scope = \"project\""),
            "unknown variant `project`",
        ),
        (
            CONFIG.replace(
                "shared = true",
                "shared = true\nprompt = \"You are a cook.\"",
            ),
            "unknown field `prompt`",
        ),
    ] {
        std::fs::write(&config, &text).unwrap();
        let out = wsp(&[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data",
            dir.path().join("data").to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{text}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("error: invalid config"), "{err}");
        assert!(err.contains(expected), "{expected:?} not in {err}");
        if !expected.starts_with("unknown") {
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        }
    }
}

#[test]
fn agent_keys_checked_against_the_configuration_name_only_declared_agents() {
    let (_dir, data, config) = setup();
    /// `wsp keys create` of the agent `agent` for tenant t-a, user u, then `extra`.
    fn create<'a>(data: &'a str, agent: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "keys", "create", "--data", data, "--tenant", "t-a", "--user", "u", "--agent", agent,
        ];
        args.extend_from_slice(extra);
        args
    }
    // Declared: created as without --config.
    ok(&create(&data, "acme.cook", &["--config", &config]));
    // Not declared: refused before any key is made, naming the agent and the file.
    let err = fails(&create(&data, "acme.typo", &["--config", &config]), 1);
    assert!(
        err.contains("agent \"acme.typo\" is not declared")
            && err.contains(&config)
            && err.contains("acme.cook, acme.main, acme.reviewer.default"),
        "{err}"
    );
    let listed = ok(&["keys", "list", "--data", &data, "--json"]);
    assert_eq!(json(&listed).as_array().unwrap().len(), 1, "{listed}");
    // Without --config the agent is not checked (the server may be configured elsewhere).
    ok(&create(&data, "acme.typo", &[]));
    // A file without [agents] declares no agent at all.
    let bare = Path::new(&config).with_file_name("bare.toml");
    std::fs::write(&bare, "").unwrap();
    let bare = bare.to_str().unwrap();
    let err = fails(&create(&data, "acme.cook", &["--config", bare]), 1);
    assert!(err.contains("no [agents] section"), "{err}");
    // --config is about agents: with --workspace it is a usage error.
    fails(
        &[
            "keys",
            "create",
            "--data",
            &data,
            "--tenant",
            "t",
            "--workspace",
            "w",
            "--config",
            &config,
        ],
        2,
    );
}
