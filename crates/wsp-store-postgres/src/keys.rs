//! API key records in PostgreSQL (`wsp_keys`), shared by every replica and by `wsp keys`.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use wsp_store::keys::{KeyRecord, KeyRegistry};
use wsp_store::{StoreError, StoreFuture};
use wsp_types::{Owner, Scopes};

use crate::failure::{Attempts, Failure};
use crate::schema::SchemaName;
use crate::{ConnectError, Database, PgOptions, retrying};

const COLUMNS: &str =
    "id, secret_hash, tenant, workspace, principal, scopes, agent, created_at, revoked_at";

/// The key statements with the schema name filled in.
#[derive(Debug)]
struct KeySql {
    lookup: String,
    insert: String,
    lock: String,
    insert_first: String,
    list: String,
    revoke: String,
}

impl KeySql {
    fn new(schema: &SchemaName) -> Self {
        Self {
            lookup: schema.render(&format!(
                "SELECT {COLUMNS} FROM {{s}}.wsp_keys WHERE id = $1"
            )),
            insert: schema.render(&format!(
                "INSERT INTO {{s}}.wsp_keys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            )),
            // Conflicts with itself (and with any insert): one first-key insert at a time,
            // each seeing what the one before it committed.
            lock: schema.render("LOCK TABLE {s}.wsp_keys IN SHARE ROW EXCLUSIVE MODE"),
            insert_first: schema.render(&format!(
                "INSERT INTO {{s}}.wsp_keys ({COLUMNS})
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
                 WHERE NOT EXISTS (SELECT 1 FROM {{s}}.wsp_keys)"
            )),
            list: schema.render(&format!(
                "SELECT {COLUMNS} FROM {{s}}.wsp_keys ORDER BY created_at, id"
            )),
            revoke: schema.render(
                "UPDATE {s}.wsp_keys SET revoked_at = coalesce(revoked_at, clock_timestamp())
                 WHERE id = $1",
            ),
        }
    }
}

/// A [`KeyRegistry`] in the store's PostgreSQL database (table `wsp_keys` in the configured
/// schema). Every lookup reads the table, so a key inserted through any replica, or by `wsp keys`
/// in another process, works at once everywhere.
///
/// Timestamps are stored with microsecond precision (PostgreSQL's `timestamptz`), so a record read
/// back has `created_at` truncated to the microsecond.
#[derive(Clone)]
pub struct PgKeyRegistry {
    db: Database,
    sql: Arc<KeySql>,
}

impl fmt::Debug for PgKeyRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgKeyRegistry")
            .field("schema", &self.db.schema().as_str())
            .finish_non_exhaustive()
    }
}

impl PgKeyRegistry {
    /// Connects to the database at `url` and migrates its schema, like
    /// [`PgStore::connect`](crate::PgStore::connect), for a process that needs the keys only.
    pub async fn connect(url: &str, options: PgOptions) -> Result<Self, ConnectError> {
        Ok(Self::new(Database::connect(url, &options).await?))
    }

    pub(crate) fn new(db: Database) -> Self {
        let sql = Arc::new(KeySql::new(db.schema()));
        Self { db, sql }
    }
}

fn internal(op: &str, what: impl fmt::Display) -> Failure {
    Failure::Answer(StoreError::internal(format!("postgres {op}: {what}")))
}

fn record(row: &Row) -> Result<KeyRecord, Failure> {
    let hash: Vec<u8> = row.try_get(1)?;
    let secret_hash: [u8; 32] = hash
        .try_into()
        .map_err(|_| internal("key lookup", "a stored key hash is not 32 bytes"))?;
    let tenant: &str = row.try_get(2)?;
    let workspace: &str = row.try_get(3)?;
    let owner = Owner::parse(tenant, workspace)
        .map_err(|_| internal("key lookup", "a stored key has an invalid owner"))?;
    let scopes: &str = row.try_get(5)?;
    let scopes = if scopes.is_empty() {
        Scopes::NONE
    } else {
        Scopes::parse(scopes)
            .map_err(|_| internal("key lookup", "a stored key has invalid scopes"))?
    };
    Ok(KeyRecord {
        id: row.try_get(0)?,
        secret_hash,
        owner,
        principal: row.try_get(4)?,
        scopes,
        agent: row.try_get(6)?,
        created_at: row.try_get::<_, DateTime<Utc>>(7)?,
        revoked_at: row.try_get::<_, Option<DateTime<Utc>>>(8)?,
    })
}

/// Runs the insert statement `sql` (`$1`..`$9` in [`COLUMNS`] order) for `r`: the rows inserted.
async fn insert_row(
    client: &impl GenericClient,
    sql: &str,
    r: &KeyRecord,
) -> Result<u64, tokio_postgres::Error> {
    let stmt = client.prepare_cached(sql).await?;
    client
        .execute(
            &stmt,
            &[
                &r.id,
                &r.secret_hash.as_slice(),
                &r.owner.tenant.as_str(),
                &r.owner.workspace.as_str(),
                &r.principal,
                &r.scopes.to_string(),
                &r.agent,
                &r.created_at,
                &r.revoked_at,
            ],
        )
        .await
}

impl KeyRegistry for PgKeyRegistry {
    fn lookup<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<KeyRecord>> {
        Box::pin(async move {
            retrying!(self.db, Attempts::read("key lookup"), |client| async {
                let stmt = client.prepare_cached(&self.sql.lookup).await?;
                match client.query_opt(&stmt, &[&id]).await? {
                    Some(row) => record(&row).map(Some),
                    None => Ok(None),
                }
            })
        })
    }

    fn insert(&self, r: KeyRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            retrying!(self.db, Attempts::write("key insert"), |client| async {
                insert_row(&client, &self.sql.insert, &r)
                    .await
                    // One statement in autocommit: once sent, it may have committed, and a
                    // second try would fail on the duplicate id.
                    .map_err(Failure::Commit)?;
                Ok::<(), Failure>(())
            })
        })
    }

    fn insert_first(&self, r: KeyRecord) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            retrying!(
                self.db,
                Attempts::write("first key insert"),
                |client| async {
                    let tx = client.transaction().await?;
                    tx.batch_execute(&self.sql.lock).await?;
                    let stored = insert_row(&tx, &self.sql.insert_first, &r).await?;
                    // Once sent, the commit may have happened: not retried.
                    tx.commit().await.map_err(Failure::Commit)?;
                    Ok::<bool, Failure>(stored == 1)
                }
            )
        })
    }

    fn list(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        Box::pin(async move {
            retrying!(self.db, Attempts::read("key list"), |client| async {
                let stmt = client.prepare_cached(&self.sql.list).await?;
                let rows = client.query(&stmt, &[]).await?;
                rows.iter().map(record).collect::<Result<Vec<_>, _>>()
            })
        })
    }

    fn revoke<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            retrying!(self.db, Attempts::write("key revoke"), |client| async {
                let stmt = client.prepare_cached(&self.sql.revoke).await?;
                match client.execute(&stmt, &[&id]).await? {
                    0 => Err(Failure::Answer(StoreError::NotFound)),
                    _ => Ok(()),
                }
            })
        })
    }
}
