//! One connection: what it is doing, the clocks that bound it, and the task that serves it.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;
use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::ConnectionLimits;
use crate::body::{BoxError, Cut, RequestBody, ResponseBody};
use crate::registry::{Peer, Registry};

/// Close when no request is in progress, else finish the current response and close: room
/// was needed for a new connection.
pub(crate) const SHED: u8 = 1;
/// The same, because the server is shutting down.
pub(crate) const DRAIN: u8 = 2;
/// Close now, whatever is in progress: the drain timeout passed.
pub(crate) const ABORT: u8 = 4;
/// Finish the current response and close: its request body was cut.
const CLOSE_AFTER_RESPONSE: u8 = 8;
/// Cut the request body the handler waits for (it is behind the minimum rate) and close after
/// the response: room was needed for a new connection and none was idle.
pub(crate) const CUT_BODY: u8 = 16;

/// What one connection is doing, shared by its task, its I/O, its requests' bodies and the
/// registry. Times are nanoseconds since the registry's epoch; 0 means "none".
pub(crate) struct ConnState {
    epoch: Instant,
    accepted: u64,
    /// The client's address, as the per-address limit counts it.
    pub(crate) peer: Peer,
    /// Requests whose response is not finished yet.
    in_flight: AtomicU32,
    /// Requests whose header arrived whole.
    requests: AtomicU64,
    /// Since when no request has been in progress.
    idle_since: AtomicU64,
    /// When the first byte of the next request header arrived (kept-alive connections).
    header_started: AtomicU64,
    /// Since when a write has been waiting for the client to read.
    write_stalled_since: AtomicU64,
    /// While the handler waits for request-body bytes under a minimum rate: when the body's
    /// credit runs out.
    body_exhausts_at: AtomicU64,
    /// Why the listener cut the current request's body, if it did.
    cut: Mutex<Option<Cut>>,
    signals: AtomicU8,
    /// The connection's task.
    waker: AtomicWaker,
    /// The handler waiting for request-body bytes (it may run in a task of its own).
    body_waker: AtomicWaker,
}

/// Why a connection was closed by the listener rather than by its client.
#[derive(Debug, Clone, Copy)]
enum Close {
    HeaderTimeout,
    IdleTimeout,
    WriteTimeout,
    Shed,
    Drained,
    Aborted,
}

impl Close {
    /// What the registry's `signals` ask for, the strongest first: abort, drain, shed.
    fn signalled(signals: u8) -> Option<Self> {
        if signals & ABORT != 0 {
            Some(Self::Aborted)
        } else if signals & DRAIN != 0 {
            Some(Self::Drained)
        } else if signals & SHED != 0 {
            Some(Self::Shed)
        } else {
            None
        }
    }
}

impl ConnState {
    pub(crate) fn new(epoch: Instant, peer: Peer) -> Self {
        let accepted = nanos_since(epoch, Instant::now());
        Self {
            epoch,
            accepted,
            peer,
            in_flight: AtomicU32::new(0),
            requests: AtomicU64::new(0),
            idle_since: AtomicU64::new(accepted),
            header_started: AtomicU64::new(0),
            write_stalled_since: AtomicU64::new(0),
            body_exhausts_at: AtomicU64::new(0),
            cut: Mutex::new(None),
            signals: AtomicU8::new(0),
            waker: AtomicWaker::new(),
            body_waker: AtomicWaker::new(),
        }
    }

    fn now(&self) -> u64 {
        nanos_since(self.epoch, Instant::now())
    }

    fn at(&self, nanos: u64) -> Instant {
        self.epoch + std::time::Duration::from_nanos(nanos)
    }

    /// Since when the connection has been idle (no request in progress, nothing waiting to
    /// be written); `None` while it is busy.
    pub(crate) fn idle_since(&self) -> Option<u64> {
        let idle = self.in_flight.load(SeqCst) == 0 && self.write_stalled_since.load(SeqCst) == 0;
        idle.then(|| self.idle_since.load(SeqCst))
    }

    /// While its handler waits for request-body bytes that are behind the minimum rate: when
    /// the body's credit runs out (nanoseconds since the epoch; the earliest is furthest
    /// behind).
    pub(crate) fn body_exhausts_at(&self) -> Option<u64> {
        let at = self.body_exhausts_at.load(SeqCst);
        (at != 0 && self.in_flight.load(SeqCst) > 0).then_some(at)
    }

    /// The handler waits for body bytes whose credit runs out at `exhausted`, or (`None`) it
    /// does not wait any more; whether it started waiting with this call.
    pub(crate) fn body_waiting(&self, exhausted: Option<Instant>) -> bool {
        let at = exhausted.map_or(0, |t| nanos_since(self.epoch, t).max(1));
        self.body_exhausts_at.swap(at, SeqCst) == 0 && at != 0
    }

    pub(crate) fn register_body_waker(&self, waker: &std::task::Waker) {
        self.body_waker.register(waker);
    }

    /// Whether the registry asked for the waiting body to be cut.
    pub(crate) fn body_cut_requested(&self) -> bool {
        self.signals() & CUT_BODY != 0
    }

    /// The listener cut the current request's body: its answer will be 408.
    pub(crate) fn body_was_cut(&self, cut: Cut) {
        *self
            .cut
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cut);
    }

    fn take_cut(&self) -> Option<Cut> {
        self.cut
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Raises `signal` (one of [`SHED`], [`DRAIN`], [`ABORT`], [`CUT_BODY`]) and wakes the task
    /// and a handler waiting for its body; whether it was raised by this call.
    pub(crate) fn signal(&self, signal: u8) -> bool {
        let before = self.signals.fetch_or(signal, SeqCst);
        self.waker.wake();
        self.body_waker.wake();
        before & signal == 0
    }

    pub(crate) fn signals(&self) -> u8 {
        self.signals.load(SeqCst)
    }

    pub(crate) fn close_after_response(&self) {
        self.signal(CLOSE_AFTER_RESPONSE);
    }

    /// A request header arrived whole: the request is in progress until its guard drops.
    fn begin_request(self: &Arc<Self>, registry: &Arc<Registry>) -> RequestGuard {
        self.in_flight.fetch_add(1, SeqCst);
        self.requests.fetch_add(1, SeqCst);
        self.header_started.store(0, SeqCst);
        self.body_exhausts_at.store(0, SeqCst);
        self.take_cut();
        RequestGuard {
            conn: self.clone(),
            registry: registry.clone(),
        }
    }

    /// Bytes arrived: while idle, they start the next request's header clock.
    fn read_progress(&self) {
        if self.in_flight.load(SeqCst) == 0 && self.header_started.load(SeqCst) == 0 {
            self.header_started.store(self.now().max(1), SeqCst);
        }
    }

    fn write_pending(&self) {
        if self.write_stalled_since.load(SeqCst) == 0 {
            self.write_stalled_since.store(self.now().max(1), SeqCst);
        }
    }

    fn write_progress(&self) {
        self.write_stalled_since.store(0, SeqCst);
    }

    /// Runs `work` (the TLS handshake) before the connection's first request, under the
    /// first header's clock: it fails with the reason when the header timeout (counted from
    /// the accept) passes first, or when the registry asks the connection to go (it is idle:
    /// no request is in progress yet).
    pub(crate) async fn before_first_request<T>(
        &self,
        limits: &ConnectionLimits,
        work: impl Future<Output = T>,
    ) -> Result<T, String> {
        let due = self.at(self.accepted) + limits.header_timeout;
        let mut work = pin!(work);
        let mut timer = pin!(tokio::time::sleep_until(due));
        poll_fn(|cx| {
            self.waker.register(cx.waker());
            if let Poll::Ready(done) = work.as_mut().poll(cx) {
                return Poll::Ready(Ok(done));
            }
            let why = Close::signalled(self.signals()).or_else(|| {
                timer
                    .as_mut()
                    .poll(cx)
                    .is_ready()
                    .then_some(Close::HeaderTimeout)
            });
            why.map_or(Poll::Pending, |why| Poll::Ready(Err(reason(why))))
        })
        .await
    }

    /// The next moment the connection must have moved on, and what it will be closed for if
    /// it has not; `None` while a request is in progress and its writes flow.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<(Instant, Close)> {
        let stalled = self.write_stalled_since.load(SeqCst);
        if stalled != 0 {
            return Some((self.at(stalled) + limits.write_timeout, Close::WriteTimeout));
        }
        if self.in_flight.load(SeqCst) > 0 {
            return None;
        }
        // A new connection's first header counts from the accept, however it dribbles in.
        if self.requests.load(SeqCst) == 0 {
            return Some((
                self.at(self.accepted) + limits.header_timeout,
                Close::HeaderTimeout,
            ));
        }
        let started = self.header_started.load(SeqCst);
        if started != 0 {
            return Some((
                self.at(started) + limits.header_timeout,
                Close::HeaderTimeout,
            ));
        }
        Some((
            self.at(self.idle_since.load(SeqCst)) + limits.idle_timeout,
            Close::IdleTimeout,
        ))
    }
}

fn nanos_since(epoch: Instant, t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX)
}

/// A request in progress; dropping it (when its response body is finished or dropped) makes
/// the connection idle again if it was the last.
pub(crate) struct RequestGuard {
    conn: Arc<ConnState>,
    registry: Arc<Registry>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let conn = &self.conn;
        conn.idle_since.store(conn.now().max(1), SeqCst);
        if conn.in_flight.fetch_sub(1, SeqCst) == 1 {
            conn.waker.wake();
            self.registry.connection_went_idle();
        }
    }
}

/// The connection's stream (TCP, or TLS over TCP: then the bytes counted are the decrypted
/// ones), reporting read and write progress to the connection's state.
struct TrackedIo<I> {
    stream: I,
    conn: Arc<ConnState>,
}

impl<I: AsyncRead + Unpin> AsyncRead for TrackedIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.conn.read_progress();
        }
        polled
    }
}

impl<I> TrackedIo<I> {
    fn tracked(&self, polled: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        match &polled {
            Poll::Pending => self.conn.write_pending(),
            Poll::Ready(Ok(n)) if *n > 0 => self.conn.write_progress(),
            Poll::Ready(_) => {}
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for TrackedIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.tracked(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.tracked(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // TLS buffers what it was given to write: a flush is where a client that does not read
        // holds it up. (A TCP flush is always ready: the socket buffers nothing of its own.)
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_flush(cx);
        match polled {
            Poll::Pending => this.conn.write_pending(),
            Poll::Ready(Ok(())) => this.conn.write_progress(),
            Poll::Ready(Err(_)) => {}
        }
        polled
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The served service, as hyper calls it on one connection: each request is counted in
/// progress until its response body is done, and its body is a [`RequestBody`].
struct ConnService<S> {
    inner: S,
    conn: Arc<ConnState>,
    registry: Arc<Registry>,
    limits: ConnectionLimits,
}

type ResponseFuture<B> =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody<B>>, BoxError>> + Send>>;

impl<S, B> hyper::service::Service<Request<Incoming>> for ConnService<S>
where
    S: tower::Service<Request<RequestBody>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
{
    type Response = Response<ResponseBody<B>>;
    type Error = BoxError;
    type Future = ResponseFuture<B>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let guard = self.conn.begin_request(&self.registry);
        let request = request.map(|body| {
            RequestBody::new(body, self.conn.clone(), self.registry.clone(), &self.limits)
        });
        let mut service = self.inner.clone();
        let conn = self.conn.clone();
        Box::pin(async move {
            poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(Into::into)?;
            let response = service.call(request).await.map_err(Into::into)?;
            // The listener cut the body: its answer, whatever the handler made of the error.
            if let Some(cut) = conn.take_cut() {
                return Ok(ResponseBody::request_timeout(cut, guard));
            }
            Ok(response.map(|body| ResponseBody::new(body, guard)))
        })
    }
}

/// Serves one accepted connection (its TCP stream, or the TLS stream over it after the
/// handshake) until it ends, its clocks run out, or the registry asks it to go.
pub(crate) async fn serve_connection<I, S, B>(
    stream: I,
    conn: Arc<ConnState>,
    registry: Arc<Registry>,
    builder: Arc<hyper::server::conn::http1::Builder>,
    service: S,
    limits: ConnectionLimits,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<Request<RequestBody>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let io = TokioIo::new(TrackedIo {
        stream,
        conn: conn.clone(),
    });
    let service = ConnService {
        inner: service,
        conn: conn.clone(),
        registry,
        limits,
    };
    let mut http = pin!(builder.serve_connection(io, service));
    let mut timer = pin!(tokio::time::sleep_until(Instant::now()));
    let mut finishing = false;
    let outcome = poll_fn(|cx| {
        conn.waker.register(cx.waker());
        loop {
            if let Poll::Ready(done) = http.as_mut().poll(cx) {
                return Poll::Ready(done.err().map(|e| format!("{e}")));
            }
            let signals = conn.signals();
            // An abort closes a busy connection too; a drain or a shed only an idle one.
            if let Some(why) = Close::signalled(signals)
                && (matches!(why, Close::Aborted) || conn.idle_since().is_some())
            {
                return Poll::Ready(Some(reason(why)));
            }
            if signals != 0 && !finishing {
                // Finish the response in progress, then close instead of keeping alive.
                finishing = true;
                http.as_mut().graceful_shutdown();
                continue;
            }
            let Some((due, why)) = conn.deadline(&limits) else {
                return Poll::Pending;
            };
            if due <= Instant::now() {
                return Poll::Ready(Some(reason(why)));
            }
            if timer.deadline() != due {
                timer.as_mut().reset(due);
            }
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    })
    .await;
    if let Some(outcome) = outcome {
        tracing::debug!(%outcome, "connection closed");
    }
}

fn reason(close: Close) -> String {
    match close {
        Close::HeaderTimeout => "no whole request header within the header timeout",
        Close::IdleTimeout => "idle past the idle timeout",
        Close::WriteTimeout => "the client did not read its response within the write timeout",
        Close::Shed => "closed while idle to make room for a new connection",
        Close::Drained => "closed while idle at shutdown",
        Close::Aborted => "still busy when the drain timeout passed",
    }
    .to_owned()
}
