//! Every open connection of one listener: the cap, who makes room, and the drain.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::conn::{ABORT, ConnState, DRAIN, SHED};

/// The open connections. Its lock is taken when a connection opens or closes and when room
/// is made, never while a request is served.
pub(crate) struct Registry {
    epoch: Instant,
    next_id: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    /// Connections asked to make room that have not closed yet.
    leaving: AtomicUsize,
    /// The accept loop waits for a connection to close or go idle.
    waiting: AtomicBool,
    changed: Notify,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            next_id: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
            leaving: AtomicUsize::new(0),
            waiting: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }

    fn conns(&self) -> MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        // A panic elsewhere cannot leave the map half-updated: every update is one call.
        self.conns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a new connection; it is removed when the returned handle drops.
    pub(crate) fn open(self: &Arc<Self>) -> Registered {
        let id = self.next_id.fetch_add(1, SeqCst);
        let conn = Arc::new(ConnState::new(self.epoch));
        self.conns().insert(id, conn.clone());
        Registered {
            id,
            conn,
            registry: self.clone(),
        }
    }

    /// Open connections, not counting those already asked to make room.
    fn staying(&self, conns: &HashMap<u64, Arc<ConnState>>) -> usize {
        conns.len().saturating_sub(self.leaving.load(SeqCst))
    }

    /// Whether a new connection fits under `cap`, after asking the connection idle longest to
    /// close if needed.
    fn make_room(&self, cap: usize) -> bool {
        let conns = self.conns();
        if self.staying(&conns) < cap {
            return true;
        }
        self.shed_oldest_idle(&conns)
    }

    /// Asks the connection that has been idle longest to close; whether there was one.
    fn shed_oldest_idle(&self, conns: &HashMap<u64, Arc<ConnState>>) -> bool {
        let oldest = conns
            .values()
            .filter(|c| c.signals() & (SHED | DRAIN | ABORT) == 0)
            .filter_map(|c| c.idle_since().map(|since| (since, c)))
            .min_by_key(|(since, _)| *since);
        let Some((_, conn)) = oldest else {
            return false;
        };
        if conn.signal(SHED) {
            self.leaving.fetch_add(1, SeqCst);
        }
        true
    }

    /// Frees a file descriptor when the process has none left: closes the connection idle
    /// longest, if any.
    pub(crate) fn shed_for_descriptor(&self) -> bool {
        let conns = self.conns();
        self.shed_oldest_idle(&conns)
    }

    /// Resolves when a new connection fits under `cap` (making room if an idle connection
    /// can go); waits while every connection is busy.
    pub(crate) async fn room(&self, cap: usize) {
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            self.waiting.store(true, SeqCst);
            if self.make_room(cap) {
                self.waiting.store(false, SeqCst);
                return;
            }
            changed.await;
        }
    }

    /// Waits until a connection closes, at most `timeout`.
    pub(crate) async fn closed_one(&self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.changed.notified()).await;
    }

    /// A request finished and left its connection idle: the accept loop may make room now.
    pub(crate) fn connection_went_idle(&self) {
        if self.waiting.load(SeqCst) {
            self.changed.notify_waiters();
        }
    }

    /// Asks every connection to finish its request in progress and close, and waits up to
    /// `timeout`; then closes what is left and waits for it to go.
    pub(crate) async fn drain(&self, timeout: Duration) {
        let signal_all = |signal: u8| {
            for conn in self.conns().values() {
                conn.signal(signal);
            }
        };
        signal_all(DRAIN);
        let open = self.conns().len();
        if open > 0 {
            tracing::info!(open, "draining open connections");
        }
        if self.all_closed(Instant::now() + timeout).await {
            return;
        }
        let left = self.conns().len();
        tracing::warn!(
            left,
            "closing connections still busy after the drain timeout"
        );
        signal_all(ABORT);
        // Each one ends at its next poll; this only waits for the tasks to run.
        self.all_closed(Instant::now() + Duration::from_secs(5))
            .await;
    }

    /// Whether every connection closed before `deadline`.
    async fn all_closed(&self, deadline: Instant) -> bool {
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if self.conns().is_empty() {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return false;
            }
        }
    }
}

/// A connection's place in the registry, given up when its task ends.
pub(crate) struct Registered {
    id: u64,
    pub(crate) conn: Arc<ConnState>,
    registry: Arc<Registry>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let registry = &self.registry;
        let mut conns = registry.conns();
        conns.remove(&self.id);
        if self.conn.signals() & SHED != 0 {
            registry.leaving.fetch_sub(1, SeqCst);
        }
        drop(conns);
        registry.changed.notify_waiters();
    }
}
