//! `GET /v1/host/workspace/events`: the caller's change feed as Server-Sent Events (WIRE.md §5).
//!
//! The stream is pulled: the next page of changes is taken only when the client has taken the
//! previous one, so a slow consumer never slows writers and never makes the server hold more
//! than a page for it. A current stream takes the pages its owner's reader read once for every
//! subscriber (`feed_hub.rs`); a stream that is behind (a resume, or a slow client the shared
//! pages left behind) reads the store by itself until it is current. Either way a change is
//! sent once, in order, and only when every change before it has been: a page is taken only if
//! it starts at or before the stream's position. Store notices only wake readers up, so a
//! lagging notice channel loses wake-ups, never changes.
//!
//! A stream ends with one `error` event when its position expired (`feed_position_expired`),
//! its credential stops being valid (checked again before changes read later are delivered,
//! and every quarter second meanwhile), the store fails, or the server shuts down
//! (`service_unavailable`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, State};
use axum::http::HeaderName;
use axum::http::request::Parts;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast::error::RecvError;
use wsp_store::{ChangeEvent, StoreError, WorkspaceStore};
use wsp_types::wire::{WorkspaceEvent, WorkspaceUpdated};
use wsp_types::{ErrorCode, Owner};

use crate::auth::Caller;
use crate::error::WireError;
use crate::extract::{Authed, BearerToken, OrWire, Reply, WorkspaceRead};
use crate::fails::{self, Documented, Failure};
use crate::feed_hub::{Batch, Live, PAGE, Subscription};
use crate::request::{param, query_params};
use crate::{AppState, encode};

/// Comment lines on idle streams.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where a stream starts: after `Last-Event-ID`, else after `?since=`, else at the head.
pub(crate) struct Position(Option<u64>);

impl FromRequestParts<AppState> for Position {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        position(parts).map(Self)
    }
}

impl fails::Fallible for Position {
    fn failures() -> Vec<Failure> {
        vec![fails::BAD_POSITION]
    }
}

/// Where the stream starts: `Last-Event-ID` wins over `?since=`, and both, when sent, must be
/// sequence numbers (0 to `i64::MAX`, as every backend stores them).
fn position(parts: &Parts) -> Result<Option<u64>, WireError> {
    let parse = |raw: &str, what: &str| {
        raw.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| i64::try_from(*n).is_ok())
            .ok_or_else(|| {
                WireError::validation(format!(
                    "{what} must be an integer from 0 to {}, got {raw:?}",
                    i64::MAX
                ))
            })
    };
    let params = query_params(parts.uri.query())?;
    let since = param(&params, "since")
        .map(|raw| parse(raw, "since"))
        .transpose()?;
    if let Some(v) = parts.headers.get(HeaderName::from_static("last-event-id")) {
        let raw = v
            .to_str()
            .map_err(|_| WireError::validation("Last-Event-ID must be ASCII"))?;
        return parse(raw, "Last-Event-ID").map(Some);
    }
    Ok(since)
}

/// The store has no change feed.
const NO_FEED: Failure = fails::fail(
    ErrorCode::CapabilityNotProvided,
    "The host's store has no change feed",
);
/// The credential holds its allowance of open streams.
const STREAMS_PER_KEY: Failure = fails::fail(
    ErrorCode::RateLimited,
    "The credential already holds its allowance of open streams (`details.limit` is \
     `streamsPerKey`, `details.max` the allowance)",
);
/// The server is shutting down.
const SHUTTING_DOWN: Failure =
    fails::fail(ErrorCode::ServiceUnavailable, "The server is shutting down");

/// The change-feed route.
pub(crate) const EVENTS: &str = "/v1/host/workspace/events";

/// The OpenAPI operation of [`events`] and the failures of its own steps.
pub(crate) struct EventsOp;

impl Documented for EventsOp {
    const OWN: &'static [Failure] = &[
        NO_FEED,
        STREAMS_PER_KEY,
        SHUTTING_DOWN,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `GET /v1/host/workspace/events[?since=N]` with optional `Last-Event-ID: N`.
#[utoipa::path(
    get,
    impl_for = EventsOp,
    path = EVENTS,
    tag = "workspace",
    operation_id = "workspaceEvents",
    summary = "The caller's workspace.updated change feed as Server-Sent Events (wsp extension)",
    description = "Needs `workspace:read`. An endless stream of the caller's committed writes and deletes in sequence order, one `workspace.updated` event each. Resume with `Last-Event-ID` (or `?since=`); a position older than the retained feed ends the stream with `feed_position_expired`. At most 32 streams per key are open at once (429 `rate_limited`).",
    params(
        ("since" = Option<u64>, Query, description = "Resume after this sequence number (0: from the start of what is retained)."),
        ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this sequence number; wins over `since`."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "An endless `text/event-stream`: `workspace.updated` events (`id` = sequence, `data` = WorkspaceEvent) and a comment every 15 s when idle. The stream ends after one `error` event whose data is an error envelope: `feed_position_expired` if the position is older than the feed retains, `unauthenticated` or `forbidden` once the credential is revoked or loses `workspace:read`, `service_unavailable` when the server shuts down or the store fails (reconnect with `Last-Event-ID`).", content_type = "text/event-stream"),
    ),
)]
pub(crate) async fn events(
    State(state): State<AppState>,
    auth: Authed<WorkspaceRead>,
    Position(requested): Position,
    BearerToken(token): BearerToken,
) -> Result<Reply, WireError> {
    let feed = Feed::open(&state, &auth, &token, requested).await?;
    Ok(feed.into_reply())
}

struct Feed {
    store: Arc<dyn WorkspaceStore>,
    owner: Owner,
    /// The last change sent (or the position the stream started after).
    pos: u64,
    /// Whether the stream reads the store by itself (it is behind the shared pages).
    behind: bool,
    sub: Subscription,
    /// The page being sent and the index of its next change; `None` until its credential
    /// check passed.
    batch: Option<(Arc<Batch>, usize)>,
    done: bool,
}

fn to_event(e: &ChangeEvent) -> Event {
    let data = WorkspaceEvent {
        payload: WorkspaceUpdated {
            // Said only of a delete: a write's payload stays what OpenWOP v1 defines.
            deleted: e.deleted.then_some(true),
            path: e.path.clone(),
            version: encode::version(e.version),
        },
        sequence: encode::version(e.seq),
        timestamp: e.at,
        type_: "workspace.updated".to_owned(),
    };
    Event::default()
        .id(e.seq.to_string())
        .event("workspace.updated")
        .data(serde_json::to_string(&data).expect("wire types always serialize"))
}

fn error_event(err: &WireError) -> Event {
    Event::default()
        .event("error")
        .data(serde_json::to_string(&err.envelope()).expect("envelopes serialize"))
}

impl Feed {
    /// The stream of `caller`'s changes after `requested`, else after the head: 501 when the
    /// store has no change feed, and what joining the owner's shared pages answers (429, 503).
    async fn open(
        state: &AppState,
        caller: &Caller,
        token: &str,
        requested: Option<u64>,
    ) -> Result<Self, WireError> {
        let store = state.inner.store.clone();
        if !store.features().change_feed {
            return Err(StoreError::Unsupported("the change feed")).or_wire("events");
        }
        // Joined before the head is read, so every change committed after it reaches the stream.
        let sub = state
            .inner
            .feeds
            .join(&store, &state.inner.auth, token, caller)?;
        let head = store
            .changes(&caller.owner, u64::MAX, 0)
            .await
            .or_wire("events")?
            .head;
        let pos = requested.unwrap_or(head);
        Ok(Self {
            store,
            owner: caller.owner.clone(),
            pos,
            behind: pos < head,
            sub,
            batch: None,
            done: false,
        })
    }

    /// The stream as Server-Sent Events, with a comment line every [`KEEP_ALIVE`] when idle.
    fn into_reply(self) -> Reply {
        let events = Sse::new(self.into_stream()).keep_alive(KeepAlive::new().interval(KEEP_ALIVE));
        Reply::stream(events)
    }

    fn into_stream(self) -> impl Stream<Item = Result<Event, Infallible>> + Send {
        futures_util::stream::unfold(self, |mut feed| async move {
            let event = feed.next().await?;
            Some((Ok(event), feed))
        })
    }

    /// The closing event; the stream ends after it.
    fn finish(&mut self, err: &WireError) -> Option<Event> {
        self.done = true;
        Some(error_event(err))
    }

    /// The next event to send, or `None` to end the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if self.done {
                return None;
            }
            if let Some(err) = self.sub.signals.ended() {
                return self.finish(&err);
            }
            if let Some((batch, next)) = &mut self.batch {
                if let Some(e) = batch.events.get(*next) {
                    *next += 1;
                    if e.seq > self.pos {
                        self.pos = e.seq;
                        return Some(to_event(e));
                    }
                    continue;
                }
                self.batch = None;
            }
            let next = if self.behind {
                self.read_store().await
            } else {
                self.take_live().await
            };
            let batch = match next {
                Ok(Some(batch)) => batch,
                Ok(None) => continue,
                Err(err) => return self.finish(&err),
            };
            // Changes read after a revocation reached the credential check are never sent.
            if let Err(err) = self.sub.signals.valid_after(batch.read_at).await {
                return self.finish(&err);
            }
            self.batch = Some((batch, 0));
        }
    }

    /// One page from the store after `pos`; the stream is current again when it reaches the
    /// head. `None` when there is nothing to send.
    async fn read_store(&mut self) -> Result<Option<Arc<Batch>>, WireError> {
        let page = self
            .store
            .changes(&self.owner, self.pos, PAGE)
            .await
            .map_err(|e| WireError::from_store(e, "events"))?;
        let read_at = Instant::now();
        if self.pos + 1 < page.oldest && self.pos < page.head {
            return Err(WireError::new(
                ErrorCode::FeedPositionExpired,
                format!("position {} is older than the feed retains", self.pos),
            )
            .with_detail("oldestSequence", page.oldest));
        }
        let last = page.events.last().map_or(self.pos, |e| e.seq);
        if last >= page.head {
            // Every change after `head` reaches the owner's channel, which this stream joined
            // before reading.
            self.behind = false;
        }
        Ok((!page.events.is_empty()).then(|| {
            Arc::new(Batch {
                after: self.pos,
                events: page.events,
                read_at,
            })
        }))
    }

    /// The next shared page that continues the stream; `None` when there is nothing to send
    /// (nothing new in it, or the stream fell behind and reads the store next).
    async fn take_live(&mut self) -> Result<Option<Arc<Batch>>, WireError> {
        let Subscription { live, signals } = &mut self.sub;
        let received = tokio::select! {
            err = signals.end() => return Err(err),
            received = live.recv() => received,
        };
        match received {
            Ok(Live::Changes(batch)) => {
                if batch.after > self.pos {
                    // Changes between `pos` and this page went by unseen.
                    self.behind = true;
                    return Ok(None);
                }
                let new = batch.events.last().is_some_and(|e| e.seq > self.pos);
                Ok(new.then_some(batch))
            }
            Ok(Live::Failed(err)) => Err(err),
            // Pages dropped before this stream took them: read them from the store.
            Err(RecvError::Lagged(_)) => {
                self.behind = true;
                Ok(None)
            }
            // The owner's reader outlives every subscriber; it only stops when the server does.
            Err(RecvError::Closed) => Err(WireError::new(
                ErrorCode::ServiceUnavailable,
                "the change feed stopped; reconnect with Last-Event-ID to resume",
            )),
        }
    }
}
