//! HTTP/1.1 on a TCP listener, plain or over TLS, that a hostile client cannot starve.
//!
//! **Invariant:** every connection is always under a clock or doing work. A connection that
//! has not sent a whole request header is closed after [`ConnectionLimits::header_timeout`]
//! (counted from the accept; on a TLS listener the handshake runs inside that time, so a
//! client that connects and never finishes its handshake is closed like a silent one); one
//! idle between requests after [`ConnectionLimits::idle_timeout`]; a request body that
//! stalls, trickles below [`ConnectionLimits::min_body_rate`] or takes too long is cut and
//! answered 408 ([`ConnectionLimits::body_timeout`], [`ConnectionLimits::body_rate_window`],
//! [`ConnectionLimits::body_deadline`]); a response the client does not read is dropped after
//! [`ConnectionLimits::write_timeout`]. At [`ConnectionLimits::max_connections`], a
//! connection that makes no progress makes room for a new one: the one idle longest, else the
//! one whose request body is furthest behind the minimum rate. So sockets that never send a
//! request, or send their body a byte at a time, cannot lock out a client that does; other
//! busy connections are never shed (new ones wait for a slot instead). One client address
//! holds at most [`ConnectionLimits::max_connections_per_address`] connections: over it, its
//! own connection making least progress makes room, or the new one is closed at once. An
//! accept error (out of file descriptors) closes an idle connection and backs off briefly; it
//! never ends the loop. Shutdown stops accepting, lets requests in progress finish for
//! [`ConnectionLimits::drain_timeout`], then closes what is left.
//!
//! The accept loop only accepts: a TLS handshake runs in its connection's task, so a slow one
//! never holds up the next accept; until it finishes, the connection counts against the cap
//! and may be shed like any idle one. A failed handshake (plain HTTP, which is answered 400, a
//! client that refuses the certificate, garbage) ends its connection only, logged at debug.
//! [`ServerTls`] holds the certificate and key read from PEM files; [`ServerTls::reload`]
//! swaps in new ones for the handshakes that follow, and keeps the old ones if the files are
//! bad.
//!
//! [`serve`] takes a [`Listener`] (a `TcpListener` is a plain one) and any tower service
//! over [`RequestBody`] (an axum `Router` is one); it does not know axum. hyper's HTTP/1.1
//! connection runs with hyper-util's tokio timer, so hyper's own header-read timeout works as
//! a backstop to the listener's clocks.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use wsp_listener::ConnectionLimits;
//!
//! let fd_limit = wsp_listener::raise_fd_limit();
//! let limits = ConnectionLimits::default(); // the cap follows the raised limit
//! let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! wsp_listener::serve(listener, app, limits, std::future::pending()).await
//! # }
//! ```

mod body;
mod conn;
mod limits;
mod registry;
mod tls;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Body;
use tokio::net::TcpListener;
use tokio::time::Instant;

pub use body::{BodyError, BoxError, RequestBody};
pub use limits::{ConnectionLimits, fd_limit, raise_fd_limit};
pub use tls::{ServerTls, TlsError, TlsFile, TlsProblem};

use registry::{Peer, Registry};

/// After an accept error that is not about one connection (out of file descriptors or
/// memory), the accept loop waits this long, or until a connection closes, before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Accept errors, and connections refused over the per-address limit, are logged at most
/// this often.
const ACCEPT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// What [`serve`] accepts connections on: a TCP listener, speaking plain HTTP or, with a
/// [`ServerTls`], HTTPS (TLS first, then HTTP/1.1). A `TcpListener` converts into a plain one.
#[derive(Debug)]
pub struct Listener {
    tcp: TcpListener,
    tls: Option<Arc<ServerTls>>,
}

impl Listener {
    /// `tcp`, with TLS when `tls` is given.
    pub fn new(tcp: TcpListener, tls: Option<Arc<ServerTls>>) -> Self {
        Self { tcp, tls }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// `https` with TLS, else `http`: the scheme of the URLs it serves.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// The TLS it terminates, if any.
    pub fn tls(&self) -> Option<&Arc<ServerTls>> {
        self.tls.as_ref()
    }
}

impl From<TcpListener> for Listener {
    fn from(tcp: TcpListener) -> Self {
        Self::new(tcp, None)
    }
}

/// Serves `service` on `listener` under `limits` until `shutdown` resolves; then stops
/// accepting, lets requests in progress finish within [`ConnectionLimits::drain_timeout`],
/// closes the rest and returns.
///
/// Each request reaches `service` with a [`RequestBody`]; each response body is polled until
/// done. Errors of single connections (a failed TLS handshake among them) are logged at debug
/// level and never end the server.
pub async fn serve<S, B>(
    listener: impl Into<Listener>,
    service: S,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    S: tower::Service<Request<RequestBody>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let Listener { tcp: listener, tls } = listener.into();
    let registry = Arc::new(Registry::new());
    let builder = Arc::new(http1(&limits));
    let cap = limits.max_connections.max(1);
    let per_address = limits.max_connections_per_address.max(1);
    let mut shutdown = pin!(shutdown);
    let mut errors = AcceptErrors::default();
    let mut refused = Refusals::default();
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok((stream, addr)) => (stream, Peer::of(addr.ip())),
            Err(e) if is_about_one_connection(&e) => continue,
            Err(e) => {
                errors.report(&e);
                let backoff = async {
                    if is_out_of_descriptors(&e) && registry.shed_for_descriptor() {
                        registry.closed_one(ACCEPT_BACKOFF).await;
                    } else {
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                };
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    () = backoff => continue,
                }
            }
        };
        // Over its address's limit: its own connection making least progress makes room, or
        // this one is closed at once (waiting would hold up every other client's accept).
        if !registry.admit(peer, per_address) {
            drop(stream);
            refused.report(peer);
            continue;
        }
        // At the cap: the connection making least progress makes room, or this one waits for
        // a slot.
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = registry.room(cap) => {}
        }
        // Small responses and event-stream lines go out at once, not after a delayed ACK.
        let _ = stream.set_nodelay(true);
        let registered = registry.open(peer);
        let conn = registered.conn.clone();
        let (registry, builder, service) = (registry.clone(), builder.clone(), service.clone());
        let tls = tls.clone();
        tokio::spawn(async move {
            let _registered = registered;
            match tls {
                None => {
                    conn::serve_connection(stream, conn, registry, builder, service, limits).await;
                }
                Some(tls) => {
                    let Some(stream) = tls::handshake(stream, &tls, &conn, &limits).await else {
                        return;
                    };
                    conn::serve_connection(stream, conn, registry, builder, service, limits).await;
                }
            }
        });
    }
    drop(listener);
    registry.drain(limits.drain_timeout).await;
    Ok(())
}

/// hyper's HTTP/1.1 connection settings for `limits`.
fn http1(limits: &ConnectionLimits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        // hyper's clock runs from the moment it waits for a header, idle time included: as a
        // backstop it may not be shorter than the listener's idle and header clocks together.
        .header_read_timeout(limits.idle_timeout + limits.header_timeout)
        .keep_alive(true);
    builder
}

/// An accept error that concerns only the connection being accepted (the client gave up
/// before it was accepted): the next accept can go ahead at once.
fn is_about_one_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

/// The process or the system has no file descriptor (or socket memory) left.
fn is_out_of_descriptors(e: &io::Error) -> bool {
    use rustix::io::Errno;
    Errno::from_io_error(e)
        .is_some_and(|n| [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM].contains(&n))
}

/// Logs connections refused over the per-address limit at most once per
/// [`ACCEPT_ERROR_LOG_INTERVAL`], with how many there were since the last line.
#[derive(Default)]
struct Refusals {
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl Refusals {
    fn report(&mut self, peer: Peer) {
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .last_logged
            .is_some_and(|t| now.duration_since(t) < ACCEPT_ERROR_LOG_INTERVAL)
        {
            tracing::debug!(%peer, "connection refused: over the per-address limit");
            return;
        }
        tracing::warn!(
            %peer,
            refused = self.unlogged,
            "connections refused: one address holds --max-connections-per-address busy \
             connections (behind a proxy, raise it)"
        );
        self.last_logged = Some(now);
        self.unlogged = 0;
    }
}

/// Logs accept errors at most once per [`ACCEPT_ERROR_LOG_INTERVAL`], with how many there
/// were since the last line.
#[derive(Default)]
struct AcceptErrors {
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl AcceptErrors {
    fn report(&mut self, e: &io::Error) {
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .last_logged
            .is_some_and(|t| now.duration_since(t) < ACCEPT_ERROR_LOG_INTERVAL)
        {
            return;
        }
        let hint = if is_out_of_descriptors(e) {
            "; closing idle connections (raise the open-file limit or lower --max-connections)"
        } else {
            ""
        };
        tracing::warn!(error = %e, errors = self.unlogged, "accepting connections failed{hint}");
        self.last_logged = Some(now);
        self.unlogged = 0;
    }
}
