//! API key records in SQLite (`<data dir>/keys.sqlite3`), shared by `wsp serve` and `wsp keys`.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use wsp_store::keys::{KeyRecord, KeyRegistry};
use wsp_store::{StoreError, StoreFuture};
use wsp_types::{Owner, Scopes};

use crate::side_file::SideFile;

/// Every migration of the keys file, in order (see `SideFile::open`); appended, never edited
/// (`migrations.sha256` holds their checksums). Version 1 is the table the file always had, so
/// a file created before it was versioned adopts it unchanged.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the keys table.
    "
CREATE TABLE IF NOT EXISTS keys (
    id          TEXT PRIMARY KEY,
    secret_hash BLOB NOT NULL,
    tenant      TEXT NOT NULL,
    workspace   TEXT NOT NULL,
    principal   TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    agent       TEXT,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
) STRICT;
",
];

/// A [`KeyRegistry`] in its own SQLite file. Another process (`wsp keys create`) may add keys
/// while a server runs; each lookup reads the file, so a new key works at once.
#[derive(Clone)]
pub struct SqliteKeyRegistry {
    file: SideFile,
}

impl std::fmt::Debug for SqliteKeyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteKeyRegistry").finish_non_exhaustive()
    }
}

fn internal(e: impl std::fmt::Display) -> StoreError {
    StoreError::internal(format!("key registry: {e}"))
}

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<KeyRecord, String>> {
    let id: String = row.get(0)?;
    let hash: Vec<u8> = row.get(1)?;
    let (tenant, workspace): (String, String) = (row.get(2)?, row.get(3)?);
    let principal: String = row.get(4)?;
    let scopes: String = row.get(5)?;
    let agent: Option<String> = row.get(6)?;
    let created: String = row.get(7)?;
    let revoked: Option<String> = row.get(8)?;
    Ok((|| {
        let secret_hash: [u8; 32] = hash.try_into().map_err(|_| "bad hash length".to_owned())?;
        let owner = Owner::parse(&tenant, &workspace).map_err(|e| e.to_string())?;
        let scopes = if scopes.is_empty() {
            Scopes::NONE
        } else {
            Scopes::parse(&scopes).map_err(|e| e.to_string())?
        };
        let time = |s: &str| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| e.to_string())
        };
        Ok(KeyRecord {
            id,
            secret_hash,
            owner,
            principal,
            scopes,
            agent,
            created_at: time(&created)?,
            revoked_at: revoked.as_deref().map(time).transpose()?,
        })
    })())
}

const COLUMNS: &str =
    "id, secret_hash, tenant, workspace, principal, scopes, agent, created_at, revoked_at";

impl SqliteKeyRegistry {
    /// Opens (creating if needed, readable and writable by its owner alone) the key file at
    /// `path`.
    pub fn open(path: &Path) -> Result<Self, crate::OpenError> {
        crate::create_private(path);
        Ok(Self {
            file: SideFile::open(path, MIGRATIONS, "key registry")?,
        })
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        self.file.run(f)
    }
}

/// `INSERT INTO keys (...) <source>` with `r` bound to `?1`..`?9`: the rows inserted.
fn insert_row(c: &Connection, r: &KeyRecord, source: &str) -> Result<usize, StoreError> {
    c.execute(
        &format!("INSERT INTO keys ({COLUMNS}) {source}"),
        params![
            r.id,
            r.secret_hash.as_slice(),
            r.owner.tenant.as_str(),
            r.owner.workspace.as_str(),
            r.principal,
            r.scopes.to_string(),
            r.agent,
            r.created_at.to_rfc3339(),
            r.revoked_at.map(|t| t.to_rfc3339()),
        ],
    )
    .map_err(internal)
}

impl KeyRegistry for SqliteKeyRegistry {
    fn lookup<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<KeyRecord>> {
        let id = id.to_owned();
        self.run(move |c| {
            let row = c
                .prepare_cached(&format!("SELECT {COLUMNS} FROM keys WHERE id = ?1"))
                .and_then(|mut s| s.query_row([&id], from_row).optional())
                .map_err(internal)?;
            row.transpose().map_err(internal)
        })
    }

    fn insert(&self, r: KeyRecord) -> StoreFuture<'_, ()> {
        self.run(move |c| {
            insert_row(c, &r, "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")?;
            Ok(())
        })
    }

    fn insert_first(&self, r: KeyRecord) -> StoreFuture<'_, bool> {
        // One write statement, which takes the file's write lock before it reads: no other
        // writer, in this process or another, can insert between the check and the insert.
        self.run(move |c| {
            let stored = insert_row(
                c,
                &r,
                "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 WHERE NOT EXISTS (SELECT 1 FROM keys)",
            )?;
            Ok(stored == 1)
        })
    }

    fn list(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        self.run(|c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM keys ORDER BY created_at, id"
                ))
                .map_err(internal)?;
            let rows = stmt.query_map([], from_row).map_err(internal)?;
            rows.map(|r| r.map_err(internal)?.map_err(internal))
                .collect()
        })
    }

    fn revoke<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let id = id.to_owned();
        self.run(move |c| {
            let n = c
                .execute(
                    "UPDATE keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
                    params![id, Utc::now().to_rfc3339()],
                )
                .map_err(internal)?;
            if n == 0 {
                Err(StoreError::NotFound)
            } else {
                Ok(())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_store::keys::ApiKey;

    /// What the shared suite (`tests/it/registries.rs`) does not check: the file never holds
    /// the plaintext secret.
    #[tokio::test]
    async fn the_file_holds_no_plaintext_secret() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys.sqlite3");
        let registry = SqliteKeyRegistry::open(&file).unwrap();
        let key = ApiKey::generate();
        let record = KeyRecord::new(
            &key,
            Owner::parse("t", "w").unwrap(),
            "alice".into(),
            Scopes::parse("workspace:read").unwrap(),
        );
        registry.insert(record).await.unwrap();
        // The file never holds the plaintext secret.
        drop(registry);
        let bytes = std::fs::read(&file).unwrap();
        let secret = key.expose();
        let secret = secret.rsplit('_').next().unwrap().as_bytes();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret));
    }
}
