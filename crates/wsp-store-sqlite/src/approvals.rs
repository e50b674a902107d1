//! Pack approvals in SQLite (`<data dir>/approvals.sqlite3`), shared by `wsp serve` and
//! `wsp agents approve|revoke`.

use std::collections::BTreeSet;
use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};
use wsp_store::approvals::{Approval, ApprovalRegistry};
use wsp_store::{StoreError, StoreFuture};
use wsp_types::Owner;

use crate::side_file::SideFile;

/// Every migration of the approvals file, in order (see `SideFile::open`); appended, never edited
/// (`migrations.sha256` holds their checksums). Version 1 is the table the file always had, so
/// a file created before it was versioned adopts it unchanged.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the approvals table.
    "
CREATE TABLE IF NOT EXISTS approvals (
    tenant      TEXT NOT NULL,
    workspace   TEXT NOT NULL,
    pack        TEXT NOT NULL,
    approved_at TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, pack)
) STRICT;
",
];

/// An [`ApprovalRegistry`] in its own SQLite file. Another process (`wsp agents approve`) may
/// change it while a server runs; every read goes to the file, so a change counts at once.
#[derive(Clone)]
pub struct SqliteApprovals {
    file: SideFile,
}

impl std::fmt::Debug for SqliteApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteApprovals").finish_non_exhaustive()
    }
}

fn internal(e: impl std::fmt::Display) -> StoreError {
    StoreError::internal(format!("approvals: {e}"))
}

impl SqliteApprovals {
    /// Opens (creating if needed, readable and writable by its owner alone) the approvals file at
    /// `path`.
    pub fn open(path: &Path) -> Result<Self, crate::OpenError> {
        crate::create_private(path);
        Ok(Self {
            file: SideFile::open(path, MIGRATIONS, "approvals")?,
        })
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        self.file.run(f)
    }
}

impl ApprovalRegistry for SqliteApprovals {
    fn packs<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, BTreeSet<String>> {
        let (tenant, workspace) = (owner.tenant.to_string(), owner.workspace.to_string());
        self.run(move |c| {
            let mut stmt = c
                .prepare_cached("SELECT pack FROM approvals WHERE tenant = ?1 AND workspace = ?2")
                .map_err(internal)?;
            let rows = stmt
                .query_map(params![tenant, workspace], |r| r.get::<_, String>(0))
                .map_err(internal)?;
            rows.map(|r| r.map_err(internal)).collect()
        })
    }

    fn approve<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool> {
        let (tenant, workspace) = (owner.tenant.to_string(), owner.workspace.to_string());
        let pack = pack.to_owned();
        self.run(move |c| {
            let n = c
                .execute(
                    "INSERT OR IGNORE INTO approvals (tenant, workspace, pack, approved_at) \
                     VALUES (?1, ?2, ?3, ?4)",
                    params![tenant, workspace, pack, Utc::now().to_rfc3339()],
                )
                .map_err(internal)?;
            Ok(n == 1)
        })
    }

    fn revoke<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool> {
        let (tenant, workspace) = (owner.tenant.to_string(), owner.workspace.to_string());
        let pack = pack.to_owned();
        self.run(move |c| {
            let n = c
                .execute(
                    "DELETE FROM approvals WHERE tenant = ?1 AND workspace = ?2 AND pack = ?3",
                    params![tenant, workspace, pack],
                )
                .map_err(internal)?;
            Ok(n == 1)
        })
    }

    fn list(&self) -> StoreFuture<'_, Vec<Approval>> {
        self.run(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT tenant, workspace, pack, approved_at FROM approvals \
                     ORDER BY tenant, workspace, pack",
                )
                .map_err(internal)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(internal)?;
            rows.map(|row| {
                let (tenant, workspace, pack, at) = row.map_err(internal)?;
                Ok(Approval {
                    owner: Owner::parse(&tenant, &workspace).map_err(internal)?,
                    pack,
                    approved_at: DateTime::parse_from_rfc3339(&at)
                        .map_err(internal)?
                        .with_timezone(&Utc),
                })
            })
            .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the shared suite (`tests/it/registries.rs`) does not check: approvals outlive the
    /// handle that stored them.
    #[tokio::test]
    async fn approvals_outlive_their_handle() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("approvals.sqlite3");
        let cli = SqliteApprovals::open(&file).unwrap();
        let a = Owner::parse("t-a", "w-a").unwrap();
        assert!(cli.packs(&a).await.unwrap().is_empty());
        assert!(cli.approve(&a, "acme.reviewer").await.unwrap());
        assert!(cli.approve(&a, "acme.cook").await.unwrap());
        assert!(cli.revoke(&a, "acme.cook").await.unwrap());
        drop(cli);
        let again = SqliteApprovals::open(&file).unwrap();
        assert_eq!(again.list().await.unwrap().len(), 1);
    }
}
