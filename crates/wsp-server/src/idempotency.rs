//! `Idempotency-Key`: a retried mutation replays its first outcome instead of running twice.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use wsp_types::{ErrorCode, Owner};

use crate::error::ApiError;

const SHARDS: usize = 16;

/// A response kept for replay.
#[derive(Debug, Clone)]
pub struct CachedResponse {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

impl CachedResponse {
    /// Captures a buffered response.
    pub fn new(status: StatusCode, headers: Vec<(HeaderName, HeaderValue)>, body: Bytes) -> Self {
        Self {
            status,
            headers,
            body,
        }
    }

    /// Rebuilds the response, marked as a replay.
    pub fn replay(&self) -> Response {
        let mut resp = (self.status, self.body.clone()).into_response();
        for (k, v) in &self.headers {
            resp.headers_mut().insert(k.clone(), v.clone());
        }
        resp.headers_mut().insert(
            HeaderName::from_static("idempotent-replayed"),
            HeaderValue::from_static("true"),
        );
        resp
    }
}

enum Entry {
    InFlight {
        fingerprint: [u8; 32],
        done: watch::Receiver<Option<Arc<CachedResponse>>>,
    },
    Done {
        fingerprint: [u8; 32],
        response: Arc<CachedResponse>,
        at: Instant,
    },
}

type Shard = Mutex<HashMap<(Owner, String), Entry>>;

/// Per-owner idempotency records, kept in memory for a time to live.
///
/// Sharded so that unrelated keys never wait on one lock; locks are never held across `.await`.
pub struct IdempotencyCache {
    shards: Vec<Shard>,
    hasher: RandomState,
    ttl: Duration,
}

impl std::fmt::Debug for IdempotencyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Default for IdempotencyCache {
    /// Records kept for 24 hours.
    fn default() -> Self {
        Self::new(Duration::from_secs(24 * 3600))
    }
}

/// What to do with a request that carries an `Idempotency-Key`.
pub enum Begin {
    /// First sight: run it, then [`Claim::finish`].
    Run(Claim),
    /// Seen with the same request: answer with this.
    Replay(Arc<CachedResponse>),
}

/// The right to run a request first; dropping it unfinished lets a retry run again.
pub struct Claim {
    cache: Arc<IdempotencyCache>,
    slot: (Owner, String),
    fingerprint: [u8; 32],
    done: Option<watch::Sender<Option<Arc<CachedResponse>>>>,
}

impl Claim {
    /// Records the outcome for replay (`None`: not cacheable, e.g. a 5xx; a retry runs again).
    pub fn finish(mut self, response: Option<CachedResponse>) {
        let done = self.done.take();
        let shard = self.cache.shard(&self.slot);
        let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
        match response.map(Arc::new) {
            Some(response) => {
                map.insert(
                    self.slot.clone(),
                    Entry::Done {
                        fingerprint: self.fingerprint,
                        response: response.clone(),
                        at: Instant::now(),
                    },
                );
                drop(map);
                if let Some(tx) = done {
                    let _ = tx.send(Some(response));
                }
            }
            None => {
                map.remove(&self.slot);
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.done.is_some() {
            // Unfinished (the request failed or was cancelled): forget it so a retry can run.
            let shard = self.cache.shard(&self.slot);
            shard
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.slot);
        }
    }
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
pub fn validate_key(raw: &HeaderValue) -> Result<String, ApiError> {
    let s = raw.to_str().unwrap_or_default();
    if s.is_empty() || s.len() > 255 || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            ApiError::validation("Idempotency-Key must be 1-255 visible ASCII characters")
                .with_detail("field", "Idempotency-Key"),
        );
    }
    Ok(s.to_owned())
}

impl IdempotencyCache {
    /// A cache whose records live for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            ttl,
        }
    }

    fn shard(&self, slot: &(Owner, String)) -> &Shard {
        &self.shards[self.hasher.hash_one(slot) as usize % SHARDS]
    }

    /// Claims `key` for `owner`, waits for an identical request in flight, or refuses a reuse
    /// of the key for a different request (409 `idempotency_key_mismatch`).
    pub async fn begin(
        self: &Arc<Self>,
        owner: &Owner,
        key: String,
        fingerprint: [u8; 32],
    ) -> Result<Begin, ApiError> {
        let slot = (owner.clone(), key);
        loop {
            let mut wait = {
                let mut map = self.shard(&slot).lock().unwrap_or_else(|e| e.into_inner());
                if map.len() > 4096 {
                    let ttl = self.ttl;
                    map.retain(|_, e| !matches!(e, Entry::Done { at, .. } if at.elapsed() > ttl));
                }
                match map.get(&slot) {
                    Some(Entry::Done {
                        fingerprint: fp,
                        response,
                        at,
                    }) if at.elapsed() <= self.ttl => {
                        if *fp != fingerprint {
                            return Err(mismatch());
                        }
                        return Ok(Begin::Replay(response.clone()));
                    }
                    Some(Entry::InFlight {
                        fingerprint: fp,
                        done,
                    }) => {
                        if *fp != fingerprint {
                            return Err(mismatch());
                        }
                        done.clone()
                    }
                    _ => {
                        let (tx, rx) = watch::channel(None);
                        map.insert(
                            slot.clone(),
                            Entry::InFlight {
                                fingerprint,
                                done: rx,
                            },
                        );
                        return Ok(Begin::Run(Claim {
                            cache: self.clone(),
                            slot,
                            fingerprint,
                            done: Some(tx),
                        }));
                    }
                }
            };
            // An identical request is running: wait for its outcome, then look again.
            let _ = wait.wait_for(Option::is_some).await;
        }
    }
}

fn mismatch() -> ApiError {
    ApiError::new(
        ErrorCode::IdempotencyKeyMismatch,
        "this Idempotency-Key was already used for a different request",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(body: &'static str) -> CachedResponse {
        CachedResponse::new(StatusCode::OK, vec![], Bytes::from_static(body.as_bytes()))
    }

    #[tokio::test]
    async fn replay_mismatch_and_retry_after_failure() {
        let cache = Arc::new(IdempotencyCache::default());
        let owner = Owner::parse("t", "w").unwrap();
        let other = Owner::parse("t2", "w").unwrap();
        let fp1 = fingerprint(&[b"one"]);
        let fp2 = fingerprint(&[b"two"]);
        let Begin::Run(claim) = cache.begin(&owner, "k".into(), fp1).await.unwrap() else {
            panic!("first use runs")
        };
        // Same key, different request while in flight: mismatch.
        assert!(cache.begin(&owner, "k".into(), fp2).await.is_err());
        // Another owner's identical key is unrelated.
        assert!(matches!(
            cache.begin(&other, "k".into(), fp2).await.unwrap(),
            Begin::Run(_)
        ));
        claim.finish(Some(resp("first")));
        let Begin::Replay(r) = cache.begin(&owner, "k".into(), fp1).await.unwrap() else {
            panic!("second use replays")
        };
        assert_eq!(r.body, "first");
        assert!(cache.begin(&owner, "k".into(), fp2).await.is_err());
        // A claim dropped unfinished lets the retry run.
        let Begin::Run(c) = cache.begin(&owner, "k2".into(), fp1).await.unwrap() else {
            panic!()
        };
        drop(c);
        assert!(matches!(
            cache.begin(&owner, "k2".into(), fp1).await.unwrap(),
            Begin::Run(_)
        ));
    }

    #[tokio::test]
    async fn a_waiter_gets_the_first_outcome() {
        let cache = Arc::new(IdempotencyCache::default());
        let owner = Owner::parse("t", "w").unwrap();
        let fp = fingerprint(&[b"x"]);
        let Begin::Run(claim) = cache.begin(&owner, "k".into(), fp).await.unwrap() else {
            panic!()
        };
        let waiter = {
            let (cache, owner) = (cache.clone(), owner.clone());
            tokio::spawn(async move { cache.begin(&owner, "k".into(), fp).await })
        };
        tokio::task::yield_now().await;
        claim.finish(Some(resp("done")));
        match waiter.await.unwrap().unwrap() {
            Begin::Replay(r) => assert_eq!(r.body, "done"),
            Begin::Run(_) => panic!("the waiter must replay"),
        }
    }
}
