//! Several stores on one schema, as replicas behind a load balancer: the whole battery with calls
//! alternating between two replicas, then races that only replicas can run.

use std::collections::BTreeMap;
use std::sync::Arc;

use wsp_store::{FileWrite, Limits, Precondition, StoreError, WorkspaceStore};
use wsp_store_postgres::{PgKeyRegistry, PgStore, SCHEMA_VERSION};
use wsp_types::LimitKind;

use crate::support::{TestSchema, admin, database_url, owner, path, replicas};

/// The battery again, every call going to the next of two replicas.
mod alternating {
    use crate::support::{Replicas, database_url};

    wsp_store::battery_tests!({
        let url = database_url();
        move |limits| {
            let url = url.clone();
            async move { Replicas::new(&url, limits, 2).await }
        }
    });
}

fn roomy() -> Limits {
    Limits::default().with_max_versions(1000)
}

/// Tasks on two replicas race `If-Match` writes on three shared paths: per path exactly one
/// winner per version, gap-free, every winner's content stored; the owner's change sequence
/// numbers every committed write once, gap-free, and no refused write consumed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_racing_if_match_writes_have_one_winner_per_version() {
    let url = database_url();
    let (schema, stores) = replicas(&url, roomy(), 2).await;
    let a = owner("a");
    let paths = ["race/1.md", "race/2.md", "race/3.md"];
    for p in paths {
        stores[0]
            .put(
                &a,
                &path(p),
                FileWrite::markdown("start"),
                Precondition::None,
            )
            .await
            .unwrap();
    }
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..8usize {
        let store = Arc::clone(&stores[t % 2]);
        let a = a.clone();
        tasks.spawn(async move {
            let mut won = Vec::new();
            let mut lost = 0u32;
            for i in 0..30usize {
                let p = path(paths[(t + i) % paths.len()]);
                let live = store.get(&a, &p, None).await.unwrap();
                let w = FileWrite::markdown(format!("task {t} try {i}"));
                match store
                    .put(&a, &p, w, Precondition::IfMatch(vec![live.meta.etag]))
                    .await
                {
                    Ok(f) => won.push((p.into_string(), f.meta.version, f.content)),
                    Err(StoreError::Conflict { current_version }) => {
                        assert!(current_version > live.meta.version);
                        lost += 1;
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            (won, lost)
        });
    }
    let mut wins: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    let mut losses = 0;
    while let Some(r) = tasks.join_next().await {
        let (won, lost) = r.unwrap();
        losses += lost;
        for (p, version, content) in won {
            wins.entry(p).or_default().push((version, content));
        }
    }
    assert!(losses > 0, "the replicas did race");
    let mut committed = paths.len() as i64;
    for (p, mut won) in wins {
        won.sort();
        let versions: Vec<u64> = won.iter().map(|w| w.0).collect();
        let expect: Vec<u64> = (2..2 + won.len() as u64).collect();
        assert_eq!(versions, expect, "{p}: one winner per version, gap-free");
        for (i, (version, content)) in won.iter().enumerate() {
            let reader = &stores[i % 2];
            let got = reader.get(&a, &path(&p), Some(*version)).await.unwrap();
            assert_eq!(&got.content, content, "{p} v{version} kept");
        }
        committed += won.len() as i64;
    }
    let db = admin(&url).await;
    let seqs: Vec<i64> = db
        .query(
            &schema.sql("SELECT seq FROM {s}.wsp_versions WHERE tenant = 'a' ORDER BY seq"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(seqs, (1..=committed).collect::<Vec<_>>(), "seq is gap-free");
    let owner_seq: i64 = db
        .query_one(
            &schema.sql("SELECT seq FROM {s}.wsp_owners WHERE tenant = 'a'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(owner_seq, committed);
}

/// Tasks on two replicas race to create more files than `maxFiles` allows: exactly the limit
/// is created, every other create is refused with the limit, and the live count agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_racing_creators_respect_max_files() {
    let url = database_url();
    let limits = Limits::default().with_max_files(5);
    let (schema, stores) = replicas(&url, limits, 2).await;
    let a = owner("a");
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..20usize {
        let store = Arc::clone(&stores[t % 2]);
        let a = a.clone();
        tasks.spawn(async move {
            store
                .put(
                    &a,
                    &path(&format!("new/{t:02}.md")),
                    FileWrite::markdown("x"),
                    Precondition::IfNoneMatchAny,
                )
                .await
        });
    }
    let mut created = 0;
    while let Some(r) = tasks.join_next().await {
        match r.unwrap() {
            Ok(f) => {
                assert_eq!(f.meta.version, 1);
                created += 1;
            }
            Err(e) => assert_eq!(
                e,
                StoreError::TooLarge {
                    limit: LimitKind::MaxFiles,
                    max: 5
                }
            ),
        }
    }
    assert_eq!(created, 5);
    for store in &stores {
        let listed = store
            .list(&a, &wsp_types::WorkspacePrefix::all())
            .await
            .unwrap();
        assert_eq!(listed.len(), 5);
    }
    let live_files: i64 = admin(&url)
        .await
        .query_one(
            &schema.sql("SELECT live_files FROM {s}.wsp_owners WHERE tenant = 'a'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(live_files, 5);
}

/// Two replicas race to delete the same version, then to re-create the path: one delete wins
/// (the other finds nothing), one create wins (the other conflicts at version 1), every round.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_racing_deletes_and_recreates_have_one_winner() {
    let url = database_url();
    let (_schema, stores) = replicas(&url, Limits::default(), 2).await;
    let a = owner("a");
    let p = path("cycle.md");
    let mut live = stores[0]
        .put(&a, &p, FileWrite::markdown("0"), Precondition::None)
        .await
        .unwrap();
    for round in 1..=15 {
        let tombstone = live.meta.version + 1;
        let deletes = stores.iter().map(|s| {
            let pre = Precondition::IfMatch(vec![live.meta.etag.clone()]);
            let (s, a, p) = (Arc::clone(s), a.clone(), p.clone());
            tokio::spawn(async move { s.delete(&a, &p, pre).await })
        });
        let mut outcomes = Vec::new();
        for d in deletes.collect::<Vec<_>>() {
            outcomes.push(d.await.unwrap());
        }
        outcomes.sort_by_key(|o| o.is_err());
        assert_eq!(outcomes[0], Ok(wsp_store::Deleted { version: tombstone }));
        assert_eq!(outcomes[1], Err(StoreError::NotFound), "round {round}");

        let creates = stores.iter().enumerate().map(|(i, s)| {
            let (s, a, p) = (Arc::clone(s), a.clone(), p.clone());
            let w = FileWrite::markdown(format!("{round} by {i}"));
            tokio::spawn(async move { s.put(&a, &p, w, Precondition::IfNoneMatchAny).await })
        });
        let mut outcomes = Vec::new();
        for c in creates.collect::<Vec<_>>() {
            outcomes.push(c.await.unwrap());
        }
        outcomes.sort_by_key(|o| o.is_err());
        let winner = outcomes[0].clone().expect("one create wins");
        assert_eq!(winner.meta.version, 1);
        assert_eq!(
            outcomes[1],
            Err(StoreError::Conflict { current_version: 1 })
        );
        live = stores[1]
            .put(&a, &p, FileWrite::markdown("v2"), Precondition::None)
            .await
            .unwrap();
        assert_eq!(live.meta.version, 2);
    }
}

/// Stores and key registries connecting at once to a new schema migrate it exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_connects_migrate_once() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let mut connects = tokio::task::JoinSet::new();
    for i in 0..6 {
        let (url, options) = (url.clone(), schema.options());
        connects.spawn(async move {
            if i % 3 == 2 {
                PgKeyRegistry::connect(&url, options).await.map(|_| ())
            } else {
                PgStore::connect(&url, Limits::default(), options)
                    .await
                    .map(|_| ())
            }
        });
    }
    while let Some(r) = connects.join_next().await {
        r.unwrap().expect("every concurrent connect succeeds");
    }
    let db = admin(&url).await;
    let applied = |db: tokio_postgres::Client| {
        let sql = schema.sql("SELECT version FROM {s}.wsp_schema_migrations ORDER BY version");
        async move {
            let rows = db.query(&sql, &[]).await.unwrap();
            (db, rows.iter().map(|r| r.get(0)).collect::<Vec<i32>>())
        }
    };
    let (db, versions) = applied(db).await;
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    // Connecting again applies nothing more and keeps the data.
    let store = schema.store(Limits::default()).await;
    store
        .put(
            &owner("a"),
            &path("a.md"),
            FileWrite::markdown("x"),
            Precondition::None,
        )
        .await
        .unwrap();
    drop(store);
    let again = schema.store(Limits::default()).await;
    assert_eq!(
        again
            .get(&owner("a"), &path("a.md"), None)
            .await
            .unwrap()
            .content,
        "x"
    );
    let (_db, versions) = applied(db).await;
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}

/// Waits for the next notice about `owner`, failing on notices about `never` on the way.
async fn next_notice(
    rx: &mut tokio::sync::broadcast::Receiver<wsp_store::ChangeNotice>,
    owner: &wsp_types::Owner,
    never: &wsp_types::Owner,
) -> u64 {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(n) if &n.owner == owner => return n.seq,
                Ok(n) => assert_ne!(&n.owner, never, "a notice of another schema"),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("notices stopped: {e}"),
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), wait)
        .await
        .expect("a notice arrives")
}

/// A replica's subscribers hear of commits made through another replica (LISTEN/NOTIFY), not
/// of other schemas' commits; when the listening session is killed, the listener reconnects
/// by itself and re-announces the owners' heads, so a commit made meanwhile is not missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn notices_cross_replicas_and_survive_a_lost_listener() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let app = schema.name.clone();
    let listening = PgStore::connect(
        &format!("{url}?application_name={app}"),
        Limits::default(),
        schema.options(),
    )
    .await
    .unwrap();
    let writer = schema.store(Limits::default()).await;
    let elsewhere = TestSchema::new(&url);
    let other = elsewhere.store(Limits::default()).await;
    let (a, c) = (owner("a"), owner("c"));
    let mut rx = listening.subscribe().expect("the store notifies");
    let put = |s: &PgStore, o: &wsp_types::Owner, content: &str| {
        let (s, o, w) = (s.clone(), o.clone(), FileWrite::markdown(content));
        async move {
            s.put(&o, &path("n.md"), w, Precondition::None)
                .await
                .unwrap()
        }
    };

    put(&other, &c, "another schema").await;
    put(&writer, &a, "1").await;
    assert_eq!(next_notice(&mut rx, &a, &c).await, 1);
    put(&listening, &a, "2").await;
    assert_eq!(
        next_notice(&mut rx, &a, &c).await,
        2,
        "its own commits, once"
    );
    writer
        .delete(&a, &path("n.md"), Precondition::None)
        .await
        .unwrap();
    assert_eq!(next_notice(&mut rx, &a, &c).await, 3);

    let db = admin(&url).await;
    let killed: i64 = db
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = $1 AND query ILIKE 'LISTEN%') AS t",
            &[&app],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(killed, 1, "the listening session");
    put(&writer, &a, "while the listener is away").await;
    let mut heard = next_notice(&mut rx, &a, &c).await;
    while heard < 4 {
        heard = next_notice(&mut rx, &a, &c).await;
    }
    assert_eq!(heard, 4);
    put(&writer, &a, "after").await;
    let mut heard = next_notice(&mut rx, &a, &c).await;
    while heard < 5 {
        heard = next_notice(&mut rx, &a, &c).await;
    }
    assert_eq!(heard, 5, "listening again");
}

/// A store listens before `connect` returns: a commit made through another replica right
/// after a fresh replica connected reaches that replica's subscribers (the listening session
/// is not still being set up while the commit's notice goes out).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fresh_replica_hears_the_next_commit_elsewhere() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let writer = schema.store(Limits::default()).await;
    let (a, never) = (owner("a"), owner("never"));
    for round in 1..=20u64 {
        let fresh = schema.store(Limits::default()).await;
        let mut rx = fresh.subscribe().expect("the store notifies");
        writer
            .put(
                &a,
                &path("n.md"),
                FileWrite::markdown(format!("round {round}")),
                Precondition::None,
            )
            .await
            .unwrap();
        assert_eq!(
            next_notice(&mut rx, &a, &never).await,
            round,
            "round {round}"
        );
    }
}

/// Snapshots taken through one replica while others write and delete: each one shows exactly
/// the state that the feed describes up to its sequence number, and every retained row is
/// released with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snapshots_under_racing_replicas_match_the_feed() {
    let url = database_url();
    let limits = Limits::default().with_max_versions(2);
    let (schema, stores) = replicas(&url, limits, 3).await;
    let a = owner("a");
    let mut writers = tokio::task::JoinSet::new();
    for t in 0..4usize {
        let (store, a) = (Arc::clone(&stores[t % 2]), a.clone());
        writers.spawn(async move {
            for i in 0..25usize {
                let p = path(&format!("f{}.md", (t + i) % 5));
                if i % 7 == 3 {
                    match store.delete(&a, &p, Precondition::None).await {
                        Ok(_) | Err(StoreError::NotFound) => {}
                        Err(e) => panic!("unexpected {e}"),
                    }
                } else {
                    let w = FileWrite::markdown(format!("{t}/{i}"));
                    store.put(&a, &p, w, Precondition::None).await.unwrap();
                }
            }
        });
    }
    // Snapshots for as long as the writers write (however slowly the machine starts them).
    let taker = Arc::clone(&stores[2]);
    let mut snaps = Vec::new();
    while !writers.is_empty() {
        snaps.push(taker.snapshot(&a, &"race".into()).await.unwrap());
        tokio::task::yield_now().await;
        while let Some(r) = writers.try_join_next() {
            r.unwrap();
        }
    }
    let pins: std::collections::BTreeSet<u64> = snaps.iter().map(|s| s.seq).collect();
    assert!(pins.len() > 2, "the snapshots raced the writers: {pins:?}");
    let feed = stores[0].changes(&a, 0, 10_000).await.unwrap();
    assert_eq!(feed.oldest, 1);
    for snap in &snaps {
        let mut expect: BTreeMap<String, Option<u64>> = BTreeMap::new();
        for e in feed.events.iter().filter(|e| e.seq <= snap.seq) {
            expect.insert(e.path.to_string(), (!e.deleted).then_some(e.version));
        }
        let expect: Vec<(String, u64)> = expect
            .into_iter()
            .filter_map(|(p, v)| v.map(|v| (p, v)))
            .collect();
        let reader = &stores[snap.seq as usize % 3];
        let seen: Vec<(String, u64)> = reader
            .list_at(&a, &snap.id, &wsp_types::WorkspacePrefix::all())
            .await
            .unwrap()
            .into_iter()
            .map(|m| (m.path.into_string(), m.version))
            .collect();
        assert_eq!(seen, expect, "snapshot at {}", snap.seq);
        for (p, version) in &seen {
            let f = reader.get_at(&a, &snap.id, &path(p)).await.unwrap();
            assert_eq!(f.meta.version, *version);
        }
    }
    for snap in &snaps {
        stores[1]
            .release_snapshot(&a, &snap.id, "completed")
            .await
            .unwrap();
    }
    // Released: only history (2 versions of each live path) remains, no tombstone rows.
    let db = admin(&url).await;
    let left: Vec<(String, i64, bool)> = db
        .query(
            &schema.sql(
                "SELECT path, count(*), bool_or(deleted) FROM {s}.wsp_versions
                 WHERE tenant = 'a' GROUP BY path ORDER BY path",
            ),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let live = stores[0]
        .list(&a, &wsp_types::WorkspacePrefix::all())
        .await
        .unwrap();
    let expect: Vec<(String, i64, bool)> = live
        .iter()
        .map(|m| (m.path.to_string(), m.version.min(2) as i64, false))
        .collect();
    assert_eq!(left, expect);
}
