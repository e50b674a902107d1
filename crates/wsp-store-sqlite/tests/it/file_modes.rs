//! The files a store creates are readable and writable by their owner alone (0600), whatever
//! the process's umask, and SQLite's `-wal` and `-shm` files inherit that mode. A file that
//! already exists keeps the mode it has.
//!
//! The test sets the umask to 0 and leaves it there, so that nothing but the store's own choice
//! can take the group and world bits away. The umask is process-wide: no other test of this
//! binary sets it or looks at a file's mode, so they run beside this one unchanged.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use wsp_store::approvals::ApprovalRegistry;
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry};
use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
use wsp_store_sqlite::SqliteApprovals;
use wsp_store_sqlite::SqliteKeyRegistry;
use wsp_store_sqlite::SqliteStore;
use wsp_types::{Owner, Scopes, WorkspacePath};

/// The permission bits of `path`, in octal as `ls` and `chmod` write them.
fn mode(path: &Path) -> String {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    format!("{:o}", meta.permissions().mode() & 0o777)
}

/// `file` and, when SQLite made them, its `-wal` and `-shm` files are all 0600.
fn assert_private(file: &Path) {
    assert_eq!(mode(file), "600", "{}", file.display());
    let mut companions = 0;
    for suffix in ["-wal", "-shm"] {
        let companion = Path::new(&format!("{}{suffix}", file.display())).to_owned();
        if companion.exists() {
            assert_eq!(mode(&companion), "600", "{}", companion.display());
            companions += 1;
        }
    }
    assert_eq!(companions, 2, "{} is open in WAL mode", file.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_files_are_private_whatever_the_umask_and_existing_ones_keep_their_mode() {
    rustix::process::umask(rustix::fs::Mode::empty());
    let dir = tempfile::tempdir().unwrap();
    let owner = Owner::parse("t", "w").unwrap();

    let db = dir.path().join("wsp.sqlite3");
    let store = SqliteStore::open(&db, Limits::default()).unwrap();
    store
        .put(
            &owner,
            &WorkspacePath::parse("a.md").unwrap(),
            FileWrite::markdown("a"),
            Precondition::None,
        )
        .await
        .unwrap();
    assert_private(&db);

    let keys_file = dir.path().join("keys.sqlite3");
    let keys = SqliteKeyRegistry::open(&keys_file).unwrap();
    let key = ApiKey::generate();
    keys.insert(KeyRecord::new(
        &key,
        owner.clone(),
        "admin".into(),
        Scopes::all(),
    ))
    .await
    .unwrap();
    assert_private(&keys_file);

    let approvals_file = dir.path().join("approvals.sqlite3");
    let approvals = SqliteApprovals::open(&approvals_file).unwrap();
    approvals.approve(&owner, "acme.reviewer").await.unwrap();
    assert_private(&approvals_file);

    // A file the user made, with the mode they chose, is opened as it is.
    let theirs = dir.path().join("theirs.sqlite3");
    std::fs::write(&theirs, b"").unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o640)).unwrap();
    drop(SqliteStore::open(&theirs, Limits::default()).unwrap());
    assert_eq!(mode(&theirs), "640");
}
