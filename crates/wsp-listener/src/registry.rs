//! Every open connection of one listener: the caps (all connections, and per client
//! address), who makes room, and the drain.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::conn::{ABORT, CUT_BODY, ConnState, DRAIN, SHED};

/// A client as the per-address limit counts it: an IPv4 address, or an IPv6 /64 network (an
/// IPv4-mapped IPv6 address is its IPv4 address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Peer(IpAddr);

impl Peer {
    pub(crate) fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(IpAddr::V4(v4)),
                None => {
                    let network = u128::from(v6) & !((1u128 << 64) - 1);
                    Self(IpAddr::V6(Ipv6Addr::from(network)))
                }
            },
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// Connections of one client address: open, and asked to make room but not closed yet.
#[derive(Debug, Default, Clone, Copy)]
struct PeerCount {
    open: usize,
    leaving: usize,
}

/// What the registry's lock guards.
struct Conns {
    by_id: HashMap<u64, Arc<ConnState>>,
    by_peer: HashMap<Peer, PeerCount>,
}

/// The open connections. Its lock is taken when a connection opens or closes and when room
/// is made, never while a request is served.
pub(crate) struct Registry {
    epoch: Instant,
    next_id: AtomicU64,
    conns: Mutex<Conns>,
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
            conns: Mutex::new(Conns {
                by_id: HashMap::new(),
                by_peer: HashMap::new(),
            }),
            leaving: AtomicUsize::new(0),
            waiting: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }

    fn conns(&self) -> MutexGuard<'_, Conns> {
        // A panic elsewhere cannot leave the map half-updated: every update is one call.
        self.conns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a new connection from `peer`; it is removed when the returned handle drops.
    pub(crate) fn open(self: &Arc<Self>, peer: Peer) -> Registered {
        let id = self.next_id.fetch_add(1, SeqCst);
        let conn = Arc::new(ConnState::new(self.epoch, peer));
        let mut conns = self.conns();
        conns.by_id.insert(id, conn.clone());
        conns.by_peer.entry(peer).or_default().open += 1;
        drop(conns);
        Registered {
            id,
            conn,
            registry: self.clone(),
        }
    }

    /// Open connections, not counting those already asked to make room.
    fn staying(&self, conns: &Conns) -> usize {
        conns.by_id.len().saturating_sub(self.leaving.load(SeqCst))
    }

    /// Whether a new connection fits under `cap`, after asking a connection that makes no
    /// progress to close if needed.
    fn make_room(&self, cap: usize) -> bool {
        let mut conns = self.conns();
        if self.staying(&conns) < cap {
            return true;
        }
        self.shed_one(&mut conns, None)
    }

    /// Whether a new connection from `peer` fits under `cap` connections per address, after
    /// asking one of that address's connections that makes no progress to close if needed.
    pub(crate) fn admit(&self, peer: Peer, cap: usize) -> bool {
        let mut conns = self.conns();
        let count = conns.by_peer.get(&peer).copied().unwrap_or_default();
        if count.open.saturating_sub(count.leaving) < cap {
            return true;
        }
        self.shed_one(&mut conns, Some(peer))
    }

    /// Asks the connection (of `peer`, if given) that makes least progress to close: the one
    /// idle longest, else the one whose handler waits for a request body furthest behind the
    /// minimum rate (that body is cut). Whether there was one.
    fn shed_one(&self, conns: &mut Conns, peer: Option<Peer>) -> bool {
        let candidates = || {
            conns
                .by_id
                .values()
                .filter(|c| peer.is_none_or(|p| c.peer == p))
                .filter(|c| c.signals() & (SHED | DRAIN | ABORT) == 0)
        };
        let idle = candidates()
            .filter_map(|c| c.idle_since().map(|since| (since, c)))
            .min_by_key(|(since, _)| *since);
        let (conn, signal) = match idle {
            Some((_, conn)) => (conn.clone(), SHED),
            None => {
                let slow = candidates()
                    .filter_map(|c| c.body_exhausts_at().map(|at| (at, c)))
                    .min_by_key(|(at, _)| *at);
                match slow {
                    Some((_, conn)) => (conn.clone(), SHED | CUT_BODY),
                    None => return false,
                }
            }
        };
        if conn.signal(signal) {
            self.leaving.fetch_add(1, SeqCst);
            conns.by_peer.entry(conn.peer).or_default().leaving += 1;
        }
        true
    }

    /// Frees a file descriptor when the process has none left: closes the connection that
    /// makes least progress, if any.
    pub(crate) fn shed_for_descriptor(&self) -> bool {
        let mut conns = self.conns();
        self.shed_one(&mut conns, None)
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
            for conn in self.conns().by_id.values() {
                conn.signal(signal);
            }
        };
        signal_all(DRAIN);
        let open = self.conns().by_id.len();
        if open > 0 {
            tracing::info!(open, "draining open connections");
        }
        if self.all_closed(Instant::now() + timeout).await {
            return;
        }
        let left = self.conns().by_id.len();
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
            if self.conns().by_id.is_empty() {
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
        conns.by_id.remove(&self.id);
        let shed = self.conn.signals() & SHED != 0;
        if shed {
            registry.leaving.fetch_sub(1, SeqCst);
        }
        let peer = self.conn.peer;
        if let Some(count) = conns.by_peer.get_mut(&peer) {
            count.open -= 1;
            if shed {
                count.leaving -= 1;
            }
            if count.open == 0 {
                conns.by_peer.remove(&peer);
            }
        }
        drop(conns);
        registry.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::Peer;

    #[test]
    fn peers_are_addresses_and_ipv6_networks() {
        let peer = |ip: &str| Peer::of(ip.parse().unwrap());
        assert_eq!(peer("192.0.2.7"), peer("192.0.2.7"));
        assert_ne!(peer("192.0.2.7"), peer("192.0.2.8"));
        // One /64 is one client, however many addresses it uses.
        assert_eq!(peer("2001:db8:1:2::1"), peer("2001:db8:1:2:ffff:1:2:3"));
        assert_ne!(peer("2001:db8:1:2::1"), peer("2001:db8:1:3::1"));
        // An IPv4 client on a dual-stack socket is its IPv4 address.
        assert_eq!(peer("::ffff:192.0.2.7"), peer("192.0.2.7"));
        assert_eq!(peer("2001:db8:1:2::9").to_string(), "2001:db8:1:2::/64");
        assert_eq!(peer("127.0.0.1").to_string(), "127.0.0.1");
        assert_ne!(peer("127.0.0.1"), peer("127.0.0.2"));
    }
}
