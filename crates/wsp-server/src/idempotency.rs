//! `Idempotency-Key`: a retried mutation replays its first outcome instead of running twice.

use std::sync::Arc;
use std::time::Duration;

use axum::http::header::{CONTENT_TYPE, ETAG};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use wsp_store::idempotency::{Claim as StoreClaim, IdempotencyRecords, StoredResponse};
use wsp_types::{ErrorCode, Owner};

use crate::error::WireError;
use crate::extract::Reply;

/// How long a request waits for an identical one in progress (maybe on another replica).
const WAIT_BOUND: Duration = Duration::from_secs(10);

/// Rebuilds a recorded response, marked as a replay.
pub fn replay(stored: &StoredResponse) -> Response {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut resp = (status, Bytes::from(stored.body.clone())).into_response();
    for (k, v) in &stored.headers {
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            resp.headers_mut().insert(k, v);
        }
    }
    resp.headers_mut().insert(
        HeaderName::from_static("idempotent-replayed"),
        HeaderValue::from_static("true"),
    );
    resp
}

/// Captures a buffered response for replay.
pub fn record(
    status: StatusCode,
    headers: &[(HeaderName, HeaderValue)],
    body: &[u8],
) -> StoredResponse {
    StoredResponse {
        status: status.as_u16(),
        headers: headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        body: body.to_vec(),
    }
}

/// What to do with a request that carries an `Idempotency-Key`.
pub enum Begin {
    /// First sight: run it, then [`Claim::finish`].
    Run(Claim),
    /// Seen with the same request: answer with this.
    Replay(StoredResponse),
}

/// The right to run a request first; dropping it unfinished frees the key so a retry runs.
pub(crate) struct Claim {
    records: Arc<dyn IdempotencyRecords>,
    owner: Owner,
    key: String,
    fingerprint: [u8; 32],
    armed: bool,
}

impl Claim {
    /// Records the outcome for replay (`None`: not replayable, e.g. a 5xx; a retry runs again).
    pub async fn finish(mut self, response: Option<StoredResponse>) {
        let (owner, key, fp) = (&self.owner, self.key.as_str(), &self.fingerprint);
        let done = match &response {
            Some(r) => self.records.complete(owner, key, fp, r).await,
            None => self.records.abandon(owner, key, fp).await,
        };
        if let Err(e) = done {
            tracing::warn!(error = %e, "recording an idempotency outcome failed");
            // Free the key rather than leave it claimed until its lease ends.
            let _ = self.records.abandon(owner, key, fp).await;
        }
        self.armed = false;
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Unfinished (the request failed or was cancelled): free the key so a retry can run.
        let (records, owner, key, fp) = (
            self.records.clone(),
            self.owner.clone(),
            std::mem::take(&mut self.key),
            self.fingerprint,
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = records.abandon(&owner, &key, &fp).await;
            });
        }
    }
}

/// Claims `key` for `owner`, waits (polling, up to [`WAIT_BOUND`]) for an identical request in
/// progress, or refuses a reuse of the key for a different request (409
/// `idempotency_key_mismatch`). Still in progress after the bound: 503 `service_unavailable`.
pub async fn begin(
    records: &Arc<dyn IdempotencyRecords>,
    owner: &Owner,
    key: String,
    fingerprint: [u8; 32],
) -> Result<Begin, WireError> {
    begin_within(records, owner, key, fingerprint, WAIT_BOUND).await
}

/// [`begin`], waiting at most `bound` for a request in progress.
async fn begin_within(
    records: &Arc<dyn IdempotencyRecords>,
    owner: &Owner,
    key: String,
    fingerprint: [u8; 32],
    bound: Duration,
) -> Result<Begin, WireError> {
    let deadline = tokio::time::Instant::now() + bound;
    let mut pause = Duration::from_millis(5);
    loop {
        match records
            .claim(owner, &key, &fingerprint)
            .await
            .map_err(|e| WireError::from_store(e, ""))?
        {
            StoreClaim::Claimed => {
                return Ok(Begin::Run(Claim {
                    records: records.clone(),
                    owner: owner.clone(),
                    key,
                    fingerprint,
                    armed: true,
                }));
            }
            StoreClaim::Replay(r) => return Ok(Begin::Replay(r)),
            StoreClaim::Mismatch => return Err(mismatch()),
            StoreClaim::InProgress => {}
        }
        if tokio::time::Instant::now() + pause > deadline {
            return Err(WireError::new(
                ErrorCode::ServiceUnavailable,
                "an identical request with this Idempotency-Key is still in progress; retry",
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// Runs a mutation under its `Idempotency-Key`, if the request sent one: a key holding one of
/// `owner`'s secrets is 400, a replay answers the recorded response, a key reused for another
/// request is 409.
pub(crate) async fn idempotent(
    state: &crate::AppState,
    owner: &Owner,
    key: crate::extract::IdempotencyKey,
    fingerprint: impl FnOnce() -> [u8; 32],
    run: impl Future<Output = Result<Reply, WireError>>,
) -> Result<Reply, WireError> {
    let Some(key) = key.0 else {
        return run.await;
    };
    crate::secrets::refuse_secret(state, owner, "Idempotency-Key", &key)?;
    let claim = match begin(&state.inner.idempotency, owner, key, fingerprint()).await? {
        Begin::Replay(stored) => return Ok(replay(&stored).into()),
        Begin::Run(claim) => claim,
    };
    let response = run
        .await
        .map_or_else(IntoResponse::into_response, IntoResponse::into_response);
    let (parts, body) = response.into_parts();
    // Our responses are small and already buffered, so collecting cannot fail in practice.
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let headers: Vec<(HeaderName, HeaderValue)> = [CONTENT_TYPE, ETAG]
        .into_iter()
        .filter_map(|h| parts.headers.get(&h).map(|v| (h, v.clone())))
        .collect();
    // 5xx and 400/401/403 are never recorded (WIRE §3): a retry runs again.
    let replayable =
        !(parts.status.is_server_error() || matches!(parts.status.as_u16(), 400 | 401 | 403));
    claim
        .finish(replayable.then(|| record(parts.status, &headers, &body)))
        .await;
    Ok(Response::from_parts(parts, axum::body::Body::from(body)).into())
}

/// A request's fingerprint: everything that makes two requests "the same".
pub fn fingerprint(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// Validates an `Idempotency-Key` header value: 1-255 visible ASCII characters.
pub fn validate_key(raw: &HeaderValue) -> Result<String, WireError> {
    let s = raw.to_str().unwrap_or_default();
    if s.is_empty() || s.len() > 255 || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(WireError::validation(
            "Idempotency-Key must be 1-255 visible ASCII characters",
        )
        .with_detail("field", "Idempotency-Key"));
    }
    Ok(s.to_owned())
}

fn mismatch() -> WireError {
    WireError::new(
        ErrorCode::IdempotencyKeyMismatch,
        "this Idempotency-Key was already used for a different request",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_store::MemoryIdempotency;

    fn resp(body: &'static str) -> StoredResponse {
        record(StatusCode::OK, &[], body.as_bytes())
    }

    #[tokio::test]
    async fn replay_mismatch_and_retry_after_failure() {
        let records: Arc<dyn IdempotencyRecords> = Arc::new(MemoryIdempotency::default());
        let owner = Owner::parse("t", "w").unwrap();
        let other = Owner::parse("t2", "w").unwrap();
        let fp1 = fingerprint(&[b"one"]);
        let fp2 = fingerprint(&[b"two"]);
        let Begin::Run(claim) = begin(&records, &owner, "k".into(), fp1).await.unwrap() else {
            panic!("first use runs")
        };
        // Same key, different request while in flight: mismatch.
        assert!(begin(&records, &owner, "k".into(), fp2).await.is_err());
        // Another owner's identical key is unrelated.
        assert!(matches!(
            begin(&records, &other, "k".into(), fp2).await.unwrap(),
            Begin::Run(_)
        ));
        claim.finish(Some(resp("first"))).await;
        let Begin::Replay(r) = begin(&records, &owner, "k".into(), fp1).await.unwrap() else {
            panic!("second use replays")
        };
        assert_eq!(r.body, b"first");
        assert!(begin(&records, &owner, "k".into(), fp2).await.is_err());
        // A claim dropped unfinished lets the retry run.
        let Begin::Run(c) = begin(&records, &owner, "k2".into(), fp1).await.unwrap() else {
            panic!()
        };
        drop(c);
        assert!(matches!(
            begin(&records, &owner, "k2".into(), fp1).await.unwrap(),
            Begin::Run(_)
        ));
    }

    #[tokio::test]
    async fn a_waiter_gets_the_first_outcome() {
        let records: Arc<dyn IdempotencyRecords> = Arc::new(MemoryIdempotency::default());
        let owner = Owner::parse("t", "w").unwrap();
        let fp = fingerprint(&[b"x"]);
        let Begin::Run(claim) = begin(&records, &owner, "k".into(), fp).await.unwrap() else {
            panic!()
        };
        let waiter = {
            let (records, owner) = (records.clone(), owner.clone());
            tokio::spawn(async move { begin(&records, &owner, "k".into(), fp).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        claim.finish(Some(resp("done"))).await;
        match waiter.await.unwrap().unwrap() {
            Begin::Replay(r) => assert_eq!(r.body, b"done"),
            Begin::Run(_) => panic!("the waiter must replay"),
        }
    }

    #[tokio::test]
    async fn a_request_stuck_in_progress_answers_503_after_the_bound() {
        let records: Arc<dyn IdempotencyRecords> = Arc::new(MemoryIdempotency::default());
        let owner = Owner::parse("t", "w").unwrap();
        let fp = fingerprint(&[b"x"]);
        let _held = begin(&records, &owner, "k".into(), fp).await.unwrap();
        let err = begin_within(&records, &owner, "k".into(), fp, Duration::from_millis(100))
            .await
            .err()
            .unwrap();
        assert_eq!(err.envelope().error, "service_unavailable");
    }
}
