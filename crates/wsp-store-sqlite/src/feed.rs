//! The per-owner change feed: one `events` row per committed write or delete, appended and
//! trimmed inside the change's own transaction.

use chrono::{DateTime, Utc};
use rusqlite::Connection;
use wsp_store::{ChangeEvent, ChangePage, StoreError};
use wsp_types::{Owner, WorkspacePath};

use crate::files::{parse_path, sqlite_error, time};

const APPEND: &str = "
    INSERT INTO events (tenant, workspace, seq, path, version, deleted, at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// Drops the owner's events up to and including `?3`: one range of the primary key.
const TRIM: &str = "
    DELETE FROM events WHERE tenant = ?1 AND workspace = ?2 AND seq <= ?3";

/// The owner's newest sequence number (0 before any change) and oldest retained event.
const BOUNDS: &str = "
    SELECT coalesce((SELECT seq FROM owners WHERE tenant = ?1 AND workspace = ?2), 0),
           (SELECT min(seq) FROM events WHERE tenant = ?1 AND workspace = ?2)";

const PAGE: &str = "
    SELECT seq, path, version, deleted, at FROM events
    WHERE tenant = ?1 AND workspace = ?2 AND seq > ?3
    ORDER BY seq
    LIMIT ?4";

/// One change about to be committed.
pub(crate) struct FeedEntry<'a> {
    pub(crate) seq: i64,
    pub(crate) path: &'a WorkspacePath,
    pub(crate) version: i64,
    pub(crate) deleted: bool,
    pub(crate) at: DateTime<Utc>,
}

/// Appends `entry` and trims the feed to its newest `retention` events, in the caller's
/// transaction.
pub(crate) fn append(
    tx: &Connection,
    owner: &Owner,
    entry: &FeedEntry<'_>,
    retention: u64,
) -> rusqlite::Result<()> {
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    tx.prepare_cached(APPEND)?.execute((
        tenant,
        workspace,
        entry.seq,
        entry.path.as_str(),
        entry.version,
        entry.deleted,
        entry.at.timestamp_micros(),
    ))?;
    let retention = i64::try_from(retention).unwrap_or(i64::MAX);
    if entry.seq > retention {
        tx.prepare_cached(TRIM)?
            .execute((tenant, workspace, entry.seq - retention))?;
    }
    Ok(())
}

/// Up to `limit` events after `after`, with the feed's bounds, as of one read transaction.
pub(crate) fn changes(
    conn: &Connection,
    owner: &Owner,
    after: u64,
    limit: usize,
) -> Result<ChangePage, StoreError> {
    let fail = |e| sqlite_error("changes", e);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    // The bounds and the page must come from the same committed state.
    let tx = conn.unchecked_transaction().map_err(fail)?;
    let (head, oldest): (i64, Option<i64>) = tx
        .prepare_cached(BOUNDS)
        .and_then(|mut stmt| {
            stmt.query_row((tenant, workspace), |row| Ok((row.get(0)?, row.get(1)?)))
        })
        .map_err(fail)?;
    // Positions past any stored sequence number read nothing.
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let events = tx
        .prepare_cached(PAGE)
        .and_then(|mut stmt| {
            stmt.query_map((tenant, workspace, after, limit), |row| {
                let seq: i64 = row.get(0)?;
                let version: i64 = row.get(2)?;
                Ok(ChangeEvent {
                    seq: seq as u64,
                    path: parse_path(row.get(1)?, 1)?,
                    version: version as u64,
                    deleted: row.get(3)?,
                    at: time(row.get(4)?, 4)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(fail)?;
    tx.commit().map_err(fail)?;
    let head = head as u64;
    Ok(ChangePage {
        events,
        oldest: oldest.map_or(head + 1, |o| o as u64),
        head,
    })
}

#[cfg(test)]
pub(crate) const STATEMENTS: &[&str] = &[APPEND, TRIM, BOUNDS, PAGE];
