//! Acknowledged writes survive `kill -9`, and no partial write is ever visible after recovery.
//!
//! This test binary has its own `main` (`harness = false`) and plays two roles. Run normally, it
//! is the parent: it starts itself again as a child with [`CHILD_DB`] set, reads the child's
//! acknowledgements from its stdout, sends it SIGKILL mid-stream, reopens the database and
//! checks that every acknowledged operation is there. The child runs concurrent writers; each
//! follows a fixed script per path (writes with large bodies, and a delete every fifth
//! operation) and prints `ACK <path> <op>` only after the store call returned `Ok`.
//!
//! After a kill, each path must be in the state its script reaches after its acknowledged
//! operations, or after one more (the operation in flight, committed but not acknowledged),
//! with every retained version's content whole, and the change feed must hold exactly the
//! committed operations, gap-free and in each path's order. Three kill cycles run on one file.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wsp_store::{FileWrite, Limits, Precondition, StoreError, WorkspaceStore};
use wsp_store_sqlite::SqliteStore;
use wsp_types::{Owner, WorkspacePath};

/// Set in the child's environment: the database file it writes to.
const CHILD_DB: &str = "WSP_KILL9_CHILD_DB";
/// Set in the child's environment: which kill cycle it belongs to (names its paths).
const CHILD_CYCLE: &str = "WSP_KILL9_CHILD_CYCLE";
const NAME: &str = "acknowledged_writes_survive_kill_9";
const TASKS: usize = 4;
const PATHS_PER_TASK: usize = 3;
const CYCLES: usize = 3;
/// The parent kills the child once it has read this many acknowledgements (plus the cycle).
const ACKS_BEFORE_KILL: usize = 60;
/// A child that is never killed gives up after this long, so a broken parent cannot hang.
const CHILD_DEADLINE: Duration = Duration::from_secs(120);

fn main() {
    if let Ok(db) = std::env::var(CHILD_DB) {
        let cycle = std::env::var(CHILD_CYCLE)
            .ok()
            .and_then(|c| c.parse().ok())
            .expect("the cycle number is set");
        child(Path::new(&db), cycle);
        return;
    }
    // Behave like a libtest binary towards `cargo test` arguments: list, filter, ignored-only.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("{NAME}: test");
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let filtered_out = !filters.is_empty() && !filters.iter().any(|f| NAME.contains(f.as_str()));
    if filtered_out || args.iter().any(|a| a == "--ignored") {
        println!("running 0 tests (1 filtered out)");
        return;
    }
    if cfg!(unix) {
        println!("running 1 test");
        parent();
        println!("test {NAME} ... ok");
    } else {
        println!("test {NAME} ... ignored (needs SIGKILL)");
    }
}

fn limits() -> Limits {
    Limits::default().with_max_versions(1000)
}

fn owner() -> Owner {
    Owner::parse("kill9", "w").expect("valid owner")
}

fn path_name(cycle: usize, task: usize, index: usize) -> String {
    format!("c{cycle}/t{task}/p{index}.md")
}

/// Operation `op` of a path's script deletes the file when true, otherwise writes
/// [`content`]. The file is always live before a delete (four writes precede each one).
fn is_delete(op: usize) -> bool {
    op % 5 == 4
}

/// The body written by operation `op` on `path`: about 24 KiB, so it spans several pages.
fn content(path: &str, op: usize) -> String {
    format!("{path} operation {op}\n").repeat(24 * 1024 / (path.len() + 14))
}

/// The change-feed entries (version, deleted) of a path's script after its first `ops`
/// operations.
fn model_feed(ops: usize) -> Vec<(u64, bool)> {
    let mut version = 0u64;
    let mut live = false;
    let mut feed = Vec::new();
    for op in 0..ops {
        if is_delete(op) {
            live = false;
            feed.push((version + 1, true));
        } else {
            version = if live { version + 1 } else { 1 };
            live = true;
            feed.push((version, false));
        }
    }
    feed
}

/// What a client can observe of one path.
#[derive(Debug, PartialEq, Eq)]
struct Observed {
    /// The live version and its content.
    live: Option<(u64, String)>,
    /// Retained versions of the live life, newest first, with content.
    history: Vec<(u64, String)>,
}

/// The state a path's script reaches after its first `ops` operations.
fn model(path: &str, ops: usize) -> Observed {
    let mut version = 0u64;
    let mut live = false;
    let mut history: Vec<(u64, String)> = Vec::new();
    for op in 0..ops {
        if is_delete(op) {
            live = false;
            history.clear();
        } else {
            version = if live { version + 1 } else { 1 };
            live = true;
            history.insert(0, (version, content(path, op)));
        }
    }
    Observed {
        live: live.then(|| history[0].clone()),
        history,
    }
}

async fn observe(store: &SqliteStore, owner: &Owner, path: &str) -> Observed {
    let p = WorkspacePath::parse(path).expect("valid path");
    let live = match store.get(owner, &p, None).await {
        Ok(f) => Some((f.meta.version, f.content)),
        Err(StoreError::NotFound) => None,
        Err(e) => panic!("reading {path}: {e}"),
    };
    let history = match store.history(owner, &p).await {
        Ok(metas) => {
            let mut versions = Vec::new();
            for m in metas {
                let f = store
                    .get(owner, &p, Some(m.version))
                    .await
                    .expect("retained");
                assert_eq!(f.meta, m);
                versions.push((m.version, f.content));
            }
            versions
        }
        Err(StoreError::NotFound) => Vec::new(),
        Err(e) => panic!("history of {path}: {e}"),
    };
    Observed { live, history }
}

/// The child: concurrent writers that acknowledge each completed operation on stdout.
fn child(db: &Path, cycle: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let store = Arc::new(SqliteStore::open(db, limits()).expect("the child opens the store"));
        let deadline = Instant::now() + CHILD_DEADLINE;
        let mut tasks = tokio::task::JoinSet::new();
        for task in 0..TASKS {
            let store = store.clone();
            tasks.spawn(async move {
                let owner = owner();
                let mut next = [0usize; PATHS_PER_TASK];
                for turn in 0.. {
                    assert!(Instant::now() < deadline, "the child was never killed");
                    let index = turn % PATHS_PER_TASK;
                    let name = path_name(cycle, task, index);
                    let path = WorkspacePath::parse(&name).expect("valid path");
                    let op = next[index];
                    if is_delete(op) {
                        store
                            .delete(&owner, &path, Precondition::IfMatchAny)
                            .await
                            .expect("delete succeeds");
                    } else {
                        let write = FileWrite::markdown(content(&name, op));
                        store
                            .put(&owner, &path, write, Precondition::None)
                            .await
                            .expect("put succeeds");
                    }
                    // println! takes the stdout lock per line and flushes at the newline.
                    println!("ACK {name} {op}");
                    next[index] += 1;
                }
            });
        }
        while let Some(result) = tasks.join_next().await {
            result.expect("a writer task");
        }
    });
}

/// The parent: kill the child mid-stream, then check what was acknowledged.
fn parent() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = dir.path().join("wsp.sqlite3");
    // Per path: how many of its operations were acknowledged.
    let mut acked: BTreeMap<String, usize> = BTreeMap::new();
    for cycle in 0..CYCLES {
        for task in 0..TASKS {
            for index in 0..PATHS_PER_TASK {
                acked.insert(path_name(cycle, task, index), 0);
            }
        }
        let mut child = Command::new(std::env::current_exe().expect("this test binary"))
            .env(CHILD_DB, &db)
            .env(CHILD_CYCLE, cycle.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let kill_after = ACKS_BEFORE_KILL + 7 * cycle;
        let mut seen = 0;
        let mut killed = false;
        // Lines still in the pipe after the kill were printed after an Ok: they count too.
        for line in stdout.lines() {
            let line = line.expect("a line of child output");
            let mut words = line.split(' ');
            let (Some("ACK"), Some(path), Some(op)) = (words.next(), words.next(), words.next())
            else {
                panic!("unexpected child output {line:?}");
            };
            let op: usize = op.parse().expect("an operation number");
            let count = acked.get_mut(path).expect("a path of this cycle");
            assert_eq!(op, *count, "{path}: operations are acknowledged in order");
            *count += 1;
            seen += 1;
            if seen == kill_after {
                // Child::kill sends SIGKILL on Unix.
                child.kill().expect("SIGKILL is delivered");
                killed = true;
            }
        }
        let status = child.wait().expect("the child is reaped");
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            pipe.read_to_string(&mut stderr).ok();
        }
        assert!(
            killed,
            "the child stopped after {seen} acknowledgements ({status}): {stderr}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "the child died of SIGKILL");
        }
        verify(&db, &acked);
    }
}

/// Reopens the database and checks every path against its acknowledged operations.
fn verify(db: &Path, acked: &BTreeMap<String, usize>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let committed: usize = runtime.block_on(async {
        let store = SqliteStore::open(db, limits()).expect("the database reopens after a kill");
        let owner = owner();
        // Per path, how many of its operations committed.
        let mut per_path = BTreeMap::new();
        for (path, &ops) in acked {
            let seen = observe(&store, &owner, path).await;
            if seen == model(path, ops) {
                per_path.insert(path.as_str(), ops);
            } else if seen == model(path, ops + 1) {
                // The operation in flight at the kill committed before its acknowledgement.
                per_path.insert(path.as_str(), ops + 1);
            } else {
                panic!(
                    "{path}: {ops} operations acknowledged, but the store holds live {:?} \
                     and versions {:?}",
                    seen.live.as_ref().map(|l| l.0),
                    seen.history.iter().map(|h| h.0).collect::<Vec<_>>()
                );
            }
        }
        let committed: usize = per_path.values().sum();

        // The feed holds exactly the committed operations: gap-free sequence numbers from 1,
        // and per path its script's changes in order.
        let feed = store
            .changes(&owner, 0, usize::MAX)
            .await
            .expect("the feed reads after a kill");
        assert_eq!(feed.head as usize, committed, "the feed's head");
        assert_eq!(feed.oldest, 1, "nothing was trimmed");
        let seqs: Vec<u64> = feed.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=committed as u64).collect::<Vec<_>>(), "gap-free");
        for (path, &ops) in &per_path {
            let changes: Vec<(u64, bool)> = feed
                .events
                .iter()
                .filter(|e| e.path.as_str() == *path)
                .map(|e| (e.version, e.deleted))
                .collect();
            assert_eq!(changes, model_feed(ops), "{path}: its changes in the feed");
        }
        committed
    });

    let raw = rusqlite::Connection::open(db).expect("a raw connection");
    let check: String = raw
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity check runs");
    assert_eq!(check, "ok");
    let (seq, live_files): (i64, i64) = raw
        .query_row("SELECT seq, live_files FROM owners", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("one owner row");
    let live: i64 = raw
        .query_row("SELECT count(*) FROM files WHERE live = 1", [], |r| {
            r.get(0)
        })
        .expect("a count");
    assert_eq!(live_files, live, "the live-file count matches the files");
    assert_eq!(
        seq as usize, committed,
        "one sequence number per committed operation"
    );
}
