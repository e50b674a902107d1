//! Group commit: writes that arrive while a commit is in flight share the next transaction, and
//! each keeps its own outcome.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use wsp_store::{CommitObserver, FileWrite, Limits, Precondition, StoreError, WorkspaceStore};
use wsp_types::{ETag, Owner, WorkspacePath};

use crate::support::{TestSchema, admin, database_url};

/// The size of every commit, in order.
#[derive(Default)]
struct Commits(Mutex<Vec<usize>>);

impl CommitObserver for Commits {
    fn committed(&self, changes: usize, _: Duration) {
        self.0.lock().unwrap().push(changes);
    }
}

/// Another session that holds the owner row of `tenant`/`workspace` until it rolls back.
async fn lock_owner_elsewhere(
    schema: &TestSchema,
    tenant: &str,
    workspace: &str,
) -> tokio_postgres::Client {
    let blocker = admin(&schema.url).await;
    blocker.batch_execute("BEGIN").await.unwrap();
    blocker
        .execute(
            &schema.sql(
                "SELECT 1 FROM {s}.wsp_owners WHERE tenant = $1 AND workspace = $2 FOR UPDATE",
            ),
            &[&tenant, &workspace],
        )
        .await
        .unwrap();
    blocker
}

/// While the owner row is locked elsewhere, the first write waits inside its transaction and
/// 63 more queue behind it. They then commit together: a stale `If-Match` is refused alone,
/// `maxFiles` counts the batch's own creations, and each success gets its own version and
/// feed entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_waiting_for_a_commit_share_the_next_and_keep_their_outcomes() {
    let schema = TestSchema::new(&database_url());
    let store = schema.store(Limits::default().with_max_files(40)).await;
    let commits = Arc::new(Commits::default());
    assert!(store.observe_commits(commits.clone()));
    let owner = Owner::parse("a", "w").unwrap();
    let shared = WorkspacePath::parse("shared.md").unwrap();
    let first = store
        .put(
            &owner,
            &shared,
            FileWrite::markdown("v1"),
            Precondition::None,
        )
        .await
        .unwrap();

    // Another session holds the owner's row: the next commit waits for it.
    let blocker = lock_owner_elsewhere(&schema, "a", "w").await;

    let fresh = Precondition::IfMatch(vec![first.meta.etag.clone()]);
    let stale = Precondition::IfMatch(vec![ETag::mint(1, 99)]);
    let spawn_put = |path: WorkspacePath, precondition: Precondition, i: usize| {
        let (store, owner) = (store.clone(), owner.clone());
        tokio::spawn(async move {
            let write = FileWrite::markdown(format!("w{i}"));
            store.put(&owner, &path, write, precondition).await
        })
    };
    let head = spawn_put(shared.clone(), fresh, 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut rest = Vec::new();
    for i in 1..64usize {
        let (path, precondition) = if i % 8 == 1 {
            (shared.clone(), stale.clone())
        } else {
            let path = WorkspacePath::parse(&format!("f{i:02}.md")).unwrap();
            (path, Precondition::IfNoneMatchAny)
        };
        rest.push((i, spawn_put(path, precondition, i)));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !head.is_finished() && rest.iter().all(|(_, w)| !w.is_finished()),
        "every write waits for the owner's lock"
    );
    blocker.batch_execute("ROLLBACK").await.unwrap();

    assert_eq!(head.await.unwrap().map(|f| f.meta.version), Ok(2));
    let (mut created, mut refused, mut full) = (0, 0, 0);
    for (i, w) in rest {
        match w.await.unwrap() {
            Err(StoreError::Conflict { current_version: 2 }) if i % 8 == 1 => refused += 1,
            Ok(f) if i % 8 != 1 => {
                assert_eq!(
                    (f.meta.version, f.content.as_str()),
                    (1, format!("w{i}").as_str())
                );
                created += 1;
            }
            Err(StoreError::TooLarge { .. }) if i % 8 != 1 => full += 1,
            other => panic!("write {i}: {other:?}"),
        }
    }
    assert_eq!((created, refused, full), (39, 8, 16));
    assert_eq!(
        *commits.0.lock().unwrap(),
        [1, 1, 39],
        "the first write, the one that waited for the lock, then one commit for the rest"
    );
    let feed = store.changes(&owner, 0, 100).await.unwrap();
    let seqs: Vec<u64> = feed.events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=41).collect::<Vec<_>>(),
        "one feed entry per success, no gaps"
    );
    assert_eq!(
        store.get(&owner, &shared, None).await.unwrap().content,
        "w0"
    );
}

/// Writers of different owners never wait for each other: while one owner's row is locked
/// elsewhere (its writes wait), another owner's writes through the same store commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_owner_waiting_never_holds_up_another() {
    let schema = TestSchema::new(&database_url());
    let store = schema.store(Limits::default()).await;
    let (a, b) = (
        Owner::parse("a", "w").unwrap(),
        Owner::parse("b", "w").unwrap(),
    );
    let path = WorkspacePath::parse("x.md").unwrap();
    for owner in [&a, &b] {
        store
            .put(owner, &path, FileWrite::markdown("v1"), Precondition::None)
            .await
            .unwrap();
    }
    let blocker = lock_owner_elsewhere(&schema, "a", "w").await;
    let waiting = {
        let (store, a, path) = (store.clone(), a.clone(), path.clone());
        tokio::spawn(async move {
            store
                .put(&a, &path, FileWrite::markdown("a2"), Precondition::None)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..5 {
        let written = tokio::time::timeout(
            Duration::from_secs(10),
            store.put(
                &b,
                &path,
                FileWrite::markdown(format!("b{i}")),
                Precondition::None,
            ),
        )
        .await
        .expect("owner b's write does not wait for owner a's lock")
        .unwrap();
        assert_eq!(written.meta.version, 2 + i);
    }
    assert!(!waiting.is_finished(), "owner a's write waits for its lock");
    blocker.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(waiting.await.unwrap().unwrap().meta.version, 2);
}
