//! The database schema: the schema name, versioned migrations and their runner.
//!
//! Applied migrations are rows of `wsp_schema_migrations`; [`MIGRATIONS`]`[n]` takes a schema
//! from version `n` to `n + 1`. Future migrations are appended, never edited (`migrations.sha256`
//! holds the checksum of each, and a test fails when one differs). The runner holds a
//! transaction-scoped advisory lock, so replicas starting at once migrate one after the other and
//! each migration runs exactly once.

use std::fmt;

use crate::ConnectError;

/// The schema version this build creates and understands: the number of migrations.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock class of migrations (`"wspw"` as a big-endian `int4`); the object id is
/// the hash of the schema name, so stores in different schemas do not wait for each other.
const MIGRATION_LOCK_CLASS: i32 = i32::from_be_bytes(*b"wspw");

/// One step of the schema. `{s}` in `sql` stands for the quoted schema name.
pub(crate) struct Migration {
    /// What it does, recorded next to its version.
    pub(crate) description: &'static str,
    /// The statements, run in the migration transaction.
    pub(crate) sql: &'static str,
}

/// Every migration, in order.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1: owners, current file state and retained versions (the data model of the SQLite store).
    //
    // `wsp_owners.seq` is the owner's change sequence: every write and every delete takes the
    // next number while holding the owner row's lock until it commits, so sequence numbers
    // commit in order (what a change feed or a snapshot pinned at a sequence number needs). It
    // is recorded in `wsp_versions.seq` (writes) and `wsp_files.seq` (the latest write or
    // delete, so a tombstone carries its delete's number). `live_files` is what `maxFiles` is
    // checked against, under the same lock. `life` is a random 64-bit id per life of a path
    // (the u64 bit pattern in a bigint); etags are minted from (life, version). Text keys use
    // the "C" collation: paths sort and compare byte-wise, which is the wire's order, and the
    // primary key serves prefix ranges. `content` is bytea, so any Rust string (NUL included)
    // round-trips; it is the last column so that metadata reads do not touch its TOAST data.
    Migration {
        description: "owners, files and versions",
        sql: r#"
        CREATE TABLE {s}.wsp_owners (
            tenant     text   COLLATE "C" NOT NULL,
            workspace  text   COLLATE "C" NOT NULL,
            seq        bigint NOT NULL CHECK (seq >= 0),
            live_files bigint NOT NULL CHECK (live_files >= 0),
            PRIMARY KEY (tenant, workspace)
        );

        CREATE TABLE {s}.wsp_files (
            tenant    text    COLLATE "C" NOT NULL,
            workspace text    COLLATE "C" NOT NULL,
            path      text    COLLATE "C" NOT NULL,
            life      bigint  NOT NULL,
            version   bigint  NOT NULL CHECK (version >= 1),
            live      boolean NOT NULL,
            seq       bigint  NOT NULL,
            PRIMARY KEY (tenant, workspace, path),
            FOREIGN KEY (tenant, workspace) REFERENCES {s}.wsp_owners (tenant, workspace)
        );

        CREATE TABLE {s}.wsp_versions (
            tenant       text        COLLATE "C" NOT NULL,
            workspace    text        COLLATE "C" NOT NULL,
            path         text        COLLATE "C" NOT NULL,
            life         bigint      NOT NULL,
            version      bigint      NOT NULL CHECK (version >= 1),
            seq          bigint      NOT NULL,
            content_type text        NOT NULL,
            author       text,
            updated_at   timestamptz NOT NULL,
            size         bigint      NOT NULL CHECK (size >= 0),
            content      bytea       NOT NULL,
            PRIMARY KEY (tenant, workspace, path, life, version),
            FOREIGN KEY (tenant, workspace, path)
                REFERENCES {s}.wsp_files (tenant, workspace, path)
        );
        "#,
    },
    // 2: API key records, shared by every replica and by `wsp keys`.
    Migration {
        description: "api keys",
        sql: r#"
        CREATE TABLE {s}.wsp_keys (
            id          text        COLLATE "C" PRIMARY KEY,
            secret_hash bytea       NOT NULL CHECK (octet_length(secret_hash) = 32),
            tenant      text        NOT NULL,
            workspace   text        NOT NULL,
            principal   text        NOT NULL,
            scopes      text        NOT NULL,
            agent       text,
            created_at  timestamptz NOT NULL,
            revoked_at  timestamptz
        );
        "#,
    },
    // 3: run-start snapshots and the change feed, on top of the sequence numbers of 1.
    //
    // A snapshot pins an owner's `seq`; through it a path shows its newest row with `seq` at or
    // before the pin, unless that row is a tombstone. So a delete now leaves a tombstone row in
    // `wsp_versions` (`deleted`, empty content) while any snapshot is open, and pruning keeps,
    // besides the retained history of the live life, every row that an open snapshot sees and
    // the newest row of each path. `wsp_changes` is the feed: one row per committed write or
    // delete, trimmed to the newest `feed_retention` rows per owner in the same transaction.
    Migration {
        description: "snapshots and the change feed",
        sql: r#"
        ALTER TABLE {s}.wsp_versions ADD COLUMN deleted boolean NOT NULL DEFAULT false;
        CREATE INDEX wsp_versions_by_seq ON {s}.wsp_versions (tenant, workspace, path, seq DESC);

        CREATE TABLE {s}.wsp_changes (
            tenant    text        COLLATE "C" NOT NULL,
            workspace text        COLLATE "C" NOT NULL,
            seq       bigint      NOT NULL CHECK (seq >= 1),
            path      text        COLLATE "C" NOT NULL,
            version   bigint      NOT NULL CHECK (version >= 1),
            deleted   boolean     NOT NULL,
            at        timestamptz NOT NULL,
            PRIMARY KEY (tenant, workspace, seq),
            FOREIGN KEY (tenant, workspace) REFERENCES {s}.wsp_owners (tenant, workspace)
        );

        CREATE TABLE {s}.wsp_snapshots (
            tenant      text        COLLATE "C" NOT NULL,
            workspace   text        COLLATE "C" NOT NULL,
            id          text        COLLATE "C" NOT NULL,
            seq         bigint      NOT NULL CHECK (seq >= 0),
            label       text        NOT NULL,
            created_at  timestamptz NOT NULL,
            released_at timestamptz,
            outcome     text,
            CHECK ((released_at IS NULL) = (outcome IS NULL)),
            PRIMARY KEY (tenant, workspace, id),
            FOREIGN KEY (tenant, workspace) REFERENCES {s}.wsp_owners (tenant, workspace)
        );
        CREATE INDEX wsp_snapshots_open ON {s}.wsp_snapshots (tenant, workspace, seq)
            WHERE released_at IS NULL;
        "#,
    },
    // 4: the live version's metadata on the path row, so that a list reads one table through
    // its primary key (no join whose plan depends on fresh statistics). Tombstoned rows keep
    // NULLs there.
    Migration {
        description: "live metadata on the path row",
        sql: r#"
        ALTER TABLE {s}.wsp_files
            ADD COLUMN content_type text,
            ADD COLUMN author       text,
            ADD COLUMN updated_at   timestamptz,
            ADD COLUMN size         bigint;
        UPDATE {s}.wsp_files AS f
        SET content_type = v.content_type, author = v.author, updated_at = v.updated_at,
            size = v.size
        FROM {s}.wsp_versions AS v
        WHERE v.tenant = f.tenant AND v.workspace = f.workspace AND v.path = f.path
          AND v.life = f.life AND v.version = f.version AND f.live;
        ALTER TABLE {s}.wsp_files ADD CONSTRAINT wsp_files_live_metadata CHECK (
            NOT live OR (content_type IS NOT NULL AND updated_at IS NOT NULL AND size >= 0));
        "#,
    },
    // 5: `Idempotency-Key` records (idempotency.rs), shared by the replicas. `status` is NULL
    // while the claiming request runs; `created_at` is when it was claimed, then when it
    // completed (what expiry is measured from).
    Migration {
        description: "idempotency records",
        sql: r#"
        CREATE TABLE {s}.wsp_idempotency (
            tenant      text        COLLATE "C" NOT NULL,
            workspace   text        COLLATE "C" NOT NULL,
            key         text        COLLATE "C" NOT NULL,
            fingerprint bytea       NOT NULL,
            created_at  timestamptz NOT NULL,
            status      integer,
            headers     text,
            body        bytea,
            PRIMARY KEY (tenant, workspace, key)
        );
        CREATE INDEX wsp_idempotency_by_age ON {s}.wsp_idempotency (created_at);
        "#,
    },
    // 6: pack approvals made while the hosts run (approvals.rs), shared by the replicas.
    Migration {
        description: "pack approvals",
        sql: r#"
        CREATE TABLE {s}.wsp_approvals (
            tenant      text        COLLATE "C" NOT NULL,
            workspace   text        COLLATE "C" NOT NULL,
            pack        text        COLLATE "C" NOT NULL,
            approved_at timestamptz NOT NULL,
            PRIMARY KEY (tenant, workspace, pack)
        );
        "#,
    },
    // 7: an owner's snapshots newest first, in pages (`list_snapshots`).
    Migration {
        description: "snapshots by time",
        sql: r#"
        CREATE INDEX wsp_snapshots_by_time ON {s}.wsp_snapshots (tenant, workspace, created_at, id);
        "#,
    },
    // 8: binary bodies. `base64`: `content` is the file's bytes in standard, padded base64 (the
    // wire's spelling, so a read hands it on as it is) and `size` counts the decoded bytes; on
    // the path row, the live version's flag (false on a tombstone). A constant default makes
    // both additions catalog-only: no row is rewritten.
    Migration {
        description: "binary bodies",
        sql: r#"
        ALTER TABLE {s}.wsp_versions ADD COLUMN base64 boolean NOT NULL DEFAULT false;
        ALTER TABLE {s}.wsp_files ADD COLUMN base64 boolean NOT NULL DEFAULT false;
        "#,
    },
    // 9: full-text search (search.rs). One row per live text file: `doc` is the text search
    // value (configuration `simple`) of the owner's token (`o<hex tenant>x<hex workspace>`)
    // and of the first 200,000 characters of the text, kept in the write's statement. The
    // GIN index answers the owner's token and the words together, so a search reads only the
    // owner's entries. Existing live text files are indexed here, each up to its first NUL
    // character (a text search value holds none; a write indexes such a file's whole text with
    // the NULs as spaces).
    Migration {
        description: "full-text search",
        sql: r#"
        CREATE TABLE {s}.wsp_search (
            tenant    text     COLLATE "C" NOT NULL,
            workspace text     COLLATE "C" NOT NULL,
            path      text     COLLATE "C" NOT NULL,
            doc       tsvector NOT NULL,
            PRIMARY KEY (tenant, workspace, path)
        );
        CREATE INDEX wsp_search_doc ON {s}.wsp_search USING gin (doc);
        INSERT INTO {s}.wsp_search (tenant, workspace, path, doc)
        SELECT f.tenant, f.workspace, f.path,
               to_tsvector('simple', 'o' || encode(convert_to(f.tenant, 'UTF8'), 'hex') || 'x'
                   || encode(convert_to(f.workspace, 'UTF8'), 'hex'))
               || to_tsvector('simple', left(convert_from(substring(v.content FROM 1
                   FOR position('\x00'::bytea IN v.content || '\x00'::bytea) - 1), 'UTF8'),
                   200000))
        FROM {s}.wsp_files AS f
        JOIN {s}.wsp_versions AS v ON v.tenant = f.tenant AND v.workspace = f.workspace
            AND v.path = f.path AND v.life = f.life AND v.version = f.version
        WHERE f.live AND NOT v.base64;
        "#,
    },
];

/// A validated PostgreSQL schema name: 1 to 63 characters of `a-z`, `0-9` and `_`, starting
/// with a letter or `_`, and not `pg_`-prefixed (reserved by PostgreSQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaName(String);

impl SchemaName {
    pub(crate) fn parse(raw: &str) -> Result<Self, ConnectError> {
        let valid = !raw.is_empty()
            && raw.len() <= 63
            && !raw.starts_with("pg_")
            && raw
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !raw.as_bytes()[0].is_ascii_digit();
        if valid {
            Ok(Self(raw.to_owned()))
        } else {
            Err(ConnectError::InvalidSchema {
                schema: raw.to_owned(),
            })
        }
    }

    /// The bare name, as stored in `pg_namespace`.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as an SQL identifier (quoted, so that it never clashes with a keyword).
    pub(crate) fn quoted(&self) -> String {
        format!("\"{}\"", self.0)
    }

    /// `template` with every `{s}` replaced by the quoted name.
    pub(crate) fn render(&self, template: &str) -> String {
        template.replace("{s}", &self.quoted())
    }
}

impl fmt::Display for SchemaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Creates the schema if needed and applies pending migrations, in one transaction under the
/// schema's migration lock. Refuses a schema migrated by a newer build.
pub(crate) async fn migrate(
    client: &mut tokio_postgres::Client,
    schema: &SchemaName,
) -> Result<(), ConnectError> {
    let setup = |e: tokio_postgres::Error| ConnectError::Setup {
        reason: crate::failure::describe(&e),
    };
    let tx = client.transaction().await.map_err(setup)?;
    // Waiting for another replica's migration is expected, however long it takes.
    tx.batch_execute("SET LOCAL statement_timeout = 0")
        .await
        .map_err(setup)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&MIGRATION_LOCK_CLASS, &schema.as_str()],
    )
    .await
    .map_err(setup)?;
    // Look before creating: `CREATE ... IF NOT EXISTS` needs the CREATE privilege even when
    // the object exists, and a fully migrated schema should open without it.
    let schema_exists: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)",
            &[&schema.as_str()],
        )
        .await
        .map_err(setup)?
        .get(0);
    if !schema_exists {
        tx.batch_execute(&schema.render("CREATE SCHEMA {s}"))
            .await
            .map_err(setup)?;
    }
    let table = schema.render("{s}.wsp_schema_migrations");
    let table_exists: bool = tx
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await
        .map_err(setup)?
        .get(0);
    if !table_exists {
        tx.batch_execute(&format!(
            "CREATE TABLE {table} (
                version     integer     PRIMARY KEY CHECK (version >= 1),
                description text        NOT NULL,
                applied_at  timestamptz NOT NULL DEFAULT now()
            )"
        ))
        .await
        .map_err(setup)?;
    }
    let applied: i32 = tx
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {table}"),
            &[],
        )
        .await
        .map_err(setup)?
        .get(0);
    if applied > SCHEMA_VERSION {
        return Err(ConnectError::TooNew {
            schema: schema.to_string(),
            found: applied,
            supported: SCHEMA_VERSION,
        });
    }
    let record = format!("INSERT INTO {table} (version, description) VALUES ($1, $2)");
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(applied.max(0) as usize) {
        let version = index as i32 + 1;
        tx.batch_execute(&schema.render(migration.sql))
            .await
            .map_err(|e| ConnectError::Migration {
                version,
                reason: crate::failure::describe(&e),
            })?;
        tx.execute(&record, &[&version, &migration.description])
            .await
            .map_err(setup)?;
    }
    tx.commit().await.map_err(setup)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names() {
        for good in ["public", "wsp", "_x", "wsp_test_0123abcd", &"a".repeat(63)] {
            assert!(SchemaName::parse(good).is_ok(), "{good:?}");
        }
        for bad in [
            "",
            "Public",
            "1abc",
            "pg_catalog",
            "a-b",
            "a b",
            "a\"b",
            "schéma",
            &"a".repeat(64),
        ] {
            assert!(SchemaName::parse(bad).is_err(), "{bad:?}");
        }
    }

    /// The committed checksums match every migration: an applied one was not edited.
    #[test]
    fn applied_migrations_are_never_edited() {
        let sql: Vec<&str> = MIGRATIONS.iter().map(|m| m.sql).collect();
        let committed = include_str!("../migrations.sha256");
        if let Err(e) = wsp_store::migrations::verify("schema", &sql, committed) {
            panic!("{e}");
        }
    }

    #[test]
    fn rendering_quotes_the_schema() {
        let s = SchemaName::parse("tenant_data").unwrap();
        assert_eq!(
            s.render("SELECT 1 FROM {s}.wsp_files, {s}.wsp_owners"),
            r#"SELECT 1 FROM "tenant_data".wsp_files, "tenant_data".wsp_owners"#
        );
        for m in MIGRATIONS {
            assert!(!s.render(m.sql).contains("{s}"));
        }
        assert_eq!(SCHEMA_VERSION as usize, MIGRATIONS.len());
    }
}
