//! `GET /v1/host/workspace/events`: the caller's change feed as Server-Sent Events (WIRE.md §5).
//!
//! The stream is pulled: the next page of changes is read from the store only when the client
//! has taken the previous one, so a slow consumer never slows writers and never makes the
//! server hold more than one page for it. Store notices only wake the stream up; the changes
//! themselves always come from the store, so a lagging notice channel loses nothing.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use tokio::sync::broadcast;
use wsp_store::{ChangeEvent, ChangeNotice, WorkspaceStore};
use wsp_types::wire::{WorkspaceEvent, WorkspaceUpdated};
use wsp_types::{ErrorCode, Owner, Scope};

use crate::error::ApiError;
use crate::files::caller;
use crate::request::{param, query_params};
use crate::{AppState, encode};

/// Changes read from the store at a time.
const PAGE: usize = 256;
/// Comment lines on idle streams.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often a store that cannot notify is polled.
const POLL: Duration = Duration::from_millis(500);

fn position(headers: &HeaderMap, uri: &Uri) -> Result<Option<u64>, ApiError> {
    let parse = |raw: &str, what: &str| {
        raw.trim().parse::<u64>().map_err(|_| {
            ApiError::validation(format!(
                "{what} must be a non-negative integer, got {raw:?}"
            ))
        })
    };
    if let Some(v) = headers.get(HeaderName::from_static("last-event-id")) {
        let raw = v
            .to_str()
            .map_err(|_| ApiError::validation("Last-Event-ID must be ASCII"))?;
        return parse(raw, "Last-Event-ID").map(Some);
    }
    let params = query_params(uri.query())?;
    param(&params, "since")
        .map(|raw| parse(raw, "since"))
        .transpose()
}

/// `GET /v1/host/workspace/events[?since=N]` with optional `Last-Event-ID: N`.
#[utoipa::path(
    get,
    path = "/v1/host/workspace/events",
    tag = "workspace",
    operation_id = "workspaceEvents",
    summary = "The caller's workspace.updated change feed as Server-Sent Events (wsp extension)",
    params(
        ("since" = Option<u64>, Query, description = "Resume after this sequence number (0: from the start of what is retained)."),
        ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this sequence number; wins over `since`."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "An endless `text/event-stream`: `workspace.updated` events (`id` = sequence, `data` = WorkspaceEvent), a comment every 15 s when idle, and one `error` event (`feed_position_expired`) if the position is older than the feed retains.", content_type = "text/event-stream"),
        (status = 400, description = "Invalid position (`validation_error`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks `workspace:read` (`forbidden`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host's store has no change feed (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    let caller = caller(&state, &headers, Scope::WorkspaceRead).await?;
    let requested = position(&headers, &uri)?;
    let store = state.inner.store.clone();
    // Subscribe before reading the head, so nothing committed in between is missed.
    let notices = store.subscribe();
    let head = store
        .changes(&caller.owner, u64::MAX, 0)
        .await
        .map_err(|e| ApiError::from_store(e, "events"))?
        .head;
    let start = requested.unwrap_or(head);
    let feed = Feed {
        store,
        owner: caller.owner,
        pos: start,
        notices,
        pending: Vec::new(),
        done: false,
    };
    Ok(Sse::new(feed.into_stream())
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

struct Feed {
    store: Arc<dyn WorkspaceStore>,
    owner: Owner,
    pos: u64,
    notices: Option<broadcast::Receiver<ChangeNotice>>,
    /// Read but not yet sent, newest last (reversed for popping).
    pending: Vec<ChangeEvent>,
    done: bool,
}

fn to_event(e: &ChangeEvent) -> Event {
    let data = WorkspaceEvent {
        payload: WorkspaceUpdated {
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

fn error_event(err: &ApiError) -> Event {
    Event::default()
        .event("error")
        .data(serde_json::to_string(&err.envelope()).expect("envelopes serialize"))
}

impl Feed {
    fn into_stream(self) -> impl Stream<Item = Result<Event, Infallible>> + Send {
        futures_util::stream::unfold(self, |mut feed| async move {
            let event = feed.next().await?;
            Some((Ok(event), feed))
        })
    }

    /// The next event to send, or `None` to end the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if self.done {
                return None;
            }
            if let Some(e) = self.pending.pop() {
                self.pos = e.seq;
                return Some(to_event(&e));
            }
            let page = match self.store.changes(&self.owner, self.pos, PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    self.done = true;
                    return Some(error_event(&ApiError::from_store(e, "events")));
                }
            };
            if self.pos + 1 < page.oldest && self.pos < page.head {
                self.done = true;
                let err = ApiError::new(
                    ErrorCode::FeedPositionExpired,
                    format!("position {} is older than the feed retains", self.pos),
                )
                .with_detail("oldestSequence", page.oldest);
                return Some(error_event(&err));
            }
            if !page.events.is_empty() {
                self.pending = page.events.into_iter().rev().collect();
                continue;
            }
            self.wait().await;
        }
    }

    /// Waits until the owner's feed may have moved past `pos`.
    async fn wait(&mut self) {
        let Some(rx) = self.notices.as_mut() else {
            tokio::time::sleep(POLL).await;
            return;
        };
        loop {
            match rx.recv().await {
                Ok(n) if n.owner == self.owner && n.seq > self.pos => return,
                Ok(_) => {}
                // Missed notices: read the store again.
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => {
                    self.notices = None;
                    return;
                }
            }
        }
    }
}
