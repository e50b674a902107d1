//! Replicas as separate processes: one is killed with SIGKILL in the middle of its writes,
//! and nothing it acknowledged is lost, nor does it leave a lock behind.
//!
//! The replicas are this test binary again, running the ignored test
//! [`replica_process`] with the schema in `WSP_PG_REPLICA_SCHEMA`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use wsp_store::{FileWrite, Limits, Precondition, StoreError, WorkspaceStore};

use crate::support::{TestSchema, database_url, owner, path};

const SCHEMA_VAR: &str = "WSP_PG_REPLICA_SCHEMA";
const TAG_VAR: &str = "WSP_PG_REPLICA_TAG";
const PATHS: [&str; 3] = ["k/1.md", "k/2.md", "k/3.md"];

fn limits() -> Limits {
    Limits::default().with_max_versions(100_000)
}

/// One replica: `If-Match` writes on the shared paths until killed (or for 60 s), printing
/// `ACK <path> <version> <content>` for each acknowledged write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_replica_killed_mid_load_loses_nothing_it_acknowledged as a child process"]
async fn replica_process() {
    let url = std::env::var(crate::support::URL_VAR).expect("the parent passes the URL");
    let schema = std::env::var(SCHEMA_VAR).expect("the parent passes the schema");
    let tag = std::env::var(TAG_VAR).expect("the parent passes a tag");
    let options = wsp_store_postgres::PgOptions::default()
        .with_schema(schema)
        .with_max_connections(4);
    let store = wsp_store_postgres::PgStore::connect(&url, limits(), options)
        .await
        .expect("the replica connects");
    let a = owner("a");
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < Duration::from_secs(60) {
        let p = path(PATHS[n as usize % PATHS.len()]);
        let live = store.get(&a, &p, None).await.expect("read");
        let content = format!("{tag}-{n}");
        let pre = Precondition::IfMatch(vec![live.meta.etag]);
        match store.put(&a, &p, FileWrite::markdown(&content), pre).await {
            Ok(f) => {
                let mut out = std::io::stdout().lock();
                writeln!(out, "ACK {} {} {content}", p.as_str(), f.meta.version).unwrap();
                out.flush().unwrap();
            }
            Err(StoreError::Conflict { .. }) => {}
            Err(e) => panic!("replica {tag}: {e}"),
        }
        n += 1;
    }
}

/// Starts a replica process; its acknowledgements arrive on `acks` as (path, version, content).
fn spawn_replica(
    url: &str,
    schema: &str,
    tag: &str,
    acks: mpsc::Sender<(String, u64, String)>,
) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill::replica_process",
            "--ignored",
            "--nocapture",
        ])
        .env(crate::support::URL_VAR, url)
        .env(SCHEMA_VAR, schema)
        .env(TAG_VAR, tag)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the test binary runs again");
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let mut parts = line.splitn(4, ' ');
            if parts.next() != Some("ACK") {
                continue;
            }
            let (Some(p), Some(v), Some(c)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            if acks
                .send((p.to_owned(), v.parse().unwrap(), c.to_owned()))
                .is_err()
            {
                return;
            }
        }
    });
    child
}

/// Waits until `n` more acknowledgements arrive (from any replica), collecting them.
fn collect(
    acks: &mpsc::Receiver<(String, u64, String)>,
    into: &mut Vec<(String, u64, String)>,
    n: usize,
) {
    let goal = into.len() + n;
    collect_until(acks, into, |acked| acked.len() >= goal);
}

/// Collects acknowledgements until `done` holds of all collected so far (at most 60 s).
fn collect_until(
    acks: &mpsc::Receiver<(String, u64, String)>,
    into: &mut Vec<(String, u64, String)>,
    done: impl Fn(&[(String, u64, String)]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(into) {
        let left = deadline.saturating_duration_since(Instant::now());
        match acks.recv_timeout(left) {
            Ok(ack) => into.push(ack),
            Err(e) => panic!("replicas stopped acknowledging: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_load_loses_nothing_it_acknowledged() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let store = schema.store(limits()).await;
    let a = owner("a");
    for p in PATHS {
        store
            .put(
                &a,
                &path(p),
                FileWrite::markdown("start"),
                Precondition::None,
            )
            .await
            .unwrap();
    }
    let (tx, acks) = mpsc::channel();
    let mut doomed = spawn_replica(&url, &schema.name, "doomed", tx.clone());
    let mut survivor = spawn_replica(&url, &schema.name, "survivor", tx);
    let mut acked = Vec::new();
    // Killed mid-load: once both replicas are writing (a replica starts writing only after its
    // store connected, which may take the other one 60 writes or more under load).
    let by = |acked: &[(String, u64, String)], who: &str| {
        acked.iter().filter(|(_, _, c)| c.starts_with(who)).count()
    };
    collect_until(&acks, &mut acked, |acked| {
        by(acked, "doomed-") >= 20 && by(acked, "survivor-") >= 20
    });
    doomed.kill().expect("SIGKILL");
    doomed.wait().unwrap();
    // The survivor and this process go on writing the same paths: no lock was left behind.
    collect(&acks, &mut acked, 30);
    for p in PATHS {
        let p = path(p);
        let mut done = false;
        for _ in 0..200 {
            let live = store.get(&a, &p, None).await.unwrap();
            let pre = Precondition::IfMatch(vec![live.meta.etag]);
            match store.put(&a, &p, FileWrite::markdown("parent"), pre).await {
                Ok(_) => {
                    done = true;
                    break;
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert!(done, "the parent got a write in on {}", p.as_str());
    }
    survivor.kill().expect("SIGKILL");
    survivor.wait().unwrap();
    acked.extend(acks.try_iter());

    assert!(acked.iter().any(|(_, _, c)| c.starts_with("doomed-")));
    for (p, version, content) in &acked {
        let stored = store.get(&a, &path(p), Some(*version)).await.unwrap();
        assert_eq!(&stored.content, content, "{p} v{version} kept");
    }
    let mut by_path: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (p, version, _) in &acked {
        by_path.entry(p.as_str()).or_default().push(*version);
    }
    for (p, mut versions) in by_path {
        versions.sort_unstable();
        let acknowledged = versions.len();
        versions.dedup();
        assert_eq!(versions.len(), acknowledged, "{p}: one winner per version");
        let history = store.history(&a, &path(p)).await.unwrap();
        let all: Vec<u64> = history.iter().rev().map(|m| m.version).collect();
        assert_eq!(
            all,
            (1..=all.len() as u64).collect::<Vec<_>>(),
            "{p}: gap-free"
        );
        assert!(versions.iter().all(|v| all.contains(v)));
    }
}
