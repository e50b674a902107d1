//! The shared key and approval suites on the SQLite side files, each opened twice as a server
//! and the `wsp` CLI would open it.

use std::sync::Arc;

use wsp_store::battery::registries::{
    approval_registry_contract, insert_first_contract, key_registry_contract,
};
use wsp_store::keys::KeyRegistry;
use wsp_store_sqlite::SqliteApprovals;
use wsp_store_sqlite::SqliteKeyRegistry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_file_keeps_the_contract() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("keys.sqlite3");
    let server = SqliteKeyRegistry::open(&path).expect("the key file opens");
    let cli = SqliteKeyRegistry::open(&path).expect("the key file opens twice");
    key_registry_contract(&server, &cli).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approvals_file_keeps_the_contract() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("approvals.sqlite3");
    let server = SqliteApprovals::open(&path).expect("the approvals file opens");
    let cli = SqliteApprovals::open(&path).expect("the approvals file opens twice");
    approval_registry_contract(&server, &cli).await;
}

/// Two registries on one keys file (two processes, say) create one first key between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_key_is_inserted_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("keys.sqlite3");
    let mut views: Vec<Arc<dyn KeyRegistry>> = Vec::new();
    for _ in 0..2 {
        views.push(Arc::new(
            SqliteKeyRegistry::open(&path).expect("the key file opens"),
        ));
    }
    insert_first_contract(&views, 8).await;
}
