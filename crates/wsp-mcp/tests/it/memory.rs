//! The agent's write-back loop: `memory_append`, `memory_search` and `session_record`, offered
//! where the mount table's scopes allow them, through the same checks as the file tools.

use std::sync::Arc;

use serde_json::{Value, json};
use wsp_mcp::{MEMORY_APPEND, MEMORY_SEARCH, McpServer, SESSION_RECORD};
use wsp_store::MemoryStore;
use wsp_vfs::{MountTable, Vfs};

use crate::mcp::{Client, call, connect, text};

/// Seed 003's layout: the workspace read-only on disk, `memory/` and the agent's sessions
/// writable (MEMORY_MOUNT and SESSIONS_MOUNT are replaced per test).
const TABLE: &str = r#"
[[workspace]]
path = "/workspace"
scope = "ro"
mount = { physical = "DIR" }

[[workspace]]
path = "/workspace/memory"
scope = "MEMORY_SCOPE"
mount = MEMORY_MOUNT

[[workspace]]
path = "/workspace/agents/reviewer/sessions"
scope = "rw"
mount = { virtual = "sessions" }
"#;

struct Fixture {
    dir: tempfile::TempDir,
    store: Arc<MemoryStore>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, content: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        };
        write("AGENTS.md", "# Reviewer\n");
        write(
            "MEMORY.md",
            "- The team deploys on Tuesdays.\n- Friday deploys are off.\n- Coffee is at ten.\n",
        );
        write(
            "knowledge/KNOWLEDGE.md",
            "Deploy checklist: run the tests.\n",
        );
        std::fs::create_dir_all(dir.path().join("memory-disk")).unwrap();
        Self {
            dir,
            store: Arc::new(MemoryStore::default()),
        }
    }

    fn server(&self, memory_scope: &str, memory_mount: &str) -> McpServer {
        let toml = TABLE
            .replace("MEMORY_SCOPE", memory_scope)
            .replace("MEMORY_MOUNT", memory_mount)
            .replace("DIR", &self.dir.path().display().to_string());
        let vfs = Vfs::builder(MountTable::from_toml_str(&toml).unwrap())
            .virtual_store(self.store.clone())
            .build()
            .unwrap();
        McpServer::files(vfs)
            .with_session_agent("reviewer")
            .with_context_root("/workspace")
            .unwrap()
    }

    fn virtual_memory(&self) -> McpServer {
        self.server("rw", r#"{ virtual = "memory" }"#)
    }
}

fn today_log() -> String {
    format!(
        "/workspace/memory/{}.md",
        chrono::Utc::now().date_naive().format("%Y-%m-%d")
    )
}

async fn ok(client: &Client, name: &str, args: Value) -> (String, Value) {
    let result = call(client, name, args).await;
    assert_ne!(result.is_error, Some(true), "{name}: {}", text(&result));
    (text(&result), result.structured_content.unwrap_or_default())
}

/// Each memory tool is offered only where the scopes give it what it needs: append and record
/// read and write (read-write), search reads. No context root, no memory tools.
#[tokio::test]
async fn the_memory_tools_follow_the_scopes() {
    let f = Fixture::new();
    let names = |server: &McpServer| server.tool_names();
    let rw = names(&f.virtual_memory());
    for tool in [MEMORY_APPEND, MEMORY_SEARCH, SESSION_RECORD] {
        assert!(rw.iter().any(|n| n == tool), "{tool} in {rw:?}");
    }
    // memory/ read-only: search only (the session index is still writable).
    let ro = names(&f.server("ro", r#"{ virtual = "memory" }"#));
    assert!(!ro.iter().any(|n| n == MEMORY_APPEND), "{ro:?}");
    assert!(ro.iter().any(|n| n == MEMORY_SEARCH));
    // memory/ write-only: an append reads first, so it is not offered; MEMORY.md is still
    // readable, so search is.
    let wo = names(&f.server("wo", r#"{ virtual = "memory" }"#));
    assert!(!wo.iter().any(|n| n == MEMORY_APPEND), "{wo:?}");
    assert!(wo.iter().any(|n| n == MEMORY_SEARCH));
    // An agent id that is not one path component keeps no session index.
    let toml = TABLE
        .replace("MEMORY_SCOPE", "rw")
        .replace("MEMORY_MOUNT", r#"{ virtual = "memory" }"#)
        .replace("DIR", &f.dir.path().display().to_string());
    let vfs = || {
        Vfs::builder(MountTable::from_toml_str(&toml).unwrap())
            .virtual_store(f.store.clone())
            .build()
            .unwrap()
    };
    let odd = McpServer::files(vfs())
        .with_context_root("/workspace")
        .unwrap()
        .with_session_agent("../reviewer");
    assert!(!names(&odd).iter().any(|n| n == SESSION_RECORD));
    let other_agent = McpServer::files(vfs())
        .with_context_root("/workspace")
        .unwrap()
        .with_session_agent("writer");
    assert!(!names(&other_agent).iter().any(|n| n == SESSION_RECORD));
    let plain = names(&McpServer::files(vfs()));
    for tool in [MEMORY_APPEND, MEMORY_SEARCH, SESSION_RECORD] {
        assert!(!plain.iter().any(|n| n == tool), "{tool} in {plain:?}");
    }
}

/// 8 sessions (on four threads) append 5 lines each at once, to a virtual and to a physical memory folder:
/// today's log holds all 40, each once; a read_file of the log shows the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sessions_never_lose_a_memory_line() {
    let f = Fixture::new();
    let disk = format!(
        r#"{{ physical = "{}" }}"#,
        f.dir.path().join("memory-disk").display()
    );
    for server in [f.virtual_memory(), f.server("rw", &disk)] {
        let mut tasks = Vec::new();
        for session in 0..8 {
            let server = server.clone();
            tasks.push(tokio::spawn(async move {
                let client = connect(server).await;
                for n in 0..5 {
                    let line = format!("session {session} fact {n}");
                    let (said, data) = ok(&client, MEMORY_APPEND, json!({"text": line})).await;
                    assert!(said.starts_with("appended line "), "{said}");
                    assert_eq!(data["path"], today_log());
                }
                client.cancel().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let client = connect(server).await;
        let read = call(
            &client,
            "read_file",
            json!({"path": today_log(), "limit": 100}),
        )
        .await;
        let shown = text(&read);
        for session in 0..8 {
            for n in 0..5 {
                let line = format!("session {session} fact {n}");
                assert_eq!(
                    shown.matches(&format!("{line}\n")).count()
                        + usize::from(shown.ends_with(&line)),
                    1,
                    "{line} once in:\n{shown}"
                );
            }
        }
        let lines = shown.lines().filter(|l| l.contains("session ")).count();
        assert_eq!(lines, 40, "{shown}");
    }
}

/// memory_append refuses what is not one line of text, and says how to fix it.
#[tokio::test]
async fn a_memory_line_is_one_line_of_text() {
    let f = Fixture::new();
    let client = connect(f.virtual_memory()).await;
    for (args, code) in [
        (json!({"text": "two\nlines"}), "invalid_argument"),
        (json!({"text": "   "}), "invalid_argument"),
        (json!({"text": "x".repeat(5000)}), "too_large"),
        (json!({}), "invalid_argument"),
        (json!({"text": "a", "path": "/etc"}), "invalid_argument"),
    ] {
        let result = call(&client, MEMORY_APPEND, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}");
        assert_eq!(
            result.structured_content.as_ref().unwrap()["error"]["code"],
            code,
            "{args}: {}",
            text(&result)
        );
    }
    let read = call(&client, "read_file", json!({"path": today_log()})).await;
    assert_eq!(read.is_error, Some(true), "nothing was written");
}

/// memory_search ranks lines holding more of the query's words first, finds what was just
/// appended, searches a readable path the agent names, and refuses one it cannot read.
#[tokio::test]
async fn memory_search_ranks_lines_and_keeps_to_the_scopes() {
    let f = Fixture::new();
    let client = connect(f.virtual_memory()).await;
    ok(
        &client,
        MEMORY_APPEND,
        json!({"text": "Friday deploy of the billing service failed."}),
    )
    .await;
    let (said, data) = ok(&client, MEMORY_SEARCH, json!({"query": "friday DEPLOY"})).await;
    let matches = data["matches"].as_array().unwrap();
    assert_eq!(data["total"], 3, "{said}");
    // Both words on one line beat one word; of two lines with both, the newer log first.
    assert_eq!(matches[0]["path"], today_log(), "{said}");
    assert_eq!(matches[0]["line"], 1);
    assert_eq!(matches[1]["path"], "/workspace/MEMORY.md");
    assert_eq!(matches[1]["line"], 2);
    assert_eq!(matches[2]["line"], 1, "deploys (one word) last");
    assert!(
        said.contains("/workspace/MEMORY.md:2: - Friday deploys are off."),
        "{said}"
    );
    // Knowledge is not memory, unless the agent names it.
    assert!(!said.contains("KNOWLEDGE"), "{said}");
    let (said, _) = ok(
        &client,
        MEMORY_SEARCH,
        json!({"query": "deploy", "path": "/workspace/knowledge"}),
    )
    .await;
    assert!(
        said.contains("/workspace/knowledge/KNOWLEDGE.md:1:"),
        "{said}"
    );
    let (_, limited) = ok(
        &client,
        MEMORY_SEARCH,
        json!({"query": "deploy", "limit": 1}),
    )
    .await;
    assert_eq!(limited["matches"].as_array().unwrap().len(), 1);
    assert_eq!(limited["total"], 3);
    let (_, none) = ok(&client, MEMORY_SEARCH, json!({"query": "kubernetes"})).await;
    assert_eq!(none["total"], 0);
    for (args, code) in [
        (
            json!({"query": "deploy", "path": "/etc"}),
            "permission_denied",
        ),
        (
            json!({"query": "deploy", "path": "/workspace/nope"}),
            "not_found",
        ),
        (json!({"query": "..."}), "invalid_argument"),
        (json!({"query": "deploy", "limit": 0}), "invalid_argument"),
    ] {
        let result = call(&client, MEMORY_SEARCH, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}");
        assert_eq!(
            result.structured_content.as_ref().unwrap()["error"]["code"],
            code,
            "{args}: {}",
            text(&result)
        );
    }
}

/// session_record adds a session, updates it in place (keeping its summary when none is
/// given), and concurrent records of different sessions are all kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_are_recorded_without_losing_any() {
    let f = Fixture::new();
    let server = f.virtual_memory();
    let client = connect(server.clone()).await;
    let (said, data) = ok(
        &client,
        SESSION_RECORD,
        json!({"session_id": "s-1", "summary": "triaged three issues"}),
    )
    .await;
    assert_eq!(data["added"], true, "{said}");
    let index_path = "/workspace/agents/reviewer/sessions/sessions.json";
    assert_eq!(data["path"], index_path);
    let mut tasks = Vec::new();
    for n in 0..6 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let client = connect(server).await;
            ok(
                &client,
                SESSION_RECORD,
                json!({"session_id": format!("c-{n}")}),
            )
            .await;
            client.cancel().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let (_, again) = ok(&client, SESSION_RECORD, json!({"session_id": "s-1"})).await;
    assert_eq!(again["added"], false);
    assert_eq!(again["sessions"], 7);
    let read = call(
        &client,
        "read_file",
        json!({"path": index_path, "limit": 500}),
    )
    .await;
    let shown = text(&read);
    assert!(
        shown.contains("triaged three issues"),
        "summary kept: {shown}"
    );
    for n in 0..6 {
        assert!(shown.contains(&format!("\"c-{n}\"")), "c-{n} in {shown}");
    }
    let bad = call(&client, SESSION_RECORD, json!({"session_id": "../x"})).await;
    assert_eq!(bad.is_error, Some(true));
}

/// A memory store that counts its searches and reads.
struct Counting {
    inner: MemoryStore,
    searches: std::sync::atomic::AtomicUsize,
    reads: std::sync::atomic::AtomicUsize,
}

impl wsp_store::WorkspaceStore for Counting {
    wsp_store::forward_store!(|this| this.inner; limits, features, list, put, delete, history);

    fn get<'a>(
        &'a self,
        owner: &'a wsp_types::Owner,
        path: &'a wsp_types::WorkspacePath,
        version: Option<u64>,
    ) -> wsp_store::StoreFuture<'a, wsp_store::StoredFile> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.get(owner, path, version)
    }

    fn search<'a>(
        &'a self,
        owner: &'a wsp_types::Owner,
        query: &'a wsp_store::SearchQuery,
    ) -> wsp_store::StoreFuture<'a, wsp_store::SearchResults> {
        self.searches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.search(owner, query)
    }
}

/// On a virtual memory folder, memory_search asks the store's search once instead of reading
/// each daily log, and answers what the scan would.
#[tokio::test]
async fn memory_search_uses_the_stores_search_on_a_virtual_mount() {
    use std::sync::atomic::Ordering::Relaxed;

    let f = Fixture::new();
    let store = Arc::new(Counting {
        inner: MemoryStore::default(),
        searches: Default::default(),
        reads: Default::default(),
    });
    let toml = TABLE
        .replace("MEMORY_SCOPE", "rw")
        .replace("MEMORY_MOUNT", r#"{ virtual = "memory" }"#)
        .replace("DIR", &f.dir.path().display().to_string());
    let vfs = Vfs::builder(MountTable::from_toml_str(&toml).unwrap())
        .virtual_store(store.clone())
        .build()
        .unwrap();
    let client = connect(
        McpServer::files(vfs)
            .with_context_root("/workspace")
            .unwrap(),
    )
    .await;
    for day in 1..=20 {
        let w = call(
            &client,
            "write_file",
            json!({"path": format!("/workspace/memory/2026-01-{day:02}.md"), "content": format!("day {day}: the deploy went fine\n")}),
        )
        .await;
        assert_ne!(w.is_error, Some(true), "{}", text(&w));
    }
    let (reads, searches) = (store.reads.load(Relaxed), store.searches.load(Relaxed));
    let (said, data) = ok(
        &client,
        MEMORY_SEARCH,
        json!({"query": "deploy", "limit": 3}),
    )
    .await;
    assert_eq!(store.searches.load(Relaxed) - searches, 1, "{said}");
    assert_eq!(
        store.reads.load(Relaxed) - reads,
        0,
        "no daily log read one by one"
    );
    assert_eq!(
        data["total"], 22,
        "20 logs and MEMORY.md's two deploy lines: {said}"
    );
    assert_eq!(
        data["matches"][0]["path"], "/workspace/memory/2026-01-20.md",
        "{said}"
    );
    client.cancel().await.unwrap();
}

/// Files of the memory folder that the deny rules hide add nothing to memory_search: no line,
/// no count (the store's index holds them, so its totals would tell that a hidden file holds
/// the words), and naming one is answered like a missing file.
#[tokio::test]
async fn memory_search_counts_nothing_of_a_denied_file() {
    use wsp_store::{FileWrite, Precondition, WorkspaceStore};
    use wsp_types::{Owner, WorkspacePath};

    let f = Fixture::new();
    let owner = Owner::parse("vfs", "memory").unwrap();
    // More matching lines than one store search returns, so its total counts lines it did not
    // hand back.
    let many: String = (0..150)
        .map(|i| format!("DEPLOY_TOKEN_{i}=sekret deploy\n"))
        .collect();
    for (path, content) in [
        ("2026-01-01.md", "the deploy went fine\n".to_owned()),
        ("cfg/.env", many),
        ("deploy.pem", "deploy deploy deploy\n".to_owned()),
    ] {
        f.store
            .put(
                &owner,
                &WorkspacePath::parse(path).unwrap(),
                FileWrite::markdown(content),
                Precondition::None,
            )
            .await
            .unwrap();
    }
    let client = connect(f.virtual_memory()).await;
    for args in [
        json!({"query": "deploy"}),
        json!({"query": "deploy", "path": "/workspace/memory"}),
        json!({"query": "deploy", "limit": 1}),
    ] {
        let (said, data) = ok(&client, MEMORY_SEARCH, args.clone()).await;
        // MEMORY.md's two lines and the log's one; the log alone under the memory folder.
        let (lines, files) = if args.get("path").is_some() {
            (1, 1)
        } else {
            (3, 2)
        };
        assert_eq!(data["total"], lines, "{args}: {said}");
        assert_eq!(data["filesSearched"], files, "{args}: {said}");
        for never in ["sekret", ".env", ".pem", "TOKEN"] {
            assert!(!said.contains(never), "{args}: {never} in {said}");
            assert!(
                !data.to_string().contains(never),
                "{args}: {never} in {data}"
            );
        }
    }
    let named = call(
        &client,
        MEMORY_SEARCH,
        json!({"query": "deploy", "path": "/workspace/memory/cfg/.env"}),
    )
    .await;
    assert_eq!(
        named.structured_content.as_ref().unwrap()["error"]["code"],
        "not_found",
        "{}",
        text(&named)
    );
    client.cancel().await.unwrap();
}
