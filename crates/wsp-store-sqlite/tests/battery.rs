//! The `wsp-store` backend battery over a fresh database file per test.

use std::path::Path;

use tempfile::TempDir;
use wsp_store::{
    ChangeNotice, ChangePage, Deleted, FileMeta, FileWrite, Limits, Precondition, QuotaExceeded,
    SnapshotInfo, SnapshotQuota, SnapshotUsage, StoreFeatures, StoreFuture, StoredFile,
    WorkspaceStore,
};
use wsp_store_sqlite::SqliteStore;
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

/// A store together with the temporary directory holding its file, removed when dropped.
struct TempStore {
    store: SqliteStore,
    _dir: TempDir,
}

impl TempStore {
    fn new(limits: Limits) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = SqliteStore::open(&dir.path().join("wsp.sqlite3"), limits)
            .expect("a fresh database opens");
        assert!(Path::new(store.path()).exists());
        Self { store, _dir: dir }
    }
}

impl WorkspaceStore for TempStore {
    fn limits(&self) -> Limits {
        self.store.limits()
    }

    fn features(&self) -> StoreFeatures {
        self.store.features()
    }

    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        self.store.list(owner, prefix)
    }

    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredFile> {
        self.store.get(owner, path, version)
    }

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        self.store.put(owner, path, write, precondition)
    }

    fn delete<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        precondition: Precondition,
    ) -> StoreFuture<'a, Deleted> {
        self.store.delete(owner, path, precondition)
    }

    fn history<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        self.store.history(owner, path)
    }

    fn snapshot<'a>(&'a self, owner: &'a Owner, label: &'a str) -> StoreFuture<'a, SnapshotInfo> {
        self.store.snapshot(owner, label)
    }

    fn snapshot_usage<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, SnapshotUsage> {
        self.store.snapshot_usage(owner)
    }

    fn snapshot_within<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a str,
        quota: SnapshotQuota,
    ) -> StoreFuture<'a, Result<SnapshotInfo, QuotaExceeded>> {
        self.store.snapshot_within(owner, label, quota)
    }

    fn snapshot_info<'a>(&'a self, owner: &'a Owner, id: &'a str) -> StoreFuture<'a, SnapshotInfo> {
        self.store.snapshot_info(owner, id)
    }

    fn release_snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a str,
        outcome: &'a str,
    ) -> StoreFuture<'a, SnapshotInfo> {
        self.store.release_snapshot(owner, id, outcome)
    }

    fn open_snapshots_before<'a>(
        &'a self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<(Owner, SnapshotInfo)>> {
        self.store.open_snapshots_before(cutoff, limit)
    }

    fn forget_released_snapshots<'a>(
        &'a self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> StoreFuture<'a, usize> {
        self.store.forget_released_snapshots(cutoff, limit)
    }

    fn list_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a str,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        self.store.list_at(owner, snapshot, prefix)
    }

    fn get_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a str,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, StoredFile> {
        self.store.get_at(owner, snapshot, path)
    }

    fn changes<'a>(
        &'a self,
        owner: &'a Owner,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, ChangePage> {
        self.store.changes(owner, after, limit)
    }

    fn subscribe(&self) -> Option<tokio::sync::broadcast::Receiver<ChangeNotice>> {
        self.store.subscribe()
    }
}

wsp_store::battery_tests!(|limits| async move { TempStore::new(limits) });
