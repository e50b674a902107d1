//! Request and response bodies as the listener hands them over: a request body that cannot
//! trickle, a response body that marks its request finished when it is done.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::conn::{ConnState, RequestGuard};
use crate::registry::Registry;

/// The boxed error type of bodies and services.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body as the served service receives it: the bytes from the connection, cut
/// with [`BodyError::Stalled`] when the client pauses longer than
/// [`ConnectionLimits::body_timeout`](crate::ConnectionLimits::body_timeout), with
/// [`BodyError::TooSlow`] when the whole body takes longer than
/// [`ConnectionLimits::body_deadline`](crate::ConnectionLimits::body_deadline), with
/// [`BodyError::BelowMinRate`] when it falls behind
/// [`ConnectionLimits::min_body_rate`](crate::ConnectionLimits::min_body_rate), and with
/// [`BodyError::Shed`] when the listener, at its connection cap, needs the connection for
/// another client. The pause and the rate are counted only while the handler waits for the
/// next piece, and the deadline from the handler's first read, so a handler that reads late or
/// slowly is not blamed on the client. After a cut, the request is answered 408 by the
/// listener (whatever the handler answered) and the connection closes once that is sent.
pub struct RequestBody {
    inner: Incoming,
    conn: Arc<ConnState>,
    registry: Arc<Registry>,
    body_timeout: Duration,
    body_deadline: Duration,
    rate: Option<Rate>,
    /// When the handler first read.
    first_read: Option<Instant>,
    /// Since when the handler has been waiting for the next piece.
    waiting_since: Option<Instant>,
    /// Waiting time the body may still spend before it falls below the minimum rate, as it
    /// stood when the handler last started waiting.
    credit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
    /// The clock that cut the body, answered again to any later read.
    cut: Option<Cut>,
}

/// The minimum rate of a body, and the window (the most credit a body may hold).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rate {
    pub(crate) bytes_per_sec: u64,
    pub(crate) window: Duration,
}

impl Rate {
    /// The waiting time `bytes` buy.
    fn credit_for(self, bytes: usize) -> Duration {
        let nanos = (bytes as u128 * 1_000_000_000) / u128::from(self.bytes_per_sec.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// A clock that cut a body (a [`BodyError`] without the variant that holds a hyper error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    Stalled(Duration),
    TooSlow(Duration),
    BelowMinRate(u64),
    Shed(u64),
}

impl From<Cut> for BodyError {
    fn from(cut: Cut) -> Self {
        match cut {
            Cut::Stalled(d) => Self::Stalled(d),
            Cut::TooSlow(d) => Self::TooSlow(d),
            Cut::BelowMinRate(rate) => Self::BelowMinRate(rate),
            Cut::Shed(rate) => Self::Shed(rate),
        }
    }
}

/// Why a [`RequestBody`] could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum BodyError {
    /// The client paused longer than the body timeout.
    Stalled(Duration),
    /// The whole body took longer than the body deadline.
    TooSlow(Duration),
    /// The body arrived slower than this many bytes per second over the rate window.
    BelowMinRate(u64),
    /// At the connection cap, with no idle connection to close, this body was the one
    /// furthest behind the minimum rate (this many bytes per second): its connection was
    /// needed for another client.
    Shed(u64),
    /// The connection failed (closed early, malformed chunking, ...).
    Read(hyper::Error),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stalled(d) => write!(
                f,
                "the request body stalled: nothing arrived for {} ms",
                d.as_millis()
            ),
            Self::TooSlow(d) => write!(
                f,
                "the request body took longer than {} ms to arrive",
                d.as_millis()
            ),
            Self::BelowMinRate(rate) => write!(
                f,
                "the request body arrived slower than {rate} bytes per second"
            ),
            Self::Shed(rate) => write!(
                f,
                "the request body arrived slower than {rate} bytes per second while the \
                 server was at its connection limit"
            ),
            Self::Read(e) => write!(f, "the request body could not be read: {e}"),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Read(e) => Some(e),
            Self::Stalled(_) | Self::TooSlow(_) | Self::BelowMinRate(_) | Self::Shed(_) => None,
        }
    }
}

impl RequestBody {
    pub(crate) fn new(
        inner: Incoming,
        conn: Arc<ConnState>,
        registry: Arc<Registry>,
        limits: &crate::ConnectionLimits,
    ) -> Self {
        let rate =
            (limits.min_body_rate > 0 && !limits.body_rate_window.is_zero()).then_some(Rate {
                bytes_per_sec: limits.min_body_rate,
                window: limits.body_rate_window,
            });
        Self {
            inner,
            conn,
            registry,
            body_timeout: limits.body_timeout,
            body_deadline: limits.body_deadline,
            rate,
            first_read: None,
            waiting_since: None,
            credit: rate.map_or(Duration::ZERO, |r| r.window),
            timer: None,
            cut: None,
        }
    }

    /// A piece of `bytes` arrived: the wait (if any) is paid from the credit, the bytes earn
    /// credit back, up to one window.
    fn arrived(&mut self, bytes: usize, now: Instant) {
        if let Some(since) = self.waiting_since.take() {
            self.credit = self
                .credit
                .saturating_sub(now.saturating_duration_since(since));
        }
        if let Some(rate) = self.rate {
            self.credit = (self.credit + rate.credit_for(bytes)).min(rate.window);
        }
        self.conn.body_waiting(None);
    }

    /// Whether the clocks have run out (or the registry cut the body to make room); arms the
    /// timer for the nearest clock otherwise.
    fn expired(&mut self, cx: &mut Context<'_>, now: Instant) -> Option<Cut> {
        let first = *self.first_read.get_or_insert(now);
        let waiting = *self.waiting_since.get_or_insert(now);
        let mut due = (waiting + self.body_timeout, Cut::Stalled(self.body_timeout));
        let total = (first + self.body_deadline, Cut::TooSlow(self.body_deadline));
        if total.0 < due.0 {
            due = total;
        }
        if let Some(rate) = self.rate {
            self.conn.register_body_waker(cx.waker());
            if self.conn.body_cut_requested() {
                return Some(Cut::Shed(rate.bytes_per_sec));
            }
            let exhausted = waiting + self.credit;
            if exhausted < due.0 {
                due = (exhausted, Cut::BelowMinRate(rate.bytes_per_sec));
            }
            if self.conn.body_waiting(Some(exhausted)) {
                // A new candidate to make room, for an accept loop waiting at the cap.
                self.registry.connection_went_idle();
            }
        }
        let (due, why) = due;
        if due <= now {
            return Some(why);
        }
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if timer.deadline() != due {
            timer.as_mut().reset(due);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Some(why),
            Poll::Pending => None,
        }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if let Some(cut) = this.cut {
            return Poll::Ready(Some(Err(cut.into())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let now = Instant::now();
                this.first_read.get_or_insert(now);
                this.arrived(frame.data_ref().map_or(0, Bytes::len), now);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.conn.body_waiting(None);
                this.conn.close_after_response();
                Poll::Ready(Some(Err(BodyError::Read(e))))
            }
            Poll::Ready(None) => {
                this.conn.body_waiting(None);
                this.timer = None;
                Poll::Ready(None)
            }
            Poll::Pending => match this.expired(cx, Instant::now()) {
                Some(cut) => {
                    let error = BodyError::from(cut);
                    tracing::debug!(%error, "request body cut");
                    this.cut = Some(cut);
                    this.timer = None;
                    this.conn.body_waiting(None);
                    this.conn.body_was_cut(cut);
                    this.conn.close_after_response();
                    Poll::Ready(Some(Err(error)))
                }
                None => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.cut.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        // A handler that stops reading is no longer waiting for the client.
        self.conn.body_waiting(None);
    }
}

impl fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBody")
            .field("inner", &self.inner)
            .field("cut", &self.cut)
            .finish_non_exhaustive()
    }
}

/// A response body that holds its request's place on the connection until it is finished or
/// dropped: the service's, or the listener's own answer to a request whose body it cut.
pub(crate) struct ResponseBody<B> {
    inner: Inner<B>,
    _request: RequestGuard,
}

enum Inner<B> {
    Service(Pin<Box<B>>),
    /// The listener's answer, until sent.
    Listener(Option<Bytes>),
}

impl<B> ResponseBody<B> {
    pub(crate) fn new(inner: B, request: RequestGuard) -> Self {
        Self {
            inner: Inner::Service(Box::pin(inner)),
            _request: request,
        }
    }

    /// The listener's answer to a request whose body it cut: `408 Request Timeout`, the reason
    /// as plain text, and `Connection: close`.
    pub(crate) fn request_timeout(cut: Cut, request: RequestGuard) -> http::Response<Self> {
        let text = format!("{}\n", BodyError::from(cut));
        let mut response = http::Response::new(Self {
            inner: Inner::Listener(Some(Bytes::from(text))),
            _request: request,
        });
        *response.status_mut() = http::StatusCode::REQUEST_TIMEOUT;
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        headers.insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
        response
    }
}

/// A piece of a [`ResponseBody`]: the service's data, or the listener's bytes.
pub(crate) enum Chunk<D> {
    Service(D),
    Listener(Bytes),
}

impl<D: bytes::Buf> bytes::Buf for Chunk<D> {
    fn remaining(&self) -> usize {
        match self {
            Self::Service(d) => d.remaining(),
            Self::Listener(b) => b.remaining(),
        }
    }

    fn chunk(&self) -> &[u8] {
        match self {
            Self::Service(d) => d.chunk(),
            Self::Listener(b) => b.chunk(),
        }
    }

    fn advance(&mut self, cnt: usize) {
        match self {
            Self::Service(d) => d.advance(cnt),
            Self::Listener(b) => b.advance(cnt),
        }
    }
}

impl<B> Body for ResponseBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = Chunk<B::Data>;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, BoxError>>> {
        match &mut self.get_mut().inner {
            Inner::Service(inner) => inner
                .as_mut()
                .poll_frame(cx)
                .map_ok(|frame| frame.map_data(Chunk::Service))
                .map_err(Into::into),
            Inner::Listener(bytes) => {
                Poll::Ready(bytes.take().map(|b| Ok(Frame::data(Chunk::Listener(b)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Service(inner) => inner.is_end_stream(),
            Inner::Listener(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Service(inner) => inner.size_hint(),
            Inner::Listener(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
        }
    }
}
