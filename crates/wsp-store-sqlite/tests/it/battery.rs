//! The `wsp-store` backend battery over a fresh database file per test.

use std::path::Path;

use tempfile::TempDir;
use wsp_store::{Limits, WorkspaceStore};
use wsp_store_sqlite::SqliteStore;

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
    wsp_store::forward_store!(|this| this.store;
        limits, features, list, get, put, delete, history, snapshot, snapshot_usage,
        snapshot_within, snapshot_info, list_snapshots, release_snapshot, open_snapshots_before,
        count_open_snapshots, forget_released_snapshots, list_at, get_at, changes, subscribe, search);
}

wsp_store::battery_tests!(|limits| async move { TempStore::new(limits) });
