//! The `run_start_context` prompt: the context block an MCP host injects, read through the
//! agent's own mount table, naming only paths the agent can read.

use std::sync::Arc;

use rmcp::model::{ContentBlock, GetPromptRequestParams, JsonObject, Role};
use serde_json::{Value, json};
use wsp_mcp::{CONTEXT_PROMPT, McpServer};
use wsp_store::MemoryStore;
use wsp_vfs::{MountTable, Vfs};

use crate::mcp::{call, connect, text};

/// Seed 003's layout on disk, read-only, with a writable memory folder and an outbox.
const TABLE: &str = r#"
[[workspace]]
path = "/workspace"
scope = "ro"
mount = { physical = "DIR" }

[[workspace]]
path = "/workspace/memory"
scope = "rw"
mount = { virtual = "memory" }

[[workspace]]
path = "/outbox"
scope = "wo"
mount = { virtual = "outbox" }
"#;

fn layout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, content: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    };
    write("AGENTS.md", "# Reviewer\nYou review pull requests.\n");
    let memory: String = (1..=400)
        .map(|i| format!("- remembered fact number {i}\n"))
        .collect();
    write("MEMORY.md", &memory);
    write(
        "knowledge/KNOWLEDGE.md",
        "# Knowledge\nSee the style guide.\n",
    );
    write("knowledge/style.md", "Tabs, not spaces.\n");
    write("knowledge/deep/notes.md", "deep\n");
    write(
        "skills/triage/SKILL.md",
        "---\ndescription: sort incoming issues\n---\n",
    );
    write("subagents/linter.md", "# Runs the linters\n");
    write("PREFERENCES.md", "not part of the block\n");
    dir
}

/// A `files` server over [`TABLE`] with `dir` as the workspace on disk.
pub(crate) fn files_server(dir: &tempfile::TempDir) -> McpServer {
    let toml = TABLE.replace("DIR", &dir.path().display().to_string());
    let vfs = Vfs::builder(MountTable::from_toml_str(&toml).unwrap())
        .virtual_store(Arc::new(MemoryStore::default()))
        .build()
        .unwrap();
    McpServer::files(vfs)
}

fn server(dir: &tempfile::TempDir) -> McpServer {
    files_server(dir).with_context_root("/workspace").unwrap()
}

fn args(value: Value) -> JsonObject {
    let Value::Object(map) = value else {
        panic!("an object")
    };
    map
}

async fn render(client: &crate::mcp::Client, budget: &str) -> String {
    let got = client
        .get_prompt(
            GetPromptRequestParams::new(CONTEXT_PROMPT)
                .with_arguments(args(json!({"budget": budget}))),
        )
        .await
        .unwrap();
    assert_eq!(got.messages.len(), 1);
    assert_eq!(got.messages[0].role, Role::User);
    let ContentBlock::Text(t) = &got.messages[0].content else {
        panic!("a text message")
    };
    t.text.clone()
}

/// Every absolute path the block names (file, listing or index), in order of appearance.
fn paths_named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("/workspace/") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| c.is_whitespace() || "\"]):".contains(c))
            .unwrap_or(tail.len());
        // `</workspace_file>` and the like are tags, not paths.
        if !rest[..at].ends_with('<') {
            out.push(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    out
}

#[tokio::test]
async fn the_prompt_is_listed_and_renders_the_block_within_its_budget() {
    let dir = layout();
    let client = connect(server(&dir)).await;
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, CONTEXT_PROMPT);
    let budget_arg = &prompts[0].arguments.as_ref().unwrap()[0];
    assert_eq!(budget_arg.name, "budget");
    assert_eq!(budget_arg.required, Some(false));

    let text = render(&client, "600").await;
    assert!(text.len() / 4 <= 600, "{} chars", text.len());
    assert!(text.contains("You review pull requests."));
    assert!(
        text.contains("<workspace_file path=\"/workspace/AGENTS.md\""),
        "{text}"
    );
    assert!(
        text.contains(
            "tokens omitted, read /workspace/MEMORY.md or use memory_search for older entries]"
        ),
        "{text}"
    );
    assert!(text.contains("- /workspace/knowledge/style.md\n"), "{text}");
    assert!(
        text.contains("- triage (/workspace/skills/triage/SKILL.md): sort incoming issues"),
        "{text}"
    );
    assert!(!text.contains("not part of the block"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_path_the_block_names_is_readable_with_the_agents_own_tools() {
    let dir = layout();
    let client = connect(server(&dir)).await;
    for budget in ["80", "600", "8000"] {
        let text = render(&client, budget).await;
        let named = paths_named(&text);
        assert!(!named.is_empty() || budget == "80", "{text}");
        for path in named {
            let result = if path.ends_with('/') {
                call(&client, "ls", json!({"path": path})).await
            } else {
                call(&client, "read_file", json!({"path": path})).await
            };
            assert_ne!(
                result.is_error,
                Some(true),
                "budget {budget}: {path} is named but not readable: {}",
                text_of(&result)
            );
        }
    }
    client.cancel().await.unwrap();
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    text(result)
}

#[tokio::test]
async fn bad_arguments_and_unknown_prompts_are_protocol_errors() {
    let dir = layout();
    let client = connect(server(&dir)).await;
    for bad in [
        json!({"budget": "0"}),
        json!({"budget": "lots"}),
        json!({"budget": "-5"}),
        json!({"run": "r1"}),
        json!({"colour": "red"}),
        json!({"session": "../x"}),
        json!({"strict": "yes"}),
    ] {
        let err = client
            .get_prompt(
                GetPromptRequestParams::new(CONTEXT_PROMPT).with_arguments(args(bad.clone())),
            )
            .await
            .unwrap_err();
        assert!(
            [
                "budget",
                "unknown argument",
                "session must be",
                "strict must be",
                "virtual mount"
            ]
            .iter()
            .any(|w| err.to_string().contains(w)),
            "{bad}: {err}"
        );
    }
    let err = client
        .get_prompt(GetPromptRequestParams::new("system"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("run_start_context"), "{err}");
    // No budget: the default.
    let got = client
        .get_prompt(GetPromptRequestParams::new(CONTEXT_PROMPT))
        .await
        .unwrap();
    assert!(
        got.description
            .unwrap()
            .contains("of 8000 tokens from /workspace")
    );
    client.cancel().await.unwrap();
}

/// The block opens with seed 003's `## Session Context` (today's date, the workspace, the
/// session the host names) and `## Workspace guidance` naming the memory tools offered.
#[tokio::test]
async fn the_block_opens_with_the_session_context_and_guidance() {
    let dir = layout();
    let client = connect(server(&dir)).await;
    let got = client
        .get_prompt(
            GetPromptRequestParams::new(CONTEXT_PROMPT)
                .with_arguments(args(json!({"session": "s-7", "budget": "4000"}))),
        )
        .await
        .unwrap();
    let ContentBlock::Text(t) = &got.messages[0].content else {
        panic!("a text message")
    };
    let today = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    assert!(
        t.text.starts_with(&format!(
            "## Session Context\n\n- Date: {today}\n- Workspace: /workspace\n- Session: s-7\n\n## Workspace guidance\n"
        )),
        "{}",
        t.text
    );
    assert!(t.text.contains("with memory_append"), "{}", t.text);
    assert!(t.text.contains("with memory_search"), "{}", t.text);
    let names: Vec<String> = client.list_all_prompts().await.unwrap()[0]
        .arguments
        .iter()
        .flatten()
        .map(|a| a.name.clone())
        .collect();
    assert_eq!(names, ["budget", "session", "run", "strict"]);
    client.cancel().await.unwrap();
}

#[test]
fn the_root_must_be_a_readable_workspace() {
    let dir = layout();
    let toml = TABLE.replace("DIR", &dir.path().display().to_string());
    let vfs = || {
        Vfs::builder(MountTable::from_toml_str(&toml).unwrap())
            .virtual_store(Arc::new(MemoryStore::default()))
            .build()
            .unwrap()
    };
    for (root, why) in [
        ("/outbox", "write-only"),
        ("/nowhere", "not the path of a Workspace"),
        ("/workspace/knowledge", "not the path of a Workspace"),
        ("workspace", "not an absolute path"),
    ] {
        let err = McpServer::files(vfs()).with_context_root(root).unwrap_err();
        assert!(err.to_string().contains(why), "{root}: {err}");
    }
    assert!(McpServer::files(vfs()).prompt_names().is_empty());
    assert_eq!(
        McpServer::files(vfs())
            .with_context_root("/workspace/memory")
            .unwrap()
            .prompt_names(),
        [CONTEXT_PROMPT]
    );
}

/// With `run`, the block is read from the run's snapshot of the virtual mount at the root:
/// what the run saw, whatever was written since; an unknown or ended run, or a root on disk,
/// is an invalid-params error.
#[tokio::test]
async fn a_run_argument_reads_the_runs_snapshot() {
    use wsp_store::{FileWrite, Precondition, WorkspaceStore};
    use wsp_types::WorkspacePath;

    let store = Arc::new(MemoryStore::default());
    let table = MountTable::from_toml_str(
        "[[workspace]]\npath = \"/workspace\"\nscope = \"rw\"\nmount = { virtual = \"reviewer\" }\n",
    )
    .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(store.clone())
        .build()
        .unwrap();
    let (_, owner) = vfs.virtual_backing("/workspace").unwrap();
    let agents = WorkspacePath::parse("AGENTS.md").unwrap();
    let put = |text: &'static str| {
        let (store, owner, agents) = (store.clone(), owner.clone(), agents.clone());
        async move {
            store
                .put(
                    &owner,
                    &agents,
                    FileWrite::markdown(text),
                    Precondition::None,
                )
                .await
                .unwrap();
        }
    };
    put("# As the run started\n").await;
    let run = store.snapshot(&owner, &"run".into()).await.unwrap();
    put("# Written later\n").await;
    let client = connect(
        McpServer::files(vfs)
            .with_context_root("/workspace")
            .unwrap(),
    )
    .await;
    let get = |arguments: Value| {
        client
            .get_prompt(GetPromptRequestParams::new(CONTEXT_PROMPT).with_arguments(args(arguments)))
    };
    let text_of = |got: rmcp::model::GetPromptResult| match &got.messages[0].content {
        ContentBlock::Text(t) => t.text.clone(),
        _ => panic!("a text message"),
    };
    let seen = text_of(get(json!({"run": run.id.as_str()})).await.unwrap());
    assert!(seen.contains("# As the run started"), "{seen}");
    let live = text_of(get(json!({})).await.unwrap());
    assert!(live.contains("# Written later"), "{live}");
    let unknown = get(json!({"run": "0123456789abcdef0123456789abcdef"}))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("no run"), "{unknown}");
    store
        .release_snapshot(&owner, &run.id, "completed")
        .await
        .unwrap();
    let ended = get(json!({"run": run.id.as_str()})).await.unwrap_err();
    assert!(ended.to_string().contains("has ended"), "{ended}");
    client.cancel().await.unwrap();

    // A root on disk has no runs.
    let dir = layout();
    let client = connect(server(&dir)).await;
    let err = client
        .get_prompt(
            GetPromptRequestParams::new(CONTEXT_PROMPT)
                .with_arguments(args(json!({"run": run.id.as_str()}))),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("virtual mount"), "{err}");
    client.cancel().await.unwrap();
}

/// Files the root Workspace's deny rules hide are in neither the live block nor a run's: not
/// read, not listed under `knowledge/`, not in the skills index.
#[tokio::test]
async fn the_block_shows_no_denied_file_live_or_from_a_run() {
    use wsp_store::{FileWrite, Precondition, WorkspaceStore};
    use wsp_types::WorkspacePath;

    const SECRET: &str = "sekret-51c0";
    let store = Arc::new(MemoryStore::default());
    let table = MountTable::from_toml_str(
        "[[workspace]]\npath = \"/workspace\"\nscope = \"ro\"\nmount = { virtual = \"reviewer\" }\n\
         deny_extra = [\"AGENTS.md\", \"skills/secret/**\"]\n",
    )
    .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(store.clone())
        .build()
        .unwrap();
    let (_, owner) = vfs.virtual_backing("/workspace").unwrap();
    for (path, content) in [
        ("AGENTS.md", format!("# {SECRET}\n")),
        ("knowledge/KNOWLEDGE.md", "# Knowledge\n".to_owned()),
        ("knowledge/style.md", "Tabs.\n".to_owned()),
        ("knowledge/deploy-sekret.pem", format!("{SECRET}\n")),
        ("knowledge/cfg/.env", format!("{SECRET}\n")),
        ("skills/triage/SKILL.md", "sort issues\n".to_owned()),
        ("skills/secret/SKILL.md", format!("{SECRET}\n")),
    ] {
        store
            .put(
                &owner,
                &WorkspacePath::parse(path).unwrap(),
                FileWrite::markdown(content),
                Precondition::None,
            )
            .await
            .unwrap();
    }
    let run = store.snapshot(&owner, &"run".into()).await.unwrap();
    let client = connect(
        McpServer::files(vfs)
            .with_context_root("/workspace")
            .unwrap(),
    )
    .await;
    for arguments in [json!({}), json!({"run": run.id.as_str()})] {
        let got = client
            .get_prompt(
                GetPromptRequestParams::new(CONTEXT_PROMPT).with_arguments(args(arguments.clone())),
            )
            .await
            .unwrap();
        let ContentBlock::Text(t) = &got.messages[0].content else {
            panic!("a text message")
        };
        let block = &t.text;
        assert!(block.contains("knowledge/style.md"), "{arguments}: {block}");
        assert!(block.contains("triage"), "{arguments}: {block}");
        for never in [SECRET, "sekret", ".env", "skills/secret"] {
            assert!(!block.contains(never), "{arguments}: {never} in {block}");
        }
    }
    client.cancel().await.unwrap();
}
