//! The store operations as SQL, run synchronously on one connection.
//!
//! Every statement names the owner (`tenant = ?1 AND workspace = ?2`) in its WHERE clause or
//! its key. Reads are single statements, so each sees one consistent WAL snapshot; writes run
//! in one `BEGIN IMMEDIATE` transaction each.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, ToSql, TransactionBehavior};
use wsp_store::{Deleted, FileMeta, FileWrite, Precondition, StoreError, StoredFile, new_life_id};
use wsp_types::{ETag, LimitKind, Owner, WorkspacePath, WorkspacePrefix};

use crate::feed::{self, FeedEntry};
use crate::{Committed, Policy};

/// The live file, or with `?4` one of the newest `?5` versions of its current life (older rows
/// an open snapshot keeps are not served).
const GET: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.content
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = coalesce(?4, f.version)
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path = ?3 AND f.live = 1
      AND v.version > f.version - ?5";

/// The newest `?4` versions of the live file's current life, newest first.
const HISTORY: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path = ?3 AND f.live = 1
      AND v.version > f.version - ?4
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
        (tenant, workspace, path, life, version, seq, deleted, content_type, author, updated_at,
         size, content)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8, ?9, ?10, ?11)";

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
        let path: String = row.get(6)?;
        if !path.starts_with(start) {
            return Ok(false);
        }
        files.push(meta(row, parse_path(path, 6)?)?);
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
                        content: row.get(6)?,
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

/// Creates or replaces a file in one immediate transaction: precondition, `maxFiles`, version
/// bump, sequence number, pruning and the change-feed entry commit together or not at all.
pub(crate) fn put(
    conn: &mut Connection,
    policy: &Policy,
    owner: &Owner,
    path: &WorkspacePath,
    write: FileWrite,
    precondition: &Precondition,
) -> Result<Committed<StoredFile>, StoreError> {
    let fail = |e| sqlite_error("put", e);
    let limits = &policy.limits;
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
    if let Some(previous) = &state {
        // The rows the history window no longer covers: those of the live life below it, or,
        // when this write starts a new life, the tombstone (and all) of the previous one.
        let (prune_life, up_to) = if previous.live {
            (life, version - policy.keep())
        } else {
            (previous.life, previous.version)
        };
        if up_to >= 1 {
            exec(&tx, PRUNE_LIFE, owner, path, &[&prune_life, &up_to, &seq]).map_err(fail)?;
        }
    }
    let event = FeedEntry {
        seq,
        path,
        version,
        deleted: false,
        at: updated_at,
    };
    feed::append(&tx, owner, &event, policy.feed_retention).map_err(fail)?;
    tx.commit().map_err(fail)?;
    let FileWrite {
        content,
        content_type,
        author,
    } = write;
    Ok(Committed {
        value: StoredFile {
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
        },
        seq: seq as u64,
    })
}

/// Tombstones the live file in one immediate transaction. With no open snapshot of the owner
/// nothing can see the deleted life any more, so the path is forgotten; otherwise a tombstone
/// row is added and the deleted life keeps only the rows an open snapshot sees.
pub(crate) fn delete(
    conn: &mut Connection,
    policy: &Policy,
    owner: &Owner,
    path: &WorkspacePath,
    precondition: &Precondition,
) -> Result<Committed<Deleted>, StoreError> {
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
    let at = now();
    let pinned: bool = tx
        .prepare_cached(ANY_OPEN_SNAPSHOT)
        .and_then(|mut stmt| stmt.query_row((tenant, workspace), |row| row.get(0)))
        .map_err(fail)?;
    if pinned {
        let micros = at.timestamp_micros();
        exec(
            &tx,
            INSERT_TOMBSTONE,
            owner,
            path,
            &[&state.life, &tombstone, &seq, &micros],
        )
        .map_err(fail)?;
        exec(&tx, SET_TOMBSTONE, owner, path, &[&tombstone, &seq]).map_err(fail)?;
        let up_to = [&state.life as &dyn ToSql, &state.version, &seq];
        exec(&tx, PRUNE_LIFE, owner, path, &up_to).map_err(fail)?;
    } else {
        exec(&tx, PURGE_PATH, owner, path, &[]).map_err(fail)?;
        exec(&tx, FORGET_PATH, owner, path, &[]).map_err(fail)?;
    }
    let event = FeedEntry {
        seq,
        path,
        version: tombstone,
        deleted: true,
        at,
    };
    feed::append(&tx, owner, &event, policy.feed_retention).map_err(fail)?;
    tx.commit().map_err(fail)?;
    Ok(Committed {
        value: Deleted {
            version: tombstone as u64,
        },
        seq: seq as u64,
    })
}

/// Metadata from columns 0..=5: life, version, content_type, author, updated_at, size.
pub(crate) fn meta(row: &Row<'_>, path: WorkspacePath) -> rusqlite::Result<FileMeta> {
    let life: i64 = row.get(0)?;
    let version: i64 = row.get(1)?;
    let micros: i64 = row.get(4)?;
    let size: i64 = row.get(5)?;
    Ok(FileMeta {
        path,
        content_type: row.get(2)?,
        version: version as u64,
        etag: ETag::mint(life_id(life), version as u64),
        updated_at: time(micros, 4)?,
        size: size as u64,
        author: row.get(3)?,
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

/// A life id as stored (an INTEGER holds the u64 bit pattern).
pub(crate) fn life_id(stored: i64) -> u64 {
    stored as u64
}

/// The current time at the precision stored (microseconds), so what a write returns equals what
/// a later read returns.
pub(crate) fn now() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

/// The least string greater than every string that starts with `prefix`, when there is one
/// that is easy to name: `prefix` with its last character incremented. Prefixes are ASCII
/// (`WorkspacePrefix` allows `A-Z a-z 0-9 . _ / -`), so the increment stays ASCII.
pub(crate) fn prefix_end(prefix: &str) -> Option<String> {
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
pub(crate) fn sqlite_error(op: &str, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => {
            StoreError::Unavailable(format!("sqlite {op}: the database is busy"))
        }
        _ => StoreError::Internal(format!("sqlite {op}: {e}")),
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
                let scan = step.starts_with("SCAN") && step != "SCAN CONSTANT ROW";
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
