//! The change feed's fan-out: one store reader per owner with open streams, shared by all of
//! them, a cap on the open streams of one credential, the credential re-checked while its
//! streams are open, and the end of every stream when the server shuts down.
//!
//! Without it every write woke every subscriber of the owner and each read the same change from
//! the store; with it the owner's reader reads each change once and hands the page to every
//! subscriber through a bounded broadcast channel. A subscriber that is behind (a resume, a
//! slow client that let the channel overwrite what it had not taken) reads the store by itself
//! until it is current, then takes the shared pages again (`events.rs`). Nobody ever waits for
//! a subscriber: the channel drops what a slow one has not taken, and it catches up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use wsp_store::{ChangeEvent, ChangeNotice, StoreError, WorkspaceStore};
use wsp_types::{ErrorCode, Owner, Scope};

use crate::auth::{Authenticator, Caller, KEY_CACHE_TTL};
use crate::error::WireError;

/// Open change-feed streams one credential may hold at a time, unless the host says otherwise
/// ([`AppStateBuilder::max_streams_per_key`](crate::AppStateBuilder::max_streams_per_key)).
pub const DEFAULT_MAX_STREAMS_PER_KEY: usize = 32;

/// Changes read from the store at a time, by an owner's reader or a catching-up subscriber.
pub(crate) const PAGE: usize = 256;
/// How often a store that cannot notify is polled (once per owner, not per subscriber).
const POLL: Duration = Duration::from_millis(500);
/// Pages an owner's channel holds for a subscriber that has not taken them yet; past that the
/// subscriber reads the store by itself.
const LIVE_PAGES: usize = 64;
/// How often the credential of open streams is checked again while nothing is delivered.
/// A revocation reaches the key cache within [`KEY_CACHE_TTL`] and an idle stream within this
/// much more; a stream never delivers a change read after the revocation reached the cache.
const RECHECK: Duration = Duration::from_millis(250);
const _: () = assert!(RECHECK.as_millis() < KEY_CACHE_TTL.as_millis());

/// Changes read in one go: every change after `after`, up to the last one. Empty when the
/// owner's reader announces where it starts.
#[derive(Debug)]
pub(crate) struct Batch {
    /// The position the page was read after (or, when the feed had already trimmed changes
    /// past it, the position just before the oldest one it still holds).
    pub(crate) after: u64,
    /// The changes, oldest first.
    pub(crate) events: Vec<ChangeEvent>,
    /// When the read returned: every change in it committed before then.
    pub(crate) read_at: Instant,
}

/// What an owner's reader sends its subscribers.
#[derive(Debug, Clone)]
pub(crate) enum Live {
    /// New changes.
    Changes(Arc<Batch>),
    /// The store failed; every subscriber ends its stream with this error.
    Failed(WireError),
}

/// The fan-out of one server: owners' readers, credentials' checks, and the shutdown switch.
/// Cheap to clone (shared).
#[derive(Clone)]
pub(crate) struct FeedHub {
    shared: Arc<Shared>,
}

struct Shared {
    maps: Mutex<Maps>,
    max_per_key: AtomicUsize,
    closing: watch::Sender<bool>,
}

#[derive(Default)]
struct Maps {
    owners: HashMap<Owner, OwnerEntry>,
    keys: HashMap<[u8; 32], KeyEntry>,
}

struct OwnerEntry {
    tx: broadcast::Sender<Live>,
    subscribers: usize,
    reader: JoinHandle<()>,
}

struct KeyEntry {
    streams: usize,
    check: Arc<KeyCheck>,
    checker: JoinHandle<()>,
}

impl Default for FeedHub {
    fn default() -> Self {
        Self {
            shared: Arc::new(Shared {
                maps: Mutex::default(),
                max_per_key: AtomicUsize::new(DEFAULT_MAX_STREAMS_PER_KEY),
                closing: watch::channel(false).0,
            }),
        }
    }
}

/// The error that ends every stream when the server shuts down, and refuses new ones.
fn shutting_down() -> WireError {
    WireError::new(
        ErrorCode::ServiceUnavailable,
        "the server is shutting down; reconnect with Last-Event-ID to resume",
    )
}

impl FeedHub {
    /// Sets the cap on open streams per credential (0 refuses every stream).
    pub(crate) fn set_max_per_key(&self, max: usize) {
        self.shared.max_per_key.store(max, Ordering::Relaxed);
    }

    /// How many streams are open now.
    pub(crate) fn open_streams(&self) -> usize {
        let maps = self.shared.maps.lock().unwrap_or_else(|e| e.into_inner());
        maps.owners.values().map(|o| o.subscribers).sum()
    }

    /// Ends every open stream (a final `service_unavailable` event) and refuses new ones.
    pub(crate) fn close(&self) {
        self.shared.closing.send_replace(true);
    }

    /// Registers a stream of `caller`, who presented `token`, on the feed of `caller.owner`.
    ///
    /// Fails with 503 once the server is shutting down, and with 429 `rate_limited` when the
    /// credential already holds its allowance of open streams.
    pub(crate) fn join(
        &self,
        store: &Arc<dyn WorkspaceStore>,
        auth: &Arc<dyn Authenticator>,
        token: &str,
        caller: &Caller,
    ) -> Result<Subscription, WireError> {
        let closing = self.shared.closing.subscribe();
        if *closing.borrow() {
            return Err(shutting_down());
        }
        // The map is keyed by a digest, so it never holds a secret as a key.
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let max = self.shared.max_per_key.load(Ordering::Relaxed);
        let mut maps = self.shared.maps.lock().unwrap_or_else(|e| e.into_inner());
        let streams = maps.keys.get(&key).map_or(0, |k| k.streams);
        if streams >= max {
            return Err(WireError::new(
                ErrorCode::RateLimited,
                format!(
                    "this credential already has {streams} open change-feed streams, its limit; \
                     close one first"
                ),
            )
            .with_detail("limit", "streamsPerKey")
            .with_detail("max", max));
        }
        let key_entry = maps.keys.entry(key).or_insert_with(|| {
            let check = Arc::new(KeyCheck::new(auth.clone(), token.to_owned(), caller));
            KeyEntry {
                streams: 0,
                checker: tokio::spawn(check_forever(check.clone())),
                check,
            }
        });
        key_entry.streams += 1;
        let check = key_entry.check.clone();
        let start_reader = |tx: &broadcast::Sender<Live>| {
            tokio::spawn(read_forever(
                store.clone(),
                caller.owner.clone(),
                tx.clone(),
            ))
        };
        let owner_entry = maps.owners.entry(caller.owner.clone()).or_insert_with(|| {
            let tx = broadcast::channel(LIVE_PAGES).0;
            OwnerEntry {
                reader: start_reader(&tx),
                tx,
                subscribers: 0,
            }
        });
        if owner_entry.reader.is_finished() {
            // Only a panic in the store ends a reader: start another one.
            owner_entry.reader = start_reader(&owner_entry.tx);
        }
        owner_entry.subscribers += 1;
        let live = owner_entry.tx.subscribe();
        drop(maps);
        Ok(Subscription {
            live,
            signals: Signals {
                hub: self.clone(),
                key,
                owner: caller.owner.clone(),
                verdicts: check.verdict.subscribe(),
                check,
                closing,
                opened: Instant::now(),
            },
        })
    }

    fn leave(&self, owner: &Owner, key: &[u8; 32]) {
        let mut maps = self.shared.maps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = maps.owners.get_mut(owner) {
            entry.subscribers -= 1;
            if entry.subscribers == 0 {
                entry.reader.abort();
                maps.owners.remove(owner);
            }
        }
        if let Some(entry) = maps.keys.get_mut(key) {
            entry.streams -= 1;
            if entry.streams == 0 {
                entry.checker.abort();
                maps.keys.remove(key);
            }
        }
    }
}

/// One open stream's place in the hub; leaving it (dropping) frees the place.
pub(crate) struct Subscription {
    /// The owner's shared pages.
    pub(crate) live: broadcast::Receiver<Live>,
    /// What can end the stream.
    pub(crate) signals: Signals,
}

/// Shutdown and the credential's verdicts, as one stream sees them.
pub(crate) struct Signals {
    hub: FeedHub,
    key: [u8; 32],
    owner: Owner,
    check: Arc<KeyCheck>,
    verdicts: watch::Receiver<Verdict>,
    closing: watch::Receiver<bool>,
    /// Verdicts from before the stream opened do not count: it was authenticated then.
    opened: Instant,
}

impl Drop for Signals {
    fn drop(&mut self) {
        self.hub.leave(&self.owner, &self.key);
    }
}

impl Signals {
    /// Why the stream must end now, if it must.
    pub(crate) fn ended(&self) -> Option<WireError> {
        if *self.closing.borrow() {
            return Some(shutting_down());
        }
        let verdict = self.verdicts.borrow();
        if verdict.at < self.opened {
            return None;
        }
        self.refusal(&verdict)
    }

    /// Waits until the stream must end; the error to end it with.
    pub(crate) async fn end(&mut self) -> WireError {
        loop {
            if let Some(err) = self.ended() {
                return err;
            }
            tokio::select! {
                changed = self.closing.changed() => {
                    if changed.is_err() {
                        // The hub is gone: only a server that is being dropped gets here.
                        return shutting_down();
                    }
                }
                changed = self.verdicts.changed() => {
                    if changed.is_err() {
                        return shutting_down();
                    }
                }
            }
        }
    }

    /// Whether the credential was still valid after `read_at` (checked again if the last
    /// verdict is older): changes read then may be delivered. The error to end with if not.
    pub(crate) async fn valid_after(&self, read_at: Instant) -> Result<(), WireError> {
        let verdict = self.check.after(read_at.max(self.opened)).await;
        self.refusal(&verdict).map_or(Ok(()), Err)
    }

    fn refusal(&self, verdict: &Verdict) -> Option<WireError> {
        match &verdict.caller {
            Err(e) => Some(e.clone()),
            Ok(c) if c.owner != self.owner => Some(revoked()),
            Ok(c) => c.require(Scope::WorkspaceRead).err(),
        }
    }
}

fn revoked() -> WireError {
    WireError::new(
        ErrorCode::Unauthenticated,
        "the credential is no longer valid for this stream",
    )
}

/// The outcome of checking a credential again.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    /// When the check began: what it saw is at least as new as this.
    at: Instant,
    /// The caller the credential stands for now, or why it stands for nobody.
    caller: Result<Caller, WireError>,
}

/// The checks of one credential, shared by all its open streams.
pub(crate) struct KeyCheck {
    auth: Arc<dyn Authenticator>,
    token: String,
    verdict: watch::Sender<Verdict>,
    /// One check at a time; the streams waiting for it take its verdict.
    checking: tokio::sync::Mutex<()>,
}

impl KeyCheck {
    fn new(auth: Arc<dyn Authenticator>, token: String, caller: &Caller) -> Self {
        Self {
            auth,
            token,
            verdict: watch::channel(Verdict {
                at: Instant::now(),
                caller: Ok(caller.clone()),
            })
            .0,
            checking: tokio::sync::Mutex::new(()),
        }
    }

    /// A verdict from a check that began at `since` or later (checking now if there is none).
    async fn after(&self, since: Instant) -> Verdict {
        let fresh = || Some(self.verdict.borrow().clone()).filter(|v| v.at >= since);
        if let Some(v) = fresh() {
            return v;
        }
        let _one_at_a_time = self.checking.lock().await;
        if let Some(v) = fresh() {
            return v;
        }
        let at = Instant::now();
        let caller = match self.auth.authenticate(&self.token).await {
            Ok(Some(caller)) => Ok(caller),
            Ok(None) => Err(revoked()),
            Err(e) => Err(WireError::from_store(e, "")),
        };
        let verdict = Verdict { at, caller };
        self.verdict.send_replace(verdict.clone());
        verdict
    }
}

/// Checks a credential every [`RECHECK`] while it has open streams (aborted when it has none).
async fn check_forever(check: Arc<KeyCheck>) {
    loop {
        tokio::time::sleep(RECHECK).await;
        check.after(Instant::now()).await;
    }
}

/// The reader of one owner's feed: reads each change once and sends it to every subscriber.
/// Runs while the owner has subscribers (aborted when the last one leaves).
async fn read_forever(store: Arc<dyn WorkspaceStore>, owner: Owner, tx: broadcast::Sender<Live>) {
    // Subscribed before the head is read, so nothing committed in between is missed.
    let mut notices = store.subscribe();
    let mut pos = loop {
        match store.changes(&owner, u64::MAX, 0).await {
            Ok(page) => break page.head,
            Err(e) => failed(&tx, e).await,
        }
    };
    // Where the reader starts: a subscriber further back (a change committed between its own
    // head read and this one) reads the store up to here.
    let _ = tx.send(Live::Changes(Arc::new(Batch {
        after: pos,
        events: Vec::new(),
        read_at: Instant::now(),
    })));
    loop {
        match store.changes(&owner, pos, PAGE).await {
            Ok(page) => {
                if let Some(last) = page.events.last().map(|e| e.seq) {
                    let full = page.events.len() >= PAGE;
                    let batch = Batch {
                        // Changes the feed trimmed before they were read are not in the page:
                        // it starts where the feed does, and a subscriber further back reads
                        // the store and learns that its position expired.
                        after: pos.max(page.oldest.saturating_sub(1)),
                        events: page.events,
                        read_at: Instant::now(),
                    };
                    // No subscriber at this instant is not an error: the next one reads the store.
                    let _ = tx.send(Live::Changes(Arc::new(batch)));
                    pos = last;
                    if full {
                        continue;
                    }
                }
            }
            Err(e) => {
                failed(&tx, e).await;
                continue;
            }
        }
        wait(&mut notices, &owner, pos).await;
    }
}

/// Ends every subscriber's stream with the store's failure, then waits before reading again.
async fn failed(tx: &broadcast::Sender<Live>, e: StoreError) {
    let _ = tx.send(Live::Failed(WireError::from_store(e, "events")));
    tokio::time::sleep(POLL).await;
}

/// Waits until the owner's feed may have moved past `pos`.
async fn wait(notices: &mut Option<broadcast::Receiver<ChangeNotice>>, owner: &Owner, pos: u64) {
    let Some(rx) = notices.as_mut() else {
        tokio::time::sleep(POLL).await;
        return;
    };
    loop {
        match rx.recv().await {
            Ok(n) if n.owner == *owner && n.seq > pos => return,
            Ok(_) => {}
            // Missed notices: read the store again.
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => {
                *notices = None;
                return;
            }
        }
    }
}
