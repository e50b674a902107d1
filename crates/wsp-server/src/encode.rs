//! Store results to wire JSON, through the types generated from `schemas/`.

use std::num::NonZeroU64;

use wsp_store::{FileMeta, Limits, StoreFeatures, StoredFile};
use wsp_types::WorkspacePath;
use wsp_types::wire::{
    ContentEncoding, Discovery, DiscoveryLimits, Implementation, WorkspaceCapability,
    WorkspaceFile, WorkspaceFileHistory, WorkspaceFileList, WorkspaceFileMeta, WspExtensions,
};

use crate::ServerConfig;

/// A version or sequence number on the wire (stores number both from 1).
pub(crate) fn version(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).expect("store versions and sequence numbers start at 1")
}

/// `contentEncoding` on the wire: named for bytes only, so text answers stay as OpenWOP's.
fn encoding(e: ContentEncoding) -> Option<ContentEncoding> {
    e.is_binary().then_some(e)
}

fn meta(m: FileMeta) -> WorkspaceFileMeta {
    WorkspaceFileMeta {
        content_encoding: encoding(m.encoding),
        size: Some(m.size),
        content_type: m.content_type.into_string(),
        etag: Some(m.etag.into_string()),
        path: m.path,
        updated_at: m.updated_at,
        updated_by: m.author,
        version: version(m.version),
    }
}

fn to_vec(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("wire types always serialize")
}

/// A `WorkspaceFile`.
pub fn file(f: StoredFile) -> Vec<u8> {
    let m = f.meta;
    to_vec(&WorkspaceFile {
        content: f.content,
        content_encoding: encoding(m.encoding),
        content_type: m.content_type.into_string(),
        etag: Some(m.etag.into_string()),
        path: m.path,
        updated_at: m.updated_at,
        updated_by: m.author,
        version: version(m.version),
    })
}

/// A `WorkspaceFileList`.
pub fn file_list(files: Vec<FileMeta>) -> Vec<u8> {
    to_vec(&WorkspaceFileList {
        files: files.into_iter().map(meta).collect(),
    })
}

/// A `WorkspaceFileHistory`.
pub fn history(path: &WorkspacePath, versions: Vec<FileMeta>) -> Vec<u8> {
    to_vec(&WorkspaceFileHistory {
        path: path.clone(),
        versions: versions.into_iter().map(meta).collect(),
    })
}

/// The `Discovery` document.
pub fn discovery(
    config: &ServerConfig,
    limits: &Limits,
    features: StoreFeatures,
    max_body_bytes: usize,
) -> Vec<u8> {
    let workspace = if config.workspace_enabled {
        WorkspaceCapability {
            supported: true,
            versioned: Some(true),
            max_file_bytes: NonZeroU64::new(limits.max_file_bytes),
            max_files: NonZeroU64::new(limits.max_files),
            max_versions: NonZeroU64::new(limits.max_versions),
        }
    } else {
        WorkspaceCapability {
            supported: false,
            versioned: None,
            max_file_bytes: None,
            max_files: None,
            max_versions: None,
        }
    };
    to_vec(&Discovery {
        agents: None,
        implementation: Some(Implementation {
            name: "wsp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }),
        limits: DiscoveryLimits {
            clarification_rounds: 0,
            envelopes_per_turn: 0,
            max_request_body_bytes: NonZeroU64::new(max_body_bytes as u64),
            schema_rounds: 0,
        },
        protocol_version: "1.0".into(),
        schema_versions: Default::default(),
        // Request and response JSON only: no OpenWOP run-event stream or poll profile.
        supported_transports: vec!["rest".into()],
        supported_envelopes: vec![],
        workspace: Some(workspace),
        wsp: config.workspace_enabled.then_some(WspExtensions {
            events: features.change_feed,
            binary_content: Some(true),
            delete_events: features.change_feed.then_some(true),
            context: Some(true),
            history: true,
            memory: Some(true),
            search: Some(true),
            updated_by: Some(true),
            runs: features.snapshots,
            run_list: features.snapshots.then_some(true),
            max_open_runs: NonZeroU64::new(config.max_open_runs).filter(|_| features.snapshots),
            max_pinned_bytes: features.snapshots.then_some(config.max_pinned_bytes),
        }),
    })
}
