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

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS approvals (
    tenant      TEXT NOT NULL,
    workspace   TEXT NOT NULL,
    pack        TEXT NOT NULL,
    approved_at TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, pack)
) STRICT;
";

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
    StoreError::Internal(format!("approvals: {e}"))
}

impl SqliteApprovals {
    /// Opens (creating if needed, readable and writable by its owner alone) the approvals file at
    /// `path`.
    pub fn open(path: &Path) -> Result<Self, crate::OpenError> {
        crate::create_private(path);
        Ok(Self {
            file: SideFile::open(path, SCHEMA, "approvals")?,
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

    #[tokio::test]
    async fn approvals_are_seen_across_handles_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("approvals.sqlite3");
        let cli = SqliteApprovals::open(&file).unwrap();
        let server = SqliteApprovals::open(&file).unwrap();
        let a = Owner::parse("t-a", "w-a").unwrap();
        let b = Owner::parse("t-b", "w-a").unwrap();
        assert!(server.packs(&a).await.unwrap().is_empty());
        assert!(cli.approve(&a, "acme.reviewer").await.unwrap());
        assert!(!cli.approve(&a, "acme.reviewer").await.unwrap());
        assert!(cli.approve(&a, "acme.cook").await.unwrap());
        // The other handle (the running server, in practice) sees the change at once.
        let packs: Vec<String> = server.packs(&a).await.unwrap().into_iter().collect();
        assert_eq!(packs, ["acme.cook", "acme.reviewer"]);
        assert!(server.packs(&b).await.unwrap().is_empty());
        let listed = server.list().await.unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].owner, a);
        assert_eq!(listed[0].pack, "acme.cook");
        assert!(cli.revoke(&a, "acme.cook").await.unwrap());
        assert!(!cli.revoke(&a, "acme.cook").await.unwrap());
        assert_eq!(server.packs(&a).await.unwrap().len(), 1);
        drop((cli, server));
        // Reopening keeps what was stored.
        let again = SqliteApprovals::open(&file).unwrap();
        assert_eq!(again.list().await.unwrap().len(), 1);
    }
}
