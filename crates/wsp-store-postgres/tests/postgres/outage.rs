//! Losing the database: terminated sessions, a database that goes away and comes back, statement
//! timeouts, and failures whose text must not quote content.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use wsp_store::keys::KeyRegistry as _;
use wsp_store::{FileWrite, Limits, Precondition, StoreError, WorkspaceStore};
use wsp_store_postgres::PgStore;

use crate::support::{TestSchema, admin, database_url, owner, path};

/// `url` with `application_name` set, so a test can find its own sessions.
fn named(url: &str, name: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}application_name={name}")
}

/// Sessions of `app` that the server still has.
async fn sessions(db: &tokio_postgres::Client, app: &str) -> i64 {
    db.query_one(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
        &[&app],
    )
    .await
    .unwrap()
    .get(0)
}

/// Terminates every session of `app` and waits until the server has let them all go (the
/// store's listener may connect again meanwhile).
async fn terminate(db: &tokio_postgres::Client, app: &str) {
    let pids: Vec<i32> = db
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!pids.is_empty(), "the store had sessions to terminate");
    for pid in &pids {
        db.execute("SELECT pg_terminate_backend($1)", &[pid])
            .await
            .unwrap();
    }
    for _ in 0..100 {
        let left: i64 = db
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)",
                &[&pids],
            )
            .await
            .unwrap()
            .get(0);
        if left == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the terminated sessions of {app} did not go away");
}

/// `Unavailable`, with a message that says what happened.
fn assert_unavailable<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    match result {
        Err(StoreError::Unavailable {
            reason: message, ..
        }) => {
            assert!(message.contains("PostgreSQL"), "{message}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// The server terminates every session of a store (as at a failover or a restart): the next
/// call either succeeds on a fresh connection or says `Unavailable` (never `Internal`), and
/// from then on calls succeed, on data that is all still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_sessions_are_replaced() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let app = schema.name.clone();
    let store = PgStore::connect(&named(&url, &app), Limits::default(), schema.options())
        .await
        .unwrap();
    let (a, p) = (owner("a"), path("notes/plan.md"));
    // Several pooled connections, all of which will be terminated.
    let mut tasks = JoinSet::new();
    for i in 0..4 {
        let (store, a) = (store.clone(), a.clone());
        tasks.spawn(async move {
            let p = path(&format!("warm/{i}.md"));
            store
                .put(&a, &p, FileWrite::markdown("w"), Precondition::None)
                .await
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap().unwrap();
    }
    let v1 = store
        .put(&a, &p, FileWrite::markdown("v1"), Precondition::None)
        .await
        .unwrap();
    let db = admin(&url).await;
    for round in 0..3 {
        terminate(&db, &app).await;
        match store.get(&a, &p, None).await {
            Ok(f) => assert_eq!(f.meta.etag, v1.meta.etag, "round {round}"),
            Err(e) => assert_unavailable::<()>(Err(e)),
        }
        let mut recovered = false;
        for _ in 0..20 {
            match store.list(&a, &wsp_types::WorkspacePrefix::all()).await {
                Ok(files) => {
                    assert_eq!(files.len(), 5);
                    recovered = true;
                    break;
                }
                Err(e) => assert_unavailable::<()>(Err(e)),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(recovered, "round {round}: the store recovers by itself");
    }
    let v2 = store
        .put(
            &a,
            &p,
            FileWrite::markdown("v2"),
            Precondition::IfMatch(vec![v1.meta.etag]),
        )
        .await
        .unwrap();
    assert_eq!(v2.meta.version, 2);
    assert!(sessions(&db, &app).await > 0);
}

/// Pids of `app`'s sessions that are waiting for a lock.
async fn lock_waiters(db: &tokio_postgres::Client, app: &str) -> Vec<i32> {
    db.query(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
        &[&app],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// Polls until `app` has a session waiting for a lock other than `except`, and returns it.
async fn new_lock_waiter(db: &tokio_postgres::Client, app: &str, except: Option<i32>) -> i32 {
    for _ in 0..200 {
        if let Some(pid) = lock_waiters(db, app)
            .await
            .into_iter()
            .find(|pid| Some(*pid) != except)
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no session of {app} came to wait for the lock");
}

/// The session of a write dies mid-transaction (before `COMMIT`): the store tries again on a
/// fresh connection, and the write lands exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_session_dies_before_commit_is_retried_once() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let app = schema.name.clone();
    let store = PgStore::connect(&named(&url, &app), Limits::default(), schema.options())
        .await
        .unwrap();
    let (a, p) = (owner("a"), path("plan.md"));
    let v1 = store
        .put(&a, &p, FileWrite::markdown("v1"), Precondition::None)
        .await
        .unwrap();
    // Hold the owner's row so that the write waits inside its transaction.
    let mut db = admin(&url).await;
    let holder = db.transaction().await.unwrap();
    holder
        .execute(
            &schema.sql("SELECT 1 FROM {s}.wsp_owners WHERE tenant = 'a' FOR UPDATE"),
            &[],
        )
        .await
        .unwrap();
    let write = {
        let (store, a, p) = (store.clone(), a.clone(), p.clone());
        let pre = Precondition::IfMatch(vec![v1.meta.etag.clone()]);
        tokio::spawn(async move { store.put(&a, &p, FileWrite::markdown("v2"), pre).await })
    };
    let monitor = admin(&url).await;
    let first = new_lock_waiter(&monitor, &app, None).await;
    let killed: bool = monitor
        .query_one("SELECT pg_terminate_backend($1)", &[&first])
        .await
        .unwrap()
        .get(0);
    assert!(killed);
    // The retry waits for the same lock on another session.
    new_lock_waiter(&monitor, &app, Some(first)).await;
    holder.rollback().await.unwrap();
    let v2 = write.await.unwrap().expect("the retried write lands");
    assert_eq!(v2.meta.version, 2);
    let history: Vec<u64> = store
        .history(&a, &p)
        .await
        .unwrap()
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(history, [2, 1]);
    let seq: i64 = monitor
        .query_one(
            &schema.sql("SELECT seq FROM {s}.wsp_owners WHERE tenant = 'a'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(seq, 2, "the dead try left no trace");
}

/// A TCP relay to the database that can be cut (connections closed, connects refused), frozen
/// (connections stay open but nothing gets through, like a black-holed network) and restored,
/// standing in for a database that goes away and comes back at the same address.
struct Relay {
    listen: SocketAddr,
    upstream: SocketAddr,
    frozen: watch::Sender<bool>,
    tasks: Option<JoinSet<()>>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listen = listener.local_addr().unwrap();
        let mut relay = Self {
            listen,
            upstream,
            frozen: watch::channel(false).0,
            tasks: None,
        };
        relay.serve(listener);
        relay
    }

    fn serve(&mut self, listener: TcpListener) {
        let upstream = self.upstream;
        let frozen = self.frozen.subscribe();
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut pipes = JoinSet::new();
            // Dropping this task (at `cut`) drops the listener and every pipe with it.
            while let Ok((inbound, _)) = listener.accept().await {
                let frozen = frozen.clone();
                pipes.spawn(async move {
                    let Ok(outbound) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (in_read, in_write) = inbound.into_split();
                    let (out_read, out_write) = outbound.into_split();
                    tokio::join!(
                        pump(in_read, out_write, frozen.clone()),
                        pump(out_read, in_write, frozen)
                    );
                });
            }
        });
        self.tasks = Some(tasks);
    }

    /// Closes every relayed connection and stops listening: connects are refused.
    async fn cut(&mut self) {
        if let Some(mut tasks) = self.tasks.take() {
            tasks.shutdown().await;
        }
    }

    /// Holds every byte from now on, in both directions, without closing anything.
    fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Lets bytes through again.
    fn thaw(&self) {
        self.frozen.send_replace(false);
    }

    /// Listens again on the same address.
    async fn restore(&mut self) {
        let listener = TcpListener::bind(self.listen).await.unwrap();
        self.serve(listener);
    }
}

/// Copies `from` to `to`, holding the bytes while `frozen`.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut frozen: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while *frozen.borrow_and_update() {
            if frozen.changed().await.is_err() {
                return;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The database's address from the test URL (TCP only: the relay cannot reach a socket file).
fn upstream(url: &str) -> (SocketAddr, tokio_postgres::Config) {
    let config: tokio_postgres::Config = url.parse().unwrap();
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        other => panic!("the outage test needs a TCP database address, not {other:?}"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let host = if host == "localhost" {
        "127.0.0.1".to_owned()
    } else {
        host
    };
    (format!("{host}:{port}").parse().unwrap(), config)
}

/// A store whose connections go through a [`Relay`], with short timeouts.
async fn store_via_relay(url: &str, schema: &TestSchema) -> (Relay, PgStore) {
    let (address, config) = upstream(url);
    let relay = Relay::start(address).await;
    let mut via_relay = format!(
        "host=127.0.0.1 port={} user={} dbname={}",
        relay.listen.port(),
        config.get_user().unwrap_or("postgres"),
        config.get_dbname().unwrap_or("postgres"),
    );
    if let Some(password) = config.get_password() {
        via_relay.push_str(&format!(" password={}", String::from_utf8_lossy(password)));
    }
    let options = schema
        .options()
        .with_max_connections(4)
        .with_connect_timeout(Duration::from_secs(1))
        .with_statement_timeout(Duration::from_secs(1))
        .with_acquire_timeout(Duration::from_secs(2));
    let store = PgStore::connect(&via_relay, Limits::default(), options)
        .await
        .unwrap();
    (relay, store)
}

/// The database goes away: every call, readiness included, says `Unavailable` promptly and
/// clearly, a write made meanwhile is not stored; it comes back: the same store is ready and
/// serves again by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_is_unavailable_then_recovers() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let (mut relay, store) = store_via_relay(&url, &schema).await;
    let (a, p) = (owner("a"), path("plan.md"));
    let v1 = store
        .put(&a, &p, FileWrite::markdown("v1"), Precondition::None)
        .await
        .unwrap();

    relay.cut().await;
    let started = std::time::Instant::now();
    assert_unavailable(store.get(&a, &p, None).await);
    assert_unavailable(
        store
            .put(&a, &p, FileWrite::markdown("lost"), Precondition::None)
            .await,
    );
    assert_unavailable(store.list(&a, &wsp_types::WorkspacePrefix::all()).await);
    assert_unavailable(store.key_registry().list().await);
    // What `GET /readyz` answers 503 with while the database is away.
    assert_unavailable(store.ready().await);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "failing takes no longer than the timeouts"
    );

    relay.restore().await;
    store.ready().await.expect("ready again by itself");
    let got = store.get(&a, &p, None).await.expect("recovers by itself");
    assert_eq!(got, v1, "the write made during the outage was not stored");
    let v2 = store
        .put(
            &a,
            &p,
            FileWrite::markdown("v2"),
            Precondition::IfMatch(vec![v1.meta.etag]),
        )
        .await
        .unwrap();
    assert_eq!(v2.meta.version, 2);
    relay.cut().await;
}

/// The network to the database turns into a black hole (no reset, no answer): calls give up
/// with `Unavailable` after the statement timeout plus the connect timeout instead of hanging
/// (a write saying that its outcome is unknown), and once the network heals the store serves
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_database_is_unavailable_then_recovers() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let (mut relay, store) = store_via_relay(&url, &schema).await;
    let (a, p) = (owner("a"), path("plan.md"));
    let v1 = store
        .put(&a, &p, FileWrite::markdown("v1"), Precondition::None)
        .await
        .unwrap();

    relay.freeze();
    // The write goes out on the pooled connection and hears nothing back.
    let started = std::time::Instant::now();
    let write = store
        .put(&a, &p, FileWrite::markdown("unknown"), Precondition::None)
        .await;
    let waited = started.elapsed();
    match write {
        Err(StoreError::Unavailable { reason: m, .. }) => {
            assert!(m.contains("may or may not"), "{m}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(6),
        "gave up after {waited:?}"
    );
    // That connection was dropped; a new one cannot complete its handshake.
    let started = std::time::Instant::now();
    assert_unavailable(store.get(&a, &p, None).await);
    assert!(started.elapsed() < Duration::from_secs(4));

    relay.thaw();
    let mut recovered = None;
    for _ in 0..50 {
        match store.get(&a, &p, None).await {
            Ok(f) => {
                recovered = Some(f);
                break;
            }
            Err(e) => assert_unavailable::<()>(Err(e)),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let live = recovered.expect("recovers by itself");
    // The frozen write never reached the server, or reached it and committed: either way the
    // store tells the truth about it now.
    assert!(
        (live.meta.version == 1 && live == v1)
            || (live.meta.version == 2 && live.content == "unknown"),
        "{live:?}"
    );
    store
        .put(
            &a,
            &p,
            FileWrite::markdown("after"),
            Precondition::IfMatch(vec![live.meta.etag]),
        )
        .await
        .unwrap();
    relay.cut().await;
}

/// A write that waits on a lock longer than the statement timeout gives up with `Unavailable`;
/// reads are not blocked by the lock; once it is released, writes go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_timeout_is_unavailable() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let options = schema
        .options()
        .with_statement_timeout(Duration::from_millis(300));
    let store = PgStore::connect(&url, Limits::default(), options)
        .await
        .unwrap();
    let (a, p) = (owner("a"), path("locked.md"));
    store
        .put(&a, &p, FileWrite::markdown("v1"), Precondition::None)
        .await
        .unwrap();
    let mut db = admin(&url).await;
    let holder = db.transaction().await.unwrap();
    holder
        .execute(
            &schema.sql("SELECT 1 FROM {s}.wsp_owners WHERE tenant = 'a' FOR UPDATE"),
            &[],
        )
        .await
        .unwrap();
    let blocked = store
        .put(&a, &p, FileWrite::markdown("v2"), Precondition::None)
        .await;
    match blocked {
        Err(StoreError::Unavailable { reason: m, .. }) => assert!(m.contains("in time"), "{m}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert_eq!(store.get(&a, &p, None).await.unwrap().content, "v1");
    holder.rollback().await.unwrap();
    let v2 = store
        .put(&a, &p, FileWrite::markdown("v2"), Precondition::None)
        .await
        .unwrap();
    assert_eq!(v2.meta.version, 2);
}

/// An unexpected database error is `Internal`, and its text names the failure without quoting
/// the row (PostgreSQL's DETAIL would): the content never appears in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_errors_never_quote_content() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let store = schema.store(Limits::default()).await;
    let (a, p) = (owner("a"), path("secret.md"));
    store
        .put(&a, &p, FileWrite::markdown("short"), Precondition::None)
        .await
        .unwrap();
    admin(&url)
        .await
        .batch_execute(&schema.sql(
            "ALTER TABLE {s}.wsp_versions ADD CONSTRAINT tiny CHECK (octet_length(content) < 16)",
        ))
        .await
        .unwrap();
    let content = "TOP-SECRET-CONTENT-0123456789";
    let failed = store
        .put(&a, &p, FileWrite::markdown(content), Precondition::None)
        .await;
    let message = match failed {
        Err(StoreError::Internal { reason: m, .. }) => m,
        other => panic!("expected Internal, got {other:?}"),
    };
    assert!(message.contains("23514"), "{message}");
    let hex = wsp_types::hex(content.as_bytes());
    for leak in [content, "TOP-SECRET", &hex[..20]] {
        assert!(!message.contains(leak), "{message}");
    }
    let live = store.get(&a, &p, None).await.unwrap();
    assert_eq!((live.meta.version, live.content.as_str()), (1, "short"));
}
