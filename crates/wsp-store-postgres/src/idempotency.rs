//! `Idempotency-Key` records in PostgreSQL (`wsp_idempotency`), shared by every replica: a key
//! used through one replica replays through any other, and survives restarts.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use wsp_store::idempotency::{CLAIM_LEASE, Claim, IdempotencyRecords, RECORD_TTL, StoredResponse};
use wsp_store::{StoreError, StoreFuture};
use wsp_types::Owner;

use crate::failure::{Attempts, Failure};
use crate::schema::SchemaName;
use crate::{Database, PgStore, retrying};

/// The statements with the schema name filled in.
#[derive(Debug)]
struct IdemSql {
    claim: String,
    complete: String,
    abandon: String,
    purge: String,
}

impl IdemSql {
    fn new(schema: &SchemaName) -> Self {
        Self {
            // Inserts the claim, or takes over an expired record (a completed one older than
            // the TTL, `$5` seconds, or an unfinished claim older than the lease, `$6`); when
            // neither happened, reads the record that holds the key. The read sees the
            // statement's snapshot: a record committed concurrently may be invisible, and then
            // no row comes back (in progress; the caller looks again).
            claim: schema.render(
                "WITH ins AS (
                    INSERT INTO {s}.wsp_idempotency AS t
                        (tenant, workspace, key, fingerprint, created_at)
                    VALUES ($1, $2, $3, $4, clock_timestamp())
                    ON CONFLICT (tenant, workspace, key) DO UPDATE
                        SET fingerprint = EXCLUDED.fingerprint, created_at = EXCLUDED.created_at,
                            status = NULL, headers = NULL, body = NULL
                        WHERE t.created_at < clock_timestamp() - make_interval(secs =>
                            CASE WHEN t.status IS NULL THEN $6::float8 ELSE $5::float8 END)
                    RETURNING true AS claimed
                 )
                 SELECT true, NULL::bytea, NULL::int4, NULL::text, NULL::bytea FROM ins
                 UNION ALL
                 SELECT false, fingerprint, status, headers, body FROM {s}.wsp_idempotency
                 WHERE tenant = $1 AND workspace = $2 AND key = $3
                   AND NOT EXISTS (SELECT 1 FROM ins)",
            ),
            complete: schema.render(
                "UPDATE {s}.wsp_idempotency
                 SET status = $5, headers = $6, body = $7, created_at = clock_timestamp()
                 WHERE tenant = $1 AND workspace = $2 AND key = $3 AND fingerprint = $4
                   AND status IS NULL",
            ),
            abandon: schema.render(
                "DELETE FROM {s}.wsp_idempotency
                 WHERE tenant = $1 AND workspace = $2 AND key = $3 AND fingerprint = $4
                   AND status IS NULL",
            ),
            purge: schema.render(
                "DELETE FROM {s}.wsp_idempotency
                 WHERE created_at < clock_timestamp() - make_interval(secs => $1::float8)",
            ),
        }
    }
}

/// [`IdempotencyRecords`] in the store's PostgreSQL database, from
/// [`PgStore::idempotency_records`]. Cloning is cheap and shares the store's connections.
#[derive(Clone)]
pub struct PgIdempotency {
    db: Database,
    sql: Arc<IdemSql>,
    ttl: Duration,
    lease: Duration,
}

impl fmt::Debug for PgIdempotency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgIdempotency")
            .field("schema", &self.db.schema().as_str())
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// The `Idempotency-Key` records in this store's database and schema, sharing its
    /// connections: kept [`RECORD_TTL`], unfinished claims leased for [`CLAIM_LEASE`].
    pub fn idempotency_records(&self) -> PgIdempotency {
        let db = self.inner.db.clone();
        PgIdempotency {
            sql: Arc::new(IdemSql::new(db.schema())),
            db,
            ttl: RECORD_TTL,
            lease: CLAIM_LEASE,
        }
    }
}

fn internal(what: impl fmt::Display) -> Failure {
    Failure::Answer(StoreError::internal(format!(
        "postgres idempotency claim: {what}"
    )))
}

impl IdempotencyRecords for PgIdempotency {
    fn claim<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            let (ttl, lease) = (self.ttl.as_secs_f64(), self.lease.as_secs_f64());
            // Now and then, expired records of every owner go.
            if wsp_store::new_life_id().is_multiple_of(256) {
                retrying!(
                    self.db,
                    Attempts::write("idempotency purge"),
                    |client| async {
                        let stmt = client.prepare_cached(&self.sql.purge).await?;
                        client.execute(&stmt, &[&ttl]).await?;
                        Ok::<(), Failure>(())
                    }
                )?;
            }
            retrying!(
                self.db,
                Attempts::write("idempotency claim"),
                |client| async {
                    let stmt = client.prepare_cached(&self.sql.claim).await?;
                    let row = client
                        .query_opt(
                            &stmt,
                            &[
                                &owner.tenant.as_str(),
                                &owner.workspace.as_str(),
                                &key,
                                &fingerprint.as_slice(),
                                &ttl,
                                &lease,
                            ],
                        )
                        .await
                        // Once sent, the claim may have committed: a second try would find it held
                        // (by ourselves) and wait for nothing.
                        .map_err(Failure::Commit)?;
                    let Some(row) = row else {
                        return Ok(Claim::InProgress);
                    };
                    if row.try_get::<_, bool>(0)? {
                        return Ok(Claim::Claimed);
                    }
                    let stored: Vec<u8> = row.try_get(1)?;
                    if stored != fingerprint.as_slice() {
                        return Ok(Claim::Mismatch);
                    }
                    match row.try_get::<_, Option<i32>>(2)? {
                        None => Ok(Claim::InProgress),
                        Some(status) => Ok(Claim::Replay(StoredResponse {
                            status: u16::try_from(status).map_err(internal)?,
                            headers: StoredResponse::decode_headers(
                                &row.try_get::<_, Option<String>>(3)?.unwrap_or_default(),
                            ),
                            body: row.try_get::<_, Option<Vec<u8>>>(4)?.unwrap_or_default(),
                        })),
                    }
                }
            )
        })
    }

    fn complete<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
        response: &'a StoredResponse,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (status, headers) = (i32::from(response.status), response.encode_headers());
            // Repeating it is harmless: a second try matches no unfinished record.
            retrying!(
                self.db,
                Attempts::write("idempotency complete"),
                |client| async {
                    let stmt = client.prepare_cached(&self.sql.complete).await?;
                    client
                        .execute(
                            &stmt,
                            &[
                                &owner.tenant.as_str(),
                                &owner.workspace.as_str(),
                                &key,
                                &fingerprint.as_slice(),
                                &status,
                                &headers,
                                &response.body.as_slice(),
                            ],
                        )
                        .await?;
                    Ok::<(), Failure>(())
                }
            )
        })
    }

    fn abandon<'a>(
        &'a self,
        owner: &'a Owner,
        key: &'a str,
        fingerprint: &'a [u8; 32],
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            retrying!(
                self.db,
                Attempts::write("idempotency abandon"),
                |client| async {
                    let stmt = client.prepare_cached(&self.sql.abandon).await?;
                    client
                        .execute(
                            &stmt,
                            &[
                                &owner.tenant.as_str(),
                                &owner.workspace.as_str(),
                                &key,
                                &fingerprint.as_slice(),
                            ],
                        )
                        .await?;
                    Ok::<(), Failure>(())
                }
            )
        })
    }
}
