//! Opening a database file: identification, connection settings and versioned migrations.
//!
//! The schema version is SQLite's `user_version`; [`MIGRATIONS`]`[n]` takes a database from
//! version `n` to `n + 1`. Future migrations are appended, never edited: `migrations.sha256`
//! holds the checksum of each, and a test fails when one differs.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::OpenError;

/// The `application_id` stamped into every wsp database header (`"wspw"`, big-endian).
pub const APPLICATION_ID: i32 = i32::from_be_bytes(*b"wspw");

/// The schema version this build creates and understands: the number of migrations.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The WAL file is truncated back to this size after a checkpoint that emptied it.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// The writer checkpoints once the WAL holds this many pages (40 MiB of 4 KiB pages; SQLite's
/// default is 1,000). Writes rewrite the same few pages (the owner row, the feed's tail, the
/// search index's structure), and a checkpoint copies each page once however often it changed
/// since the last: under a 64-writer load, fewer checkpoints gave about 8% more `PUT`s per
/// second. The WAL stays under [`JOURNAL_SIZE_LIMIT`].
const WAL_AUTOCHECKPOINT: i64 = 10_000;

/// Every migration, in order; each runs inside one `BEGIN IMMEDIATE` transaction.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: owners, current file state and retained versions.
    //
    // `owners.seq` is the owner's change sequence: every write and every delete takes the next
    // number, recorded in `versions.seq` (writes) and `files.seq` (the latest write or delete,
    // so a tombstone carries the sequence number of its delete). `owners.live_files` is the
    // live-file count that `maxFiles` is checked against. `life` is a random 64-bit id per life
    // of a path (bit-cast to INTEGER); the etag is minted from (life, version). Paths compare
    // byte-wise (BINARY), which is the wire's sort order. `content` is the last column of
    // `versions` so that reading metadata never touches its overflow pages.
    r"
    CREATE TABLE owners (
        tenant     TEXT    NOT NULL,
        workspace  TEXT    NOT NULL,
        seq        INTEGER NOT NULL CHECK (seq >= 0),
        live_files INTEGER NOT NULL CHECK (live_files >= 0),
        PRIMARY KEY (tenant, workspace)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE files (
        tenant    TEXT    NOT NULL,
        workspace TEXT    NOT NULL,
        path      TEXT    NOT NULL COLLATE BINARY,
        life      INTEGER NOT NULL,
        version   INTEGER NOT NULL CHECK (version >= 1),
        live      INTEGER NOT NULL CHECK (live IN (0, 1)),
        seq       INTEGER NOT NULL,
        PRIMARY KEY (tenant, workspace, path),
        FOREIGN KEY (tenant, workspace) REFERENCES owners (tenant, workspace)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE versions (
        tenant       TEXT    NOT NULL,
        workspace    TEXT    NOT NULL,
        path         TEXT    NOT NULL COLLATE BINARY,
        life         INTEGER NOT NULL,
        version      INTEGER NOT NULL CHECK (version >= 1),
        seq          INTEGER NOT NULL,
        content_type TEXT    NOT NULL,
        author       TEXT,
        updated_at   INTEGER NOT NULL,
        size         INTEGER NOT NULL CHECK (size >= 0),
        content      TEXT    NOT NULL,
        PRIMARY KEY (tenant, workspace, path, life, version),
        FOREIGN KEY (tenant, workspace, path) REFERENCES files (tenant, workspace, path)
    ) STRICT;
    ",
    // 2: tombstone rows, run-start snapshots and the change feed.
    //
    // `versions` becomes the list of rows of each path in commit order: a version, or with
    // `deleted = 1` the tombstone of a delete (NULL content, type and size; its `version` is the
    // tombstone's, its `updated_at` the delete's time). `superseded_by` is the sequence number of
    // the path's next row (NULL for the newest), so a row is what a snapshot at sequence number
    // `s` sees exactly when `seq <= s < superseded_by`. The table is rebuilt to keep `content`
    // last; existing rows get `superseded_by` from their successor. Tombstoned `files` rows had
    // all their versions purged at delete under schema 1, so nothing can see them: forgotten.
    //
    // `snapshots` pins `seq` of an owner until released (`released_at`, `outcome`). `events` is
    // the per-owner change feed, one row per committed write or delete, trimmed to the newest
    // rows (the retention is an open option, not part of the schema).
    r"
    CREATE TABLE versions_2 (
        tenant        TEXT    NOT NULL,
        workspace     TEXT    NOT NULL,
        path          TEXT    NOT NULL COLLATE BINARY,
        life          INTEGER NOT NULL,
        version       INTEGER NOT NULL CHECK (version >= 1),
        seq           INTEGER NOT NULL,
        superseded_by INTEGER CHECK (superseded_by > seq),
        deleted       INTEGER NOT NULL CHECK (deleted IN (0, 1)),
        content_type  TEXT,
        author        TEXT,
        updated_at    INTEGER NOT NULL,
        size          INTEGER CHECK (size >= 0),
        content       TEXT,
        CHECK (CASE deleted
            WHEN 0 THEN content IS NOT NULL AND content_type IS NOT NULL AND size IS NOT NULL
            ELSE content IS NULL AND content_type IS NULL AND size IS NULL AND author IS NULL
        END),
        PRIMARY KEY (tenant, workspace, path, life, version),
        FOREIGN KEY (tenant, workspace, path) REFERENCES files (tenant, workspace, path)
    ) STRICT;

    INSERT INTO versions_2
        (tenant, workspace, path, life, version, seq, superseded_by, deleted, content_type,
         author, updated_at, size, content)
    SELECT tenant, workspace, path, life, version, seq,
           lead(seq) OVER (PARTITION BY tenant, workspace, path ORDER BY seq),
           0, content_type, author, updated_at, size, content
    FROM versions;

    DROP TABLE versions;
    ALTER TABLE versions_2 RENAME TO versions;

    CREATE UNIQUE INDEX versions_by_seq ON versions (tenant, workspace, path, seq);
    CREATE INDEX versions_superseded ON versions (tenant, workspace, superseded_by)
        WHERE superseded_by IS NOT NULL;

    DELETE FROM versions
    WHERE (tenant, workspace, path) IN (SELECT tenant, workspace, path FROM files WHERE live = 0);
    DELETE FROM files WHERE live = 0;
    CREATE INDEX files_tombstoned ON files (tenant, workspace, path) WHERE live = 0;

    CREATE TABLE snapshots (
        tenant      TEXT    NOT NULL,
        workspace   TEXT    NOT NULL,
        id          TEXT    NOT NULL,
        seq         INTEGER NOT NULL CHECK (seq >= 0),
        label       TEXT    NOT NULL,
        created_at  INTEGER NOT NULL,
        released_at INTEGER,
        outcome     TEXT,
        CHECK ((released_at IS NULL) = (outcome IS NULL)),
        PRIMARY KEY (tenant, workspace, id)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX snapshots_open ON snapshots (tenant, workspace, seq)
        WHERE released_at IS NULL;

    CREATE TABLE events (
        tenant    TEXT    NOT NULL,
        workspace TEXT    NOT NULL,
        seq       INTEGER NOT NULL CHECK (seq >= 1),
        path      TEXT    NOT NULL,
        version   INTEGER NOT NULL CHECK (version >= 1),
        deleted   INTEGER NOT NULL CHECK (deleted IN (0, 1)),
        at        INTEGER NOT NULL,
        PRIMARY KEY (tenant, workspace, seq)
    ) STRICT, WITHOUT ROWID;
    ",
    // 3: no `versions.superseded_by`.
    //
    // Setting it on the previous row at every write rewrote that row, content included (twice
    // the WAL traffic per write). The row a snapshot at `s` sees stays the newest row with
    // `seq <= s`; its successor is found through `versions_by_seq`, and the paths changed since
    // `s` (the only ones whose row at `s` can be superseded) through `files_by_seq`, as
    // `files.seq` is the sequence number of each path's newest row.
    r"
    DROP INDEX versions_superseded;
    ALTER TABLE versions DROP COLUMN superseded_by;
    CREATE INDEX files_by_seq ON files (tenant, workspace, seq);
    ",
    // 4: `Idempotency-Key` records (idempotency.rs). `status` is NULL while the claiming request
    // runs; `created_at` (Unix milliseconds) is when it was claimed, then when it completed.
    r"
    CREATE TABLE idempotency (
        tenant      TEXT    NOT NULL,
        workspace   TEXT    NOT NULL,
        key         TEXT    NOT NULL,
        fingerprint BLOB    NOT NULL,
        created_at  INTEGER NOT NULL,
        status      INTEGER,
        headers     TEXT,
        body        BLOB,
        PRIMARY KEY (tenant, workspace, key)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX idempotency_by_age ON idempotency (created_at);
    ",
    // 5: an owner's snapshots newest first, in pages (`list_snapshots`).
    r"
    CREATE INDEX snapshots_by_time ON snapshots (tenant, workspace, created_at, id);
    ",
    // 6: binary bodies. `base64 = 1`: `content` is the file's bytes in standard, padded base64
    // (the wire's spelling, so a read hands it on as it is) and `size` counts the decoded bytes.
    // The table is rebuilt rather than altered so that `content` stays the last column (an added
    // column would follow it, and reading metadata would walk the content's overflow pages).
    r"
    CREATE TABLE versions_6 (
        tenant       TEXT    NOT NULL,
        workspace    TEXT    NOT NULL,
        path         TEXT    NOT NULL COLLATE BINARY,
        life         INTEGER NOT NULL,
        version      INTEGER NOT NULL CHECK (version >= 1),
        seq          INTEGER NOT NULL,
        deleted      INTEGER NOT NULL CHECK (deleted IN (0, 1)),
        content_type TEXT,
        author       TEXT,
        updated_at   INTEGER NOT NULL,
        size         INTEGER CHECK (size >= 0),
        base64       INTEGER NOT NULL DEFAULT 0 CHECK (base64 IN (0, 1)),
        content      TEXT,
        CHECK (CASE deleted
            WHEN 0 THEN content IS NOT NULL AND content_type IS NOT NULL AND size IS NOT NULL
            ELSE content IS NULL AND content_type IS NULL AND size IS NULL AND author IS NULL
                 AND base64 = 0
        END),
        PRIMARY KEY (tenant, workspace, path, life, version),
        FOREIGN KEY (tenant, workspace, path) REFERENCES files (tenant, workspace, path)
    ) STRICT;

    INSERT INTO versions_6
        (tenant, workspace, path, life, version, seq, deleted, content_type, author, updated_at,
         size, base64, content)
    SELECT tenant, workspace, path, life, version, seq, deleted, content_type, author,
           updated_at, size, 0, content
    FROM versions;

    DROP TABLE versions;
    ALTER TABLE versions_6 RENAME TO versions;
    CREATE UNIQUE INDEX versions_by_seq ON versions (tenant, workspace, path, seq);
    ",
    // 7: full-text search (search.rs). `search_docs` gives each indexed path a stable id (its
    // own INTEGER PRIMARY KEY, which no VACUUM renumbers); `search_text` is a contentless FTS5
    // index, whose rowid is that id, of the owner's token (`o<hex tenant>x<hex workspace>`) and
    // the first 200,000 characters of each live text file. Existing live text files are
    // indexed here.
    r"
    CREATE TABLE search_docs (
        id        INTEGER PRIMARY KEY,
        tenant    TEXT NOT NULL,
        workspace TEXT NOT NULL,
        path      TEXT NOT NULL COLLATE BINARY,
        UNIQUE (tenant, workspace, path)
    ) STRICT;
    CREATE VIRTUAL TABLE search_text USING fts5(
        owner, content, content = '', contentless_delete = 1, tokenize = 'unicode61'
    );

    INSERT INTO search_docs (tenant, workspace, path)
    SELECT f.tenant, f.workspace, f.path
    FROM files AS f
    JOIN versions AS v ON v.tenant = f.tenant AND v.workspace = f.workspace
        AND v.path = f.path AND v.life = f.life AND v.version = f.version
    WHERE f.live = 1 AND v.base64 = 0;

    INSERT INTO search_text (rowid, owner, content)
    SELECT d.id, 'o' || hex(d.tenant) || 'x' || hex(d.workspace), substr(v.content, 1, 200000)
    FROM search_docs AS d
    JOIN files AS f ON f.tenant = d.tenant AND f.workspace = d.workspace AND f.path = d.path
    JOIN versions AS v ON v.tenant = f.tenant AND v.workspace = f.workspace
        AND v.path = f.path AND v.life = f.life AND v.version = f.version;
    ",
];

/// Opens (creating if needed) the read-write connection, checks that the file is a wsp database
/// this build understands, applies pending migrations and returns the configured connection.
pub(crate) fn open_writer(path: &Path, busy_timeout: Duration) -> Result<Connection, OpenError> {
    check_directory(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| cannot_open(path, &e))?;
    if conn
        .is_readonly("main")
        .map_err(|e| cannot_open(path, &e))?
    {
        return Err(OpenError::CannotOpen {
            path: path.to_owned(),
            reason: "the file or its directory is not writable".into(),
        });
    }
    conn.busy_timeout(busy_timeout)
        .map_err(|e| setup(path, &e))?;
    // Identify before changing anything, so a foreign database is left exactly as it was.
    identify(path, &conn)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|e| setup(path, &e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(OpenError::Setup {
            path: path.to_owned(),
            reason: format!("the file system refused WAL mode (journal_mode is {mode})"),
        });
    }
    // FULL: a commit is acknowledged only after the WAL is synced, which survives power loss.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| setup(path, &e))?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(|e| setup(path, &e))?;
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)
        .map_err(|e| setup(path, &e))?;
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT)
        .map_err(|e| setup(path, &e))?;
    stable_plans(path, &conn)?;
    let mut conn = conn;
    migrate(path, &mut conn)?;
    Ok(conn)
}

/// Opens one read-only connection to a database that [`open_writer`] has prepared.
pub(crate) fn open_reader(path: &Path, busy_timeout: Duration) -> Result<Connection, OpenError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| cannot_open(path, &e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| setup(path, &e))?;
    stable_plans(path, &conn)?;
    Ok(conn)
}

/// Turns on the query planner stability guarantee: a prepared statement keeps its plan (the
/// one the plan test checks) whatever values are bound. Without it, a statement whose plan
/// could depend on a bound value is re-prepared at every new value, which for the pruning
/// statements cost more than the rest of a write.
fn stable_plans(path: &Path, conn: &Connection) -> Result<(), OpenError> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| setup(path, &e))?;
    Ok(())
}

/// Refuses a path whose directory is missing or is not a directory, with a message that says so
/// (SQLite itself only says "unable to open database file").
fn check_directory(path: &Path) -> Result<(), OpenError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(OpenError::CannotOpen {
                path: path.to_owned(),
                reason: format!("{} is not a directory", dir.display()),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(OpenError::MissingDirectory {
                path: path.to_owned(),
                directory: dir.to_owned(),
            });
        }
        Err(e) => {
            return Err(OpenError::CannotOpen {
                path: path.to_owned(),
                reason: format!("cannot inspect {}: {e}", dir.display()),
            });
        }
    }
    if path.is_dir() {
        return Err(OpenError::CannotOpen {
            path: path.to_owned(),
            reason: "it is a directory".into(),
        });
    }
    Ok(())
}

/// What the header of an open database says about its owner.
fn header(conn: &Connection) -> rusqlite::Result<(i32, i64)> {
    let application_id = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let user_version = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    Ok((application_id, user_version))
}

/// Accepts a wsp database of this or an older schema, or a database with nothing in it.
fn identify(path: &Path, conn: &Connection) -> Result<(), OpenError> {
    let (application_id, user_version) = header(conn).map_err(|e| unreadable(path, &e))?;
    if application_id == APPLICATION_ID {
        return check_version(path, user_version);
    }
    if application_id != 0 {
        return Err(OpenError::NotAWspDatabase {
            path: path.to_owned(),
            reason: format!("its application_id is {application_id:#010x}, not wsp's"),
        });
    }
    let objects: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
        .map_err(|e| unreadable(path, &e))?;
    if objects != 0 || user_version != 0 {
        return Err(OpenError::NotAWspDatabase {
            path: path.to_owned(),
            reason: "it is an SQLite database of another application".into(),
        });
    }
    Ok(())
}

fn check_version(path: &Path, user_version: i64) -> Result<(), OpenError> {
    if user_version > SCHEMA_VERSION {
        return Err(OpenError::TooNew {
            path: path.to_owned(),
            found: user_version,
            supported: SCHEMA_VERSION,
        });
    }
    if user_version < 0 {
        return Err(OpenError::NotAWspDatabase {
            path: path.to_owned(),
            reason: format!("its schema version {user_version} is not one wsp ever wrote"),
        });
    }
    Ok(())
}

/// Applies every pending migration in one immediate transaction, re-reading the header inside
/// it so that two processes opening a new file at once migrate it exactly once.
fn migrate(path: &Path, conn: &mut Connection) -> Result<(), OpenError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| setup(path, &e))?;
    identify(path, &tx)?;
    let (_, from) = header(&tx).map_err(|e| setup(path, &e))?;
    if from == SCHEMA_VERSION {
        return Ok(());
    }
    // `from` was checked to lie in 0..SCHEMA_VERSION.
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        tx.execute_batch(sql).map_err(|e| OpenError::Setup {
            path: path.to_owned(),
            reason: format!("migration to schema version {} failed: {e}", index + 1),
        })?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| setup(path, &e))?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| setup(path, &e))?;
    tx.commit().map_err(|e| setup(path, &e))
}

fn cannot_open(path: &Path, e: &rusqlite::Error) -> OpenError {
    OpenError::CannotOpen {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

fn setup(path: &Path, e: &rusqlite::Error) -> OpenError {
    OpenError::Setup {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

/// The first read of a file: "file is not a database" means it is not SQLite at all.
fn unreadable(path: &Path, e: &rusqlite::Error) -> OpenError {
    if e.sqlite_error_code() == Some(ErrorCode::NotADatabase) {
        OpenError::NotAWspDatabase {
            path: path.to_owned(),
            reason: "it is not an SQLite database".into(),
        }
    } else {
        setup(path, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pragma<T: rusqlite::types::FromSql>(conn: &Connection, name: &str) -> T {
        conn.pragma_query_value(None, name, |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn the_writer_is_durable_and_checks_foreign_keys() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writer(&dir.path().join("wsp.sqlite3"), Duration::from_secs(3)).unwrap();
        assert_eq!(pragma::<String>(&conn, "journal_mode"), "wal");
        assert_eq!(pragma::<i64>(&conn, "synchronous"), 2, "FULL");
        assert_eq!(pragma::<i64>(&conn, "foreign_keys"), 1);
        assert_eq!(pragma::<i64>(&conn, "busy_timeout"), 3000);
        assert_eq!(
            pragma::<i64>(&conn, "wal_autocheckpoint"),
            WAL_AUTOCHECKPOINT
        );
        assert_eq!(pragma::<i32>(&conn, "application_id"), APPLICATION_ID);
        assert_eq!(pragma::<i64>(&conn, "user_version"), SCHEMA_VERSION);
        assert!(
            conn.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
                .unwrap()
        );
        let orphan = conn.execute(
            "INSERT INTO files (tenant, workspace, path, life, version, live, seq)
             VALUES ('t', 'w', 'p', 1, 1, 1, 1)",
            [],
        );
        assert!(orphan.is_err(), "a file needs its owner row");
    }

    /// The committed checksums match every migration: an applied one was not edited.
    #[test]
    fn applied_migrations_are_never_edited() {
        let committed = include_str!("../migrations.sha256");
        let sets = [
            ("files", MIGRATIONS),
            ("keys", crate::keys::MIGRATIONS),
            ("approvals", crate::approvals::MIGRATIONS),
        ];
        for (set, migrations) in sets {
            if let Err(e) = wsp_store::migrations::verify(set, migrations, committed) {
                panic!("{e}");
            }
        }
    }

    #[test]
    fn migrations_run_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wsp.sqlite3");
        let conn = open_writer(&path, Duration::from_secs(1)).unwrap();
        conn.execute(
            "INSERT INTO owners (tenant, workspace, seq, live_files) VALUES ('t', 'w', 7, 0)",
            [],
        )
        .unwrap();
        drop(conn);
        let conn = open_writer(&path, Duration::from_secs(1)).unwrap();
        let seq: i64 = conn
            .query_row("SELECT seq FROM owners", [], |row| row.get(0))
            .unwrap();
        assert_eq!(seq, 7);
        assert_eq!(SCHEMA_VERSION, MIGRATIONS.len() as i64);
    }

    /// A database file with schema `version`, as the build that had only that many migrations
    /// left it.
    fn database_at(path: &Path, version: usize) -> Connection {
        let conn = Connection::open(path).unwrap();
        for migration in &MIGRATIONS[..version] {
            conn.execute_batch(migration).unwrap();
        }
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", version as i64)
            .unwrap();
        conn
    }

    /// A database of schema 2 (with `versions.superseded_by`) keeps its rows, open snapshots
    /// and feed, and loses the column.
    #[tokio::test(flavor = "current_thread")]
    async fn schema_2_drops_superseded_by_and_keeps_snapshots() {
        use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
        use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wsp.sqlite3");
        // Schema 2 after: a.md v1 (seq 1), snapshot "s" at 1, a.md v2 (2), delete a.md (3),
        // which kept v1 (pinned) and the tombstone.
        let v2 = database_at(&path, 2);
        v2.execute_batch(
            "INSERT INTO owners VALUES ('t', 'w', 3, 0);
             INSERT INTO files VALUES ('t', 'w', 'a.md', 7, 3, 0, 3);
             INSERT INTO versions VALUES ('t', 'w', 'a.md', 7, 1, 1, 2, 0, 'text/markdown', NULL, 0, 2, 'v1');
             INSERT INTO versions VALUES ('t', 'w', 'a.md', 7, 3, 3, NULL, 1, NULL, NULL, 0, NULL, NULL);
             INSERT INTO snapshots VALUES ('t', 'w', '55555555555555555555555555555555', 1, 'run', 0, NULL, NULL);
             INSERT INTO events VALUES ('t', 'w', 1, 'a.md', 1, 0, 0);
             INSERT INTO events VALUES ('t', 'w', 2, 'a.md', 2, 0, 0);
             INSERT INTO events VALUES ('t', 'w', 3, 'a.md', 3, 1, 0);",
        )
        .unwrap();
        drop(v2);

        let store = crate::SqliteStore::open(&path, Limits::default()).unwrap();
        let owner = Owner::parse("t", "w").unwrap();
        let a = WorkspacePath::parse("a.md").unwrap();
        let s = wsp_store::SnapshotId::parse("55555555555555555555555555555555").unwrap();
        assert_eq!(store.get_at(&owner, &s, &a).await.unwrap().content, "v1");
        let page = store.changes(&owner, 0, 10).await.unwrap();
        assert_eq!((page.oldest, page.head, page.events.len()), (1, 3, 3));
        let raw = Connection::open(&path).unwrap();
        let columns: i64 = raw
            .query_row(
                "SELECT count(*) FROM pragma_table_info('versions') WHERE name = 'superseded_by'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(columns, 0);
        // Writes and the release prune as schema 3 does.
        store
            .put(&owner, &a, FileWrite::markdown("again"), Precondition::None)
            .await
            .unwrap();
        store.release_snapshot(&owner, &s, "done").await.unwrap();
        let rows: i64 = raw
            .query_row("SELECT count(*) FROM versions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1, "only the new life's version is left");
        let listed = store.list(&owner, &WorkspacePrefix::all()).await.unwrap();
        assert_eq!(listed.len(), 1);
    }

    /// A database written by schema 5 keeps every version, tombstone and snapshot through the
    /// rebuild of migration 6; its files read as text, and `content` is still the last column.
    #[tokio::test(flavor = "current_thread")]
    async fn schema_5_keeps_every_row_and_reads_them_as_text() {
        use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
        use wsp_types::wire::ContentEncoding;
        use wsp_types::{MediaType, Owner, WorkspacePath, WorkspacePrefix};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wsp.sqlite3");
        // a.md v1 (seq 1) pinned by snapshot "s", then a.md v2 (2) and its delete (3); b.md v1 (4).
        let v5 = database_at(&path, 5);
        v5.execute_batch(
            "INSERT INTO owners VALUES ('t', 'w', 4, 1);
             INSERT INTO files VALUES ('t', 'w', 'a.md', 7, 3, 0, 3);
             INSERT INTO files VALUES ('t', 'w', 'b.md', 9, 1, 1, 4);
             INSERT INTO versions VALUES ('t', 'w', 'a.md', 7, 1, 1, 0, 'text/markdown', 'ann', 0, 2, 'v1');
             INSERT INTO versions VALUES ('t', 'w', 'a.md', 7, 2, 2, 0, 'text/markdown', NULL, 0, 2, 'v2');
             INSERT INTO versions VALUES ('t', 'w', 'a.md', 7, 3, 3, 1, NULL, NULL, 0, NULL, NULL);
             INSERT INTO versions VALUES ('t', 'w', 'b.md', 9, 1, 4, 0, 'text/plain', NULL, 0, 3, 'bbb');
             INSERT INTO snapshots VALUES ('t', 'w', '55555555555555555555555555555555', 1, 'run', 0, NULL, NULL);",
        )
        .unwrap();
        drop(v5);

        let store = crate::SqliteStore::open(&path, Limits::default()).unwrap();
        let owner = Owner::parse("t", "w").unwrap();
        let a = WorkspacePath::parse("a.md").unwrap();
        let b = WorkspacePath::parse("b.md").unwrap();
        let s = wsp_store::SnapshotId::parse("55555555555555555555555555555555").unwrap();
        let pinned = store.get_at(&owner, &s, &a).await.unwrap();
        assert_eq!(
            (pinned.content.as_str(), pinned.meta.author.as_deref()),
            ("v1", Some("ann"))
        );
        assert_eq!(pinned.meta.encoding, ContentEncoding::Utf8);
        let live = store.get(&owner, &b, None).await.unwrap();
        assert_eq!((live.content.as_str(), live.meta.size), ("bbb", 3));
        assert_eq!(live.meta.encoding, ContentEncoding::Utf8);
        let listed = store.list(&owner, &WorkspacePrefix::all()).await.unwrap();
        assert_eq!(listed.len(), 1);
        let raw = Connection::open(&path).unwrap();
        let rows: i64 = raw
            .query_row("SELECT count(*) FROM versions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 4);
        let last: String = raw
            .query_row(
                "SELECT name FROM pragma_table_info('versions') ORDER BY cid DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(last, "content");
        // The rebuilt table takes bytes.
        let png = MediaType::from_static("image/png");
        store
            .put(
                &owner,
                &b,
                FileWrite::bytes(&[0, 0xff], png),
                Precondition::None,
            )
            .await
            .unwrap();
        let bytes = store.get(&owner, &b, None).await.unwrap();
        assert_eq!(bytes.meta.encoding, ContentEncoding::Base64);
        assert_eq!(bytes.meta.size, 2);
    }

    /// A database written by schema 1 (no tombstone rows, no snapshots, no feed) keeps every
    /// file and version, forgets its tombstoned paths, and gains snapshots and a feed.
    #[tokio::test(flavor = "current_thread")]
    async fn schema_1_migrates_to_tombstone_rows_snapshots_and_the_feed() {
        use wsp_store::{FileWrite, Limits, Precondition, StoreError, WorkspaceStore};
        use wsp_types::{ETag, Owner, WorkspacePath, WorkspacePrefix};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wsp.sqlite3");
        // What schema 1 stored after: keep.md v1 (seq 1), gone.md v1 (2), delete gone.md (3,
        // purging its versions), keep.md v2 (4) and v3 (5), with two versions retained.
        let v1 = database_at(&path, 1);
        v1.execute_batch(
            "INSERT INTO owners VALUES ('t', 'w', 5, 1);
             INSERT INTO files VALUES ('t', 'w', 'keep.md', 7, 3, 1, 5);
             INSERT INTO files VALUES ('t', 'w', 'gone.md', 9, 2, 0, 3);
             INSERT INTO versions VALUES ('t', 'w', 'keep.md', 7, 2, 4, 'text/plain', NULL, 0, 2, 'v2');
             INSERT INTO versions VALUES ('t', 'w', 'keep.md', 7, 3, 5, 'text/plain', 'al', 1, 2, 'v3');",
        )
        .unwrap();
        drop(v1);

        let limits = Limits::default().with_max_versions(2);
        let store = crate::SqliteStore::open(&path, limits).unwrap();
        let owner = Owner::parse("t", "w").unwrap();
        let keep = WorkspacePath::parse("keep.md").unwrap();
        let live = store.get(&owner, &keep, None).await.unwrap();
        assert_eq!(
            (live.content.as_str(), live.meta.etag.clone()),
            ("v3", ETag::mint(7, 3))
        );
        assert_eq!(live.meta.author.as_deref(), Some("al"));
        let history = store.history(&owner, &keep).await.unwrap();
        assert_eq!(
            history.iter().map(|m| m.version).collect::<Vec<_>>(),
            [3, 2]
        );

        let raw = Connection::open(&path).unwrap();
        let rows: Vec<(String, i64, i64, i64)> = raw
            .prepare("SELECT path, version, seq, deleted FROM versions ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [("keep.md".into(), 2, 4, 0), ("keep.md".into(), 3, 5, 0)]
        );
        let tombstoned: i64 = raw
            .query_row("SELECT count(*) FROM files WHERE live = 0", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(tombstoned, 0, "nothing can see gone.md: forgotten");

        // The feed starts empty at the old head: earlier positions are expired, not invented.
        let page = store.changes(&owner, 0, 10).await.unwrap();
        assert_eq!((page.head, page.oldest, page.events.len()), (5, 6, 0));
        let snap = store.snapshot(&owner, &"".into()).await.unwrap();
        assert_eq!(snap.seq, 5);
        store
            .put(&owner, &keep, FileWrite::markdown("v4"), Precondition::None)
            .await
            .unwrap();
        store
            .put(&owner, &keep, FileWrite::markdown("v5"), Precondition::None)
            .await
            .unwrap();
        assert_eq!(
            store.get_at(&owner, &snap.id, &keep).await.unwrap().content,
            "v3"
        );
        assert_eq!(
            store.get(&owner, &keep, Some(3)).await,
            Err(StoreError::NotFound),
            "pinned, not served"
        );
        let listed = store
            .list_at(&owner, &snap.id, &WorkspacePrefix::all())
            .await
            .unwrap();
        assert_eq!(listed.len(), 1);
        let page = store.changes(&owner, 5, 10).await.unwrap();
        assert_eq!(
            page.events
                .iter()
                .map(|e| (e.seq, e.version))
                .collect::<Vec<_>>(),
            [(6, 4), (7, 5)]
        );
    }

    #[test]
    fn a_reader_cannot_write_and_keeps_its_plans() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wsp.sqlite3");
        let _writer = open_writer(&path, Duration::from_secs(1)).unwrap();
        let reader = open_reader(&path, Duration::from_secs(1)).unwrap();
        assert!(
            reader
                .db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
                .unwrap()
        );
        let write = reader.execute(
            "INSERT INTO owners (tenant, workspace, seq, live_files) VALUES ('t', 'w', 0, 0)",
            [],
        );
        assert_eq!(
            write.unwrap_err().sqlite_error_code(),
            Some(ErrorCode::ReadOnly)
        );
    }
}
