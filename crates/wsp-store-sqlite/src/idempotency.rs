//! `Idempotency-Key` records in the store's database (table `idempotency`), so that a replay
//! survives a restart. Every statement runs on the writer connection, one after the other.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, params};
use wsp_store::idempotency::{CLAIM_LEASE, Claim, IdempotencyRecords, RECORD_TTL, StoredResponse};
use wsp_store::{StoreError, StoreFuture};
use wsp_types::Owner;

use crate::SqliteStore;

/// [`IdempotencyRecords`] in a [`SqliteStore`]'s database, from
/// [`SqliteStore::idempotency_records`]. Cloning is cheap and shares the store's connections.
#[derive(Clone, Debug)]
pub struct SqliteIdempotency {
    store: SqliteStore,
    ttl: Duration,
    lease: Duration,
}

impl SqliteStore {
    /// The `Idempotency-Key` records in this store's database: kept [`RECORD_TTL`], unfinished
    /// claims leased for [`CLAIM_LEASE`].
    pub fn idempotency_records(&self) -> SqliteIdempotency {
        SqliteIdempotency {
            store: self.clone(),
            ttl: RECORD_TTL,
            lease: CLAIM_LEASE,
        }
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

fn internal(e: impl std::fmt::Display) -> StoreError {
    StoreError::internal(format!("idempotency records: {e}"))
}

type Row = (Vec<u8>, Option<i64>, Option<String>, Option<Vec<u8>>);

impl IdempotencyRecords for SqliteIdempotency {
    fn claim<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, Claim> {
        let (tenant, workspace) = (
            owner.tenant.as_str().to_owned(),
            owner.workspace.as_str().to_owned(),
        );
        let (key, fp) = (key.to_owned(), *fingerprint);
        let (ttl, lease) = (millis(self.ttl), millis(self.lease));
        self.store.write(move |conn, _| {
            let now = now_ms();
            let tx = conn.transaction().map_err(internal)?;
            // Expired records go, this key's first (a lapsed claim may be taken over).
            tx.prepare_cached(
                "DELETE FROM idempotency WHERE created_at < ?1
                    OR (status IS NULL AND created_at < ?2
                        AND tenant = ?3 AND workspace = ?4 AND key = ?5)",
            )
            .and_then(|mut s| s.execute(params![now - ttl, now - lease, tenant, workspace, key]))
            .map_err(internal)?;
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO idempotency (tenant, workspace, key, fingerprint, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                )
                .and_then(|mut s| s.execute(params![tenant, workspace, key, fp.as_slice(), now]))
                .map_err(internal)?;
            let claim = if inserted == 1 {
                Claim::Claimed
            } else {
                let row: Option<Row> = tx
                    .prepare_cached(
                        "SELECT fingerprint, status, headers, body FROM idempotency
                         WHERE tenant = ?1 AND workspace = ?2 AND key = ?3",
                    )
                    .and_then(|mut s| {
                        s.query_row(params![tenant, workspace, key], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                        })
                        .optional()
                    })
                    .map_err(internal)?;
                match row {
                    None => Claim::InProgress,
                    Some((stored, _, _, _)) if stored != fp => Claim::Mismatch,
                    Some((_, None, _, _)) => Claim::InProgress,
                    Some((_, Some(status), headers, body)) => Claim::Replay(StoredResponse {
                        status: u16::try_from(status).map_err(internal)?,
                        headers: StoredResponse::decode_headers(&headers.unwrap_or_default()),
                        body: body.unwrap_or_default(),
                    }),
                }
            };
            tx.commit().map_err(internal)?;
            Ok(claim)
        })
    }

    fn complete<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
        response: &'a StoredResponse,
    ) -> StoreFuture<'a, ()> {
        let (tenant, workspace) = (
            owner.tenant.as_str().to_owned(),
            owner.workspace.as_str().to_owned(),
        );
        let (key, fp) = (key.to_owned(), *fingerprint);
        let (status, headers, body) = (
            i64::from(response.status),
            response.encode_headers(),
            response.body.clone(),
        );
        self.store.write(move |conn, _| {
            conn.prepare_cached(
                "UPDATE idempotency SET status = ?5, headers = ?6, body = ?7, created_at = ?8
                 WHERE tenant = ?1 AND workspace = ?2 AND key = ?3 AND fingerprint = ?4
                   AND status IS NULL",
            )
            .and_then(|mut s| {
                s.execute(params![
                    tenant,
                    workspace,
                    key,
                    fp.as_slice(),
                    status,
                    headers,
                    body,
                    now_ms()
                ])
            })
            .map_err(internal)?;
            Ok(())
        })
    }

    fn abandon<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, ()> {
        let (tenant, workspace) = (
            owner.tenant.as_str().to_owned(),
            owner.workspace.as_str().to_owned(),
        );
        let (key, fp) = (key.to_owned(), *fingerprint);
        self.store.write(move |conn, _| {
            conn.prepare_cached(
                "DELETE FROM idempotency
                 WHERE tenant = ?1 AND workspace = ?2 AND key = ?3 AND fingerprint = ?4
                   AND status IS NULL",
            )
            .and_then(|mut s| s.execute(params![tenant, workspace, key, fp.as_slice()]))
            .map_err(internal)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wsp_store::Limits;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_records_pass_the_battery_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.sqlite3");
        let store = SqliteStore::open(&path, Limits::default()).unwrap();
        wsp_store::idempotency::check_records(Arc::new(store.idempotency_records())).await;

        let owner = Owner::parse("t", "w").unwrap();
        let records = store.idempotency_records();
        let r = StoredResponse {
            status: 200,
            headers: vec![("etag".into(), "\"x\"".into())],
            body: b"hello".to_vec(),
        };
        assert_eq!(
            records.claim(&owner, "kept", &[7; 32]).await.unwrap(),
            Claim::Claimed
        );
        records
            .complete(&owner, "kept", &[7; 32], &r)
            .await
            .unwrap();
        drop((records, store));
        let store = SqliteStore::open(&path, Limits::default()).unwrap();
        let records = store.idempotency_records();
        assert_eq!(
            records.claim(&owner, "kept", &[7; 32]).await.unwrap(),
            Claim::Replay(r)
        );
    }
}
