//! The store operations as SQL, one try each on one pooled connection.
//!
//! Every statement names the owner (`tenant = $1 AND workspace = $2`) in its WHERE clause or its
//! key. Reads are single statements, so each sees one consistent snapshot. Writes and deletes
//! are applied inside a group-commit transaction (`batch`), each in a savepoint of its own that
//! first locks the owner's row (taking its next change sequence number), then the path's row;
//! the transaction holds both until it commits:
//!
//! 1. `SAVEPOINT`, lock the owner row (created on the first write) and bump its `seq`, and read
//!    the path's row `FOR UPDATE` (a fresh statement, so it sees every write committed before
//!    the lock was granted): three statements, one round trip;
//! 2. check the precondition and `maxFiles` (against `live_files` on the locked owner row);
//! 3. one statement: upsert the path row, count a created file, prune versions past
//!    `max_versions`, insert the new version; pipelined with `RELEASE`;
//! 4. a refused or failed change rolls back to its savepoint (its sequence number included);
//! 5. the batch commits.
//!
//! Writers of one owner are serialized by the owner lock (and always lock owner before path, so
//! they cannot deadlock); a batch holds one owner's changes only, so writers of different owners
//! never wait for each other.

use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, Transaction};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use wsp_store::search::{self, MAX_CANDIDATE_FILES};
use wsp_store::write::{self, Current, PutDecision, StoredColumns, prefix_end, stored_life};
use wsp_store::{
    Deleted, FileMeta, FileWrite, Limits, Precondition, SearchQuery, SearchResults, StoreError,
};
use wsp_types::{MediaType, Owner, WorkspacePath, WorkspacePrefix};

use crate::failure::Failure;
use crate::listener::notify_expression;
use crate::schema::SchemaName;

/// The live file.
const GET_LIVE: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           v.content
    FROM {s}.wsp_files AS f
    JOIN {s}.wsp_versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = f.version
    WHERE f.tenant = $1 AND f.workspace = $2 AND f.path = $3 AND f.live";

/// Version `$4` of the live file's current life, if it is within the newest `$5` (older rows
/// that a snapshot keeps are not history).
const GET_VERSION: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64,
           v.content
    FROM {s}.wsp_files AS f
    JOIN {s}.wsp_versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version = $4::bigint
    WHERE f.tenant = $1 AND f.workspace = $2 AND f.path = $3 AND f.live
      AND $4::bigint > f.version - $5::bigint AND NOT v.deleted";

/// The newest `$4` versions of the live file's current life, newest first.
const HISTORY: &str = "
    SELECT f.life, v.version, v.content_type, v.author, v.updated_at, v.size, v.base64
    FROM {s}.wsp_files AS f
    JOIN {s}.wsp_versions AS v
      ON v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
     AND v.life = f.life AND v.version > f.version - $4::bigint AND NOT v.deleted
    WHERE f.tenant = $1 AND f.workspace = $2 AND f.path = $3 AND f.live
    ORDER BY v.version DESC";

/// Live files with `$3 <= path < $4`, in byte order (the columns collate as "C"): one range
/// of the path table's primary key.
const LIST_RANGE: &str = "
    SELECT life, version, content_type, author, updated_at, size, base64, path
    FROM {s}.wsp_files
    WHERE tenant = $1 AND workspace = $2 AND path >= $3 AND path < $4 AND live
    ORDER BY path";

/// Live files with `$3 <= path`, in byte order.
const LIST_FROM: &str = "
    SELECT life, version, content_type, author, updated_at, size, base64, path
    FROM {s}.wsp_files
    WHERE tenant = $1 AND workspace = $2 AND path >= $3 AND live
    ORDER BY path";

/// Locks the owner row (creating it on the first write) and takes its next sequence number.
const LOCK_OWNER_FOR_WRITE: &str = "
    INSERT INTO {s}.wsp_owners AS o (tenant, workspace, seq, live_files) VALUES ($1, $2, 1, 0)
    ON CONFLICT (tenant, workspace) DO UPDATE SET seq = o.seq + 1
    RETURNING o.seq, o.live_files";

/// Locks the owner row of a delete and takes its next sequence number; no row, no file.
const LOCK_OWNER_FOR_DELETE: &str = "
    UPDATE {s}.wsp_owners SET seq = seq + 1
    WHERE tenant = $1 AND workspace = $2
    RETURNING seq";

/// The state of one path (live or tombstoned), locked for the rest of the transaction.
const LOCK_PATH: &str = "
    SELECT life, version, live FROM {s}.wsp_files
    WHERE tenant = $1 AND workspace = $2 AND path = $3
    FOR UPDATE";

/// Keeps a row `v` of path `$3` that an open snapshot of the owner sees: the newest row of the
/// path at or before the snapshot's sequence number. Part of every prune.
pub(crate) const SEEN_BY_A_SNAPSHOT: &str = "
    EXISTS (
        SELECT FROM {s}.wsp_snapshots AS s
        WHERE s.tenant = $1 AND s.workspace = $2 AND s.released_at IS NULL AND s.seq >= v.seq
          AND NOT EXISTS (
              SELECT FROM {s}.wsp_versions AS n
              WHERE n.tenant = $1 AND n.workspace = $2 AND n.path = v.path
                AND n.seq > v.seq AND n.seq <= s.seq))";

/// Applies a write whose checks passed: path row, live-file count, the new version, pruning,
/// the feed (appended and trimmed) and the notice to listening replicas (sent at commit).
///
/// `$4` life, `$5` version, `$6` seq, `$7` 1 when the write creates a live file, `$8` the
/// highest version of the life that history no longer keeps, `$9..$12` the version's type,
/// author, size and content, `$13` the feed retention, `$14` whether the content is base64,
/// `$15` the text the search index covers, as an array of one (empty for bytes, which drops
/// the path's entry). Pruning cannot see the new row (same
/// statement), which it keeps anyway: it is the newest, and no open snapshot is pinned at or
/// after its sequence number (snapshots lock the owner row that this transaction holds).
const APPLY_WRITE: &str = "
    WITH now AS (
        SELECT clock_timestamp() AS at
    ), file AS (
        INSERT INTO {s}.wsp_files AS f
            (tenant, workspace, path, life, version, live, seq, content_type, author,
             updated_at, size, base64)
        SELECT $1, $2, $3, $4, $5, true, $6, $9, $10, at, $11, $14 FROM now
        ON CONFLICT (tenant, workspace, path) DO UPDATE
            SET life = excluded.life, version = excluded.version, live = true,
                seq = excluded.seq, content_type = excluded.content_type,
                author = excluded.author, updated_at = excluded.updated_at,
                size = excluded.size, base64 = excluded.base64
    ), counted AS (
        UPDATE {s}.wsp_owners SET live_files = live_files + $7::bigint
        WHERE tenant = $1 AND workspace = $2 AND $7::bigint <> 0
    ), pruned AS (
        DELETE FROM {s}.wsp_versions AS v
        WHERE v.tenant = $1 AND v.workspace = $2 AND v.path = $3
          AND NOT (v.life = $4 AND NOT v.deleted AND v.version > $8::bigint)
          AND NOT {seen}
    ), fed AS (
        INSERT INTO {s}.wsp_changes (tenant, workspace, seq, path, version, deleted, at)
        SELECT $1, $2, $6, $3, $5, false, at FROM now
    ), trimmed AS (
        DELETE FROM {s}.wsp_changes
        WHERE tenant = $1 AND workspace = $2 AND seq <= $6 - $13::bigint
    ), indexed AS (
        INSERT INTO {s}.wsp_search (tenant, workspace, path, doc)
        SELECT $1, $2, $3, to_tsvector('simple', {owner_token}) || to_tsvector('simple', body)
        FROM unnest($15::text[]) AS body
        ON CONFLICT (tenant, workspace, path) DO UPDATE SET doc = excluded.doc
    ), unindexed AS (
        DELETE FROM {s}.wsp_search
        WHERE tenant = $1 AND workspace = $2 AND path = $3 AND cardinality($15::text[]) = 0
    ), told AS (
        SELECT {notify_6} AS told
    )
    INSERT INTO {s}.wsp_versions
        (tenant, workspace, path, life, version, seq, content_type, author, updated_at, size,
         base64, content)
    SELECT $1, $2, $3, $4, $5, $6, $9, $10, at, $11, $14, $12 FROM now, told
    RETURNING updated_at";

/// Applies a delete whose checks passed: tombstone `$4` (version) with sequence number `$5` in
/// the path row; while a snapshot is open, a tombstone row of life `$6` too (it hides the
/// rows kept for older snapshots from newer ones); prune what no open snapshot sees (all of
/// it, when none is open); count the file out; append to the feed and trim it to `$7`; notify
/// listening replicas at commit.
const APPLY_DELETE: &str = "
    WITH now AS (
        SELECT clock_timestamp() AS at
    ), tombstone AS (
        UPDATE {s}.wsp_files
        SET version = $4, live = false, seq = $5, content_type = NULL, author = NULL,
            updated_at = NULL, size = NULL, base64 = false
        WHERE tenant = $1 AND workspace = $2 AND path = $3
    ), marker AS (
        INSERT INTO {s}.wsp_versions
            (tenant, workspace, path, life, version, seq, content_type, author, updated_at,
             size, content, deleted)
        SELECT $1, $2, $3, $6, $4, $5, '', NULL, at, 0, ''::bytea, true
        FROM now, (
            SELECT FROM {s}.wsp_snapshots
            WHERE tenant = $1 AND workspace = $2 AND released_at IS NULL
            LIMIT 1
        ) AS open
    ), pruned AS (
        DELETE FROM {s}.wsp_versions AS v
        WHERE v.tenant = $1 AND v.workspace = $2 AND v.path = $3 AND NOT {seen}
    ), fed AS (
        INSERT INTO {s}.wsp_changes (tenant, workspace, seq, path, version, deleted, at)
        SELECT $1, $2, $5, $3, $4, true, at FROM now
    ), trimmed AS (
        DELETE FROM {s}.wsp_changes
        WHERE tenant = $1 AND workspace = $2 AND seq <= $5 - $7::bigint
    ), unindexed AS (
        DELETE FROM {s}.wsp_search WHERE tenant = $1 AND workspace = $2 AND path = $3
    ), told AS (
        SELECT {notify_5} AS told
    )
    UPDATE {s}.wsp_owners SET live_files = live_files - 1
    FROM told
    WHERE tenant = $1 AND workspace = $2";

/// The owner's one token in the search index, from `$1` (tenant) and `$2` (workspace): `o`,
/// the tenant's UTF-8 bytes in hex, `x`, the workspace's (what `wsp_store::search::owner_token`
/// writes).
const OWNER_TOKEN: &str = "'o' || encode(convert_to($1::text, 'UTF8'), 'hex') || 'x' \
    || encode(convert_to($2::text, 'UTF8'), 'hex')";

/// The owner's best-ranked live text files matching `$3` (a text search query naming the
/// owner's token) under a prefix (`$4` up to, not including, `$5`), with their text: at
/// most `$6`.
const SEARCH_RANGE: &str = "
    SELECT x.path, v.content
    FROM {s}.wsp_search AS x
    JOIN {s}.wsp_files AS f ON f.tenant = x.tenant AND f.workspace = x.workspace
        AND f.path = x.path
    JOIN {s}.wsp_versions AS v ON v.tenant = f.tenant AND v.workspace = f.workspace
        AND v.path = f.path AND v.life = f.life AND v.version = f.version,
        to_tsquery('simple', $3) AS q
    WHERE x.tenant = $1 AND x.workspace = $2 AND x.doc @@ q
      AND x.path >= $4 AND x.path < $5 AND f.live AND NOT v.base64
    ORDER BY ts_rank(x.doc, q) DESC, x.path
    LIMIT $6";

/// [`SEARCH_RANGE`] for a prefix with no end (`$4` and above), at most `$5`.
const SEARCH_FROM: &str = "
    SELECT x.path, v.content
    FROM {s}.wsp_search AS x
    JOIN {s}.wsp_files AS f ON f.tenant = x.tenant AND f.workspace = x.workspace
        AND f.path = x.path
    JOIN {s}.wsp_versions AS v ON v.tenant = f.tenant AND v.workspace = f.workspace
        AND v.path = f.path AND v.life = f.life AND v.version = f.version,
        to_tsquery('simple', $3) AS q
    WHERE x.tenant = $1 AND x.workspace = $2 AND x.doc @@ q
      AND x.path >= $4 AND f.live AND NOT v.base64
    ORDER BY ts_rank(x.doc, q) DESC, x.path
    LIMIT $5";

/// The text search query: the owner's token and any of the words, each a prefix (`deploy:*`).
fn search_query(owner: &Owner, query: &SearchQuery) -> String {
    // Words are letters and digits only: none is an operator of the query syntax.
    let words: Vec<String> = query.terms().iter().map(|t| format!("{t}:*")).collect();
    format!("{} & ({})", search::owner_token(owner), words.join(" | "))
}

/// What the index covers of a write: the text's first characters (NULs as spaces: a text
/// search value holds none, and they separate words anyway), or nothing for bytes.
fn indexed_text(write: &FileWrite) -> Vec<std::borrow::Cow<'_, str>> {
    if write.encoding.is_binary() {
        return Vec::new();
    }
    let text = search::indexed_part(&write.content);
    vec![if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', " "))
    } else {
        std::borrow::Cow::Borrowed(text)
    }]
}

/// Searches the owner's live text files through the index.
pub(crate) async fn search(
    client: &Client,
    sql: &FileSql,
    owner: &Owner,
    query: &SearchQuery,
) -> Result<SearchResults, Failure> {
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let text_query = search_query(owner, query);
    let start = query.prefix().as_str();
    let cap = (MAX_CANDIDATE_FILES + 1) as i64;
    let rows = match prefix_end(start) {
        Some(end) => {
            let stmt = client.prepare_cached(&sql.search_range).await?;
            client
                .query(
                    &stmt,
                    &[&tenant, &workspace, &text_query, &start, &end, &cap],
                )
                .await?
        }
        None => {
            let stmt = client.prepare_cached(&sql.search_from).await?;
            client
                .query(&stmt, &[&tenant, &workspace, &text_query, &start, &cap])
                .await?
        }
    };
    let truncated = rows.len() > MAX_CANDIDATE_FILES;
    let mut hits = Vec::new();
    let mut files = 0u64;
    for row in rows.iter().take(MAX_CANDIDATE_FILES) {
        let raw: &str = row.try_get(0)?;
        let path = WorkspacePath::parse(raw).map_err(|_| {
            StoreError::internal("postgres search: a stored path is not a valid workspace path")
        })?;
        let bytes: &[u8] = row.try_get(1)?;
        let text = std::str::from_utf8(bytes).map_err(|_| {
            StoreError::internal("postgres search: a stored text file is not UTF-8")
        })?;
        files += 1;
        hits.extend(search::scan_lines(&path, text, query.terms()));
    }
    Ok(search::rank(hits, query.limit(), files, truncated))
}

/// The file statements with the schema name filled in, built once per store.
#[derive(Debug)]
pub(crate) struct FileSql {
    get_live: String,
    get_version: String,
    history: String,
    list_range: String,
    list_from: String,
    lock_owner_for_write: String,
    lock_owner_for_delete: String,
    lock_path: String,
    apply_write: String,
    apply_delete: String,
    search_range: String,
    search_from: String,
}

impl FileSql {
    /// The statements of a store in `schema` whose notices carry `replica`.
    pub(crate) fn new(schema: &SchemaName, replica: &str) -> Self {
        let apply = |template: &str| {
            schema.render(
                &template
                    .replace("{seen}", SEEN_BY_A_SNAPSHOT)
                    .replace("{notify_5}", &notify_expression(schema, replica, "$5"))
                    .replace("{notify_6}", &notify_expression(schema, replica, "$6"))
                    .replace("{owner_token}", OWNER_TOKEN),
            )
        };
        Self {
            get_live: schema.render(GET_LIVE),
            get_version: schema.render(GET_VERSION),
            history: schema.render(HISTORY),
            list_range: schema.render(LIST_RANGE),
            list_from: schema.render(LIST_FROM),
            lock_owner_for_write: schema.render(LOCK_OWNER_FOR_WRITE),
            lock_owner_for_delete: schema.render(LOCK_OWNER_FOR_DELETE),
            lock_path: schema.render(LOCK_PATH),
            apply_write: apply(APPLY_WRITE),
            apply_delete: apply(APPLY_DELETE),
            search_range: schema.render(SEARCH_RANGE),
            search_from: schema.render(SEARCH_FROM),
        }
    }

    /// Every statement, for tests that check them against a live database.
    #[cfg(test)]
    pub(crate) fn all(&self) -> [&str; 12] {
        [
            &self.get_live,
            &self.get_version,
            &self.history,
            &self.list_range,
            &self.list_from,
            &self.lock_owner_for_write,
            &self.lock_owner_for_delete,
            &self.lock_path,
            &self.apply_write,
            &self.apply_delete,
            &self.search_range,
            &self.search_from,
        ]
    }
}

/// Live files whose path starts with `prefix`, sorted by path, without content.
pub(crate) async fn list(
    client: &Client,
    sql: &FileSql,
    owner: &Owner,
    prefix: &WorkspacePrefix,
) -> Result<Vec<FileMeta>, Failure> {
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let start = prefix.as_str();
    let rows = match prefix_end(start) {
        Some(end) => {
            let stmt = client.prepare_cached(&sql.list_range).await?;
            client
                .query(&stmt, &[&tenant, &workspace, &start, &end])
                .await?
        }
        None => {
            let stmt = client.prepare_cached(&sql.list_from).await?;
            client.query(&stmt, &[&tenant, &workspace, &start]).await?
        }
    };
    rows.iter()
        .map(|row| {
            let raw: &str = row.try_get(7)?;
            let path = WorkspacePath::parse(raw).map_err(|_| {
                StoreError::internal("postgres list: a stored path is not a valid workspace path")
            })?;
            meta(row, path)
        })
        .collect()
}

/// How much history and feed the store keeps, as bound in statements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    /// Versions of a path's live life that history keeps (at least 1).
    pub(crate) versions: i64,
    /// Changes each owner's feed keeps (at least 1).
    pub(crate) feed: i64,
}

impl Retention {
    pub(crate) fn new(limits: &Limits, feed: u64) -> Self {
        let clamp = |n: u64| i64::try_from(n.max(1)).unwrap_or(i64::MAX);
        Self {
            versions: clamp(limits.max_versions),
            feed: clamp(feed),
        }
    }
}

/// The live file, or a retained version of its current life.
pub(crate) async fn get(
    client: &Client,
    sql: &FileSql,
    retention: Retention,
    owner: &Owner,
    path: &WorkspacePath,
    version: Option<u64>,
) -> Result<(FileMeta, String), Failure> {
    let version = match version.map(i64::try_from) {
        None => None,
        Some(Ok(v)) => Some(v),
        // No stored version is that large.
        Some(Err(_)) => return Err(StoreError::NotFound.into()),
    };
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let row = match version {
        None => {
            let stmt = client.prepare_cached(&sql.get_live).await?;
            client
                .query_opt(&stmt, &[&tenant, &workspace, &path.as_str()])
                .await?
        }
        Some(version) => {
            let stmt = client.prepare_cached(&sql.get_version).await?;
            let params: [&(dyn ToSql + Sync); 5] = [
                &tenant,
                &workspace,
                &path.as_str(),
                &version,
                &retention.versions,
            ];
            client.query_opt(&stmt, &params).await?
        }
    }
    .ok_or(StoreError::NotFound)?;
    let meta = meta(&row, path.clone())?;
    let content: Vec<u8> = row.try_get(7)?;
    let content = String::from_utf8(content)
        .map_err(|_| StoreError::internal("postgres get: stored content is not valid UTF-8"))?;
    Ok((meta, content))
}

/// Retained versions of the live file's current life, newest first.
pub(crate) async fn history(
    client: &Client,
    sql: &FileSql,
    retention: Retention,
    owner: &Owner,
    path: &WorkspacePath,
) -> Result<Vec<FileMeta>, Failure> {
    let stmt = client.prepare_cached(&sql.history).await?;
    let rows = client
        .query(
            &stmt,
            &[
                &owner.tenant.as_str(),
                &owner.workspace.as_str(),
                &path.as_str(),
                &retention.versions,
            ],
        )
        .await?;
    // A live file always has its live version stored, so empty means absent or tombstoned.
    if rows.is_empty() {
        return Err(StoreError::NotFound.into());
    }
    rows.iter().map(|row| meta(row, path.clone())).collect()
}

/// What a committed write stored, besides what the caller sent.
pub(crate) struct Written {
    pub(crate) seq: u64,
    pub(crate) decided: PutDecision,
    pub(crate) updated_at: DateTime<Utc>,
}

/// One write's own outcome inside a group commit: `Err` is that write's refusal or failure,
/// already rolled back to its savepoint (its neighbours in the transaction are untouched).
pub(crate) type Own<T> = Result<T, StoreError>;

/// Creates or replaces a file inside the open transaction `tx`, in a savepoint of its own:
/// owner lock and sequence number, path lock, precondition, `maxFiles`, version bump, pruning
/// and the feed. Two round trips when it succeeds: `SAVEPOINT` with both locks, then the
/// change with `RELEASE` (each pair pipelined). The outer `Err` means the transaction itself
/// broke (nothing of it commits); the inner one is this write's own outcome.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn put(
    tx: &Transaction<'_>,
    sql: &FileSql,
    limits: &Limits,
    retention: Retention,
    owner: &Owner,
    path: &WorkspacePath,
    write: &FileWrite,
    precondition: &Precondition,
) -> Result<Own<Written>, Failure> {
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let apply = tx.prepare_cached(&sql.apply_write).await?;
    let path_str = path.as_str();
    let locked = lock(tx, &sql.lock_owner_for_write, sql, owner, path)
        .await?
        .and_then(|(row, state)| {
            // The upsert always returns the owner row.
            let row = row.ok_or(Failure::Answer(StoreError::internal(
                "postgres: locking the owner returned no row",
            )))?;
            let seq: i64 = row.try_get(0)?;
            let live_files: i64 = row.try_get(1)?;
            Ok((seq, live_files, state))
        });
    let (seq, live_files, state) = match locked {
        Ok(locked) => locked,
        Err(failure) => return undo(tx, failure).await,
    };
    let decided = match write::decide_put(
        state.as_ref(),
        write,
        precondition,
        limits,
        live_files as u64,
    ) {
        Ok(decided) => decided,
        Err(refused) => return undo(tx, Failure::Answer(refused)).await,
    };
    let (life, version) = (stored_life(decided.life), decided.version as i64);
    // The statement binds bigints; a history floor past them is never reached.
    let prune_through = i64::try_from(decided.history_floor).unwrap_or(i64::MAX);
    let size = i64::try_from(decided.size).unwrap_or(i64::MAX);
    let text = indexed_text(write);
    let (ctype, content, creates, binary) = (
        write.content_type.as_str(),
        write.content.as_bytes(),
        i64::from(decided.creates),
        write.encoding.is_binary(),
    );
    let params: [&(dyn ToSql + Sync); 15] = [
        &tenant,
        &workspace,
        &path_str,
        &life,
        &version,
        &seq,
        &creates,
        &prune_through,
        &ctype,
        &write.author,
        &size,
        &content,
        &retention.feed,
        &binary,
        &text,
    ];
    let (applied, released) =
        tokio::join!(tx.query_one(&apply, &params), tx.batch_execute(RELEASE));
    let updated_at: DateTime<Utc> = match applied
        .map_err(Failure::from)
        .and_then(|row| row.try_get(0).map_err(Failure::from))
    {
        Ok(at) => at,
        // The release failed too (the transaction was aborted); the savepoint still stands.
        Err(failure) => return undo(tx, failure).await,
    };
    released?;
    Ok(Ok(Written {
        seq: seq as u64,
        decided,
        updated_at,
    }))
}

/// Tombstones the live file inside the open transaction `tx`, in a savepoint of its own,
/// drops the stored versions that no open snapshot sees, and appends to the feed. Two round
/// trips when it succeeds, as [`put`]; the same two levels of error.
pub(crate) async fn delete(
    tx: &Transaction<'_>,
    sql: &FileSql,
    retention: Retention,
    owner: &Owner,
    path: &WorkspacePath,
    precondition: &Precondition,
) -> Result<Own<(Deleted, u64)>, Failure> {
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let apply = tx.prepare_cached(&sql.apply_delete).await?;
    let path_str = path.as_str();
    let locked = lock(tx, &sql.lock_owner_for_delete, sql, owner, path)
        .await?
        .and_then(|(row, state)| {
            // No owner row: the owner never wrote, so the path holds no file.
            let row = row.ok_or(Failure::Answer(StoreError::NotFound))?;
            let seq: i64 = row.try_get(0)?;
            Ok((seq, state))
        });
    let (seq, state) = match locked {
        Ok(locked) => locked,
        Err(failure) => return undo(tx, failure).await,
    };
    let decided = match write::decide_delete(state.as_ref(), precondition) {
        Ok(decided) => decided,
        Err(refused) => return undo(tx, Failure::Answer(refused)).await,
    };
    let (tombstone, life) = (decided.tombstone as i64, stored_life(decided.life));
    let params: [&(dyn ToSql + Sync); 7] = [
        &tenant,
        &workspace,
        &path_str,
        &tombstone,
        &seq,
        &life,
        &retention.feed,
    ];
    let (applied, released) = tokio::join!(tx.execute(&apply, &params), tx.batch_execute(RELEASE));
    if let Err(e) = applied {
        return undo(tx, Failure::Db(e)).await;
    }
    released?;
    Ok(Ok((
        Deleted {
            version: tombstone as u64,
        },
        seq as u64,
    )))
}

/// Takes a change's savepoint and both locks in one round trip: the owner row (`lock_owner`
/// also takes its next sequence number) and the path's row. The outer `Err`: the savepoint
/// was not taken (the transaction is broken); the inner one: a lock failed, to be undone.
async fn lock(
    tx: &Transaction<'_>,
    lock_owner: &str,
    sql: &FileSql,
    owner: &Owner,
    path: &WorkspacePath,
) -> Result<Result<(Option<Row>, Option<Current>), Failure>, Failure> {
    let (tenant, workspace, path) = (
        owner.tenant.as_str(),
        owner.workspace.as_str(),
        path.as_str(),
    );
    let lock_owner = tx.prepare_cached(lock_owner).await?;
    let lock_path = tx.prepare_cached(&sql.lock_path).await?;
    let of_owner: [&(dyn ToSql + Sync); 2] = [&tenant, &workspace];
    let of_path: [&(dyn ToSql + Sync); 3] = [&tenant, &workspace, &path];
    let (saved, owner_row, path_row) = tokio::join!(
        tx.batch_execute(SAVEPOINT),
        tx.query_opt(&lock_owner, &of_owner),
        tx.query_opt(&lock_path, &of_path),
    );
    saved?;
    Ok((|| Ok((owner_row?, current(path_row?)?)))())
}

/// Each write's savepoint (one at a time, so one name serves).
const SAVEPOINT: &str = "SAVEPOINT wsp_write";

/// Keeps a write's changes in the transaction.
const RELEASE: &str = "RELEASE SAVEPOINT wsp_write";

/// Undoes a write's changes (its sequence number included) and its locks.
const ROLLBACK: &str = "ROLLBACK TO SAVEPOINT wsp_write";

/// Rolls the failed write back to its savepoint and makes `failure` its own outcome; when the
/// rollback itself fails, the transaction is broken and the failure is the batch's.
async fn undo<T>(tx: &Transaction<'_>, failure: Failure) -> Result<Own<T>, Failure> {
    if let Err(e) = tx.batch_execute(ROLLBACK).await {
        return Err(Failure::Db(e));
    }
    match failure {
        Failure::Answer(refused) => Ok(Err(refused)),
        // A statement of this write failed and was undone: a lost connection fails the
        // rollback above, so this is the write's own trouble (a timeout, a constraint).
        Failure::Db(e) => Ok(Err(crate::failure::store_error("write", e, false))),
        other => Err(other),
    }
}

/// The path's stored state from its locked row, if any.
fn current(row: Option<Row>) -> Result<Option<Current>, Failure> {
    let Some(row) = row else { return Ok(None) };
    Ok(Some(Current::from_stored(
        row.try_get(0)?,
        row.try_get(1)?,
        row.try_get(2)?,
    )))
}

/// Metadata from columns 0..=6: life, version, content_type, author, updated_at, size, base64.
pub(crate) fn meta(row: &Row, path: WorkspacePath) -> Result<FileMeta, Failure> {
    let content_type = MediaType::parse(row.try_get(2)?).map_err(|_| {
        Failure::Answer(StoreError::internal(
            "postgres: a stored media type is not valid",
        ))
    })?;
    Ok(write::file_meta(
        path,
        StoredColumns {
            life: row.try_get(0)?,
            version: row.try_get(1)?,
            content_type,
            author: row.try_get(3)?,
            updated_at: row.try_get(4)?,
            size: row.try_get(5)?,
            base64: row.try_get(6)?,
        },
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Whether a WHERE clause starts with `[alias.]tenant = $1 AND [alias.]workspace = $2`.
    pub(crate) fn names_the_owner(clause: &str) -> bool {
        let unaliased = |part: &str, column: &str| {
            part.split_once('.')
                .map_or(part, |(alias, rest)| {
                    if alias.bytes().all(|b| b.is_ascii_lowercase()) {
                        rest
                    } else {
                        part
                    }
                })
                .starts_with(column)
        };
        let Some((tenant, rest)) = clause.split_once(" AND ") else {
            return false;
        };
        unaliased(tenant, "tenant = $1") && unaliased(rest, "workspace = $2")
    }

    /// Every WHERE clause starts with the owner; an insert names it in its key.
    #[test]
    fn every_statement_names_the_owner() {
        assert!(names_the_owner("v.tenant = $1 AND v.workspace = $2 AND x"));
        assert!(!names_the_owner("v.seq = $1 AND v.workspace = $2"));
        assert!(!names_the_owner("tenant = $1 OR workspace = $2"));
        let sql = FileSql::new(&SchemaName::parse("s").unwrap(), "0123456789abcdef");
        for stmt in sql.all() {
            assert!(!stmt.contains("{s}") && !stmt.contains("LIKE"), "{stmt}");
            let clauses: Vec<&str> = stmt.split("WHERE ").skip(1).collect();
            for clause in &clauses {
                assert!(
                    names_the_owner(clause),
                    "a WHERE clause without the owner in {stmt}"
                );
            }
            assert!(
                !clauses.is_empty() || stmt.contains("VALUES ($1, $2, "),
                "{stmt}"
            );
        }
    }
}
