//! The store operations as SQL, run synchronously on one connection.
//!
//! Every statement names the owner (`tenant = ?1 AND workspace = ?2`) in its WHERE clause or
//! its key. Reads are single statements, so each sees one consistent WAL snapshot; writes run
//! in one `BEGIN IMMEDIATE` transaction each.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, ToSql, TransactionBehavior};
use wsp_store::{
    Deleted, FileMeta, FileWrite, Limits, Precondition, StoreError, StoredFile, new_life_id,
};
use wsp_types::{ETag, LimitKind, Owner, WorkspacePath, WorkspacePrefix};

/// The live file, or with `?4` a retained version of its current life.
const GET: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.content
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = coalesce(?4, f.version)
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path = ?3 AND f.live = 1";

/// Retained versions of the live file's current life, newest first.
const HISTORY: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path = ?3 AND f.live = 1
    ORDER BY v.version DESC";

/// Live files with `?3 <= path < ?4`, in byte order.
const LIST_RANGE: &str = "
    SELECT f.life, f.version, v.content_type, v.author, v.updated_at, v.size, f.path
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = f.version
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.live = 1 AND f.path >= ?3 AND f.path < ?4
    ORDER BY f.path";

/// Live files with `?3 <= path`, in byte order.
const LIST_FROM: &str = "
    SELECT f.life, f.version, v.content_type, v.author, v.updated_at, v.size, f.path
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = f.version
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.live = 1 AND f.path >= ?3
    ORDER BY f.path";

/// The state of one path (live or tombstoned), read inside a write transaction.
const CURRENT: &str = "
    SELECT life, version, live FROM files
    WHERE tenant = ?1 AND workspace = ?2 AND path = ?3";

const LIVE_FILES: &str = "
    SELECT live_files FROM owners WHERE tenant = ?1 AND workspace = ?2";

/// Takes the owner's next change sequence number, counting a created file.
const BUMP_OWNER_FOR_WRITE: &str = "
    INSERT INTO owners (tenant, workspace, seq, live_files) VALUES (?1, ?2, 1, ?3)
    ON CONFLICT (tenant, workspace) DO UPDATE
        SET seq = seq + 1, live_files = live_files + excluded.live_files
    RETURNING seq";

const BUMP_OWNER_FOR_DELETE: &str = "
    UPDATE owners SET seq = seq + 1, live_files = live_files - 1
    WHERE tenant = ?1 AND workspace = ?2
    RETURNING seq";

const SET_LIVE: &str = "
    INSERT INTO files (tenant, workspace, path, life, version, live, seq)
    VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6)
    ON CONFLICT (tenant, workspace, path) DO UPDATE
        SET life = excluded.life, version = excluded.version, live = 1, seq = excluded.seq";

const INSERT_VERSION: &str = "
    INSERT INTO versions
        (tenant, workspace, path, life, version, seq, content_type, author, updated_at, size,
         content)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// Prunes the versions of a life up to and including `?5`.
const PRUNE: &str = "
    DELETE FROM versions
    WHERE tenant = ?1 AND workspace = ?2 AND path = ?3 AND life = ?4 AND version <= ?5";

const SET_TOMBSTONE: &str = "
    UPDATE files SET version = ?4, live = 0, seq = ?5
    WHERE tenant = ?1 AND workspace = ?2 AND path = ?3";

/// Drops every stored version of a path: run at delete, so no earlier life is ever stored.
const PURGE_PATH: &str = "
    DELETE FROM versions WHERE tenant = ?1 AND workspace = ?2 AND path = ?3";

/// Live files whose path starts with `prefix`, sorted by path, without content.
pub(crate) fn list(
    conn: &Connection,
    owner: &Owner,
    prefix: &WorkspacePrefix,
) -> Result<Vec<FileMeta>, StoreError> {
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let start = prefix.as_str();
    let mut files = Vec::new();
    // Pushes a row that matches the prefix; false once past the prefix's range.
    let mut push = |row: &Row<'_>| -> rusqlite::Result<bool> {
        let path: String = row.get(6)?;
        if !path.starts_with(start) {
            return Ok(false);
        }
        files.push(meta(row, parse_path(path)?)?);
        Ok(true)
    };
    let end = prefix_end(start);
    let (sql, params): (&str, Vec<&dyn ToSql>) = match &end {
        Some(end) => (LIST_RANGE, vec![&tenant, &workspace, &start, end]),
        None => (LIST_FROM, vec![&tenant, &workspace, &start]),
    };
    let result = conn.prepare_cached(sql).and_then(|mut stmt| {
        let mut rows = stmt.query(params.as_slice())?;
        while let Some(row) = rows.next()? {
            if !push(row)? {
                break;
            }
        }
        Ok(())
    });
    result.map_err(|e| sqlite_error("list", e))?;
    Ok(files)
}

/// The live file, or a retained version of its current life.
pub(crate) fn get(
    conn: &Connection,
    owner: &Owner,
    path: &WorkspacePath,
    version: Option<u64>,
) -> Result<StoredFile, StoreError> {
    let version = match version.map(i64::try_from) {
        None => None,
        Some(Ok(v)) => Some(v),
        // No stored version is that large.
        Some(Err(_)) => return Err(StoreError::NotFound),
    };
    conn.prepare_cached(GET)
        .and_then(|mut stmt| {
            stmt.query_row(
                (
                    owner.tenant.as_str(),
                    owner.workspace.as_str(),
                    path.as_str(),
                    version,
                ),
                |row| {
                    Ok(StoredFile {
                        meta: meta(row, path.clone())?,
                        content: row.get(6)?,
                    })
                },
            )
            .optional()
        })
        .map_err(|e| sqlite_error("get", e))?
        .ok_or(StoreError::NotFound)
}

/// Retained versions of the live file's current life, newest first.
pub(crate) fn history(
    conn: &Connection,
    owner: &Owner,
    path: &WorkspacePath,
) -> Result<Vec<FileMeta>, StoreError> {
    let versions = conn
        .prepare_cached(HISTORY)
        .and_then(|mut stmt| {
            stmt.query_map(
                (
                    owner.tenant.as_str(),
                    owner.workspace.as_str(),
                    path.as_str(),
                ),
                |row| meta(row, path.clone()),
            )?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| sqlite_error("history", e))?;
    // A live file always has its live version stored, so empty means absent or tombstoned.
    if versions.is_empty() {
        return Err(StoreError::NotFound);
    }
    Ok(versions)
}

/// The state of a path as stored in `files`.
struct Current {
    life: i64,
    version: i64,
    live: bool,
}

impl Current {
    fn live_etag(&self) -> Option<ETag> {
        self.live
            .then(|| ETag::mint(life_id(self.life), self.version as u64))
    }

    fn live_version(&self) -> u64 {
        if self.live { self.version as u64 } else { 0 }
    }
}

fn current(
    conn: &Connection,
    owner: &Owner,
    path: &WorkspacePath,
) -> rusqlite::Result<Option<Current>> {
    conn.prepare_cached(CURRENT)?
        .query_row(
            (
                owner.tenant.as_str(),
                owner.workspace.as_str(),
                path.as_str(),
            ),
            |row| {
                Ok(Current {
                    life: row.get(0)?,
                    version: row.get(1)?,
                    live: row.get(2)?,
                })
            },
        )
        .optional()
}

/// Creates or replaces a file in one immediate transaction: precondition, `maxFiles`, version
/// bump, sequence number and pruning to `max_versions` commit together or not at all.
pub(crate) fn put(
    conn: &mut Connection,
    limits: &Limits,
    owner: &Owner,
    path: &WorkspacePath,
    write: FileWrite,
    precondition: &Precondition,
) -> Result<StoredFile, StoreError> {
    let fail = |e| sqlite_error("put", e);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let state = current(&tx, owner, path).map_err(fail)?;
    let live = state.as_ref().and_then(Current::live_etag);
    if !precondition.admits(live.as_ref()) {
        return Err(StoreError::Conflict {
            current_version: state.as_ref().map_or(0, Current::live_version),
        });
    }
    let (life, version, creating) = match &state {
        Some(s) if s.live => (s.life, s.version + 1, false),
        _ => (new_life_id() as i64, 1, true),
    };
    if creating {
        let live_files: i64 = tx
            .prepare_cached(LIVE_FILES)
            .and_then(|mut stmt| {
                stmt.query_row((tenant, workspace), |row| row.get(0))
                    .optional()
            })
            .map_err(fail)?
            .unwrap_or(0);
        if live_files as u64 >= limits.max_files {
            return Err(StoreError::TooLarge {
                limit: LimitKind::MaxFiles,
                max: limits.max_files,
            });
        }
    }
    let seq: i64 = tx
        .prepare_cached(BUMP_OWNER_FOR_WRITE)
        .and_then(|mut stmt| {
            stmt.query_row((tenant, workspace, i64::from(creating)), |row| row.get(0))
        })
        .map_err(fail)?;
    tx.prepare_cached(SET_LIVE)
        .and_then(|mut stmt| stmt.execute((tenant, workspace, path.as_str(), life, version, seq)))
        .map_err(fail)?;
    let updated_at = now();
    let size = write.content.len() as i64;
    tx.prepare_cached(INSERT_VERSION)
        .and_then(|mut stmt| {
            stmt.execute((
                tenant,
                workspace,
                path.as_str(),
                life,
                version,
                seq,
                write.content_type.as_str(),
                write.author.as_deref(),
                updated_at.timestamp_micros(),
                size,
                write.content.as_str(),
            ))
        })
        .map_err(fail)?;
    let keep = i64::try_from(limits.max_versions.max(1)).unwrap_or(i64::MAX);
    if version > keep {
        tx.prepare_cached(PRUNE)
            .and_then(|mut stmt| {
                stmt.execute((tenant, workspace, path.as_str(), life, version - keep))
            })
            .map_err(fail)?;
    }
    tx.commit().map_err(fail)?;
    let FileWrite {
        content,
        content_type,
        author,
    } = write;
    Ok(StoredFile {
        meta: FileMeta {
            path: path.clone(),
            content_type,
            version: version as u64,
            etag: ETag::mint(life_id(life), version as u64),
            updated_at,
            size: size as u64,
            author,
        },
        content,
    })
}

/// Tombstones the live file in one immediate transaction and drops its stored versions.
pub(crate) fn delete(
    conn: &mut Connection,
    owner: &Owner,
    path: &WorkspacePath,
    precondition: &Precondition,
) -> Result<Deleted, StoreError> {
    let fail = |e| sqlite_error("delete", e);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let state = match current(&tx, owner, path).map_err(fail)? {
        Some(s) if s.live => s,
        _ => return Err(StoreError::NotFound),
    };
    if !precondition.admits(state.live_etag().as_ref()) {
        return Err(StoreError::Conflict {
            current_version: state.live_version(),
        });
    }
    let tombstone = state.version + 1;
    let seq: i64 = tx
        .prepare_cached(BUMP_OWNER_FOR_DELETE)
        .and_then(|mut stmt| stmt.query_row((tenant, workspace), |row| row.get(0)))
        .map_err(fail)?;
    tx.prepare_cached(SET_TOMBSTONE)
        .and_then(|mut stmt| stmt.execute((tenant, workspace, path.as_str(), tombstone, seq)))
        .map_err(fail)?;
    tx.prepare_cached(PURGE_PATH)
        .and_then(|mut stmt| stmt.execute((tenant, workspace, path.as_str())))
        .map_err(fail)?;
    tx.commit().map_err(fail)?;
    Ok(Deleted {
        version: tombstone as u64,
    })
}

/// Metadata from columns 0..=5: life, version, content_type, author, updated_at, size.
fn meta(row: &Row<'_>, path: WorkspacePath) -> rusqlite::Result<FileMeta> {
    let life: i64 = row.get(0)?;
    let version: i64 = row.get(1)?;
    let micros: i64 = row.get(4)?;
    let size: i64 = row.get(5)?;
    Ok(FileMeta {
        path,
        content_type: row.get(2)?,
        version: version as u64,
        etag: ETag::mint(life_id(life), version as u64),
        updated_at: DateTime::from_timestamp_micros(micros)
            .ok_or_else(|| rusqlite::Error::IntegralValueOutOfRange(4, micros))?,
        size: size as u64,
        author: row.get(3)?,
    })
}

fn parse_path(raw: String) -> rusqlite::Result<WorkspacePath> {
    WorkspacePath::parse(&raw).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, e.into())
    })
}

/// A life id as stored (an INTEGER holds the u64 bit pattern).
fn life_id(stored: i64) -> u64 {
    stored as u64
}

/// The current time at the precision stored (microseconds), so what a write returns equals what
/// a later read returns.
fn now() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

/// The least string greater than every string that starts with `prefix`, when there is one
/// that is easy to name: `prefix` with its last character incremented. Prefixes are ASCII
/// (`WorkspacePrefix` allows `A-Z a-z 0-9 . _ / -`), so the increment stays ASCII.
fn prefix_end(prefix: &str) -> Option<String> {
    let last = *prefix.as_bytes().last()?;
    if last >= 0x7f {
        return None;
    }
    let mut end = prefix[..prefix.len() - 1].to_owned();
    end.push(char::from(last + 1));
    Some(end)
}

/// Maps an SQLite failure: busy or locked past the busy timeout is retryable, anything else is
/// internal. The text names the operation and SQLite's reason, never a value that was bound.
fn sqlite_error(op: &str, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => {
            StoreError::Unavailable(format!("sqlite {op}: the database is busy"))
        }
        _ => StoreError::Internal(format!("sqlite {op}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        let cases = [
            ("", None),
            ("a", Some("b")),
            ("notes/", Some("notes0")),
            ("a_", Some("a`")),
            ("a-", Some("a.")),
            ("v.", Some("v/")),
            ("Z", Some("[")),
            ("9", Some(":")),
        ];
        for (prefix, end) in cases {
            assert_eq!(prefix_end(prefix).as_deref(), end, "{prefix:?}");
        }
    }

    /// Every statement finds its rows through a key: no table scan, no sort.
    #[test]
    fn statements_use_the_primary_keys() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::schema::MIGRATIONS[0]).unwrap();
        let statements = [
            GET,
            HISTORY,
            LIST_RANGE,
            LIST_FROM,
            CURRENT,
            LIVE_FILES,
            BUMP_OWNER_FOR_WRITE,
            BUMP_OWNER_FOR_DELETE,
            SET_LIVE,
            INSERT_VERSION,
            PRUNE,
            SET_TOMBSTONE,
            PURGE_PATH,
        ];
        for sql in statements {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
            let plan: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(nulls), |row| row.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            for step in &plan {
                assert!(
                    !step.starts_with("SCAN") && !step.contains("TEMP B-TREE"),
                    "{step} in {sql}"
                );
            }
            assert!(
                !sql.contains("SELECT") || !plan.is_empty(),
                "a query has a plan: {sql}"
            );
        }
    }
}
