//! The MCP server as a client sees it: rmcp's client over an in-memory pipe.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use wsp_mcp::McpServer;
use wsp_store::MemoryStore;
use wsp_types::OwnerId;
use wsp_vfs::{AgentIdentity, ItemsProfile, MountTable, SharedAgentList, Vfs};

pub(crate) type Client = RunningService<RoleClient, ()>;

/// Starts `server` on one end of a pipe and an MCP client (after `initialize`) on the other.
pub(crate) async fn connect(server: McpServer) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(async move { server.serve_io(server_read, server_write).await });
    let (client_read, client_write) = tokio::io::split(client_io);
    ().serve((client_read, client_write))
        .await
        .expect("initialize")
}

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "# Project\nhello\n").unwrap();
        Self { dir }
    }

    fn vfs(&self, toml: &str) -> Vfs {
        let toml = toml.replace("DIR", &self.dir.path().display().to_string());
        let table = MountTable::from_toml_str(&toml).unwrap();
        Vfs::builder(table)
            .virtual_store(Arc::new(MemoryStore::default()))
            .build()
            .unwrap()
    }
}

const RO: &str = r#"
[[workspace]]
path = "/project"
scope = "ro"
mount = { physical = "DIR" }
"#;

const WO: &str = r#"
[[workspace]]
path = "/outbox"
scope = "wo"
mount = { virtual = "outbox" }
"#;

const MIXED: &str = r#"
[[workspace]]
path = "/project"
scope = "ro"
mount = { physical = "DIR" }

[[workspace]]
path = "/project/scratch"
scope = "rw"
mount = { virtual = "scratch" }

[[workspace]]
path = "/outbox"
scope = "wo"
mount = { virtual = "outbox" }
"#;

async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

pub(crate) async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

pub(crate) fn text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn tools_list_is_the_scope_derived_catalogue() {
    let fx = Fixture::new();
    let check = |toml: &'static str, want: &'static [&'static str]| {
        let vfs = fx.vfs(toml);
        async move {
            let catalogue: Vec<String> = vfs.tools().into_iter().map(|t| t.name).collect();
            let client = connect(McpServer::files(vfs)).await;
            let names = tool_names(&client).await;
            assert_eq!(names, want, "{toml}");
            assert_eq!(names, catalogue, "{toml}");
            client.cancel().await.unwrap();
        }
    };
    check(RO, &["ls", "read_file", "glob", "grep"]).await;
    check(WO, &["write_file"]).await;
    check(
        MIXED,
        &[
            "ls",
            "read_file",
            "glob",
            "grep",
            "write_file",
            "edit_file",
            "delete_file",
        ],
    )
    .await;
    check("", &[]).await;
}

#[tokio::test]
async fn listed_tools_carry_schemas_and_annotations() {
    let fx = Fixture::new();
    let vfs = fx.vfs(MIXED);
    let want: Vec<Value> = vfs
        .tools()
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    let client = connect(McpServer::files(vfs)).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), want.len());
    for (tool, want) in tools.iter().zip(&want) {
        let got = serde_json::to_value(tool).unwrap();
        assert_eq!(got["inputSchema"], want["inputSchema"], "{}", tool.name);
        assert_eq!(got["description"], want["description"], "{}", tool.name);
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint"] {
            assert_eq!(
                got["annotations"][hint], want["annotations"][hint],
                "{} {hint}",
                tool.name
            );
        }
    }
}

#[tokio::test]
async fn instructions_are_the_filesystem_map() {
    let fx = Fixture::new();
    let vfs = fx.vfs(MIXED);
    let map = vfs.filesystem_map();
    let client = connect(McpServer::files(vfs)).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.instructions.as_deref(), Some(map.as_str()));
    assert!(!map.contains(&fx.dir.path().display().to_string()));
}

#[tokio::test]
async fn calls_reach_the_filesystem_and_refusals_are_tool_errors() {
    let fx = Fixture::new();
    let client = connect(McpServer::files(fx.vfs(MIXED))).await;

    let read = call(&client, "read_file", json!({"path": "/project/README.md"})).await;
    assert_eq!(read.is_error, Some(false));
    assert!(
        text(&read).starts_with("     1\t# Project\n"),
        "{}",
        text(&read)
    );
    let etag = read.structured_content.as_ref().unwrap()["etag"].clone();
    assert!(etag.is_string(), "{read:?}");

    let wrote = call(
        &client,
        "write_file",
        json!({"path": "/project/scratch/plan.md", "content": "ship it\n"}),
    )
    .await;
    assert_eq!(wrote.is_error, Some(false), "{}", text(&wrote));
    let ls = call(&client, "ls", json!({"path": "/project"})).await;
    assert!(text(&ls).contains("scratch/"), "{}", text(&ls));

    // Refused by the scope: a tool result with the code, never the host directory.
    let denied = call(
        &client,
        "write_file",
        json!({"path": "/project/README.md", "content": "x"}),
    )
    .await;
    assert_eq!(denied.is_error, Some(true));
    assert!(
        text(&denied).starts_with("permission_denied: "),
        "{denied:?}"
    );
    let structured = denied.structured_content.as_ref().unwrap();
    assert_eq!(structured["error"]["code"], "permission_denied");
    let host = fx.dir.path().display().to_string();
    assert!(!serde_json::to_string(&denied).unwrap().contains(&host));

    for (args, code) in [
        (json!({"path": "/etc/passwd"}), "permission_denied"),
        (json!({"path": "/project/../etc/passwd"}), "invalid_path"),
        (json!({"path": "/project/missing.md"}), "not_found"),
        (json!({"path": "/outbox/report.md"}), "permission_denied"),
        (json!({"pathh": "/project/README.md"}), "invalid_argument"),
    ] {
        let result = call(&client, "read_file", args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}");
        assert_eq!(
            result.structured_content.as_ref().unwrap()["error"]["code"],
            code,
            "{args}"
        );
    }
    // The file did not change.
    let disk = std::fs::read_to_string(fx.dir.path().join("README.md")).unwrap();
    assert_eq!(disk, "# Project\nhello\n");
}

#[tokio::test]
async fn an_unlisted_tool_is_a_protocol_error() {
    let fx = Fixture::new();
    let client = connect(McpServer::files(fx.vfs(RO))).await;
    let err = client
        .call_tool(
            CallToolRequestParams::new("write_file").with_arguments(JsonObject::from_iter([
                ("path".to_owned(), json!("/project/x.md")),
                ("content".to_owned(), json!("x")),
            ])),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown tool"), "{err}");
    assert!(!fx.dir.path().join("x.md").exists());
}

#[tokio::test]
async fn the_items_profile_offers_publish_to_private_agents_only() {
    let id = |s: &str| OwnerId::parse(s).unwrap();
    let store = Arc::new(MemoryStore::default());
    let shared = Arc::new(SharedAgentList::new(id("t")).with(id("cook")));
    let private = ItemsProfile::new(
        store.clone(),
        AgentIdentity::private(id("t"), id("main"), id("u1")).unwrap(),
        shared.clone(),
    );
    let client = connect(McpServer::items(private)).await;
    assert_eq!(
        tool_names(&client).await,
        [
            "workspace_list",
            "workspace_read",
            "workspace_write",
            "workspace_delete",
            "workspace_publish"
        ]
    );
    let info = client.peer_info().unwrap();
    assert!(
        info.instructions
            .as_deref()
            .unwrap()
            .contains("workspace_publish")
    );
    let wrote = call(
        &client,
        "workspace_write",
        json!({"key": "recipe", "value": "soup"}),
    )
    .await;
    assert_eq!(wrote.is_error, Some(false), "{}", text(&wrote));
    let published = call(
        &client,
        "workspace_publish",
        json!({"key": "recipe", "target_agent_id": "cook"}),
    )
    .await;
    assert_eq!(published.is_error, Some(false), "{}", text(&published));

    let cook = ItemsProfile::new(
        store,
        AgentIdentity::shared(id("t"), id("cook")).unwrap(),
        shared,
    );
    let client = connect(McpServer::items(cook)).await;
    assert_eq!(
        tool_names(&client).await,
        [
            "workspace_list",
            "workspace_read",
            "workspace_write",
            "workspace_delete"
        ]
    );
    let read = call(&client, "workspace_read", json!({"key": "inbox/recipe"})).await;
    assert!(text(&read).contains("soup"), "{}", text(&read));
}

/// One `initialize` POST to the HTTP router, with `authorization` if given; the status.
async fn http_initialize(router: axum::Router, authorization: Option<&str>) -> u16 {
    use tower::ServiceExt;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "wsp-mcp-test", "version": "0"}}});
    let mut request = axum::http::Request::post(wsp_mcp::HTTP_PATH)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let request = request
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    router.oneshot(request).await.unwrap().status().as_u16()
}

#[tokio::test]
async fn the_http_endpoint_admits_only_the_bearer_token() {
    let fixture = Fixture::new();
    let server = McpServer::files(fixture.vfs(RO));
    let token = wsp_mcp::BearerToken::generate();
    let good = format!("Bearer {}", token.expose());
    let (router, close) = server.http_router(
        wsp_mcp::HttpAuth::Bearer(token.clone()),
        wsp_mcp::HttpAllowList::loopback(),
    );
    assert_eq!(http_initialize(router.clone(), None).await, 401);
    assert_eq!(
        http_initialize(router.clone(), Some("Bearer not-the-token")).await,
        401
    );
    let other = wsp_mcp::BearerToken::generate();
    assert_eq!(
        http_initialize(router.clone(), Some(&format!("Bearer {}", other.expose()))).await,
        401
    );
    assert_eq!(http_initialize(router.clone(), Some(&good)).await, 200);
    close();

    // Embedded behind an application that authenticates upstream: no check here.
    let (open, close) = server.http_router(
        wsp_mcp::HttpAuth::Upstream,
        wsp_mcp::HttpAllowList::loopback(),
    );
    assert_eq!(http_initialize(open, None).await, 200);
    close();
}
