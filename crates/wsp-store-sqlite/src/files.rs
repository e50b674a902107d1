//! The store operations as SQL, run synchronously on one connection.
//!
//! Every statement names the owner (`tenant = ?1 AND workspace = ?2`) in its WHERE clause or
//! its key. Reads are single statements, so each sees one consistent WAL snapshot; a write or
//! delete runs in the transaction of its group commit (see the crate's design notes), within a
//! savepoint of its own.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, ToSql};
use wsp_store::write::{self, Current, StoredColumns, prefix_end, stored_life};
use wsp_store::{Deleted, FileMeta, FileWrite, Precondition, StoreError, StoredFile};
use wsp_types::{MediaType, Owner, WorkspacePath, WorkspacePrefix};

use crate::feed::{self, FeedEntry};
use crate::{Changed, Policy};

/// The live file, or with `?4` one of the newest `?5` versions of its current life (older rows
/// an open snapshot keeps are not served).
const GET: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           v.content
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = coalesce(?4, f.version)
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path = ?3 AND f.live = 1
      AND v.version > f.version - ?5";

/// The newest `?4` versions of the live file's current life, newest first.
const HISTORY: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path = ?3 AND f.live = 1
      AND v.version > f.version - ?4
    ORDER BY v.version DESC";

/// Live files with `?3 <= path < ?4`, in byte order.
const LIST_RANGE: &str = "
    SELECT f.life, f.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           f.path
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = f.version
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.live = 1 AND f.path >= ?3 AND f.path < ?4
    ORDER BY f.path";

/// Live files with `?3 <= path`, in byte order.
const LIST_FROM: &str = "
    SELECT f.life, f.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           f.path
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
        (tenant, workspace, path, life, version, seq, deleted, content_type, author, updated_at,
         size, base64, content)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8, ?9, ?10, ?11, ?12)";

const INSERT_TOMBSTONE: &str = "
    INSERT INTO versions (tenant, workspace, path, life, version, seq, deleted, updated_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7)";

/// Drops the rows of life `?4` up to version `?5` that no open snapshot sees. The caller picks
/// `?5` below the history window of the live life; `?6` is the sequence number of the path's
/// newest row, so every candidate has a successor (the first row after it, through
/// `versions_by_seq`), and a snapshot at `s` sees a row exactly when `seq <= s < successor`.
/// (`+v.seq`: the candidates come from the primary key's `life`, `version` range.)
const PRUNE_LIFE: &str = "
    DELETE FROM versions AS v
    WHERE v.tenant = ?1 AND v.workspace = ?2 AND v.path = ?3 AND v.life = ?4
      AND v.version <= ?5 AND +v.seq < ?6
      AND NOT EXISTS (
          SELECT 1 FROM snapshots AS s
          WHERE s.tenant = ?1 AND s.workspace = ?2 AND s.released_at IS NULL
            AND s.seq >= v.seq
            AND s.seq < (
                SELECT min(n.seq) FROM versions AS n
                WHERE n.tenant = ?1 AND n.workspace = ?2 AND n.path = ?3 AND n.seq > v.seq))";

/// Whether the owner has an open snapshot (released ones are many and not in this index).
pub(crate) const ANY_OPEN_SNAPSHOT: &str = "
    SELECT EXISTS (
        SELECT 1 FROM snapshots INDEXED BY snapshots_open
        WHERE tenant = ?1 AND workspace = ?2 AND released_at IS NULL)";

const SET_TOMBSTONE: &str = "
    UPDATE files SET version = ?4, live = 0, seq = ?5
    WHERE tenant = ?1 AND workspace = ?2 AND path = ?3";

/// Drops every row of a path: at a delete that no snapshot can see.
const PURGE_PATH: &str = "
    DELETE FROM versions WHERE tenant = ?1 AND workspace = ?2 AND path = ?3";

/// Forgets a path whose rows are all gone.
const FORGET_PATH: &str = "
    DELETE FROM files WHERE tenant = ?1 AND workspace = ?2 AND path = ?3";

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
        let path: String = row.get(7)?;
        if !path.starts_with(start) {
            return Ok(false);
        }
        files.push(meta(row, parse_path(path, 7)?)?);
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

/// The live file, or one of the newest `keep` versions of its current life.
pub(crate) fn get(
    conn: &Connection,
    owner: &Owner,
    path: &WorkspacePath,
    version: Option<u64>,
    keep: i64,
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
                    keep,
                ),
                |row| {
                    Ok(StoredFile {
                        meta: meta(row, path.clone())?,
                        content: row.get(7)?,
                    })
                },
            )
            .optional()
        })
        .map_err(|e| sqlite_error("get", e))?
        .ok_or(StoreError::NotFound)
}

/// The newest `keep` versions of the live file's current life, newest first.
pub(crate) fn history(
    conn: &Connection,
    owner: &Owner,
    path: &WorkspacePath,
    keep: i64,
) -> Result<Vec<FileMeta>, StoreError> {
    let versions = conn
        .prepare_cached(HISTORY)
        .and_then(|mut stmt| {
            stmt.query_map(
                (
                    owner.tenant.as_str(),
                    owner.workspace.as_str(),
                    path.as_str(),
                    keep,
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

/// The state of a path as stored in `files`: its newest row is `(life, version)`.
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
            |row| Ok(Current::from_stored(row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()
}

/// Runs one owner-and-path statement with extra parameters.
fn exec(
    tx: &Connection,
    sql: &str,
    owner: &Owner,
    path: &WorkspacePath,
    extra: &[&dyn ToSql],
) -> rusqlite::Result<usize> {
    let (tenant, workspace, path) = (
        owner.tenant.as_str(),
        owner.workspace.as_str(),
        path.as_str(),
    );
    let mut params: Vec<&dyn ToSql> = vec![&tenant, &workspace, &path];
    params.extend_from_slice(extra);
    tx.prepare_cached(sql)?.execute(params.as_slice())
}

/// Creates or replaces a file in the caller's transaction: precondition, `maxFiles`, version
/// bump, sequence number, pruning and the change-feed entry commit together or not at all.
pub(crate) fn put(
    tx: &Connection,
    policy: &Policy,
    owner: &Owner,
    path: &WorkspacePath,
    write: FileWrite,
    precondition: &Precondition,
) -> Result<Changed<StoredFile>, StoreError> {
    let fail = |e| sqlite_error("put", e);
    let limits = &policy.limits;
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let state = current(tx, owner, path).map_err(fail)?;
    let live_files: i64 = tx
        .prepare_cached(LIVE_FILES)
        .and_then(|mut stmt| {
            stmt.query_row((tenant, workspace), |row| row.get(0))
                .optional()
        })
        .map_err(fail)?
        .unwrap_or(0);
    let decided = write::decide_put(
        state.as_ref(),
        &write,
        precondition,
        limits,
        live_files as u64,
    )?;
    let (life, version, creating) = (
        stored_life(decided.life),
        decided.version as i64,
        decided.creates,
    );
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
    let size = decided.size as i64;
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
                write.encoding.is_binary(),
                write.content.as_str(),
            ))
        })
        .map_err(fail)?;
    crate::search::index(tx, owner, path, &write).map_err(fail)?;
    if let Some(previous) = &state {
        // The rows the history window no longer covers: those of the live life below it, or,
        // when this write starts a new life, the tombstone (and all) of the previous one.
        let (prune_life, up_to) = if previous.live {
            (life, decided.history_floor as i64)
        } else {
            (stored_life(previous.life), previous.version as i64)
        };
        if up_to >= 1 {
            exec(tx, PRUNE_LIFE, owner, path, &[&prune_life, &up_to, &seq]).map_err(fail)?;
        }
    }
    let event = FeedEntry {
        seq,
        path,
        version,
        deleted: false,
        at: updated_at,
    };
    feed::append(tx, owner, &event, policy.feed_retention).map_err(fail)?;
    Ok(Changed {
        value: decided.stored_file(path, write, updated_at),
        seq: seq as u64,
    })
}

/// Tombstones the live file in the caller's transaction. With no open snapshot of the owner
/// nothing can see the deleted life any more, so the path is forgotten; otherwise a tombstone
/// row is added and the deleted life keeps only the rows an open snapshot sees.
pub(crate) fn delete(
    tx: &Connection,
    policy: &Policy,
    owner: &Owner,
    path: &WorkspacePath,
    precondition: &Precondition,
) -> Result<Changed<Deleted>, StoreError> {
    let fail = |e| sqlite_error("delete", e);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let state = current(tx, owner, path).map_err(fail)?;
    let decided = write::decide_delete(state.as_ref(), precondition)?;
    let (life, last_version) = (stored_life(decided.life), decided.last_version as i64);
    let tombstone = decided.tombstone as i64;
    let seq: i64 = tx
        .prepare_cached(BUMP_OWNER_FOR_DELETE)
        .and_then(|mut stmt| stmt.query_row((tenant, workspace), |row| row.get(0)))
        .map_err(fail)?;
    let at = now();
    let pinned: bool = tx
        .prepare_cached(ANY_OPEN_SNAPSHOT)
        .and_then(|mut stmt| stmt.query_row((tenant, workspace), |row| row.get(0)))
        .map_err(fail)?;
    if pinned {
        let micros = at.timestamp_micros();
        exec(
            tx,
            INSERT_TOMBSTONE,
            owner,
            path,
            &[&life, &tombstone, &seq, &micros],
        )
        .map_err(fail)?;
        exec(tx, SET_TOMBSTONE, owner, path, &[&tombstone, &seq]).map_err(fail)?;
        let up_to = [&life as &dyn ToSql, &last_version, &seq];
        exec(tx, PRUNE_LIFE, owner, path, &up_to).map_err(fail)?;
    } else {
        exec(tx, PURGE_PATH, owner, path, &[]).map_err(fail)?;
        exec(tx, FORGET_PATH, owner, path, &[]).map_err(fail)?;
    }
    crate::search::unindex(tx, owner, path).map_err(fail)?;
    let event = FeedEntry {
        seq,
        path,
        version: tombstone,
        deleted: true,
        at,
    };
    feed::append(tx, owner, &event, policy.feed_retention).map_err(fail)?;
    Ok(Changed {
        value: Deleted {
            version: tombstone as u64,
        },
        seq: seq as u64,
    })
}

/// Metadata from columns 0..=6: life, version, content_type, author, updated_at, size, base64.
pub(crate) fn meta(row: &Row<'_>, path: WorkspacePath) -> rusqlite::Result<FileMeta> {
    let micros: i64 = row.get(4)?;
    Ok(write::file_meta(
        path,
        StoredColumns {
            life: row.get(0)?,
            version: row.get(1)?,
            content_type: media_type(row.get(2)?, 2)?,
            author: row.get(3)?,
            updated_at: time(micros, 4)?,
            size: row.get(5)?,
            base64: row.get(6)?,
        },
    ))
}

/// A stored media type read from result column `column`.
pub(crate) fn media_type(text: String, column: usize) -> rusqlite::Result<MediaType> {
    MediaType::parse(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// A stored time (microseconds since the epoch) read from result column `column`.
pub(crate) fn time(micros: i64, column: usize) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros)
        .ok_or(rusqlite::Error::IntegralValueOutOfRange(column, micros))
}

/// A stored path read from result column `column`.
pub(crate) fn parse_path(raw: String, column: usize) -> rusqlite::Result<WorkspacePath> {
    WorkspacePath::parse(&raw).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, e.into())
    })
}

/// The current time at the precision stored (microseconds), so what a write returns equals what
/// a later read returns.
pub(crate) fn now() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

/// Maps an SQLite failure: busy or locked past the busy timeout is retryable, anything else is
/// internal. The text names the operation and SQLite's reason, never a value that was bound.
pub(crate) fn sqlite_error(op: &str, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => {
            StoreError::unavailable_from(format!("sqlite {op}: the database is busy"), e)
        }
        _ => StoreError::internal_from(format!("sqlite {op}: {e}"), e),
    }
}

#[cfg(test)]
pub(crate) const STATEMENTS: &[&str] = &[
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
    INSERT_TOMBSTONE,
    PRUNE_LIFE,
    ANY_OPEN_SNAPSHOT,
    SET_TOMBSTONE,
    PURGE_PATH,
    FORGET_PATH,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement finds its rows through a key: no table scan, no sort.
    #[test]
    fn statements_use_the_primary_keys() {
        let conn = Connection::open_in_memory().unwrap();
        for migration in crate::schema::MIGRATIONS {
            conn.execute_batch(migration).unwrap();
        }
        let statements = STATEMENTS
            .iter()
            .chain(crate::feed::STATEMENTS)
            .chain(crate::snapshots::STATEMENTS)
            .copied();
        for sql in statements {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
            let plan: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(nulls), |row| row.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            if std::env::var_os("WSP_SHOW_PLANS").is_some() {
                eprintln!("{sql}\n  {}", plan.join("\n  "));
            }
            for step in &plan {
                // A SELECT without FROM "scans" its one constant row.
                let scan = step.starts_with("SCAN")
                    && step != "SCAN CONSTANT ROW"
                    && !crate::snapshots::BOUNDED_SCANS.contains(&(sql, step.as_str()));
                assert!(!scan && !step.contains("TEMP B-TREE"), "{step} in {sql}");
            }
            assert!(
                !sql.contains("SELECT") || !plan.is_empty(),
                "a query has a plan: {sql}"
            );
            let expected = [
                (PRUNE_LIFE, "INDEX snapshots_open"),
                (PRUNE_LIFE, "life=? AND version<?"),
                (ANY_OPEN_SNAPSHOT, "INDEX snapshots_open"),
            ]
            .iter()
            .chain(crate::snapshots::EXPECTED_INDEXES)
            .filter(|(s, _)| *s == sql);
            for (_, index) in expected {
                assert!(
                    plan.iter().any(|step| step.contains(index)),
                    "{index} not in {plan:?} of {sql}"
                );
            }
        }
    }
}
