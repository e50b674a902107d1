//! `Idempotency-Key` records: the first outcome of a keyed request, kept for replay.
//!
//! A record is claimed before the request runs ([`IdempotencyRecords::claim`]), then either
//! completed with the response to replay ([`IdempotencyRecords::complete`]) or abandoned
//! ([`IdempotencyRecords::abandon`]) so that a retry runs again. Records are per owner and
//! expire [`RECORD_TTL`] after their claim; a claim never completed nor abandoned (its replica
//! died) may be taken over after [`CLAIM_LEASE`].
//!
//! [`MemoryIdempotency`] keeps them in the process; the SQLite and PostgreSQL stores keep them
//! in their databases, so they survive a restart and are shared by replicas.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wsp_types::Owner;

use crate::StoreFuture;

/// How long a completed record is replayed.
pub const RECORD_TTL: Duration = Duration::from_secs(24 * 3600);

/// How long an unfinished claim holds its key before another request may take it over.
pub const CLAIM_LEASE: Duration = Duration::from_secs(60);

/// A response kept for replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status code.
    pub status: u16,
    /// The headers to replay (names lower case; values visible ASCII).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl StoredResponse {
    /// The headers as one text, a `name:value` line each (how the databases keep them).
    pub fn encode_headers(&self) -> String {
        self.headers
            .iter()
            .map(|(k, v)| format!("{k}:{v}\n"))
            .collect()
    }

    /// Reads headers written by [`encode_headers`](Self::encode_headers).
    pub fn decode_headers(text: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is ours: run the request, then complete or abandon it.
    Claimed,
    /// The same request completed before: answer with this.
    Replay(StoredResponse),
    /// The key was used for a different request.
    Mismatch,
    /// The same request is running (here or on another replica): look again later.
    InProgress,
}

/// Where `Idempotency-Key` records live. Object safe: hosts hold an `Arc<dyn IdempotencyRecords>`.
///
/// Every operation is scoped to an owner: one owner's key never meets another's.
pub trait IdempotencyRecords: Send + Sync + 'static {
    /// Claims `key` for a request with `fingerprint`, or reports what holds it. Of concurrent
    /// claims of a free key, exactly one answers [`Claim::Claimed`].
    fn claim<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, Claim>;

    /// Records the outcome of a claimed request, for replay until the record expires.
    fn complete<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
        response: &'a StoredResponse,
    ) -> StoreFuture<'a, ()>;

    /// Frees a claimed key (the request failed or its outcome is not replayable).
    fn abandon<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, ()>;
}

const SHARDS: usize = 16;

struct Entry {
    fingerprint: [u8; 32],
    response: Option<StoredResponse>,
    at: Instant,
}

impl Entry {
    fn expired(&self, ttl: Duration, lease: Duration) -> bool {
        let age = self.at.elapsed();
        match self.response {
            Some(_) => age > ttl,
            None => age > lease,
        }
    }
}

type Shard = Mutex<HashMap<(Owner, String), Entry>>;

/// Records in process memory: lost on restart and not shared between replicas.
///
/// Sharded so that unrelated keys never wait on one lock; locks are never held across `.await`.
pub struct MemoryIdempotency {
    shards: Vec<Shard>,
    hasher: RandomState,
    ttl: Duration,
    lease: Duration,
}

impl std::fmt::Debug for MemoryIdempotency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIdempotency")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryIdempotency {
    /// Records kept for [`RECORD_TTL`], claims leased for [`CLAIM_LEASE`].
    fn default() -> Self {
        Self::new(RECORD_TTL, CLAIM_LEASE)
    }
}

impl MemoryIdempotency {
    /// Records replayed for `ttl`; unfinished claims held for `lease`.
    pub fn new(ttl: Duration, lease: Duration) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            ttl,
            lease,
        }
    }

    fn shard(
        &self,
        slot: &(Owner, String),
    ) -> std::sync::MutexGuard<'_, HashMap<(Owner, String), Entry>> {
        self.shards[self.hasher.hash_one(slot) as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn claim_now(&self, owner: &Owner, key: &str, fingerprint: &[u8; 32]) -> Claim {
        let slot = (owner.clone(), key.to_owned());
        let mut map = self.shard(&slot);
        if map.len() > 4096 {
            let (ttl, lease) = (self.ttl, self.lease);
            map.retain(|_, e| !e.expired(ttl, lease));
        }
        match map.get(&slot) {
            Some(e) if !e.expired(self.ttl, self.lease) => {
                if e.fingerprint != *fingerprint {
                    Claim::Mismatch
                } else if let Some(r) = &e.response {
                    Claim::Replay(r.clone())
                } else {
                    Claim::InProgress
                }
            }
            _ => {
                map.insert(
                    slot,
                    Entry {
                        fingerprint: *fingerprint,
                        response: None,
                        at: Instant::now(),
                    },
                );
                Claim::Claimed
            }
        }
    }

    fn finish(
        &self,
        owner: &Owner,
        key: &str,
        fingerprint: &[u8; 32],
        response: Option<&StoredResponse>,
    ) {
        let slot = (owner.clone(), key.to_owned());
        let mut map = self.shard(&slot);
        let ours = map
            .get(&slot)
            .is_some_and(|e| e.fingerprint == *fingerprint && e.response.is_none());
        if !ours {
            return;
        }
        match response {
            Some(r) => {
                map.insert(
                    slot,
                    Entry {
                        fingerprint: *fingerprint,
                        response: Some(r.clone()),
                        at: Instant::now(),
                    },
                );
            }
            None => {
                map.remove(&slot);
            }
        }
    }
}

impl IdempotencyRecords for MemoryIdempotency {
    fn claim<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, Claim> {
        let claim = self.claim_now(owner, key, fingerprint);
        Box::pin(async move { Ok(claim) })
    }

    fn complete<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
        response: &'a StoredResponse,
    ) -> StoreFuture<'a, ()> {
        self.finish(owner, key, fingerprint, Some(response));
        Box::pin(async { Ok(()) })
    }

    fn abandon<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, ()> {
        self.finish(owner, key, fingerprint, None);
        Box::pin(async { Ok(()) })
    }
}

/// The contract of [`IdempotencyRecords`] as one test, for every implementation's own tests.
///
/// Uses fresh random owners, so it may run against a database that already holds records.
#[cfg(any(test, feature = "battery"))]
pub async fn check_records(records: std::sync::Arc<dyn IdempotencyRecords>) {
    let run = format!("{:016x}", crate::new_life_id());
    let owner = Owner::parse(&format!("idem-{run}"), "w").unwrap();
    let other = Owner::parse(&format!("idem-{run}-2"), "w").unwrap();
    let fp1 = [1u8; 32];
    let fp2 = [2u8; 32];
    let response = StoredResponse {
        status: 201,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("etag".into(), "\"abc\"".into()),
        ],
        body: b"{\"first\":true}".to_vec(),
    };

    // Replay: the first outcome, headers and all.
    assert_eq!(
        records.claim(&owner, "k", &fp1).await.unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        records.claim(&owner, "k", &fp1).await.unwrap(),
        Claim::InProgress
    );
    // Mismatch, in flight and after completion.
    assert_eq!(
        records.claim(&owner, "k", &fp2).await.unwrap(),
        Claim::Mismatch
    );
    // Per-owner separation.
    assert_eq!(
        records.claim(&other, "k", &fp2).await.unwrap(),
        Claim::Claimed
    );
    records
        .complete(&owner, "k", &fp1, &response)
        .await
        .unwrap();
    assert_eq!(
        records.claim(&owner, "k", &fp1).await.unwrap(),
        Claim::Replay(response.clone())
    );
    assert_eq!(
        records.claim(&owner, "k", &fp2).await.unwrap(),
        Claim::Mismatch
    );
    // Abandoning a completed record changes nothing.
    records.abandon(&owner, "k", &fp1).await.unwrap();
    assert_eq!(
        records.claim(&owner, "k", &fp1).await.unwrap(),
        Claim::Replay(response.clone())
    );
    assert_eq!(
        records.claim(&other, "k", &fp2).await.unwrap(),
        Claim::InProgress
    );

    // Abandon frees the key, for any request.
    assert_eq!(
        records.claim(&owner, "k2", &fp1).await.unwrap(),
        Claim::Claimed
    );
    records.abandon(&owner, "k2", &fp1).await.unwrap();
    assert_eq!(
        records.claim(&owner, "k2", &fp2).await.unwrap(),
        Claim::Claimed
    );

    // Concurrent claims of a free key: exactly one wins, the others see it in progress.
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (records, owner) = (records.clone(), owner.clone());
            tokio::spawn(async move { records.claim(&owner, "k3", &fp1).await.unwrap() })
        })
        .collect();
    let mut claimed = 0;
    for t in tasks {
        match t.await.unwrap() {
            Claim::Claimed => claimed += 1,
            Claim::InProgress => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(claimed, 1, "exactly one concurrent claim wins");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn memory_records_pass_the_battery() {
        check_records(Arc::new(MemoryIdempotency::default())).await;
    }

    #[tokio::test]
    async fn expired_records_and_leases_free_the_key() {
        let records = MemoryIdempotency::new(Duration::from_millis(20), Duration::from_millis(20));
        let owner = Owner::parse("t", "w").unwrap();
        let r = StoredResponse {
            status: 200,
            headers: vec![],
            body: vec![],
        };
        assert_eq!(
            records.claim(&owner, "a", &[1; 32]).await.unwrap(),
            Claim::Claimed
        );
        assert_eq!(
            records.claim(&owner, "b", &[1; 32]).await.unwrap(),
            Claim::Claimed
        );
        records.complete(&owner, "b", &[1; 32], &r).await.unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            records.claim(&owner, "a", &[2; 32]).await.unwrap(),
            Claim::Claimed
        );
        assert_eq!(
            records.claim(&owner, "b", &[2; 32]).await.unwrap(),
            Claim::Claimed
        );
    }

    #[test]
    fn headers_round_trip() {
        let r = StoredResponse {
            status: 200,
            headers: vec![
                ("etag".into(), "\"a:b\"".into()),
                ("x".into(), String::new()),
            ],
            body: vec![],
        };
        assert_eq!(
            StoredResponse::decode_headers(&r.encode_headers()),
            r.headers
        );
    }
}
