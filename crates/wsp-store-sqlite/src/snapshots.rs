//! Run-start snapshots: a row that pins an owner's change sequence number, and reads as of it.
//!
//! Taking a snapshot is one INSERT that reads `owners.seq`; it copies nothing. A read through
//! a snapshot at sequence number `s` takes, for each path, the newest row with `seq <= s` (a
//! version, or a tombstone that hides the path). Pruning keeps such rows while the snapshot is
//! open (see `PRUNE_LIFE` in `files`); releasing it drops the rows only it still needed.
//! What open snapshots keep beyond history is counted by `PINNED_BYTES`, and a bounded snapshot
//! checks that count and the number open in the transaction that inserts it.

use rusqlite::{Connection, OptionalExtension, Row, ToSql, TransactionBehavior};
use wsp_store::write::prefix_end;
use wsp_store::{
    FileMeta, QuotaExceeded, SnapshotCursor, SnapshotId, SnapshotInfo, SnapshotLabel,
    SnapshotQuota, SnapshotUsage, StoreError, StoredFile,
};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

use crate::files::{ANY_OPEN_SNAPSHOT, meta, now, parse_path, sqlite_error, time};

/// Pins the owner's current sequence number (0 when it never changed anything).
const TAKE: &str = "
    INSERT INTO snapshots (tenant, workspace, id, seq, label, created_at)
    VALUES (?1, ?2, ?3,
            coalesce((SELECT seq FROM owners WHERE tenant = ?1 AND workspace = ?2), 0),
            ?4, ?5)
    RETURNING seq";

const INFO: &str = "
    SELECT seq, label, created_at, released_at, outcome FROM snapshots
    WHERE tenant = ?1 AND workspace = ?2 AND id = ?3";

const OPEN_SEQ: &str = "
    SELECT seq FROM snapshots
    WHERE tenant = ?1 AND workspace = ?2 AND id = ?3 AND released_at IS NULL";

/// The owner's newest `?3` snapshots, newest first (through `snapshots_by_time`).
const LIST_NEWEST: &str = "
    SELECT seq, label, created_at, released_at, outcome, id FROM snapshots
    WHERE tenant = ?1 AND workspace = ?2
    ORDER BY created_at DESC, id DESC
    LIMIT ?3";

/// The owner's `?5` snapshots after the one taken at `?3` (microseconds) with id `?4`, newest
/// first.
const LIST_AFTER: &str = "
    SELECT seq, label, created_at, released_at, outcome, id FROM snapshots
    WHERE tenant = ?1 AND workspace = ?2 AND (created_at, id) < (?3, ?4)
    ORDER BY created_at DESC, id DESC
    LIMIT ?5";

/// Open snapshots of every owner taken before `?1` (microseconds), oldest first, `?2` at most.
const OPEN_BEFORE: &str = "
    SELECT seq, label, created_at, released_at, outcome, tenant, workspace, id FROM snapshots
    WHERE released_at IS NULL AND created_at < ?1
    ORDER BY created_at, id
    LIMIT ?2";

/// Deletes the records of snapshots released before `?1` (microseconds), oldest release first,
/// `?2` at most.
const FORGET_RELEASED: &str = "
    DELETE FROM snapshots WHERE (tenant, workspace, id) IN (
        SELECT tenant, workspace, id FROM snapshots
        WHERE released_at IS NOT NULL AND released_at < ?1
        ORDER BY released_at, id
        LIMIT ?2)";

/// Releases an open snapshot; no row when it is unknown or already released.
const RELEASE: &str = "
    UPDATE snapshots SET released_at = ?4, outcome = ?5
    WHERE tenant = ?1 AND workspace = ?2 AND id = ?3 AND released_at IS NULL
    RETURNING seq, label, created_at";

/// Drops the rows that the released snapshot at `?3` saw and that a later change superseded
/// (one per path changed since: `files.seq > ?3`), unless another open snapshot sees them too
/// or they are among the newest `?4` versions of their path's live life.
const PRUNE_RELEASED: &str = "
    DELETE FROM versions AS v
    WHERE v.rowid IN (
          SELECT (
              SELECT w.rowid FROM versions AS w
              WHERE w.tenant = ?1 AND w.workspace = ?2 AND w.path = f.path AND w.seq <= ?3
              ORDER BY w.seq DESC
              LIMIT 1)
          FROM files AS f
          WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.seq > ?3)
      AND NOT EXISTS (
          SELECT 1 FROM snapshots AS s
          WHERE s.tenant = ?1 AND s.workspace = ?2 AND s.released_at IS NULL
            AND s.seq >= v.seq
            AND s.seq < (
                SELECT min(n.seq) FROM versions AS n
                WHERE n.tenant = ?1 AND n.workspace = ?2 AND n.path = v.path
                  AND n.seq > v.seq))
      AND NOT EXISTS (
          SELECT 1 FROM files AS f
          WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path = v.path AND f.live = 1
            AND f.life = v.life AND v.version > f.version - ?4)";

/// The rows of deleted paths: once no snapshot is open, nothing can see them.
const FORGET_TOMBSTONED_ROWS: &str = "
    DELETE FROM versions
    WHERE tenant = ?1 AND workspace = ?2 AND path IN (
        SELECT path FROM files INDEXED BY files_tombstoned
        WHERE tenant = ?1 AND workspace = ?2 AND live = 0)";

const FORGET_TOMBSTONED_FILES: &str = "
    DELETE FROM files INDEXED BY files_tombstoned
    WHERE tenant = ?1 AND workspace = ?2 AND live = 0";

/// The owner's open snapshots.
const OPEN_COUNT: &str = "
    SELECT count(*) FROM snapshots INDEXED BY snapshots_open
    WHERE tenant = ?1 AND workspace = ?2 AND released_at IS NULL";

/// Open snapshots of every owner: a scan of the partial index of open ones, never of the
/// released records.
const ALL_OPEN_COUNT: &str = "
    SELECT count(*) FROM snapshots INDEXED BY snapshots_open WHERE released_at IS NULL";

/// Content bytes that only open snapshots keep: per open snapshot (through `snapshots_open`,
/// never the released ones) and per path changed since it was taken (`files.seq` after its
/// pin, through `files_by_seq`), the row it sees, which a later row superseded; counted once
/// however many snapshots see it, unless it is a tombstone or among the newest `?3` versions of
/// its path's live life (history keeps those anyway). The work grows with the paths changed
/// since each open snapshot, not with the workspace.
const PINNED_BYTES: &str = "
    SELECT coalesce(sum(v.size), 0) FROM versions AS v
    WHERE v.rowid IN (
          SELECT (
              SELECT w.rowid FROM versions AS w
              WHERE w.tenant = ?1 AND w.workspace = ?2 AND w.path = f.path AND w.seq <= s.seq
              ORDER BY w.seq DESC
              LIMIT 1)
          FROM snapshots AS s INDEXED BY snapshots_open
          JOIN files AS f
            ON f.tenant = ?1 AND f.workspace = ?2 AND f.seq > s.seq
          WHERE s.tenant = ?1 AND s.workspace = ?2 AND s.released_at IS NULL)
      AND v.deleted = 0
      AND NOT EXISTS (
          SELECT 1 FROM files AS h
          WHERE h.tenant = ?1 AND h.workspace = ?2 AND h.path = v.path AND h.live = 1
            AND h.life = v.life AND v.version > h.version - ?3)";

/// A path as of `?4`: its newest row at or before it.
const GET_AT: &str = "
    SELECT v.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           v.content, v.deleted
    FROM versions AS v
    WHERE v.tenant = ?1 AND v.workspace = ?2 AND v.path = ?3 AND v.seq <= ?4
    ORDER BY v.seq DESC
    LIMIT 1";

/// Files live as of `?4` with `?3 <= path < ?5`, in byte order: per path (every path with a
/// stored row has a `files` row), its newest row at or before `?4`, unless a tombstone.
const LIST_AT_RANGE: &str = "
    SELECT v.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           f.path
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.seq = (
         SELECT max(w.seq) FROM versions AS w
         WHERE w.tenant = f.tenant AND w.workspace = f.workspace AND w.path = f.path
           AND w.seq <= ?4)
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path >= ?3 AND f.path < ?5
      AND v.deleted = 0
    ORDER BY f.path";

/// [`LIST_AT_RANGE`] with no upper bound.
const LIST_AT_FROM: &str = "
    SELECT v.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           f.path
    FROM files AS f
    JOIN versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.seq = (
         SELECT max(w.seq) FROM versions AS w
         WHERE w.tenant = f.tenant AND w.workspace = f.workspace AND w.path = f.path
           AND w.seq <= ?4)
    WHERE f.tenant = ?1 AND f.workspace = ?2 AND f.path >= ?3
      AND v.deleted = 0
    ORDER BY f.path";

/// Takes a snapshot of `owner`: one statement, whatever the owner holds.
pub(crate) fn take(
    conn: &Connection,
    owner: &Owner,
    label: &SnapshotLabel,
) -> Result<SnapshotInfo, StoreError> {
    let id = SnapshotId::new();
    let created_at = now();
    let seq: i64 = conn
        .prepare_cached(TAKE)
        .and_then(|mut stmt| {
            stmt.query_row(
                (
                    owner.tenant.as_str(),
                    owner.workspace.as_str(),
                    id.as_str(),
                    label.to_stored(),
                    created_at.timestamp_micros(),
                ),
                |row| row.get(0),
            )
        })
        .map_err(|e| sqlite_error("snapshot", e))?;
    Ok(SnapshotInfo {
        id,
        seq: seq as u64,
        label: label.clone(),
        created_at,
        released: None,
    })
}

/// The owner's open snapshots and the bytes only they keep, `keep` being `max_versions`.
/// The caller runs it inside a transaction, so both figures come from one committed state.
fn usage_in(conn: &Connection, owner: &Owner, keep: i64) -> rusqlite::Result<SnapshotUsage> {
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let open: i64 = conn
        .prepare_cached(OPEN_COUNT)?
        .query_row((tenant, workspace), |row| row.get(0))?;
    let pinned: i64 = conn
        .prepare_cached(PINNED_BYTES)?
        .query_row((tenant, workspace, keep), |row| row.get(0))?;
    Ok(SnapshotUsage {
        open: open as u64,
        pinned_bytes: pinned as u64,
    })
}

/// [`usage_in`] in a read transaction of its own.
pub(crate) fn usage(
    conn: &Connection,
    owner: &Owner,
    keep: i64,
) -> Result<SnapshotUsage, StoreError> {
    let fail = |e| sqlite_error("snapshot usage", e);
    let tx = conn.unchecked_transaction().map_err(fail)?;
    let usage = usage_in(&tx, owner, keep).map_err(fail)?;
    tx.commit().map_err(fail)?;
    Ok(usage)
}

/// Takes a snapshot of `owner` when its usage admits one under `quota`: the check and the
/// insert are one immediate transaction, so racing calls (from any connection or process on
/// the file) never open more than `quota.max_open`.
pub(crate) fn take_within(
    conn: &mut Connection,
    keep: i64,
    owner: &Owner,
    label: &SnapshotLabel,
    quota: SnapshotQuota,
) -> Result<Result<SnapshotInfo, QuotaExceeded>, StoreError> {
    let fail = |e| sqlite_error("snapshot", e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let usage = usage_in(&tx, owner, keep).map_err(fail)?;
    if let Err(refused) = quota.admits(usage) {
        // Dropping the transaction rolls it back: nothing was written.
        return Ok(Err(refused));
    }
    let info = take(&tx, owner, label)?;
    tx.commit().map_err(fail)?;
    Ok(Ok(info))
}

/// A snapshot's record, released or not.
pub(crate) fn info(
    conn: &Connection,
    owner: &Owner,
    id: &SnapshotId,
) -> Result<SnapshotInfo, StoreError> {
    conn.prepare_cached(INFO)
        .and_then(|mut stmt| {
            stmt.query_row(
                (owner.tenant.as_str(), owner.workspace.as_str(), id.as_str()),
                |row| record(row, id),
            )
            .optional()
        })
        .map_err(|e| sqlite_error("snapshot info", e))?
        .ok_or(StoreError::NotFound)
}

/// The owner's snapshots, newest first, after `after`, at most `limit`.
pub(crate) fn list(
    conn: &Connection,
    owner: &Owner,
    after: Option<&SnapshotCursor>,
    limit: usize,
) -> Result<Vec<SnapshotInfo>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let row = |row: &Row<'_>| record(row, &stored_id(row.get(5)?, 5)?);
    match after {
        None => conn
            .prepare_cached(LIST_NEWEST)
            .and_then(|mut stmt| stmt.query_map((tenant, workspace, limit), row)?.collect()),
        Some(cursor) => conn.prepare_cached(LIST_AFTER).and_then(|mut stmt| {
            let at = cursor.created_at.timestamp_micros();
            stmt.query_map((tenant, workspace, at, cursor.id.as_str(), limit), row)?
                .collect()
        }),
    }
    .map_err(|e| sqlite_error("list snapshots", e))
}

/// Open snapshots of every owner taken before `cutoff`, oldest first, at most `limit`.
pub(crate) fn open_before(
    conn: &Connection,
    cutoff: chrono::DateTime<chrono::Utc>,
    limit: usize,
) -> Result<Vec<(Owner, SnapshotInfo)>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    conn.prepare_cached(OPEN_BEFORE)
        .and_then(|mut stmt| {
            stmt.query_map((cutoff.timestamp_micros(), limit), |row| {
                let (tenant, workspace): (String, String) = (row.get(5)?, row.get(6)?);
                let owner = Owner::parse(&tenant, &workspace).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        5,
                        rusqlite::types::Type::Text,
                        Box::new(e),
                    )
                })?;
                let id = stored_id(row.get(7)?, 7)?;
                Ok((owner, record(row, &id)?))
            })?
            .collect()
        })
        .map_err(|e| sqlite_error("open snapshots", e))
}

/// How many snapshots are open, over every owner.
pub(crate) fn count_open(conn: &Connection) -> Result<u64, StoreError> {
    conn.prepare_cached(ALL_OPEN_COUNT)
        .and_then(|mut stmt| stmt.query_row([], |row| row.get::<_, i64>(0)))
        .map(|n| u64::try_from(n).unwrap_or_default())
        .map_err(|e| sqlite_error("count open snapshots", e))
}

/// Deletes the records of snapshots released before `cutoff`, at most `limit`; how many.
pub(crate) fn forget_released(
    conn: &Connection,
    cutoff: chrono::DateTime<chrono::Utc>,
    limit: usize,
) -> Result<usize, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    conn.prepare_cached(FORGET_RELEASED)
        .and_then(|mut stmt| stmt.execute((cutoff.timestamp_micros(), limit)))
        .map_err(|e| sqlite_error("forget released snapshots", e))
}

/// A stored snapshot id read from result column `column`.
fn stored_id(text: String, column: usize) -> rusqlite::Result<SnapshotId> {
    SnapshotId::parse(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            format!("stored snapshot id {text:?} is not 32 hex digits").into(),
        )
    })
}

/// A snapshot record from columns seq, label, created_at, released_at, outcome.
fn record(row: &Row<'_>, id: &SnapshotId) -> rusqlite::Result<SnapshotInfo> {
    let seq: i64 = row.get(0)?;
    let released_at: Option<i64> = row.get(3)?;
    let outcome: Option<String> = row.get(4)?;
    let released = match (released_at, outcome) {
        (Some(at), Some(outcome)) => Some((time(at, 3)?, outcome)),
        _ => None,
    };
    Ok(SnapshotInfo {
        id: id.clone(),
        seq: seq as u64,
        label: SnapshotLabel::from_stored(&row.get::<_, String>(1)?),
        created_at: time(row.get(2)?, 2)?,
        released,
    })
}

/// Releases a snapshot and, in the same transaction, drops the rows only it still needed; a
/// second release changes nothing and answers the first outcome.
pub(crate) fn release(
    conn: &mut Connection,
    keep: i64,
    owner: &Owner,
    id: &SnapshotId,
    outcome: &str,
) -> Result<SnapshotInfo, StoreError> {
    let fail = |e| sqlite_error("release snapshot", e);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let released_at = now();
    let released = tx
        .prepare_cached(RELEASE)
        .and_then(|mut stmt| {
            stmt.query_row(
                (
                    tenant,
                    workspace,
                    id.as_str(),
                    released_at.timestamp_micros(),
                    outcome,
                ),
                |row| {
                    let seq: i64 = row.get(0)?;
                    Ok(SnapshotInfo {
                        id: id.clone(),
                        seq: seq as u64,
                        label: SnapshotLabel::from_stored(&row.get::<_, String>(1)?),
                        created_at: time(row.get(2)?, 2)?,
                        released: Some((released_at, outcome.to_owned())),
                    })
                },
            )
            .optional()
        })
        .map_err(fail)?;
    let Some(released) = released else {
        // Unknown, another owner's, or released before: the stored record says which.
        return info(&tx, owner, id);
    };
    let seq = released.seq as i64;
    tx.prepare_cached(PRUNE_RELEASED)
        .and_then(|mut stmt| stmt.execute((tenant, workspace, seq, keep)))
        .map_err(fail)?;
    let pinned: bool = tx
        .prepare_cached(ANY_OPEN_SNAPSHOT)
        .and_then(|mut stmt| stmt.query_row((tenant, workspace), |row| row.get(0)))
        .map_err(fail)?;
    if !pinned {
        for sql in [FORGET_TOMBSTONED_ROWS, FORGET_TOMBSTONED_FILES] {
            tx.prepare_cached(sql)
                .and_then(|mut stmt| stmt.execute((tenant, workspace)))
                .map_err(fail)?;
        }
    }
    tx.commit().map_err(fail)?;
    Ok(released)
}

/// The sequence number an open snapshot pins; `NotFound` when unknown or released.
fn open_seq(conn: &Connection, owner: &Owner, id: &SnapshotId) -> Result<i64, StoreError> {
    conn.prepare_cached(OPEN_SEQ)
        .and_then(|mut stmt| {
            stmt.query_row(
                (owner.tenant.as_str(), owner.workspace.as_str(), id.as_str()),
                |row| row.get(0),
            )
            .optional()
        })
        .map_err(|e| sqlite_error("snapshot", e))?
        .ok_or(StoreError::NotFound)
}

/// Files live as of an open snapshot whose path starts with `prefix`, sorted, without content.
pub(crate) fn list_at(
    conn: &Connection,
    owner: &Owner,
    id: &SnapshotId,
    prefix: &WorkspacePrefix,
) -> Result<Vec<FileMeta>, StoreError> {
    let fail = |e| sqlite_error("list at snapshot", e);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    // The snapshot's state and the rows it sees come from one committed state, so a release
    // racing this read cannot prune rows between the two.
    let tx = conn.unchecked_transaction().map_err(fail)?;
    let seq = open_seq(&tx, owner, id)?;
    let start = prefix.as_str();
    let end = prefix_end(start);
    let mut params: Vec<&dyn ToSql> = vec![&tenant, &workspace, &start, &seq];
    let sql = match &end {
        Some(end) => {
            params.push(end);
            LIST_AT_RANGE
        }
        None => LIST_AT_FROM,
    };
    let mut files = Vec::new();
    tx.prepare_cached(sql)
        .and_then(|mut stmt| {
            let mut rows = stmt.query(params.as_slice())?;
            while let Some(row) = rows.next()? {
                let path: String = row.get(7)?;
                // The range is tight for every prefix but the unbounded one.
                if !path.starts_with(start) {
                    break;
                }
                files.push(meta(row, parse_path(path, 7)?)?);
            }
            Ok(())
        })
        .map_err(fail)?;
    tx.commit().map_err(fail)?;
    Ok(files)
}

/// The file live at `path` as of an open snapshot.
pub(crate) fn get_at(
    conn: &Connection,
    owner: &Owner,
    id: &SnapshotId,
    path: &WorkspacePath,
) -> Result<StoredFile, StoreError> {
    let fail = |e| sqlite_error("get at snapshot", e);
    let tx = conn.unchecked_transaction().map_err(fail)?;
    let seq = open_seq(&tx, owner, id)?;
    let file = tx
        .prepare_cached(GET_AT)
        .and_then(|mut stmt| {
            stmt.query_row(
                (
                    owner.tenant.as_str(),
                    owner.workspace.as_str(),
                    path.as_str(),
                    seq,
                ),
                |row| {
                    if row.get::<_, bool>(8)? {
                        return Ok(None);
                    }
                    Ok(Some(StoredFile {
                        meta: meta(row, path.clone())?,
                        content: row.get(7)?,
                    }))
                },
            )
            .optional()
        })
        .map_err(fail)?
        .flatten();
    tx.commit().map_err(fail)?;
    file.ok_or(StoreError::NotFound)
}

#[cfg(test)]
pub(crate) const STATEMENTS: &[&str] = &[
    TAKE,
    INFO,
    LIST_NEWEST,
    LIST_AFTER,
    OPEN_COUNT,
    ALL_OPEN_COUNT,
    PINNED_BYTES,
    OPEN_SEQ,
    RELEASE,
    PRUNE_RELEASED,
    FORGET_TOMBSTONED_ROWS,
    FORGET_TOMBSTONED_FILES,
    GET_AT,
    LIST_AT_RANGE,
    LIST_AT_FROM,
];

/// Statements allowed to scan, with the one scan each may make: a scan of a partial index whose
/// rows a limit bounds (open snapshots: at most `maxOpenRuns` per workspace), never of a table.
#[cfg(test)]
pub(crate) const BOUNDED_SCANS: &[(&str, &str)] =
    &[(ALL_OPEN_COUNT, "SCAN snapshots USING INDEX snapshots_open")];

/// Statements whose plan must name a particular index: a partial one, or the one that makes a
/// read as of a sequence number one seek per path.
#[cfg(test)]
pub(crate) const EXPECTED_INDEXES: &[(&str, &str)] = &[
    (PRUNE_RELEASED, "INDEX files_by_seq"),
    (PRUNE_RELEASED, "INDEX versions_by_seq"),
    (PRUNE_RELEASED, "INDEX snapshots_open"),
    (OPEN_COUNT, "INDEX snapshots_open"),
    (ALL_OPEN_COUNT, "INDEX snapshots_open"),
    (PINNED_BYTES, "INDEX snapshots_open"),
    (PINNED_BYTES, "INDEX files_by_seq"),
    (PINNED_BYTES, "INDEX versions_by_seq"),
    (FORGET_TOMBSTONED_ROWS, "INDEX files_tombstoned"),
    (FORGET_TOMBSTONED_FILES, "INDEX files_tombstoned"),
    (GET_AT, "INDEX versions_by_seq"),
    (LIST_AT_RANGE, "INDEX versions_by_seq"),
    (LIST_AT_FROM, "INDEX versions_by_seq"),
];
