//! The cache of current files: the encoded `GET` answer of live files, so that a read of a file
//! that did not change costs no store call and no JSON encoding.
//!
//! Correctness rules (ARCHITECTURE.md, "The read path"):
//! - A change made through this server ([`Invalidating`], the store every handler uses) forgets
//!   the path before the store is called and again after it answered, before the caller hears
//!   of it: a `GET` that starts after a write was acknowledged never gets an older version from
//!   this server.
//! - A `GET` that missed puts its answer in only if nothing was forgotten since it started
//!   reading (a generation counter): an answer read before a concurrent write committed is
//!   never kept after that write forgot the path.
//! - Changes made elsewhere (another process on the same SQLite file, another replica on
//!   PostgreSQL) arrive as the store's change notices; a task reads the owner's feed from the
//!   last position it saw and forgets each changed path (the owner's whole entry when the feed
//!   no longer reaches back, or notices were lost). Such a change is seen within the store's
//!   notice delay: a quarter of a second on SQLite (its watcher's interval), the `LISTEN`
//!   delay on PostgreSQL.
//! - Bounded: at most [`FileCache::capacity`] bytes of bodies; a file larger than a sixteenth
//!   of that is never kept. When full, a shard is emptied to make room.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Once, RwLock, Weak};

use axum::http::HeaderValue;
use bytes::Bytes;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use wsp_store::{
    Deleted, FileWrite, Precondition, StoreFuture, StoredFile, WorkspaceStore, forward_store,
};
use wsp_types::{Owner, WorkspacePath};

use crate::extract::Reply;

/// The cache's size when none is configured: 16 MiB of bodies.
pub const DEFAULT_FILE_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// Shards, each with its own lock (picked by owner).
const SHARDS: usize = 16;

/// Feed changes read per call while catching up after a notice.
const FEED_PAGE: usize = 1000;

/// One `GET` answer of a file: the `ETag` header (absent only for a stored etag that is no
/// header value) and the encoded `WorkspaceFile`.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) etag: Option<HeaderValue>,
    pub(crate) body: Bytes,
}

impl Entry {
    /// The answer for `file`.
    pub(crate) fn of(file: StoredFile) -> Self {
        Self {
            etag: HeaderValue::from_str(file.meta.etag.as_str()).ok(),
            body: Bytes::from(crate::encode::file(file)),
        }
    }

    /// 200 with the body and its `ETag`.
    pub(crate) fn reply(self) -> Reply {
        let reply = Reply::encoded(self.body);
        match self.etag {
            Some(etag) => reply.etag_value(etag),
            None => reply,
        }
    }
}

type Shard = HashMap<Owner, HashMap<WorkspacePath, Entry>>;

/// The encoded answers of current files, by owner and path.
pub struct FileCache {
    shards: Vec<RwLock<Shard>>,
    hasher: std::collections::hash_map::RandomState,
    /// Bumped by every forget: an answer read before a bump is not kept.
    generation: AtomicU64,
    bytes: AtomicUsize,
    capacity: usize,
    /// Cleared when the store's notices stopped (nothing from elsewhere would be forgotten).
    enabled: AtomicBool,
    watching: Once,
}

impl std::fmt::Debug for FileCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileCache")
            .field("capacity", &self.capacity)
            .field("bytes", &self.bytes.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl FileCache {
    /// A cache of at most `capacity` bytes of bodies; 0 keeps nothing.
    pub fn new(capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
            generation: AtomicU64::new(0),
            bytes: AtomicUsize::new(0),
            capacity,
            enabled: AtomicBool::new(capacity > 0),
            watching: Once::new(),
        }
    }

    /// The most bytes of bodies it keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of bodies kept now.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    fn shard(&self, owner: &Owner) -> &RwLock<Shard> {
        &self.shards[(self.hasher.hash_one(owner) as usize) % SHARDS]
    }

    /// The cached answer for the live file, if any.
    pub(crate) fn get(&self, owner: &Owner, path: &WorkspacePath) -> Option<Entry> {
        if !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        let shard = self.shard(owner).read().unwrap_or_else(|e| e.into_inner());
        shard.get(owner)?.get(path).cloned()
    }

    /// The generation to pass to [`FileCache::insert`] for an answer read from now on.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Keeps `entry` for the path unless something was forgotten since `generation` was read,
    /// or it is too large.
    pub(crate) fn insert(
        &self,
        generation: u64,
        owner: &Owner,
        path: &WorkspacePath,
        entry: Entry,
    ) {
        let size = entry.body.len();
        if !self.enabled.load(Ordering::Acquire) || size > self.capacity / 16 {
            return;
        }
        self.make_room(size);
        let mut shard = self.shard(owner).write().unwrap_or_else(|e| e.into_inner());
        // Checked under the shard's lock, which every forget of this owner takes after bumping
        // the generation: a forget either came before (and the answer is refused) or waits.
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        let old = shard
            .entry(owner.clone())
            .or_default()
            .insert(path.clone(), entry);
        self.bytes.fetch_add(size, Ordering::Relaxed);
        if let Some(old) = old {
            self.bytes.fetch_sub(old.body.len(), Ordering::Relaxed);
        }
    }

    /// Empties shards, one at a time, until `size` more bytes fit.
    fn make_room(&self, size: usize) {
        let mut next = (self.generation() as usize) % SHARDS;
        for _ in 0..SHARDS {
            if self.bytes() + size <= self.capacity {
                return;
            }
            self.empty(&self.shards[next]);
            next = (next + 1) % SHARDS;
        }
    }

    /// Forgets the path's answer.
    pub(crate) fn forget(&self, owner: &Owner, path: &WorkspacePath) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let mut shard = self.shard(owner).write().unwrap_or_else(|e| e.into_inner());
        if let Some(paths) = shard.get_mut(owner)
            && let Some(old) = paths.remove(path)
        {
            self.bytes.fetch_sub(old.body.len(), Ordering::Relaxed);
        }
    }

    /// Forgets every answer of the owner.
    fn forget_owner(&self, owner: &Owner) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let mut shard = self.shard(owner).write().unwrap_or_else(|e| e.into_inner());
        if let Some(paths) = shard.remove(owner) {
            let freed: usize = paths.values().map(|e| e.body.len()).sum();
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
    }

    /// Forgets every answer.
    fn forget_all(&self) {
        for shard in &self.shards {
            self.generation.fetch_add(1, Ordering::AcqRel);
            self.empty(shard);
        }
    }

    /// Drops every answer of `shard` and counts the bytes freed.
    fn empty(&self, shard: &RwLock<Shard>) {
        let mut shard = shard.write().unwrap_or_else(|e| e.into_inner());
        let freed: usize = shard
            .values()
            .flat_map(|paths| paths.values())
            .map(|e| e.body.len())
            .sum();
        shard.clear();
        self.bytes.fetch_sub(freed, Ordering::Relaxed);
    }

    /// Forgets everything and keeps nothing from now on.
    fn disable(&self) {
        self.enabled.store(false, Ordering::Release);
        self.forget_all();
    }

    /// Starts, once, the task that forgets what changed elsewhere (from `store`'s notices).
    /// Without notices the store has no other writer to hear of, and nothing needs starting
    /// (the memory store); a store that cannot tell turns the cache off.
    pub(crate) fn watch(self: &Arc<Self>, store: &Arc<dyn WorkspaceStore>) {
        self.watching.call_once(|| match store.subscribe() {
            Some(notices) if tokio::runtime::Handle::try_current().is_ok() => {
                tokio::spawn(watch(Arc::downgrade(self), Arc::downgrade(store), notices));
            }
            _ => self.disable(),
        });
    }
}

/// Forgets what the notices say changed, reading each owner's feed from where it last was.
/// Notices that arrived together are read together: one feed read per owner.
async fn watch(
    cache: Weak<FileCache>,
    store: Weak<dyn WorkspaceStore>,
    mut notices: tokio::sync::broadcast::Receiver<wsp_store::ChangeNotice>,
) {
    let mut seen: HashMap<Owner, u64> = HashMap::new();
    loop {
        let mut next = notices.recv().await;
        let (Some(cache), Some(store)) = (cache.upgrade(), store.upgrade()) else {
            return;
        };
        let mut newest: HashMap<Owner, u64> = HashMap::new();
        loop {
            match next {
                Ok(notice) => {
                    let seq = newest.entry(notice.owner).or_default();
                    *seq = (*seq).max(notice.seq);
                }
                // Notices were lost: anything may have changed.
                Err(RecvError::Lagged(_)) => {
                    seen.clear();
                    newest.clear();
                    cache.forget_all();
                }
                Err(RecvError::Closed) => {
                    cache.disable();
                    return;
                }
            }
            next = match notices.try_recv() {
                Ok(notice) => Ok(notice),
                Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                Err(TryRecvError::Closed) => Err(RecvError::Closed),
                Err(TryRecvError::Empty) => break,
            };
        }
        for (owner, seq) in newest {
            catch_up(&cache, store.as_ref(), &mut seen, &owner, seq).await;
        }
    }
}

/// Forgets the paths the owner's feed changed after the last position seen, up to the notice.
async fn catch_up(
    cache: &FileCache,
    store: &dyn WorkspaceStore,
    seen: &mut HashMap<Owner, u64>,
    owner: &Owner,
    seq: u64,
) {
    let Some(&from) = seen.get(owner) else {
        // The first notice of this owner: what changed before it is unknown.
        cache.forget_owner(owner);
        seen.insert(owner.clone(), seq);
        return;
    };
    let mut after = from;
    while after < seq {
        match store.changes(owner, after, FEED_PAGE).await {
            Ok(page) if page.oldest <= after + 1 && !page.events.is_empty() => {
                for event in &page.events {
                    cache.forget(owner, &event.path);
                    after = after.max(event.seq);
                }
            }
            // The feed no longer reaches back that far, or cannot be read: forget the owner.
            _ => {
                cache.forget_owner(owner);
                after = seq;
            }
        }
    }
    seen.insert(owner.clone(), after);
}

/// The store every handler uses, forgetting a path's cached answer around each change made
/// through it (before the call, and after it answered, success or not).
pub(crate) struct Invalidating {
    pub(crate) inner: Arc<dyn WorkspaceStore>,
    pub(crate) cache: Arc<FileCache>,
}

impl WorkspaceStore for Invalidating {
    forward_store!(|this| this.inner;
        limits, features, ready, list, get, history, snapshot, snapshot_info, list_snapshots,
        release_snapshot, open_snapshots_before, count_open_snapshots, forget_released_snapshots,
        snapshot_usage, snapshot_within, list_at, get_at, changes, subscribe, search);

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        Box::pin(async move {
            self.cache.forget(owner, path);
            let written = self.inner.put(owner, path, write, precondition).await;
            self.cache.forget(owner, path);
            written
        })
    }

    fn delete<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        precondition: Precondition,
    ) -> StoreFuture<'a, Deleted> {
        Box::pin(async move {
            self.cache.forget(owner, path);
            let deleted = self.inner.delete(owner, path, precondition).await;
            self.cache.forget(owner, path);
            deleted
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(body: &str) -> Entry {
        Entry {
            etag: Some(HeaderValue::from_static("\"e\"")),
            body: Bytes::copy_from_slice(body.as_bytes()),
        }
    }

    fn at(path: &str) -> (Owner, WorkspacePath) {
        (
            Owner::parse("t", "w").unwrap(),
            WorkspacePath::parse(path).unwrap(),
        )
    }

    /// An answer read before a forget is never kept; one read after is.
    #[test]
    fn an_answer_read_before_a_forget_is_refused() {
        let cache = FileCache::new(1 << 20);
        let (owner, path) = at("a.md");
        let before = cache.generation();
        cache.forget(&owner, &path);
        cache.insert(before, &owner, &path, entry("old"));
        assert!(cache.get(&owner, &path).is_none());
        let after = cache.generation();
        cache.insert(after, &owner, &path, entry("new"));
        assert_eq!(cache.get(&owner, &path).unwrap().body, "new");
        cache.forget(&owner, &path);
        assert!(cache.get(&owner, &path).is_none());
        assert_eq!(cache.bytes(), 0);
    }

    /// The bodies kept never pass the capacity; a body over a sixteenth of it is never kept.
    #[test]
    fn memory_stays_within_the_capacity() {
        let cache = FileCache::new(64 * 1024);
        let big = "x".repeat(64 * 1024 / 16 + 1);
        let (owner, path) = at("big.md");
        cache.insert(cache.generation(), &owner, &path, entry(&big));
        assert!(cache.get(&owner, &path).is_none());
        let body = "y".repeat(1000);
        for i in 0..1000 {
            let owner = Owner::parse("t", &format!("w{}", i % 37)).unwrap();
            let path = WorkspacePath::parse(&format!("f{i}.md")).unwrap();
            cache.insert(cache.generation(), &owner, &path, entry(&body));
            assert!(cache.bytes() <= cache.capacity(), "{} bytes", cache.bytes());
        }
        assert!(cache.bytes() > 0);
    }

    /// A cache of size 0 keeps nothing.
    #[test]
    fn size_zero_keeps_nothing() {
        let cache = FileCache::new(0);
        let (owner, path) = at("a.md");
        cache.insert(cache.generation(), &owner, &path, entry("x"));
        assert!(cache.get(&owner, &path).is_none());
    }
}
