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

/// The boxed error type of bodies and services.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body as the served service receives it: the bytes from the connection, cut
/// with [`BodyError::Stalled`] when the client pauses longer than
/// [`ConnectionLimits::body_timeout`](crate::ConnectionLimits::body_timeout), or with
/// [`BodyError::TooSlow`] when the whole body takes longer than
/// [`ConnectionLimits::body_deadline`](crate::ConnectionLimits::body_deadline). The pause is
/// counted only while the handler waits for the next piece, and the deadline from the
/// handler's first read, so a handler that reads late or slowly is not blamed on the client.
/// After a cut, the connection closes once its response is sent.
pub struct RequestBody {
    inner: Incoming,
    conn: Arc<ConnState>,
    body_timeout: Duration,
    body_deadline: Duration,
    /// When the handler first read.
    first_read: Option<Instant>,
    /// Since when the handler has been waiting for the next piece.
    waiting_since: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    /// The timeout that cut the body, answered again to any later read.
    cut: Option<Cut>,
}

/// A timeout that cut a body (a [`BodyError`] without the variant that holds a hyper error).
#[derive(Debug, Clone, Copy)]
enum Cut {
    Stalled(Duration),
    TooSlow(Duration),
}

impl From<Cut> for BodyError {
    fn from(cut: Cut) -> Self {
        match cut {
            Cut::Stalled(d) => Self::Stalled(d),
            Cut::TooSlow(d) => Self::TooSlow(d),
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
            Self::Read(e) => write!(f, "the request body could not be read: {e}"),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Read(e) => Some(e),
            Self::Stalled(_) | Self::TooSlow(_) => None,
        }
    }
}

impl RequestBody {
    pub(crate) fn new(
        inner: Incoming,
        conn: Arc<ConnState>,
        body_timeout: Duration,
        body_deadline: Duration,
    ) -> Self {
        Self {
            inner,
            conn,
            body_timeout,
            body_deadline,
            first_read: None,
            waiting_since: None,
            timer: None,
            cut: None,
        }
    }

    /// Whether the clocks have run out; arms the timer for the nearer one otherwise.
    fn expired(&mut self, cx: &mut Context<'_>, now: Instant) -> Option<Cut> {
        let first = *self.first_read.get_or_insert(now);
        let waiting = *self.waiting_since.get_or_insert(now);
        let stall = (waiting + self.body_timeout, Cut::Stalled(self.body_timeout));
        let total = (first + self.body_deadline, Cut::TooSlow(self.body_deadline));
        let (due, why) = if stall.0 <= total.0 { stall } else { total };
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
                this.first_read.get_or_insert_with(Instant::now);
                this.waiting_since = None;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.conn.close_after_response();
                Poll::Ready(Some(Err(BodyError::Read(e))))
            }
            Poll::Ready(None) => {
                this.timer = None;
                Poll::Ready(None)
            }
            Poll::Pending => match this.expired(cx, Instant::now()) {
                Some(cut) => {
                    let error = BodyError::from(cut);
                    tracing::debug!(%error, "request body cut");
                    this.cut = Some(cut);
                    this.timer = None;
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

impl fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBody")
            .field("inner", &self.inner)
            .field("cut", &self.cut)
            .finish_non_exhaustive()
    }
}

/// A response body that holds its request's place on the connection until it is finished or
/// dropped.
pub(crate) struct ResponseBody<B> {
    inner: Pin<Box<B>>,
    _request: RequestGuard,
}

impl<B> ResponseBody<B> {
    pub(crate) fn new(inner: B, request: RequestGuard) -> Self {
        Self {
            inner: Box::pin(inner),
            _request: request,
        }
    }
}

impl<B> Body for ResponseBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        self.get_mut()
            .inner
            .as_mut()
            .poll_frame(cx)
            .map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
