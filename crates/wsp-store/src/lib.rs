//! The wsp workspace store contract: versioned, owner-scoped workspace files.
//!
//! **Invariant:** every mutation is atomic. The precondition check, the version bump, the limit
//! checks and history pruning happen in one transaction; a reader sees the old file or the new
//! one, never a mix. Owner scoping is part of every call signature: there is no way to ask a
//! store for a file without an [`Owner`], and one owner's calls never observe another's data.
//!
//! This crate holds the [`WorkspaceStore`] trait, the [`MemoryStore`] backend, WSR-1 secret
//! redaction ([`Redactor`]), [`forward_store!`] for stores that wrap another one and, behind the
//! `battery` feature, the test battery every backend runs (`battery_tests!`).

pub mod approvals;
#[cfg(any(test, feature = "battery"))]
pub mod battery;
mod forward;
pub mod idempotency;
pub mod keys;
mod memory;
pub mod migrations;
mod redact;
mod redacting;
pub mod search;
pub mod shared;
mod snapshot;
mod snapshot_quota;
pub mod write;

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use wsp_types::wire::ContentEncoding;
use wsp_types::{ETag, LimitKind, MediaType, Owner, WorkspacePath, WorkspacePrefix};

#[doc(hidden)]
pub use forward::__private;
pub use idempotency::{IdempotencyRecords, MemoryIdempotency};
pub use memory::MemoryStore;
pub use redact::{MIN_SECRET_LEN, Redactor, Secret, SecretError};
pub use redacting::{RedactingStore, SecretSource, TenantSecrets, refuse_secret};
pub use search::{SearchHit, SearchQuery, SearchQueryError, SearchResults};
pub use snapshot::{RunMeta, SnapshotId, SnapshotLabel};
pub use snapshot_quota::{QuotaExceeded, SnapshotQuota, SnapshotUsage};

/// The future returned by every [`WorkspaceStore`] method.
///
/// Boxed so that the trait stays object safe: hosts pick a backend at run time and hold it as
/// `Arc<dyn WorkspaceStore>`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Per-store ceilings, advertised in discovery and enforced inside the write transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest body, in bytes: the UTF-8 bytes of text, the decoded bytes of a base64 body.
    pub max_file_bytes: u64,
    /// Most live files per owner.
    pub max_files: u64,
    /// Versions retained per path (the latest always included).
    pub max_versions: u64,
}

impl Limits {
    /// This configuration with [`Limits::max_file_bytes`] set.
    pub fn with_max_file_bytes(mut self, max_file_bytes: u64) -> Self {
        self.max_file_bytes = max_file_bytes;
        self
    }

    /// This configuration with [`Limits::max_files`] set.
    pub fn with_max_files(mut self, max_files: u64) -> Self {
        self.max_files = max_files;
        self
    }

    /// This configuration with [`Limits::max_versions`] set.
    pub fn with_max_versions(mut self, max_versions: u64) -> Self {
        self.max_versions = max_versions;
        self
    }
}

impl Default for Limits {
    /// 1 MiB files, 10,000 files, 50 versions.
    fn default() -> Self {
        Self {
            max_file_bytes: 1024 * 1024,
            max_files: 10_000,
            max_versions: 50,
        }
    }
}

/// The condition a write or delete requires of the live file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Precondition {
    /// Unconditional.
    #[default]
    None,
    /// `If-Match: <etag>[, <etag>...]`: the live file's etag equals one of these.
    IfMatch(Vec<ETag>),
    /// `If-Match: *`: some live version exists.
    IfMatchAny,
    /// `If-None-Match: *`: no live version exists (create only).
    IfNoneMatchAny,
    /// `If-Match` together with `If-None-Match: *`, both evaluated (RFC 9110 §13.2.2): a live
    /// version must match while none may exist, which no state admits, so the write is always
    /// a [`StoreError::Conflict`] and stores nothing.
    Unsatisfiable,
}

impl Precondition {
    /// Whether a live file with `etag` (or none) satisfies the precondition.
    pub fn admits(&self, live: Option<&ETag>) -> bool {
        match (self, live) {
            (Self::None, _) => true,
            (Self::IfMatch(tags), Some(live)) => tags.iter().any(|t| t == live),
            (Self::IfMatch(_), None) => false,
            (Self::IfMatchAny, live) => live.is_some(),
            (Self::IfNoneMatchAny, live) => live.is_none(),
            (Self::Unsatisfiable, _) => false,
        }
    }
}

/// The body of a write.
///
/// `content` is spelled as `encoding` says: the text itself, or the file's bytes in standard,
/// padded base64 (see [`wsp_types::wire::ContentEncoding`]), which is also how stores keep a
/// binary body. Every backend checks a write with [`check_file_size`] first, which refuses
/// base64 that is not the one accepted spelling of some bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    /// The content (a [`RedactingStore`] redacts text before the store beneath sees it, and
    /// refuses bytes that hold a secret).
    pub content: String,
    /// How `content` carries the body.
    pub encoding: ContentEncoding,
    /// The media type (`text/markdown` when the client sent none).
    pub content_type: MediaType,
    /// Who wrote it (the acting principal), for attribution only.
    pub author: Option<String>,
}

impl FileWrite {
    /// A markdown write with no recorded author.
    pub fn markdown(content: impl Into<String>) -> Self {
        Self::text(content, MediaType::markdown())
    }

    /// A text write of `content_type` with no recorded author.
    pub fn text(content: impl Into<String>, content_type: MediaType) -> Self {
        Self {
            content: content.into(),
            encoding: ContentEncoding::Utf8,
            content_type,
            author: None,
        }
    }

    /// A write of `bytes` (kept as base64) of `content_type`, with no recorded author.
    pub fn bytes(bytes: &[u8], content_type: MediaType) -> Self {
        Self {
            content: wsp_types::base64_encode(bytes),
            encoding: ContentEncoding::Base64,
            content_type,
            author: None,
        }
    }

    /// This write attributed to `author`.
    pub fn by(mut self, author: impl Into<String>) -> Self {
        self.author = Some(author.into());
        self
    }
}

/// Metadata of one stored version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file's path.
    pub path: WorkspacePath,
    /// Its media type.
    pub content_type: MediaType,
    /// How the content is spelled: text, or bytes in base64.
    pub encoding: ContentEncoding,
    /// Version within the current life of the path, starting at 1.
    pub version: u64,
    /// The opaque tag of this (path, life, version).
    pub etag: ETag,
    /// When this version was written.
    pub updated_at: DateTime<Utc>,
    /// Body length in bytes: UTF-8 bytes of text, decoded bytes of base64.
    pub size: u64,
    /// Who wrote this version, when known.
    pub author: Option<String>,
}

/// One stored version with its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// The version's metadata.
    pub meta: FileMeta,
    /// The content, spelled as `meta.encoding` says.
    pub content: String,
}

/// The result of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    /// The tombstone's version: the last live version plus one.
    pub version: u64,
}

/// A pinned point in an owner's change sequence: reads through it see exactly the live files
/// of that moment, whatever is written, deleted or re-created afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// Its id.
    pub id: SnapshotId,
    /// The owner's change sequence number it pins (0: before any change).
    pub seq: u64,
    /// What the taker attached: a run's metadata, or free text.
    pub label: SnapshotLabel,
    /// When it was taken.
    pub created_at: DateTime<Utc>,
    /// When and why it was released; a released snapshot can no longer be read.
    pub released: Option<(DateTime<Utc>, String)>,
}

/// Where a page of [`WorkspaceStore::list_snapshots`] continues: after this snapshot, in
/// newest-first order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotCursor {
    /// When the last snapshot of the previous page was taken.
    pub created_at: DateTime<Utc>,
    /// Its id (which orders snapshots taken in the same microsecond).
    pub id: SnapshotId,
}

impl SnapshotCursor {
    /// The cursor that continues after `info`.
    pub fn after(info: &SnapshotInfo) -> Self {
        Self {
            created_at: info.created_at,
            id: info.id.clone(),
        }
    }

    /// Whether `info` comes after this cursor in newest-first order.
    pub fn precedes(&self, info: &SnapshotInfo) -> bool {
        (info.created_at, info.id.as_str()) < (self.created_at, self.id.as_str())
    }
}

/// One committed change in an owner's feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeEvent {
    /// The owner's change sequence number (1, 2, ...; gap-free within an owner).
    pub seq: u64,
    /// The path written or deleted.
    pub path: WorkspacePath,
    /// The new version, or for a delete the tombstone's (last version plus one).
    pub version: u64,
    /// Whether this change is a delete.
    pub deleted: bool,
    /// When it committed.
    pub at: DateTime<Utc>,
}

/// A slice of an owner's change feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangePage {
    /// Changes with `seq` after the requested position, oldest first.
    pub events: Vec<ChangeEvent>,
    /// The oldest sequence number still retained (`head + 1` when none is).
    pub oldest: u64,
    /// The newest committed sequence number (0 before any change).
    pub head: u64,
}

/// "Something committed for this owner at this sequence number": a wake-up call for feed
/// readers, who then read the changes themselves with [`WorkspaceStore::changes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeNotice {
    /// Whose feed moved.
    pub owner: Owner,
    /// The newest sequence number.
    pub seq: u64,
}

/// Changes each owner's feed retains by default.
pub const DEFAULT_FEED_RETENTION: u64 = 10_000;

/// The error beneath a store failure, kept for its chain ([`std::error::Error::source`]).
pub type Cause = std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Why a store call failed. HTTP-free: the server maps it to the wire once, at the edge.
///
/// Equality compares the variant and its fields, and for [`StoreError::Unavailable`] and
/// [`StoreError::Internal`] the reason text only: the causes beneath are not comparable.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No such live file or retained version for this owner.
    #[error("not found")]
    NotFound,
    /// The precondition failed; `current_version` is the live version, 0 when absent.
    #[error("precondition failed (current version {current_version})")]
    Conflict {
        /// The live version, 0 when there is no live file.
        current_version: u64,
    },
    /// A limit would be exceeded.
    #[error("{} of {max} exceeded", limit.as_str())]
    TooLarge {
        /// Which limit.
        limit: LimitKind,
        /// Its value.
        max: u64,
    },
    /// The backend cannot be reached right now; the caller may retry.
    #[error("store unavailable: {reason}")]
    Unavailable {
        /// What happened, for logs.
        reason: String,
        /// The driver's error, when there is one.
        #[source]
        cause: Option<Cause>,
    },
    /// A configured secret (WSR-1) appears in `field` of a write, a field that names something
    /// (a path, a media type, a label) and so is refused rather than redacted; nothing was
    /// stored. The message names the field, never the secret.
    #[error("a configured secret appears in {field}")]
    ContainsSecret {
        /// The field, as the wire names it (`path`, `contentType`, ...).
        field: &'static str,
    },
    /// A write's `content` is not what its encoding says (base64 that is not valid, padded,
    /// standard base64); nothing was stored.
    #[error("{0}")]
    InvalidContent(String),
    /// The backend does not offer this capability (snapshots, the change feed).
    #[error("the store does not support {0}")]
    Unsupported(&'static str),
    /// An unexpected backend failure (the text is for logs, never for clients).
    #[error("store failure: {reason}")]
    Internal {
        /// What happened, for logs.
        reason: String,
        /// The driver's error, when there is one.
        #[source]
        cause: Option<Cause>,
    },
}

impl StoreError {
    /// [`StoreError::Unavailable`] with no cause beneath.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self::Unavailable {
            reason: reason.into(),
            cause: None,
        }
    }

    /// [`StoreError::Unavailable`] caused by `cause`.
    pub fn unavailable_from(
        reason: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Unavailable {
            reason: reason.into(),
            cause: Some(std::sync::Arc::new(cause)),
        }
    }

    /// [`StoreError::Internal`] with no cause beneath.
    pub fn internal(reason: impl Into<String>) -> Self {
        Self::Internal {
            reason: reason.into(),
            cause: None,
        }
    }

    /// [`StoreError::Internal`] caused by `cause`.
    pub fn internal_from(
        reason: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Internal {
            reason: reason.into(),
            cause: Some(std::sync::Arc::new(cause)),
        }
    }
}

impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::NotFound, Self::NotFound) => true,
            (Self::Conflict { current_version: a }, Self::Conflict { current_version: b }) => {
                a == b
            }
            (Self::TooLarge { limit: a, max: m }, Self::TooLarge { limit: b, max: n }) => {
                a == b && m == n
            }
            (Self::Unavailable { reason: a, .. }, Self::Unavailable { reason: b, .. })
            | (Self::Internal { reason: a, .. }, Self::Internal { reason: b, .. }) => a == b,
            (Self::ContainsSecret { field: a }, Self::ContainsSecret { field: b }) => a == b,
            (Self::Unsupported(a), Self::Unsupported(b)) => a == b,
            (Self::InvalidContent(a), Self::InvalidContent(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for StoreError {}

/// Which optional parts of the [`WorkspaceStore`] contract a store implements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreFeatures {
    /// Run-start snapshots: `snapshot`, `snapshot_info`, `release_snapshot`, `list_at`, `get_at`.
    pub snapshots: bool,
    /// The change feed: `changes` (and, when it can, `subscribe`).
    pub change_feed: bool,
}

impl StoreFeatures {
    /// Everything: what every wsp backend offers.
    pub const ALL: StoreFeatures = StoreFeatures {
        snapshots: true,
        change_feed: true,
    };
}

/// Told by a backend's writer of each commit of file changes, for a host's metrics (the
/// SQLite store takes one through `SqliteStore::observe_commits`).
///
/// Called on the writer's thread right after the commit, so it must be quick and never block.
pub trait CommitObserver: Send + Sync + 'static {
    /// One commit of `changes` writes and deletes (more than one when a backend commits
    /// concurrent changes together, as SQLite's group commit does), whose `COMMIT` took
    /// `commit_time`, the durable part of the write.
    fn committed(&self, changes: usize, commit_time: std::time::Duration);
}

/// A versioned, owner-scoped workspace file store.
///
/// Semantics every backend follows (and the battery, `battery_tests!`, checks):
/// - The first write of a path is version 1; each write adds exactly 1.
/// - A delete tombstones the live file; a later write starts a new life at version 1 whose
///   etags never equal an etag of an earlier life, so a stale `If-Match` can never succeed.
/// - `get` with a version serves only retained versions of the current, live life.
/// - `max_file_bytes` and `max_files` are checked in the write transaction; history beyond
///   `max_versions` is pruned in it.
/// - Racing conditional writers: exactly one wins per version, versions stay gap-free.
pub trait WorkspaceStore: Send + Sync + 'static {
    /// The limits this store enforces.
    fn limits(&self) -> Limits;

    /// The optional parts of the contract this store implements (default: none), so a host
    /// advertises runs and the change feed only when its store has them.
    fn features(&self) -> StoreFeatures {
        StoreFeatures::default()
    }

    /// Whether the store can serve requests now (`GET /readyz`): a cheap check, such as one
    /// trivial query, that the backend answers and is usable. Default: always ready.
    fn ready(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    /// Live files whose path starts with `prefix`, sorted by path (byte order), without content.
    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>>;

    /// The live file, or with `version` a retained version of its current life.
    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredFile>;

    /// Creates or replaces a file if `precondition` admits the live file; returns what was stored.
    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile>;

    /// Tombstones the live file if `precondition` admits it.
    fn delete<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        precondition: Precondition,
    ) -> StoreFuture<'a, Deleted>;

    /// Retained versions of the live file's current life, newest first.
    fn history<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, Vec<FileMeta>>;

    /// Pins the owner's current change sequence. Costs the same for 10 files or 100,000: it
    /// copies nothing. Versions it can see are kept until it is released.
    ///
    /// This and the other snapshot and feed methods are optional for third-party stores: the
    /// defaults answer [`StoreError::Unsupported`], and a host then does not offer runs or the
    /// change feed. Every wsp backend implements them and runs their part of the battery.
    fn snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let _ = (owner, label);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// A snapshot's record, released or not; `NotFound` for an unknown id or another owner's.
    fn snapshot_info<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let _ = (owner, id);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// `owner`'s snapshots, open and released (not those forgotten), newest first (by creation
    /// time, then id): at most `limit`, after `after` (the last of the previous page) or from
    /// the newest. Pages stay consistent while snapshots are taken: a new one is newer than
    /// any cursor, so it never shifts a later page.
    fn list_snapshots<'a>(
        &'a self,
        owner: &'a Owner,
        after: Option<&'a SnapshotCursor>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<SnapshotInfo>> {
        let _ = (owner, after, limit);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// Releases a snapshot (idempotent: releasing twice keeps the first outcome).
    fn release_snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
        outcome: &'a str,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let _ = (owner, id, outcome);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// Open snapshots of every owner taken before `cutoff`, oldest first, at most `limit`.
    ///
    /// For a host's housekeeping (ending runs past their time to live), never to answer a
    /// caller: it is the one call not scoped to an owner, and it returns records, not file data.
    fn open_snapshots_before<'a>(
        &'a self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<(Owner, SnapshotInfo)>> {
        let _ = (cutoff, limit);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// How many snapshots are open, over every owner (a host's metrics: the open runs).
    ///
    /// Housekeeping like [`open_snapshots_before`](Self::open_snapshots_before): not scoped to
    /// an owner, never called to answer a caller; it returns one number and no record.
    fn count_open_snapshots(&self) -> StoreFuture<'_, u64> {
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// Deletes the records of snapshots of every owner released before `cutoff`, oldest
    /// release first, at most `limit`; returns how many. Afterwards they are unknown
    /// (`NotFound`). Open snapshots are never touched.
    ///
    /// Housekeeping like [`open_snapshots_before`](Self::open_snapshots_before): not scoped to
    /// an owner, never called to answer a caller.
    fn forget_released_snapshots<'a>(
        &'a self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> StoreFuture<'a, usize> {
        let _ = (cutoff, limit);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// How many snapshots `owner` has open and the bytes they pin ([`SnapshotUsage`]).
    fn snapshot_usage<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, SnapshotUsage> {
        let _ = owner;
        Box::pin(async { Err(StoreError::Unsupported("snapshot usage")) })
    }

    /// [`snapshot`](Self::snapshot), unless `owner`'s usage is outside `quota`
    /// ([`SnapshotQuota::admits`]). Every wsp backend checks and takes in one transaction, so
    /// concurrent calls (from any replica) never open more than `quota.max_open`. The default
    /// checks, then takes: concurrent calls may overshoot by their number.
    fn snapshot_within<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
        quota: SnapshotQuota,
    ) -> StoreFuture<'a, Result<SnapshotInfo, QuotaExceeded>> {
        Box::pin(async move {
            if let Err(refused) = quota.admits(self.snapshot_usage(owner).await?) {
                return Ok(Err(refused));
            }
            Ok(Ok(self.snapshot(owner, label).await?))
        })
    }

    /// [`list`](Self::list) as of an open snapshot; `NotFound` when it is unknown or released.
    fn list_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let _ = (owner, snapshot, prefix);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// [`get`](Self::get) of the live file as of an open snapshot.
    fn get_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, StoredFile> {
        let _ = (owner, snapshot, path);
        Box::pin(async { Err(StoreError::Unsupported("snapshots")) })
    }

    /// Up to `limit` changes of the owner's feed after sequence number `after`.
    fn changes<'a>(
        &'a self,
        owner: &'a Owner,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, ChangePage> {
        let _ = (owner, after, limit);
        Box::pin(async { Err(StoreError::Unsupported("the change feed")) })
    }

    /// Full-text search of the owner's live text files under the query's prefix: the lines
    /// holding the query's words, best first ([`search`] has the scoring every backend shares).
    /// Binary files are never searched. SQLite and PostgreSQL keep an index in the write
    /// transaction and read lines from the best [`search::MAX_CANDIDATE_FILES`] files; the
    /// default scans every live text file (list, then get each), which is what the memory
    /// store does.
    fn search<'a>(
        &'a self,
        owner: &'a Owner,
        query: &'a SearchQuery,
    ) -> StoreFuture<'a, SearchResults> {
        Box::pin(async move {
            let mut hits = Vec::new();
            let mut files = 0u64;
            for meta in self.list(owner, query.prefix()).await? {
                if meta.encoding.is_binary() {
                    continue;
                }
                let file = match self.get(owner, &meta.path, None).await {
                    Ok(file) => file,
                    // Deleted since the listing.
                    Err(StoreError::NotFound) => continue,
                    Err(e) => return Err(e),
                };
                if file.meta.encoding.is_binary() {
                    continue;
                }
                files += 1;
                hits.extend(search::scan_lines(
                    &file.meta.path,
                    &file.content,
                    query.terms(),
                ));
            }
            Ok(search::rank(hits, query.limit(), files, false))
        })
    }

    /// Notices of committed changes, for every owner (filter by [`ChangeNotice::owner`]).
    /// A receiver that lags loses notices, never changes: it re-reads with
    /// [`changes`](Self::changes). `None` (the default): the store cannot notify, and feed
    /// readers poll [`changes`](Self::changes).
    fn subscribe(&self) -> Option<tokio::sync::broadcast::Receiver<ChangeNotice>> {
        None
    }
}

/// A fresh value identifying a new life of a path, so that etags never repeat after a delete.
pub fn new_life_id() -> u64 {
    // A 64-bit random value: a collision between two lives of one path is negligible.
    let mut buf = [0u8; 8];
    getrandom::fill(&mut buf).expect("the operating system's random source is available");
    u64::from_le_bytes(buf)
}

/// Checks a write's body against `limits`, the first thing every backend does, and returns
/// its size in bytes (what [`FileMeta::size`] records): base64 that is not the one accepted
/// spelling of some bytes is [`StoreError::InvalidContent`], a body over
/// [`Limits::max_file_bytes`] (decoded bytes for base64) is [`StoreError::TooLarge`].
pub fn check_file_size(limits: &Limits, write: &FileWrite) -> Result<u64, StoreError> {
    let size = write
        .encoding
        .body_len(&write.content)
        .map_err(|e| StoreError::InvalidContent(e.to_string()))?;
    if size > limits.max_file_bytes {
        return Err(StoreError::TooLarge {
            limit: LimitKind::MaxFileBytes,
            max: limits.max_file_bytes,
        });
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preconditions() {
        let a = ETag::mint(1, 1);
        let b = ETag::mint(1, 2);
        let cases = [
            (Precondition::None, None, true),
            (Precondition::None, Some(&a), true),
            (Precondition::IfMatch(vec![a.clone()]), Some(&a), true),
            (Precondition::IfMatch(vec![a.clone()]), Some(&b), false),
            (
                Precondition::IfMatch(vec![b.clone(), a.clone()]),
                Some(&a),
                true,
            ),
            (Precondition::IfMatch(vec![a.clone()]), None, false),
            (Precondition::IfMatchAny, Some(&a), true),
            (Precondition::IfMatchAny, None, false),
            (Precondition::Unsatisfiable, Some(&a), false),
            (Precondition::Unsatisfiable, None, false),
            (Precondition::IfNoneMatchAny, None, true),
            (Precondition::IfNoneMatchAny, Some(&a), false),
        ];
        for (pre, live, expect) in cases {
            assert_eq!(pre.admits(live), expect, "{pre:?} vs {live:?}");
        }
    }
}
