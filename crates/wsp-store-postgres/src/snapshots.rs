//! Run-start snapshots and the change feed as SQL.
//!
//! A snapshot is a row pinning the owner's sequence number; reads through it pick, per path,
//! the newest stored row at or before the pin (a tombstone row hides the path). Taking one
//! locks the owner row for an instant, so it never pins a sequence number whose transaction
//! is still running; releasing one locks it for the prune that follows. A bounded snapshot
//! holds that lock while it counts what the owner's open snapshots hold, so the bound is kept
//! across replicas by the database, not by any replica's memory.

use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, GenericClient};
use tokio_postgres::Row;
use wsp_store::write::prefix_end;
use wsp_store::{
    ChangeEvent, ChangePage, FileMeta, QuotaExceeded, SnapshotCursor, SnapshotId, SnapshotInfo,
    SnapshotLabel, SnapshotQuota, SnapshotUsage, StoreError,
};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

use crate::failure::Failure;
use crate::files::{Retention, meta};
use crate::schema::SchemaName;

/// Pins the owner's current sequence number (creating the owner row at 0 when it has none).
/// The upsert waits for a write of the owner in flight and then reads what it committed.
const TAKE: &str = "
    WITH pinned AS (
        INSERT INTO {s}.wsp_owners AS o (tenant, workspace, seq, live_files)
        VALUES ($1, $2, 0, 0)
        ON CONFLICT (tenant, workspace) DO UPDATE SET seq = o.seq
        RETURNING o.seq
    )
    INSERT INTO {s}.wsp_snapshots (tenant, workspace, id, seq, label, created_at)
    SELECT $1, $2, $3, seq, $4, clock_timestamp() FROM pinned
    RETURNING seq, created_at";

/// Locks the owner row (creating it at 0 when it has none) and reads its sequence number: the
/// lock every write of the owner takes, held until the bounded snapshot commits.
const LOCK_OWNER_FOR_SNAPSHOT: &str = "
    INSERT INTO {s}.wsp_owners AS o (tenant, workspace, seq, live_files)
    VALUES ($1, $2, 0, 0)
    ON CONFLICT (tenant, workspace) DO UPDATE SET seq = o.seq
    RETURNING o.seq";

/// The owner's open snapshots, and the content bytes only they keep: per open snapshot and per
/// path changed since it was taken (`f.seq` after its pin), the row it sees, which a later row
/// superseded; counted once however many snapshots see it, unless it is a tombstone or among
/// the newest `$3` versions of its path's live life (history keeps those anyway).
const USAGE: &str = "
    SELECT
        (SELECT count(*) FROM {s}.wsp_snapshots AS o
         WHERE o.tenant = $1 AND o.workspace = $2 AND o.released_at IS NULL),
        (SELECT coalesce(sum(v.size), 0)::bigint FROM {s}.wsp_versions AS v
         WHERE v.tenant = $1 AND v.workspace = $2 AND NOT v.deleted
           AND (v.path, v.seq) IN (
               SELECT f.path, (
                   SELECT w.seq FROM {s}.wsp_versions AS w
                   WHERE w.tenant = $1 AND w.workspace = $2 AND w.path = f.path
                     AND w.seq <= s.seq
                   ORDER BY w.seq DESC
                   LIMIT 1)
               FROM {s}.wsp_snapshots AS s
               JOIN {s}.wsp_files AS f
                 ON f.tenant = s.tenant AND f.workspace = s.workspace AND f.seq > s.seq
               WHERE s.tenant = $1 AND s.workspace = $2 AND s.released_at IS NULL)
           AND NOT EXISTS (
               SELECT FROM {s}.wsp_files AS h
               WHERE h.tenant = $1 AND h.workspace = $2 AND h.path = v.path AND h.live
                 AND h.life = v.life AND v.version > h.version - $3::bigint))";

/// Records a snapshot at `$4`, the sequence number read under the owner's lock.
const INSERT_SNAPSHOT: &str = "
    INSERT INTO {s}.wsp_snapshots (tenant, workspace, id, seq, label, created_at)
    VALUES ($1, $2, $3, $4, $5, clock_timestamp())
    RETURNING created_at";

const INFO: &str = "
    SELECT seq, label, created_at, released_at, outcome FROM {s}.wsp_snapshots
    WHERE tenant = $1 AND workspace = $2 AND id = $3";

/// The owner's snapshots taken before (`$3`, `$4`), or all when `$3` is NULL, newest first, `$5`
/// at most (through `wsp_snapshots_by_time`).
const LIST: &str = "
    SELECT seq, label, created_at, released_at, outcome, id FROM {s}.wsp_snapshots
    WHERE tenant = $1 AND workspace = $2
      AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::text COLLATE \"C\"))
    ORDER BY created_at DESC, id DESC
    LIMIT $5";

/// Open snapshots of every owner taken before `$1`, oldest first, `$2` at most.
const OPEN_BEFORE: &str = "
    SELECT seq, label, created_at, released_at, outcome, tenant, workspace, id
    FROM {s}.wsp_snapshots
    WHERE released_at IS NULL AND created_at < $1
    ORDER BY created_at, id
    LIMIT $2";

/// How many snapshots are open, over every owner.
const COUNT_OPEN: &str = "
    SELECT count(*) FROM {s}.wsp_snapshots WHERE released_at IS NULL";

/// Deletes the records of snapshots released before `$1`, oldest release first, `$2` at most.
const FORGET_RELEASED: &str = "
    DELETE FROM {s}.wsp_snapshots WHERE (tenant, workspace, id) IN (
        SELECT tenant, workspace, id FROM {s}.wsp_snapshots
        WHERE released_at IS NOT NULL AND released_at < $1
        ORDER BY released_at, id
        LIMIT $2)";

const LOCK_OWNER: &str = "
    SELECT FROM {s}.wsp_owners WHERE tenant = $1 AND workspace = $2 FOR UPDATE";

const RELEASE: &str = "
    UPDATE {s}.wsp_snapshots SET released_at = clock_timestamp(), outcome = $4
    WHERE tenant = $1 AND workspace = $2 AND id = $3 AND released_at IS NULL
    RETURNING seq, label, created_at, released_at, outcome";

/// After a release: drops every stored row of the owner that neither history (`$3` versions
/// of a live life), nor an open snapshot, nor the hiding of older rows (a path's newest row,
/// while any snapshot is open) needs.
const PRUNE_OWNER: &str = "
    DELETE FROM {s}.wsp_versions AS v
    USING {s}.wsp_files AS f
    WHERE v.tenant = $1 AND v.workspace = $2
      AND f.tenant = v.tenant AND f.workspace = v.workspace AND f.path = v.path
      AND NOT (f.live AND v.life = f.life AND NOT v.deleted AND v.version > f.version - $3::bigint)
      AND NOT (v.seq = f.seq AND EXISTS (
          SELECT FROM {s}.wsp_snapshots AS s
          WHERE s.tenant = $1 AND s.workspace = $2 AND s.released_at IS NULL))
      AND NOT {seen}";

/// Per path in `$4 <= path {upper}`, the newest row at or before open snapshot `$3`'s pin;
/// one row of NULLs when the snapshot is open but sees nothing there, no row when it is
/// unknown or released.
const LIST_AT: &str = "
    SELECT x.life, x.version, x.content_type, x.author, x.updated_at, x.size, x.base64, x.path,
           x.deleted
    FROM {s}.wsp_snapshots AS s
    LEFT JOIN LATERAL (
        SELECT DISTINCT ON (v.path)
               v.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
               v.path, v.deleted
        FROM {s}.wsp_versions AS v
        WHERE v.tenant = $1 AND v.workspace = $2 AND v.path >= $4 {upper} AND v.seq <= s.seq
        ORDER BY v.path, v.seq DESC
    ) AS x ON true
    WHERE s.tenant = $1 AND s.workspace = $2 AND s.id = $3 AND s.released_at IS NULL
    ORDER BY x.path";

/// The newest row of path `$4` at or before open snapshot `$3`'s pin.
const GET_AT: &str = "
    SELECT x.life, x.version, x.content_type, x.author, x.updated_at, x.size, x.base64,
           x.content, x.deleted
    FROM {s}.wsp_snapshots AS s
    JOIN LATERAL (
        SELECT v.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
               v.content, v.deleted
        FROM {s}.wsp_versions AS v
        WHERE v.tenant = $1 AND v.workspace = $2 AND v.path = $4 AND v.seq <= s.seq
        ORDER BY v.seq DESC
        LIMIT 1
    ) AS x ON true
    WHERE s.tenant = $1 AND s.workspace = $2 AND s.id = $3 AND s.released_at IS NULL";

/// The head, the oldest retained change, and up to `$4` changes after `$3`, in one snapshot.
const CHANGES: &str = "
    SELECT h.head, o.oldest, c.seq, c.path, c.version, c.deleted, c.at
    FROM (
        SELECT coalesce(max(seq), 0) AS head FROM {s}.wsp_owners
        WHERE tenant = $1 AND workspace = $2
    ) AS h
    CROSS JOIN (
        SELECT min(seq) AS oldest FROM {s}.wsp_changes
        WHERE tenant = $1 AND workspace = $2
    ) AS o
    LEFT JOIN LATERAL (
        SELECT seq, path, version, deleted, at FROM {s}.wsp_changes
        WHERE tenant = $1 AND workspace = $2 AND seq > $3
        ORDER BY seq
        LIMIT $4
    ) AS c ON true
    ORDER BY c.seq";

/// The snapshot and feed statements with the schema name filled in.
#[derive(Debug)]
pub(crate) struct SnapshotSql {
    take: String,
    lock_owner_for_snapshot: String,
    usage: String,
    insert_snapshot: String,
    info: String,
    list: String,
    open_before: String,
    count_open: String,
    forget_released: String,
    lock_owner: String,
    release: String,
    prune_owner: String,
    list_at_range: String,
    list_at_from: String,
    get_at: String,
    changes: String,
}

impl SnapshotSql {
    pub(crate) fn new(schema: &SchemaName) -> Self {
        let seen = crate::files::SEEN_BY_A_SNAPSHOT;
        Self {
            take: schema.render(TAKE),
            lock_owner_for_snapshot: schema.render(LOCK_OWNER_FOR_SNAPSHOT),
            usage: schema.render(USAGE),
            insert_snapshot: schema.render(INSERT_SNAPSHOT),
            info: schema.render(INFO),
            list: schema.render(LIST),
            open_before: schema.render(OPEN_BEFORE),
            count_open: schema.render(COUNT_OPEN),
            forget_released: schema.render(FORGET_RELEASED),
            lock_owner: schema.render(LOCK_OWNER),
            release: schema.render(RELEASE),
            prune_owner: schema.render(&PRUNE_OWNER.replace("{seen}", seen)),
            list_at_range: schema.render(&LIST_AT.replace("{upper}", "AND v.path < $5")),
            list_at_from: schema.render(&LIST_AT.replace("{upper}", "")),
            get_at: schema.render(GET_AT),
            changes: schema.render(CHANGES),
        }
    }

    /// Every statement that serves an owner, for tests (`open_before`, `count_open` and
    /// `forget_released` are housekeeping across owners).
    #[cfg(test)]
    pub(crate) fn all(&self) -> [&str; 12] {
        [
            &self.take,
            &self.lock_owner_for_snapshot,
            &self.usage,
            &self.insert_snapshot,
            &self.info,
            &self.lock_owner,
            &self.release,
            &self.prune_owner,
            &self.list_at_range,
            &self.list_at_from,
            &self.get_at,
            &self.changes,
        ]
    }
}

fn owner_params(owner: &Owner) -> (&str, &str) {
    (owner.tenant.as_str(), owner.workspace.as_str())
}

fn info(id: &SnapshotId, row: &Row) -> Result<SnapshotInfo, Failure> {
    let seq: i64 = row.try_get(0)?;
    let released_at: Option<DateTime<Utc>> = row.try_get(3)?;
    let outcome: Option<String> = row.try_get(4)?;
    Ok(SnapshotInfo {
        id: id.clone(),
        seq: seq as u64,
        label: SnapshotLabel::from_stored(row.try_get(1)?),
        created_at: row.try_get(2)?,
        released: released_at.zip(outcome),
    })
}

/// Pins the owner's current sequence number under a fresh id.
pub(crate) async fn take(
    client: &Client,
    sql: &SnapshotSql,
    owner: &Owner,
    label: &SnapshotLabel,
) -> Result<SnapshotInfo, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let id = SnapshotId::new();
    let stmt = client.prepare_cached(&sql.take).await?;
    // One statement in autocommit: once sent, it may have committed.
    let row = client
        .query_one(
            &stmt,
            &[&tenant, &workspace, &id.as_str(), &label.to_stored()],
        )
        .await
        .map_err(Failure::Commit)?;
    let seq: i64 = row.try_get(0)?;
    Ok(SnapshotInfo {
        id,
        seq: seq as u64,
        label: label.clone(),
        created_at: row.try_get(1)?,
        released: None,
    })
}

/// The owner's open snapshots and the bytes only they keep (one statement, one snapshot of
/// the database), on a connection or in a transaction.
pub(crate) async fn usage(
    client: &impl GenericClient,
    sql: &SnapshotSql,
    retention: Retention,
    owner: &Owner,
) -> Result<SnapshotUsage, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let stmt = client.prepare_cached(&sql.usage).await?;
    let row = client
        .query_one(&stmt, &[&tenant, &workspace, &retention.versions])
        .await?;
    let open: i64 = row.try_get(0)?;
    let pinned: i64 = row.try_get(1)?;
    Ok(SnapshotUsage {
        open: open as u64,
        pinned_bytes: pinned as u64,
    })
}

/// Takes a snapshot when the owner's usage admits one under `quota`. The owner row's lock is
/// taken first and held to the commit, so racing calls on any replica wait for each other and
/// each counts what the one before it committed: never more than `quota.max_open` open.
pub(crate) async fn take_within(
    client: &mut Client,
    sql: &SnapshotSql,
    retention: Retention,
    owner: &Owner,
    label: &SnapshotLabel,
    quota: SnapshotQuota,
) -> Result<Result<SnapshotInfo, QuotaExceeded>, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let tx = client.transaction().await?;
    let lock = tx.prepare_cached(&sql.lock_owner_for_snapshot).await?;
    let seq: i64 = tx
        .query_one(&lock, &[&tenant, &workspace])
        .await?
        .try_get(0)?;
    if let Err(refused) = quota.admits(usage(&tx, sql, retention, owner).await?) {
        // Dropping the transaction rolls it back: nothing was written.
        return Ok(Err(refused));
    }
    let id = SnapshotId::new();
    let insert = tx.prepare_cached(&sql.insert_snapshot).await?;
    let row = tx
        .query_one(
            &insert,
            &[&tenant, &workspace, &id.as_str(), &seq, &label.to_stored()],
        )
        .await?;
    let created_at: DateTime<Utc> = row.try_get(0)?;
    tx.commit().await.map_err(Failure::Commit)?;
    Ok(Ok(SnapshotInfo {
        id,
        seq: seq as u64,
        label: label.clone(),
        created_at,
        released: None,
    }))
}

/// A snapshot's record, released or not.
pub(crate) async fn info_of(
    client: &Client,
    sql: &SnapshotSql,
    owner: &Owner,
    id: &SnapshotId,
) -> Result<SnapshotInfo, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let stmt = client.prepare_cached(&sql.info).await?;
    let row = client
        .query_opt(&stmt, &[&tenant, &workspace, &id.as_str()])
        .await?
        .ok_or(StoreError::NotFound)?;
    info(id, &row)
}

/// The owner's snapshots, newest first, after `after`, at most `limit`.
pub(crate) async fn list(
    client: &Client,
    sql: &SnapshotSql,
    owner: &Owner,
    after: Option<&SnapshotCursor>,
    limit: usize,
) -> Result<Vec<SnapshotInfo>, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let at = after.map(|c| c.created_at);
    let id = after.map(|c| c.id.as_str());
    let stmt = client.prepare_cached(&sql.list).await?;
    let rows = client
        .query(&stmt, &[&tenant, &workspace, &at, &id, &limit])
        .await?;
    rows.iter()
        .map(|row| {
            let id = SnapshotId::parse(row.try_get(5)?)
                .ok_or_else(|| StoreError::internal("a stored snapshot id is not 32 hex digits"))?;
            info(&id, row)
        })
        .collect()
}

/// Open snapshots of every owner taken before `cutoff`, oldest first, at most `limit`.
pub(crate) async fn open_before(
    client: &Client,
    sql: &SnapshotSql,
    cutoff: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<(Owner, SnapshotInfo)>, Failure> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let stmt = client.prepare_cached(&sql.open_before).await?;
    let rows = client.query(&stmt, &[&cutoff, &limit]).await?;
    rows.iter()
        .map(|row| {
            let (tenant, workspace, id): (&str, &str, &str) =
                (row.try_get(5)?, row.try_get(6)?, row.try_get(7)?);
            let owner = Owner::parse(tenant, workspace).map_err(|_| {
                StoreError::internal(format!(
                    "a stored snapshot has a bad owner {tenant:?}/{workspace:?}"
                ))
            })?;
            let id = SnapshotId::parse(id)
                .ok_or_else(|| StoreError::internal("a stored snapshot id is not 32 hex digits"))?;
            Ok((owner, info(&id, row)?))
        })
        .collect()
}

/// How many snapshots are open, over every owner.
pub(crate) async fn count_open(client: &Client, sql: &SnapshotSql) -> Result<u64, Failure> {
    let stmt = client.prepare_cached(&sql.count_open).await?;
    let open: i64 = client.query_one(&stmt, &[]).await?.try_get(0)?;
    Ok(u64::try_from(open).unwrap_or_default())
}

/// Deletes the records of snapshots released before `cutoff`, at most `limit`; how many.
pub(crate) async fn forget_released(
    client: &Client,
    sql: &SnapshotSql,
    cutoff: DateTime<Utc>,
    limit: usize,
) -> Result<usize, Failure> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let stmt = client.prepare_cached(&sql.forget_released).await?;
    let deleted = client.execute(&stmt, &[&cutoff, &limit]).await?;
    Ok(deleted as usize)
}

/// Releases a snapshot and prunes what only it kept, in one transaction; releasing again
/// returns the first release.
pub(crate) async fn release(
    client: &mut Client,
    sql: &SnapshotSql,
    retention: Retention,
    owner: &Owner,
    id: &SnapshotId,
    outcome: &str,
) -> Result<SnapshotInfo, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let tx = client.transaction().await?;
    let lock = tx.prepare_cached(&sql.lock_owner).await?;
    if tx.query_opt(&lock, &[&tenant, &workspace]).await?.is_none() {
        return Err(StoreError::NotFound.into());
    }
    let release = tx.prepare_cached(&sql.release).await?;
    let Some(row) = tx
        .query_opt(&release, &[&tenant, &workspace, &id.as_str(), &outcome])
        .await?
    else {
        // Unknown, or released before: answer with the record as it is.
        let stmt = tx.prepare_cached(&sql.info).await?;
        let row = tx
            .query_opt(&stmt, &[&tenant, &workspace, &id.as_str()])
            .await?
            .ok_or(StoreError::NotFound)?;
        return info(id, &row);
    };
    let released = info(id, &row)?;
    let prune = tx.prepare_cached(&sql.prune_owner).await?;
    tx.execute(&prune, &[&tenant, &workspace, &retention.versions])
        .await?;
    tx.commit().await.map_err(Failure::Commit)?;
    Ok(released)
}

/// The live files as of an open snapshot, sorted by path, without content.
pub(crate) async fn list_at(
    client: &Client,
    sql: &SnapshotSql,
    owner: &Owner,
    id: &SnapshotId,
    prefix: &WorkspacePrefix,
) -> Result<Vec<FileMeta>, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let start = prefix.as_str();
    let rows = match prefix_end(start) {
        Some(end) => {
            let stmt = client.prepare_cached(&sql.list_at_range).await?;
            client
                .query(&stmt, &[&tenant, &workspace, &id.as_str(), &start, &end])
                .await?
        }
        None => {
            let stmt = client.prepare_cached(&sql.list_at_from).await?;
            client
                .query(&stmt, &[&tenant, &workspace, &id.as_str(), &start])
                .await?
        }
    };
    if rows.is_empty() {
        return Err(StoreError::NotFound.into());
    }
    let mut files = Vec::new();
    for row in &rows {
        let Some(raw) = row.try_get::<_, Option<&str>>(7)? else {
            continue; // the snapshot sees nothing under this prefix
        };
        if row.try_get::<_, bool>(8)? {
            continue; // deleted at the snapshot's moment
        }
        let path = WorkspacePath::parse(raw).map_err(|_| {
            StoreError::internal("postgres list_at: a stored path is not a valid workspace path")
        })?;
        files.push(meta(row, path)?);
    }
    Ok(files)
}

/// The live file as of an open snapshot.
pub(crate) async fn get_at(
    client: &Client,
    sql: &SnapshotSql,
    owner: &Owner,
    id: &SnapshotId,
    path: &WorkspacePath,
) -> Result<(FileMeta, String), Failure> {
    let (tenant, workspace) = owner_params(owner);
    let stmt = client.prepare_cached(&sql.get_at).await?;
    let row = client
        .query_opt(&stmt, &[&tenant, &workspace, &id.as_str(), &path.as_str()])
        .await?
        .ok_or(StoreError::NotFound)?;
    if row.try_get::<_, bool>(8)? {
        return Err(StoreError::NotFound.into());
    }
    let meta = meta(&row, path.clone())?;
    let content: Vec<u8> = row.try_get(7)?;
    let content = String::from_utf8(content)
        .map_err(|_| StoreError::internal("postgres get_at: stored content is not valid UTF-8"))?;
    Ok((meta, content))
}

/// Up to `limit` changes after `after`, with the feed's head and oldest retained position.
pub(crate) async fn changes(
    client: &Client,
    sql: &SnapshotSql,
    owner: &Owner,
    after: u64,
    limit: usize,
) -> Result<ChangePage, Failure> {
    let (tenant, workspace) = owner_params(owner);
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let stmt = client.prepare_cached(&sql.changes).await?;
    let rows = client
        .query(&stmt, &[&tenant, &workspace, &after, &limit])
        .await?;
    let first = rows
        .first()
        .ok_or_else(|| StoreError::internal("postgres changes: no head row"))?;
    let head: i64 = first.try_get(0)?;
    let oldest: Option<i64> = first.try_get(1)?;
    let mut events = Vec::with_capacity(rows.len());
    for row in &rows {
        let Some(seq) = row.try_get::<_, Option<i64>>(2)? else {
            continue; // nothing after `after`
        };
        let raw: &str = row.try_get(3)?;
        let path = WorkspacePath::parse(raw).map_err(|_| {
            StoreError::internal("postgres changes: a stored path is not a valid workspace path")
        })?;
        let version: i64 = row.try_get(4)?;
        events.push(ChangeEvent {
            seq: seq as u64,
            path,
            version: version as u64,
            deleted: row.try_get(5)?,
            at: row.try_get(6)?,
        });
    }
    Ok(ChangePage {
        events,
        oldest: oldest.map_or(head + 1, |o| o) as u64,
        head: head as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::tests::names_the_owner;

    #[test]
    fn every_statement_names_the_owner() {
        let sql = SnapshotSql::new(&SchemaName::parse("s").unwrap());
        for stmt in sql.all() {
            assert!(!stmt.contains('{') && !stmt.contains("LIKE"), "{stmt}");
            let clauses: Vec<&str> = stmt.split("WHERE ").skip(1).collect();
            assert!(
                !clauses.is_empty() || stmt.contains("VALUES ($1, $2, "),
                "{stmt}"
            );
            for clause in clauses {
                assert!(
                    names_the_owner(clause),
                    "a WHERE clause without the owner in {stmt}"
                );
            }
        }
    }

    #[test]
    fn the_housekeeping_statements_touch_snapshot_records_only() {
        let sql = SnapshotSql::new(&SchemaName::parse("s").unwrap());
        for stmt in [&sql.open_before, &sql.forget_released] {
            assert!(stmt.contains("FROM \"s\".wsp_snapshots"), "{stmt}");
            for table in ["wsp_versions", "wsp_files", "wsp_events", "JOIN"] {
                assert!(!stmt.contains(table), "{stmt}");
            }
            assert!(stmt.contains("LIMIT $2"), "{stmt}");
        }
        assert!(sql.open_before.contains("released_at IS NULL"));
        assert!(sql.forget_released.contains("released_at IS NOT NULL"));
    }
}
