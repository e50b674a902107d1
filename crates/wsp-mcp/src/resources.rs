//! The workspace's files as MCP resources: `resources/list`, `resources/read`,
//! `resources/templates/list`, and change notices (`notifications/resources/updated`) on a
//! `subscriptions/listen` stream.
//!
//! A resource is a file of a Workspace the agent can read (read-only or read-write; never a
//! write-only one), named `wsp://` and its virtual path (`wsp:///workspace/MEMORY.md`). Every
//! listing and read goes through the same VFS calls as the file tools (`glob`, `read_whole`),
//! so a resource shows nothing `read_file` could not. A read's `_meta` carries the file's etag,
//! the one `write_file` takes as `if_match`. A subscription watches the etags of the files it
//! names (every [`POLL_INTERVAL`]) and sends one notice per change, creation and deletion
//! included.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, MetaObject, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, SubscriptionFilter,
};
use rmcp::service::SubscriptionContext;
use serde_json::Value;
use wsp_vfs::{AccessScope, GlobArgs, Vfs, VfsErrorCode};

/// The scheme of a file resource: `wsp://` then the absolute virtual path.
pub const RESOURCE_SCHEME: &str = "wsp://";

/// How often a subscription looks at the files it watches.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Resources per `resources/list` page.
const PAGE: usize = 500;

/// The virtual path a resource URI names, when it is one of ours.
pub(crate) fn path_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(RESOURCE_SCHEME)
        .filter(|p| p.starts_with('/'))
}

/// The URI of the file at `path`.
fn uri_of(path: &str) -> String {
    format!("{RESOURCE_SCHEME}{path}")
}

/// A media type from a file name (the VFS keeps none for files on disk).
fn mime_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("jsonl") => "application/jsonl",
        Some("txt" | "log") => "text/plain",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// Whether `vfs` lets the agent read what `path` routes to.
fn readable(vfs: &Vfs, path: &str) -> bool {
    vfs.workspace_at(path)
        .is_some_and(|w| w.scope != AccessScope::WriteOnly)
}

/// Every readable file, sorted: each readable Workspace's files through `glob`.
async fn all_files(vfs: &Vfs) -> Result<Vec<String>, ErrorData> {
    let mut files = Vec::new();
    for ws in vfs.workspaces() {
        if ws.scope == AccessScope::WriteOnly {
            continue;
        }
        let args = GlobArgs {
            pattern: "**".to_owned(),
            path: Some(ws.path.to_string()),
        };
        match vfs.glob(args).await {
            Ok(found) => files.extend(found.matches.iter().map(ToString::to_string)),
            Err(e) if e.code == VfsErrorCode::Unavailable => {
                return Err(ErrorData::internal_error(e.message, None));
            }
            // An empty or missing Workspace lists nothing.
            Err(_) => {}
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// `resources/list`: a page of the readable files, from `cursor` (an offset this server gave).
pub(crate) async fn list(
    vfs: &Vfs,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| ErrorData::invalid_params("cursor is not one this server gave", None))?,
    };
    let files = all_files(vfs).await?;
    let page: Vec<Resource> = files
        .iter()
        .skip(start)
        .take(PAGE)
        .map(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            Resource::new(uri_of(path), name)
                .with_title(path.clone())
                .with_mime_type(mime_of(path))
        })
        .collect();
    let mut result = ListResourcesResult::with_all_items(page);
    if start + PAGE < files.len() {
        result.next_cursor = Some((start + PAGE).to_string());
    }
    Ok(result)
}

/// `resources/templates/list`: the one URI template, any readable file by its path.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(format!("{RESOURCE_SCHEME}{{+path}}"), "workspace file")
            .with_title("A file of a readable Workspace")
            .with_description(
                "Any file the agent can read, by its absolute path in the filesystem map \
                 (wsp:///workspace/MEMORY.md).",
            ),
    ])
}

/// `resources/read`: the file's text (or bytes, base64) and its etag in `_meta`.
pub(crate) async fn read(vfs: &Vfs, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let Some(path) = path_of(uri) else {
        return Err(ErrorData::invalid_params(
            format!("{uri} is not a workspace resource (wsp:///path)"),
            None,
        ));
    };
    let file = vfs.read_whole(path).await.map_err(|e| match e.code {
        VfsErrorCode::NotFound => ErrorData::resource_not_found(e.message, None),
        VfsErrorCode::Unavailable => ErrorData::internal_error(e.message, None),
        _ => ErrorData::invalid_params(format!("{}: {}", e.code, e.message), None),
    })?;
    let mut meta = JsonObject::new();
    meta.insert("etag".into(), Value::from(file.etag));
    let contents = match String::from_utf8(file.bytes) {
        Ok(text) => ResourceContents::text(text, uri),
        Err(e) => ResourceContents::blob(wsp_types::base64_encode(e.as_bytes()), uri),
    }
    .with_mime_type(mime_of(path))
    .with_meta(MetaObject(meta));
    Ok(ReadResourceResult::new(vec![contents]))
}

/// What `subscriptions/listen` accepts of a request: the resources that are readable files of
/// this table (none of the list-changed categories: the lists do not announce changes).
pub(crate) fn accepted(vfs: &Vfs, requested: &SubscriptionFilter) -> SubscriptionFilter {
    let uris: Vec<String> = requested
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| watchable(vfs, uri))
        .cloned()
        .collect();
    let mut filter = SubscriptionFilter::default();
    filter.resource_subscriptions = Some(uris);
    filter
}

/// The etag of the file at `path` now, or `None` when there is none (or it cannot be read).
async fn etag_now(vfs: &Vfs, path: &str) -> Option<String> {
    vfs.read_whole(path).await.ok().map(|f| f.etag)
}

/// Runs one subscription until it is cancelled: a notice each time a watched file's etag
/// changes (written, deleted, created).
pub(crate) async fn watch(vfs: &Vfs, context: SubscriptionContext) {
    let uris: Vec<String> = context
        .accepted()
        .resource_subscriptions
        .clone()
        .unwrap_or_default();
    let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
    for uri in &uris {
        if let Some(path) = path_of(uri) {
            seen.insert(uri.clone(), etag_now(vfs, path).await);
        }
    }
    if seen.is_empty() {
        context.cancelled().await;
        return;
    }
    loop {
        tokio::select! {
            () = context.cancelled() => return,
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
        for (uri, last) in &mut seen {
            let Some(path) = path_of(uri) else { continue };
            let now = etag_now(vfs, path).await;
            if now != *last {
                *last = now;
                if context
                    .sink()
                    .notify_resource_updated(uri.clone())
                    .await
                    .is_err()
                {
                    // The client is gone.
                    return;
                }
            }
        }
    }
}

/// The `resources/subscribe` subscriptions of one session (the legacy lifecycle, before
/// 2026-07-28): a watcher task per URI, stopped by `resources/unsubscribe`, by a closed
/// connection, or when the session's server is dropped.
#[derive(Debug, Default)]
pub(crate) struct LegacySubscriptions(std::sync::Mutex<BTreeMap<String, tokio::task::AbortHandle>>);

impl LegacySubscriptions {
    /// Keeps `task` as the watch of `uri`, stopping an earlier watch of the same URI.
    pub(crate) fn start(&self, uri: String, task: tokio::task::JoinHandle<()>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = map.insert(uri, task.abort_handle()) {
            old.abort();
        }
    }

    /// Stops watching `uri`; whether it was watched.
    pub(crate) fn stop(&self, uri: &str) -> bool {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(uri).map(|h| h.abort()).is_some()
    }
}

impl Drop for LegacySubscriptions {
    fn drop(&mut self) {
        let map = self.0.get_mut().unwrap_or_else(|p| p.into_inner());
        for handle in map.values() {
            handle.abort();
        }
    }
}

/// Whether `uri` names a readable file of `vfs` (what a subscription may watch).
pub(crate) fn watchable(vfs: &Vfs, uri: &str) -> bool {
    path_of(uri).is_some_and(|p| readable(vfs, p))
}

/// One legacy subscription: a `notifications/resources/updated` to `peer` each time the file's
/// etag changes, until the connection closes.
pub(crate) async fn watch_one(vfs: &Vfs, uri: String, peer: rmcp::Peer<rmcp::RoleServer>) {
    let Some(path) = path_of(&uri).map(str::to_owned) else {
        return;
    };
    let mut last = etag_now(vfs, &path).await;
    loop {
        tokio::time::sleep(POLL_INTERVAL).await;
        if peer.is_transport_closed() {
            return;
        }
        let now = etag_now(vfs, &path).await;
        if now != last {
            last = now;
            let notice = rmcp::model::ResourceUpdatedNotificationParam::new(uri.clone());
            if peer.notify_resource_updated(notice).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_absolute_virtual_paths() {
        assert_eq!(
            path_of("wsp:///workspace/MEMORY.md"),
            Some("/workspace/MEMORY.md")
        );
        assert_eq!(path_of("wsp://workspace/MEMORY.md"), None);
        assert_eq!(path_of("file:///etc/passwd"), None);
        assert_eq!(uri_of("/a/b.md"), "wsp:///a/b.md");
        assert_eq!(mime_of("/a/B.MD"), "text/markdown");
        assert_eq!(mime_of("/a/b"), "application/octet-stream");
    }
}
