//! Pack approvals in PostgreSQL (`wsp_approvals`), shared by every replica and by
//! `wsp agents approve --store postgres://...`.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use wsp_store::approvals::{Approval, ApprovalRegistry};
use wsp_store::{StoreError, StoreFuture};
use wsp_types::Owner;

use crate::failure::{Attempts, Failure};
use crate::schema::SchemaName;
use crate::{ConnectError, Database, PgOptions, retrying};

/// The approval statements with the schema name filled in.
#[derive(Debug)]
struct ApprovalSql {
    packs: String,
    approve: String,
    revoke: String,
    list: String,
}

impl ApprovalSql {
    fn new(schema: &SchemaName) -> Self {
        Self {
            packs: schema.render(
                "SELECT pack FROM {s}.wsp_approvals WHERE tenant = $1 AND workspace = $2
                 ORDER BY pack",
            ),
            approve: schema.render(
                "INSERT INTO {s}.wsp_approvals (tenant, workspace, pack, approved_at)
                 VALUES ($1, $2, $3, clock_timestamp()) ON CONFLICT DO NOTHING",
            ),
            revoke: schema.render(
                "DELETE FROM {s}.wsp_approvals WHERE tenant = $1 AND workspace = $2 AND pack = $3",
            ),
            list: schema.render(
                "SELECT tenant, workspace, pack, approved_at FROM {s}.wsp_approvals
                 ORDER BY tenant, workspace, pack",
            ),
        }
    }
}

/// An [`ApprovalRegistry`] in the store's PostgreSQL database (table `wsp_approvals` in the
/// configured schema). Every read goes to the table, so an approval made through any replica,
/// or by `wsp agents approve` in another process, counts at once everywhere.
#[derive(Clone)]
pub struct PgApprovals {
    db: Database,
    sql: Arc<ApprovalSql>,
}

impl fmt::Debug for PgApprovals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgApprovals")
            .field("schema", &self.db.schema().as_str())
            .finish_non_exhaustive()
    }
}

impl PgApprovals {
    /// Connects to the database at `url` and migrates its schema, like
    /// [`PgStore::connect`](crate::PgStore::connect), for a process that needs the approvals
    /// only.
    pub async fn connect(url: &str, options: PgOptions) -> Result<Self, ConnectError> {
        Ok(Self::new(Database::connect(url, &options).await?))
    }

    pub(crate) fn new(db: Database) -> Self {
        let sql = Arc::new(ApprovalSql::new(db.schema()));
        Self { db, sql }
    }
}

fn owner_params(owner: &Owner) -> (&str, &str) {
    (owner.tenant.as_str(), owner.workspace.as_str())
}

impl ApprovalRegistry for PgApprovals {
    fn packs<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, BTreeSet<String>> {
        let (tenant, workspace) = owner_params(owner);
        Box::pin(async move {
            retrying!(
                self.db,
                Attempts::read("approvals of an owner"),
                |client| async {
                    let stmt = client.prepare_cached(&self.sql.packs).await?;
                    let rows = client.query(&stmt, &[&tenant, &workspace]).await?;
                    rows.iter()
                        .map(|row| row.try_get::<_, String>(0).map_err(Failure::from))
                        .collect::<Result<BTreeSet<_>, _>>()
                }
            )
        })
    }

    fn approve<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool> {
        let (tenant, workspace) = owner_params(owner);
        Box::pin(async move {
            retrying!(self.db, Attempts::write("approve"), |client| async {
                let stmt = client.prepare_cached(&self.sql.approve).await?;
                let added = client
                    .execute(&stmt, &[&tenant, &workspace, &pack])
                    .await
                    // One statement in autocommit: once sent, it may have committed.
                    .map_err(Failure::Commit)?;
                Ok::<bool, Failure>(added == 1)
            })
        })
    }

    fn revoke<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool> {
        let (tenant, workspace) = owner_params(owner);
        Box::pin(async move {
            retrying!(
                self.db,
                Attempts::write("revoke approval"),
                |client| async {
                    let stmt = client.prepare_cached(&self.sql.revoke).await?;
                    let removed = client
                        .execute(&stmt, &[&tenant, &workspace, &pack])
                        .await
                        .map_err(Failure::Commit)?;
                    Ok::<bool, Failure>(removed == 1)
                }
            )
        })
    }

    fn list(&self) -> StoreFuture<'_, Vec<Approval>> {
        Box::pin(async move {
            retrying!(self.db, Attempts::read("approval list"), |client| async {
                let stmt = client.prepare_cached(&self.sql.list).await?;
                let rows = client.query(&stmt, &[]).await?;
                rows.iter()
                    .map(|row| {
                        let (tenant, workspace): (&str, &str) = (row.try_get(0)?, row.try_get(1)?);
                        let owner = Owner::parse(tenant, workspace).map_err(|_| {
                            Failure::Answer(StoreError::internal(
                                "postgres approval list: a stored approval has an invalid owner",
                            ))
                        })?;
                        Ok(Approval {
                            owner,
                            pack: row.try_get(2)?,
                            approved_at: row.try_get::<_, DateTime<Utc>>(3)?,
                        })
                    })
                    .collect::<Result<Vec<_>, Failure>>()
            })
        })
    }
}
