//! `wsp backup` under a write load on a running `wsp serve`, and `wsp restore` of it.

use std::collections::BTreeMap;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use wsp_client::{Client, PutOptions};
use wsp_types::WorkspacePath;

use crate::support;
use crate::support::serve;

fn wsp(args: &[&str]) -> Output {
    support::wsp(args, &[], None)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &str) -> WorkspacePath {
    WorkspacePath::parse(p).unwrap()
}

/// What the writers had acknowledged: per path, the newest acknowledged content.
type Acked = Arc<Mutex<BTreeMap<String, u64>>>;

/// Writes until `stop`: new files `w<id>/<n>.md` and the shared `counter/<id>.md` overwritten
/// with the rising `n`; every acknowledged write goes into `acked`.
async fn writer(client: Client, id: u32, stop: Arc<AtomicBool>, acked: Acked) {
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let own = format!("w{id}/{n}.md");
        client
            .put(&path(&own), n.to_string(), PutOptions::default())
            .await
            .expect("write acknowledged");
        acked.lock().unwrap().insert(own, n);
        let counter = format!("counter/{id}.md");
        client
            .put(&path(&counter), n.to_string(), PutOptions::default())
            .await
            .expect("write acknowledged");
        acked.lock().unwrap().insert(counter, n);
    }
}

#[cfg(unix)]
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_backup_under_write_load_holds_every_write_acknowledged_before_it_began() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve(&data, &[]);
    let key = server.key().to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url).key(&key).build().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let acked: Acked = Arc::default();
    let writers: Vec<_> = (0..4)
        .map(|id| runtime.spawn(writer(client.clone(), id, stop.clone(), acked.clone())))
        .collect();
    // Let the load build up, then take the backup while it goes on.
    while acked.lock().unwrap().len() < 200 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let before = acked.lock().unwrap().clone();
    let out = dir.path().join("backup");
    let backup = wsp(&[
        "backup",
        "--data",
        data.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        runtime.block_on(w).unwrap();
    }
    assert!(backup.status.success(), "{}", text(&backup.stderr));
    assert!(text(&backup.stdout).contains("wsp.sqlite3\tbacked up"));
    #[cfg(unix)]
    {
        assert_eq!(mode(&out), 0o700);
        assert_eq!(mode(&out.join("wsp.sqlite3")), 0o600);
        assert_eq!(mode(&out.join("keys.sqlite3")), 0o600);
    }
    assert!(
        !out.join("wsp.sqlite3-wal").exists(),
        "one file per database"
    );

    // A second backup into the same (now non-empty) directory is refused.
    let again = wsp(&[
        "backup",
        "--data",
        data.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("not empty"),
        "{}",
        text(&again.stderr)
    );

    // Restoring over the running server's data is refused, even with --force.
    let busy = wsp(&[
        "restore",
        out.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--force",
    ]);
    assert!(!busy.status.success());
    assert!(
        text(&busy.stderr).contains("open in another process"),
        "{}",
        text(&busy.stderr)
    );
    drop(server);

    // Restore into a fresh directory; a second restore there needs --force.
    let fresh = dir.path().join("fresh");
    let restored = wsp(&[
        "restore",
        out.to_str().unwrap(),
        "--data",
        fresh.to_str().unwrap(),
    ]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    assert!(text(&restored.stdout).contains("wsp.sqlite3\tchecked"));
    let twice = wsp(&[
        "restore",
        out.to_str().unwrap(),
        "--data",
        fresh.to_str().unwrap(),
    ]);
    assert!(!twice.status.success());
    assert!(
        text(&twice.stderr).contains("--force"),
        "{}",
        text(&twice.stderr)
    );
    let forced = wsp(&[
        "restore",
        out.to_str().unwrap(),
        "--data",
        fresh.to_str().unwrap(),
        "--force",
    ]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));

    // The restored store serves every write acknowledged before the backup began, with the key
    // the backup holds (no new first-start key).
    let server = serve(&fresh, &[]);
    assert!(server.first_key.is_none(), "the key registry was restored");
    let client = Client::builder(&server.url).key(&key).build().unwrap();
    let listed = runtime.block_on(client.list(None)).unwrap();
    let live: BTreeMap<String, u64> = listed
        .files
        .iter()
        .map(|f| (f.path.as_str().to_owned(), 0))
        .collect();
    for (p, n) in &before {
        assert!(
            live.contains_key(p),
            "{p} acknowledged before the backup is missing"
        );
        let got = runtime.block_on(client.get(&path(p), None)).unwrap();
        let value: u64 = got.content.parse().unwrap();
        assert!(
            value >= *n,
            "{p}: the backup holds {value}, but {n} was acknowledged before it began"
        );
    }
}

#[test]
fn a_damaged_backup_is_not_restored() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    drop(serve(&data, &[]));
    let out = dir.path().join("backup");
    let backup = wsp(&[
        "backup",
        "--data",
        data.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(backup.status.success(), "{}", text(&backup.stderr));
    std::fs::write(out.join("keys.sqlite3"), vec![0x5a; 16384]).unwrap();
    let fresh = dir.path().join("fresh");
    let restored = wsp(&[
        "restore",
        out.to_str().unwrap(),
        "--data",
        fresh.to_str().unwrap(),
    ]);
    assert!(!restored.status.success());
    assert!(
        text(&restored.stderr).contains("keys.sqlite3"),
        "{}",
        text(&restored.stderr)
    );
    assert!(
        !fresh.join("wsp.sqlite3").exists(),
        "nothing was put in place"
    );

    let empty = dir.path().join("nothing");
    std::fs::create_dir(&empty).unwrap();
    let none = wsp(&[
        "backup",
        "--data",
        empty.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(!none.status.success());
    assert!(
        text(&none.stderr).contains("no wsp data"),
        "{}",
        text(&none.stderr)
    );
}

/// A restore that cannot finish leaves the store it was to replace as it was: no file of the
/// backup is put in place until every one of them is ready (a store of new files beside old
/// keys would be neither).
#[test]
fn a_restore_that_fails_part_way_leaves_the_old_store_whole() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let key = serve(&data, &[]).key().to_owned();
    let out = dir.path().join("backup");
    let backup = wsp(&[
        "backup",
        "--data",
        data.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(backup.status.success(), "{}", text(&backup.stderr));
    // The store gains a file after the backup, and the second file's copy cannot be made.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let later = path("after-the-backup.md");
    {
        let server = serve(&data, &[]);
        let client = Client::builder(&server.url).key(&key).build().unwrap();
        runtime
            .block_on(client.put(&later, "kept", PutOptions::default()))
            .unwrap();
    }
    std::fs::create_dir(data.join("keys.sqlite3.restoring")).unwrap();
    let restored = wsp(&[
        "restore",
        out.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--force",
    ]);
    assert!(!restored.status.success(), "{}", text(&restored.stdout));
    let server = serve(&data, &[]);
    let client = Client::builder(&server.url).key(&key).build().unwrap();
    let file = runtime
        .block_on(client.get(&later, None))
        .expect("the store's files were replaced before the restore could finish");
    assert_eq!(file.content, "kept");
}
