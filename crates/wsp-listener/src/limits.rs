//! What one listener allows a connection, and the file descriptors the process may open.

use std::time::Duration;

/// How long a connection may take at each step, and how many may be open at once.
///
/// Every field has a default chosen for a server on the open internet; `wsp serve` and
/// `wsp mcp --http` expose each as a flag.
///
/// ```
/// use std::time::Duration;
/// use wsp_listener::ConnectionLimits;
///
/// let limits = ConnectionLimits::default()
///     .with_max_connections(500)
///     .with_header_timeout(Duration::from_secs(5));
/// assert_eq!(limits.idle_timeout, ConnectionLimits::DEFAULT_IDLE_TIMEOUT);
/// assert_eq!(ConnectionLimits::max_connections_for(1024), 768);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// Most connections open at once. At the cap, a connection that makes no progress is
    /// closed to make room: the one idle longest (no request in progress: it has not sent a
    /// complete request header yet, or it waits between keep-alive requests), else, when
    /// [`Self::min_body_rate`] is set, the one whose handler waits for a request body that is
    /// furthest behind that rate (its request is answered 408). When every connection is busy
    /// otherwise, new ones wait in the kernel's backlog until one ends or goes idle.
    pub max_connections: usize,
    /// Most connections open at once from one client address: an IPv4 address, or an IPv6
    /// /64 network (one host usually holds a whole /64); an IPv4-mapped IPv6 address counts as
    /// its IPv4 address. Loopback counts like any other address. A new connection over it
    /// closes that address's own connection making no progress (as at
    /// [`Self::max_connections`]), or else is closed at once. Behind a reverse proxy every
    /// connection comes from the proxy's address: raise it to [`Self::max_connections`].
    pub max_connections_per_address: usize,
    /// A request header must arrive whole within this time: from the accept for a new
    /// connection, from its first byte on a kept-alive one.
    pub header_timeout: Duration,
    /// A kept-alive connection with no request in progress is closed after this long.
    pub idle_timeout: Duration,
    /// Longest pause between two pieces of a request body that a handler is reading.
    pub body_timeout: Duration,
    /// Longest time to receive a whole request body, from the handler's first read.
    pub body_deadline: Duration,
    /// Least rate, in bytes per second, at which a request body must arrive while its handler
    /// waits for it; 0 turns it off. A body starts with one [`Self::body_rate_window`] of
    /// credit (the grace: `min_body_rate × body_rate_window` bytes), spends it at this rate
    /// while the handler waits and earns it back with every byte, never above one window's
    /// worth; when the credit runs out the body is cut (408) and its connection closed. So a
    /// body must bring `min_body_rate × body_rate_window` bytes within each window of waiting,
    /// however it spreads them, and time the handler spends elsewhere is not counted.
    pub min_body_rate: u64,
    /// The window [`Self::min_body_rate`] is measured over, and the grace a body starts with.
    pub body_rate_window: Duration,
    /// Longest time a response may wait for the client to read it (a write making no
    /// progress); then the connection is closed.
    pub write_timeout: Duration,
    /// On shutdown, how long requests in progress may take to finish before their
    /// connections are closed.
    pub drain_timeout: Duration,
}

impl ConnectionLimits {
    /// This configuration with [`ConnectionLimits::max_connections`] set.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// This configuration with [`ConnectionLimits::max_connections_per_address`] set.
    pub fn with_max_connections_per_address(mut self, max_connections_per_address: usize) -> Self {
        self.max_connections_per_address = max_connections_per_address;
        self
    }

    /// This configuration with [`ConnectionLimits::min_body_rate`] set.
    pub fn with_min_body_rate(mut self, min_body_rate: u64) -> Self {
        self.min_body_rate = min_body_rate;
        self
    }

    /// This configuration with [`ConnectionLimits::body_rate_window`] set.
    pub fn with_body_rate_window(mut self, body_rate_window: Duration) -> Self {
        self.body_rate_window = body_rate_window;
        self
    }

    /// This configuration with [`ConnectionLimits::header_timeout`] set.
    pub fn with_header_timeout(mut self, header_timeout: Duration) -> Self {
        self.header_timeout = header_timeout;
        self
    }

    /// This configuration with [`ConnectionLimits::idle_timeout`] set.
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// This configuration with [`ConnectionLimits::body_timeout`] set.
    pub fn with_body_timeout(mut self, body_timeout: Duration) -> Self {
        self.body_timeout = body_timeout;
        self
    }

    /// This configuration with [`ConnectionLimits::body_deadline`] set.
    pub fn with_body_deadline(mut self, body_deadline: Duration) -> Self {
        self.body_deadline = body_deadline;
        self
    }

    /// This configuration with [`ConnectionLimits::write_timeout`] set.
    pub fn with_write_timeout(mut self, write_timeout: Duration) -> Self {
        self.write_timeout = write_timeout;
        self
    }

    /// This configuration with [`ConnectionLimits::drain_timeout`] set.
    pub fn with_drain_timeout(mut self, drain_timeout: Duration) -> Self {
        self.drain_timeout = drain_timeout;
        self
    }
}

impl ConnectionLimits {
    /// Default [`Self::header_timeout`]: 10 seconds.
    pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default [`Self::idle_timeout`]: 60 seconds.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    /// Default [`Self::body_timeout`]: 30 seconds.
    pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`Self::body_deadline`]: 5 minutes.
    pub const DEFAULT_BODY_DEADLINE: Duration = Duration::from_secs(300);
    /// Default [`Self::min_body_rate`]: 512 bytes per second.
    pub const DEFAULT_MIN_BODY_RATE: u64 = 512;
    /// Default [`Self::body_rate_window`]: 10 seconds.
    pub const DEFAULT_BODY_RATE_WINDOW: Duration = Duration::from_secs(10);
    /// Default [`Self::max_connections_per_address`]: 256.
    pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 256;
    /// Default [`Self::write_timeout`]: 30 seconds.
    pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`Self::drain_timeout`]: 30 seconds.
    pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
    /// The derived connection cap never exceeds this (about 20 KiB of memory each while idle);
    /// set [`Self::max_connections`] to go higher.
    pub const MAX_DERIVED_CONNECTIONS: usize = 16_384;

    /// The default cap for a process that may open `fd_limit` files: a quarter of them (at
    /// least 128) stay free for the store's files, database connections and the runtime;
    /// the rest, between 16 and [`Self::MAX_DERIVED_CONNECTIONS`], are for connections.
    pub fn max_connections_for(fd_limit: u64) -> usize {
        let reserve = (fd_limit / 4).max(128);
        let cap = fd_limit.saturating_sub(reserve);
        usize::try_from(cap)
            .unwrap_or(usize::MAX)
            .clamp(16, Self::MAX_DERIVED_CONNECTIONS)
    }
}

impl Default for ConnectionLimits {
    /// The documented defaults, with the cap derived from the process's current soft limit
    /// on open files ([`fd_limit`]; 1,024 assumed when it cannot be read).
    fn default() -> Self {
        Self {
            max_connections: Self::max_connections_for(fd_limit().unwrap_or(1024)),
            header_timeout: Self::DEFAULT_HEADER_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            body_timeout: Self::DEFAULT_BODY_TIMEOUT,
            body_deadline: Self::DEFAULT_BODY_DEADLINE,
            min_body_rate: Self::DEFAULT_MIN_BODY_RATE,
            body_rate_window: Self::DEFAULT_BODY_RATE_WINDOW,
            max_connections_per_address: Self::DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
            write_timeout: Self::DEFAULT_WRITE_TIMEOUT,
            drain_timeout: Self::DEFAULT_DRAIN_TIMEOUT,
        }
    }
}

/// The process's current soft limit on open file descriptors (`RLIMIT_NOFILE`); `None` when
/// unlimited or on a platform without it.
pub fn fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Raises the soft limit on open file descriptors to the hard limit, so that the process can
/// hold as many connections as the system lets it, and returns the limit now in force
/// ([`fd_limit`]). A limit that cannot be raised is left as it was.
///
/// Call it once at the start of a server, before [`ConnectionLimits::default`].
pub fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let now = getrlimit(Resource::Nofile);
        // An unlimited hard limit is refused for files on Linux; 2^20 is its usual ceiling.
        let target = now.maximum.unwrap_or(1 << 20);
        if now.current.is_some_and(|current| current < target) {
            let raised = Rlimit {
                current: Some(target),
                maximum: now.maximum,
            };
            if let Err(e) = setrlimit(Resource::Nofile, raised) {
                tracing::debug!(error = %e, "the open-file limit could not be raised");
            }
        }
    }
    fd_limit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_cap_leaves_room_for_the_store() {
        let check = |fds: u64, want: usize| {
            assert_eq!(ConnectionLimits::max_connections_for(fds), want, "{fds}");
        };
        check(0, 16);
        check(100, 16);
        check(256, 128);
        check(1024, 768);
        check(20_000, 15_000);
        check(1 << 20, ConnectionLimits::MAX_DERIVED_CONNECTIONS);
        check(u64::MAX, ConnectionLimits::MAX_DERIVED_CONNECTIONS);
    }

    #[test]
    fn raising_never_lowers_the_limit() {
        let before = fd_limit();
        let after = raise_fd_limit();
        match (before, after) {
            (Some(b), Some(a)) => assert!(a >= b, "{b} -> {a}"),
            (None, after) => assert_eq!(after, None),
            (Some(b), None) => panic!("{b} became unlimited"),
        }
    }
}
