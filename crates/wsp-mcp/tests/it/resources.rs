//! The workspace's files as MCP resources: listed and read per the scopes (never a write-only
//! Workspace), with the etag `write_file` takes, and a subscription that hears of each change.

use std::time::Duration;

use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::json;
use wsp_mcp::McpServer;

use crate::mcp::{call, connect, text};

/// The prompt tests' table: `/workspace` read-only on disk, `/workspace/memory` read-write
/// and virtual, `/outbox` write-only.
fn server(dir: &tempfile::TempDir) -> McpServer {
    crate::prompt::files_server(dir)
}

fn layout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "# Reviewer\n").unwrap();
    std::fs::create_dir(dir.path().join("knowledge")).unwrap();
    std::fs::write(
        dir.path().join("knowledge/logo.png"),
        [0x89, b'P', b'N', b'G', 0xff, 0],
    )
    .unwrap();
    dir
}

async fn read(client: &crate::mcp::Client, uri: &str) -> Result<ResourceContents, String> {
    client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .map(|r| r.contents.into_iter().next().unwrap())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn readable_files_are_resources_with_their_etag() {
    let dir = layout();
    let client = connect(server(&dir)).await;
    let written = call(
        &client,
        "write_file",
        json!({"path": "/workspace/memory/2026-01-02.md", "content": "fact\n"}),
    )
    .await;
    assert_ne!(written.is_error, Some(true), "{}", text(&written));
    let dropped = call(
        &client,
        "write_file",
        json!({"path": "/outbox/secret.md", "content": "x"}),
    )
    .await;
    assert_ne!(dropped.is_error, Some(true), "{}", text(&dropped));

    let listed: Vec<String> = client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    assert_eq!(
        listed,
        [
            "wsp:///workspace/AGENTS.md",
            "wsp:///workspace/knowledge/logo.png",
            "wsp:///workspace/memory/2026-01-02.md",
        ],
        "the write-only outbox is never listed"
    );

    let ResourceContents::TextResourceContents {
        text: body,
        mime_type,
        meta,
        ..
    } = read(&client, "wsp:///workspace/AGENTS.md").await.unwrap()
    else {
        panic!("text")
    };
    assert_eq!(body, "# Reviewer\n");
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    let etag = meta.unwrap().0["etag"].as_str().unwrap().to_owned();
    let via_tool = text(
        &call(
            &client,
            "read_file",
            json!({"path": "/workspace/AGENTS.md"}),
        )
        .await,
    );
    assert!(
        via_tool.contains(&etag),
        "the etag read_file shows: {via_tool}"
    );

    let ResourceContents::BlobResourceContents { blob, .. } =
        read(&client, "wsp:///workspace/knowledge/logo.png")
            .await
            .unwrap()
    else {
        panic!("bytes as a blob")
    };
    assert_eq!(
        blob,
        wsp_types::base64_encode(&[0x89, b'P', b'N', b'G', 0xff, 0])
    );

    for uri in [
        "wsp:///outbox/secret.md",
        "wsp:///workspace/nope.md",
        "file:///etc/passwd",
        "wsp:///etc/passwd",
    ] {
        assert!(read(&client, uri).await.is_err(), "{uri} was read");
    }
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "wsp://{+path}");
    client.cancel().await.unwrap();
}

/// Forwards `notifications/resources/updated` to a channel.
#[derive(Clone)]
struct Updates(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

/// `resources/subscribe` (the lifecycle before 2026-07-28; the Python SDK check covers
/// `subscriptions/listen`): a notice for each write to the watched file, its creation included,
/// none after `resources/unsubscribe`; a write-only file cannot be watched.
#[tokio::test]
#[allow(deprecated)]
async fn a_subscription_hears_of_each_change() {
    use rmcp::ServiceExt;
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};

    let dir = layout();
    let server = server(&dir);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let watcher_server = server.clone();
    tokio::spawn(async move { watcher_server.serve_io(server_read, server_write).await });
    let (client_read, client_write) = tokio::io::split(client_io);
    let client = Updates(tx)
        .serve((client_read, client_write))
        .await
        .unwrap();
    let watched = "wsp:///workspace/memory/today.md";
    client
        .subscribe(SubscribeRequestParams::new(watched))
        .await
        .unwrap();
    assert!(
        client
            .subscribe(SubscribeRequestParams::new("wsp:///outbox/x.md"))
            .await
            .is_err(),
        "a write-only file cannot be watched"
    );
    let writer = connect(server).await;
    for content in ["one\n", "two\n"] {
        let w = call(
            &writer,
            "write_file",
            json!({"path": "/workspace/memory/today.md", "content": content}),
        )
        .await;
        assert_ne!(w.is_error, Some(true), "{}", text(&w));
        let uri = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a notice within 10 s")
            .expect("the channel is open");
        assert_eq!(uri, watched);
    }
    client
        .unsubscribe(UnsubscribeRequestParams::new(watched))
        .await
        .unwrap();
    let w = call(
        &writer,
        "write_file",
        json!({"path": "/workspace/memory/today.md", "content": "three\n"}),
    )
    .await;
    assert_ne!(w.is_error, Some(true));
    tokio::time::sleep(wsp_mcp::POLL_INTERVAL * 3).await;
    assert!(rx.try_recv().is_err(), "no notice after unsubscribing");
    writer.cancel().await.unwrap();
    client.cancel().await.unwrap();
}

/// A file the deny rules hide is neither listed nor read as a resource.
#[tokio::test]
async fn denied_files_are_not_resources() {
    let dir = layout();
    std::fs::write(dir.path().join(".env"), "KEY=sekret\n").unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "sekret\n").unwrap();
    std::fs::write(dir.path().join("knowledge/deploy.pem"), "sekret\n").unwrap();
    let client = connect(server(&dir)).await;
    let listed: Vec<String> = client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    assert_eq!(
        listed,
        [
            "wsp:///workspace/AGENTS.md",
            "wsp:///workspace/knowledge/logo.png",
        ]
    );
    for uri in [
        "wsp:///workspace/.env",
        "wsp:///workspace/.git/config",
        "wsp:///workspace/knowledge/deploy.pem",
    ] {
        let err = read(&client, uri).await.unwrap_err();
        let missing = read(&client, "wsp:///workspace/nope.md").await.unwrap_err();
        assert_eq!(
            err.replace(uri, "<uri>")
                .replace(&uri["wsp://".len()..], "<path>"),
            missing
                .replace("wsp:///workspace/nope.md", "<uri>")
                .replace("/workspace/nope.md", "<path>"),
            "{uri}"
        );
    }
    client.cancel().await.unwrap();
}
