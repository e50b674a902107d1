//! The change feed under many and hostile clients (WIRE.md §5): one store read per change for
//! every subscriber of an owner, a cap on open streams per key, revocation ending an open
//! stream, and shutdown ending every open stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;
use wsp_client::{Client, EventStream, FeedItem, PutOptions};
use wsp_server::{AppState, AuthFuture, Authenticator, Caller, KEY_CACHE_TTL, KeyAuthenticator};
use wsp_server::{ServerConfig, serve};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_store::{
    ChangeNotice, ChangePage, FileWrite, Limits, MemoryStore, Precondition, StoreFuture,
    WorkspaceStore,
};
use wsp_types::{Owner, Scopes, WorkspacePath};

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

/// A memory store that counts the change-feed reads that can return changes
/// (`changes(after, limit > 0)`), and can pretend it has no notices (a polled store).
struct Counting {
    inner: MemoryStore,
    reads: AtomicUsize,
    notices: bool,
    /// Head reads (`changes(_, _, 0)`) left until the one that is slowed down.
    slow_head_read: std::sync::Mutex<Option<usize>>,
}

impl Counting {
    fn new(notices: bool) -> Self {
        Self {
            inner: MemoryStore::new(Limits::default()),
            reads: AtomicUsize::new(0),
            notices,
            slow_head_read: std::sync::Mutex::new(None),
        }
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

impl WorkspaceStore for Counting {
    wsp_store::forward_store!(|this| this.inner;
        limits, features, list, get, put, delete, history, snapshot, snapshot_info, list_snapshots,
        release_snapshot, list_at, get_at, open_snapshots_before, count_open_snapshots,
        forget_released_snapshots);

    fn changes<'a>(
        &'a self,
        owner: &'a Owner,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, ChangePage> {
        if limit > 0 {
            self.reads.fetch_add(1, Ordering::SeqCst);
        }
        let slow = limit == 0 && {
            let mut left = self.slow_head_read.lock().unwrap();
            match left.as_mut() {
                Some(0) => {
                    *left = None;
                    true
                }
                Some(n) => {
                    *n -= 1;
                    false
                }
                None => false,
            }
        };
        Box::pin(async move {
            if slow {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            self.inner.changes(owner, after, limit).await
        })
    }
    fn subscribe(&self) -> Option<broadcast::Receiver<ChangeNotice>> {
        if self.notices {
            self.inner.subscribe()
        } else {
            None
        }
    }
}

/// A served state, its keys and a way to stop it.
struct Server {
    base: String,
    state: AppState,
    registry: Arc<MemoryKeyRegistry>,
    /// Owner A, every scope.
    key: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn add_key(registry: &MemoryKeyRegistry, tenant: &str) -> (String, String) {
    let k = ApiKey::generate();
    registry
        .insert(KeyRecord::new(
            &k,
            Owner::parse(tenant, "default").unwrap(),
            "alice".into(),
            Scopes::all(),
        ))
        .await
        .unwrap();
    (k.expose(), k.id().to_owned())
}

async fn start(store: Arc<dyn WorkspaceStore>) -> Server {
    let registry = Arc::new(MemoryKeyRegistry::default());
    let (key, _) = add_key(&registry, "tenant-a").await;
    let state = AppState::new(
        store,
        Arc::new(KeyAuthenticator::new(registry.clone())),
        ServerConfig::default(),
    );
    start_state(state, registry, key).await
}

async fn start_state(state: AppState, registry: Arc<MemoryKeyRegistry>, key: String) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve(listener, state.clone(), async move {
        let _ = stopped.await;
    }));
    Server {
        base,
        state,
        registry,
        key,
        stop: Some(stop),
        served,
    }
}

impl Server {
    fn client(&self, key: &str) -> Client {
        Client::new(&self.base).unwrap().with_key(key)
    }
}

/// The next item of a stream, failing the test after a generous wait.
async fn next_item(stream: &mut EventStream) -> Option<FeedItem> {
    tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the stream answers")
        .map(|r| r.expect("a well-formed item"))
}

async fn next_seq(stream: &mut EventStream) -> u64 {
    match next_item(stream).await {
        Some(FeedItem::Updated(e)) => e.sequence.get(),
        other => panic!("expected an update, got {other:?}"),
    }
}

async fn write(c: &Client, path: &str, content: &str) {
    c.put(&p(path), content, PutOptions::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn one_write_is_read_from_the_store_once_for_all_subscribers_of_an_owner() {
    let store = Arc::new(Counting::new(true));
    let s = start(store.clone()).await;
    let a = s.client(&s.key);
    let mut streams = Vec::new();
    for _ in 0..20 {
        streams.push(a.events(None).await.unwrap());
    }
    // Every subscriber is live once it has the first change.
    write(&a, "warm-up.md", "0").await;
    for st in &mut streams {
        assert_eq!(next_seq(st).await, 1);
    }
    for seq in 2..=4u64 {
        let before = store.reads();
        write(&a, "f.md", &format!("{seq}")).await;
        for st in &mut streams {
            assert_eq!(next_seq(st).await, seq, "every subscriber, in order");
        }
        assert_eq!(
            store.reads() - before,
            1,
            "one store read of the change for 20 subscribers"
        );
    }
}

#[tokio::test]
async fn a_change_committed_while_the_owners_reader_starts_is_not_held_back() {
    let store = Arc::new(Counting::new(true));
    let s = start(store.clone()).await;
    let a = s.client(&s.key);
    // The first stream of an owner starts its reader, which reads the head after the stream's
    // request does: that second head read is slow, and a change commits meanwhile.
    *store.slow_head_read.lock().unwrap() = Some(1);
    let mut stream = a.events(None).await.unwrap();
    write(&a, "during.md", "x").await;
    assert_eq!(
        next_seq(&mut stream).await,
        1,
        "delivered without a later write"
    );
}

#[tokio::test]
async fn a_store_without_notices_is_polled_and_every_subscriber_gets_every_change() {
    let store = Arc::new(Counting::new(false));
    let s = start(store.clone()).await;
    let a = s.client(&s.key);
    let mut streams = Vec::new();
    for _ in 0..5 {
        streams.push(a.events(None).await.unwrap());
    }
    for i in 1..=3u64 {
        write(&a, "f.md", &format!("{i}")).await;
    }
    for st in &mut streams {
        for seq in 1..=3u64 {
            assert_eq!(next_seq(st).await, seq);
        }
    }
}

#[tokio::test]
async fn subscribers_joining_anywhere_while_changes_flow_see_each_change_once_in_order() {
    let store = Arc::new(Counting::new(true));
    let s = start(store).await;
    let a = s.client(&s.key);
    const HALF: u64 = 300;
    // Opened before anything is written and never read until the end: it falls behind the
    // live fan-out and must catch up from the store.
    let mut stalled = a.events(None).await.unwrap();
    let (joined_tx, joined_rx) = tokio::sync::oneshot::channel::<()>();
    let writer = {
        let a = a.clone();
        tokio::spawn(async move {
            for i in 0..HALF {
                write(&a, &format!("load/{}.md", i % 7), &format!("{i}")).await;
            }
            // Every joiner is in before the second half, so each gets something.
            joined_rx.await.unwrap();
            for i in HALF..2 * HALF {
                write(&a, &format!("load/{}.md", i % 7), &format!("{i}")).await;
            }
        })
    };
    // Joiners at the live tail and at earlier positions while the writer runs.
    let mut joined = Vec::new();
    for since in [None, Some(0), Some(5), None, Some(100), None] {
        tokio::time::sleep(Duration::from_millis(20)).await;
        joined.push((since, a.events(since).await.unwrap()));
    }
    joined_tx.send(()).unwrap();
    writer.await.unwrap();
    for (since, mut st) in joined {
        let first = next_seq(&mut st).await;
        if let Some(n) = since {
            assert_eq!(first, n + 1, "a resume starts right after its position");
        }
        for seq in first + 1..=2 * HALF {
            assert_eq!(next_seq(&mut st).await, seq, "no gap, no duplicate");
        }
    }
    for seq in 1..=2 * HALF {
        assert_eq!(next_seq(&mut stalled).await, seq, "no gap, no duplicate");
    }
}

#[tokio::test]
async fn the_stream_over_the_per_key_limit_is_refused_with_429_and_its_limit() {
    let s = start(Arc::new(MemoryStore::default())).await;
    let a = s.client(&s.key);
    let mut open = Vec::new();
    for _ in 0..32 {
        open.push(a.events(None).await.unwrap());
    }
    let err = a
        .events(None)
        .await
        .expect_err("the 33rd stream is refused");
    let api = err.api().expect("an error envelope");
    assert_eq!((api.status, api.error.as_str()), (429, "rate_limited"));
    assert_eq!(
        api.detail("limit"),
        Some(&serde_json::json!("streamsPerKey"))
    );
    assert_eq!(api.detail("max"), Some(&serde_json::json!(32)));
    // Another key of the same owner has its own allowance.
    let (other, _) = add_key(&s.registry, "tenant-a").await;
    let mut theirs = s.client(&other).events(None).await.unwrap();
    // The refused request cost nothing: the open streams still work.
    write(&a, "f.md", "x").await;
    assert_eq!(next_seq(&mut open[31]).await, 1);
    assert_eq!(next_seq(&mut theirs).await, 1);
}

#[tokio::test]
async fn the_per_key_limit_is_configurable_and_a_closed_stream_frees_its_place() {
    let registry = Arc::new(MemoryKeyRegistry::default());
    let (key, _) = add_key(&registry, "tenant-a").await;
    let state = AppState::builder(
        Arc::new(MemoryStore::default()),
        Arc::new(KeyAuthenticator::new(registry.clone())),
    )
    .max_streams_per_key(2)
    .build();
    let s = start_state(state, registry, key).await;
    let a = s.client(&s.key);
    let first = a.events(None).await.unwrap();
    let _second = a.events(None).await.unwrap();
    let err = a.events(None).await.expect_err("over the limit of 2");
    assert_eq!(
        err.api().unwrap().detail("max"),
        Some(&serde_json::json!(2))
    );
    drop(first);
    // The server notices the closed stream when it next writes to it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut third = loop {
        write(&a, "nudge.md", "x").await;
        match a.events(None).await {
            Ok(st) => break st,
            Err(e) => {
                assert_eq!(e.api().map(|e| e.status), Some(429), "{e}");
                assert!(
                    Instant::now() < deadline,
                    "the closed stream's place came back"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let before = match a.events(None).await {
        Err(e) => e.api().map(|e| e.status),
        Ok(_) => None,
    };
    assert_eq!(before, Some(429), "still two at most");
    write(&a, "after.md", "x").await;
    match next_item(&mut third).await {
        Some(FeedItem::Updated(e)) => assert_eq!(e.payload.path.as_str(), "after.md"),
        other => panic!("expected an update, got {other:?}"),
    }
}

/// Reads the stream to its end; the items it delivered.
async fn read_to_end(stream: &mut EventStream, within: Duration) -> Vec<FeedItem> {
    let deadline = Instant::now() + within;
    let mut items = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.next()).await {
            Ok(Some(Ok(item))) => items.push(item),
            Ok(Some(Err(e))) => panic!("a broken stream: {e}"),
            Ok(None) => return items,
            Err(_) => panic!("the stream is still open after {within:?}; it delivered {items:?}"),
        }
    }
}

#[tokio::test]
async fn a_revoked_key_stream_ends_and_never_delivers_a_later_change() {
    let registry = Arc::new(MemoryKeyRegistry::default());
    let (writer_key, _) = add_key(&registry, "tenant-a").await;
    let (doomed, doomed_id) = add_key(&registry, "tenant-a").await;
    let state = AppState::new(
        Arc::new(MemoryStore::default()),
        Arc::new(KeyAuthenticator::new(registry.clone())),
        ServerConfig::default(),
    );
    let s = start_state(state, registry, writer_key).await;
    let writer = s.client(&s.key);
    let mut stream = s.client(&doomed).events(None).await.unwrap();
    write(&writer, "before.md", "seen").await;
    assert_eq!(next_seq(&mut stream).await, 1);
    s.registry.revoke(&doomed_id).await.unwrap();
    let revoked = Instant::now();
    // The README's promise: a revocation takes effect within KEY_CACHE_TTL.
    tokio::time::sleep(KEY_CACHE_TTL).await;
    write(&writer, "after.md", "never seen").await;
    let items = read_to_end(&mut stream, KEY_CACHE_TTL * 2).await;
    let ended = revoked.elapsed();
    match items.as_slice() {
        [FeedItem::Error(e)] => {
            assert_eq!(e.error, "unauthenticated", "{e:?}");
        }
        other => panic!("expected only the closing error event, got {other:?}"),
    }
    assert!(
        ended < KEY_CACHE_TTL * 2 + Duration::from_secs(2),
        "ended {ended:?} after the revocation"
    );
}

/// Accepts one token while `valid` holds, without any cache.
struct Switch {
    token: String,
    valid: AtomicBool,
}

impl Authenticator for Switch {
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
        Box::pin(async move {
            Ok(
                (token == self.token && self.valid.load(Ordering::SeqCst)).then(|| Caller {
                    owner: Owner::parse("tenant-a", "default").unwrap(),
                    principal: "switch".into(),
                    scopes: Scopes::all(),
                    agent: None,
                }),
            )
        })
    }
}

#[tokio::test]
async fn a_stream_checks_its_credential_again_before_it_delivers_a_change() {
    let auth = Arc::new(Switch {
        token: "the-token".into(),
        valid: AtomicBool::new(true),
    });
    let store = Arc::new(MemoryStore::default());
    let state = AppState::new(store.clone(), auth.clone(), ServerConfig::default());
    let s = start_state(state, Arc::default(), "the-token".into()).await;
    let mut stream = s.client(&s.key).events(None).await.unwrap();
    let owner = Owner::parse("tenant-a", "default").unwrap();
    store
        .put(
            &owner,
            &p("one.md"),
            FileWrite::markdown("1"),
            Precondition::None,
        )
        .await
        .unwrap();
    assert_eq!(next_seq(&mut stream).await, 1);
    // Invalid from now on; the next change commits right after.
    auth.valid.store(false, Ordering::SeqCst);
    store
        .put(
            &owner,
            &p("two.md"),
            FileWrite::markdown("2"),
            Precondition::None,
        )
        .await
        .unwrap();
    let items = read_to_end(&mut stream, Duration::from_secs(20)).await;
    match items.as_slice() {
        [FeedItem::Error(e)] => assert_eq!(e.error, "unauthenticated", "{e:?}"),
        other => panic!("expected only the closing error event, got {other:?}"),
    }
}

#[tokio::test]
async fn shutdown_ends_every_open_stream_with_a_final_event_and_serve_returns() {
    let mut s = start(Arc::new(MemoryStore::default())).await;
    let a = s.client(&s.key);
    let mut live = a.events(None).await.unwrap();
    let mut resumed = a.events(Some(0)).await.unwrap();
    write(&a, "f.md", "x").await;
    assert_eq!(next_seq(&mut live).await, 1);
    assert_eq!(next_seq(&mut resumed).await, 1);
    s.stop.take().unwrap().send(()).unwrap();
    for st in [&mut live, &mut resumed] {
        match read_to_end(st, Duration::from_secs(20)).await.as_slice() {
            [FeedItem::Error(e)] => {
                assert_eq!((e.status, e.error.as_str()), (200, "service_unavailable"));
                assert!(e.message.contains("shutting down"), "{}", e.message);
            }
            other => panic!("expected the closing error event, got {other:?}"),
        }
    }
    tokio::time::timeout(Duration::from_secs(20), &mut s.served)
        .await
        .expect("serve returns once its streams ended")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_stream_asked_for_after_shutdown_began_is_refused() {
    let s = start(Arc::new(MemoryStore::default())).await;
    s.state.close_streams();
    let err = s.client(&s.key).events(None).await.expect_err("refused");
    let api = err.api().unwrap();
    assert_eq!(
        (api.status, api.error.as_str()),
        (503, "service_unavailable")
    );
}

/// A delete's event says so (`deleted: true`); a write's payload has no such key, as OpenWOP v1
/// defines it.
#[tokio::test]
async fn a_delete_says_so_in_its_event() {
    let server = start(Arc::new(MemoryStore::new(Limits::default()))).await;
    let c = server.client(&server.key);
    write(&c, "gone.md", "soon").await;
    c.delete(&p("gone.md"), None).await.unwrap();
    let mut stream = c.events(Some(0)).await.unwrap();
    let mut payloads = Vec::new();
    for _ in 0..2 {
        match next_item(&mut stream).await {
            Some(FeedItem::Updated(e)) => payloads.push(e.payload),
            other => panic!("expected an update, got {other:?}"),
        }
    }
    assert_eq!(payloads[0].deleted, None);
    assert_eq!(
        (payloads[1].deleted, payloads[1].version.get()),
        (Some(true), 2)
    );
    let write_text = serde_json::to_string(&payloads[0]).unwrap();
    assert!(!write_text.contains("deleted"), "{write_text}");
}

/// On the wire, a delete's `data:` carries `"deleted":true` and a write's has no `deleted` key
/// at all (not `false`, not `null`), so an OpenWOP v1 client reads the write unchanged.
#[tokio::test]
async fn the_wire_carries_deleted_only_on_a_delete() {
    let server = start(Arc::new(MemoryStore::new(Limits::default()))).await;
    let c = server.client(&server.key);
    write(&c, "raw.md", "soon").await;
    c.delete(&p("raw.md"), None).await.unwrap();
    let mut resp = reqwest::Client::new()
        .get(format!("{}/v1/host/workspace/events?since=0", server.base))
        .bearer_auth(&server.key)
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    // Two whole events: two `data:` lines, the second ended by the event's blank line.
    while text.matches("data:").count() < 2 || !text.ends_with("\n\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, resp.chunk())
            .await
            .expect("two events within 10 s")
            .unwrap()
            .expect("the stream is open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let data: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    assert_eq!(
        data[0]["payload"],
        serde_json::json!({"path": "raw.md", "version": 1})
    );
    assert_eq!(
        data[1]["payload"],
        serde_json::json!({"path": "raw.md", "version": 2, "deleted": true})
    );
}
