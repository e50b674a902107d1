//! Full-text search: an FTS5 index of each live text file, kept in the write transaction.
//!
//! `search_docs` gives each indexed path a stable integer id (its own `INTEGER PRIMARY KEY`, so
//! no `VACUUM` renumbers it); `search_text` is a contentless FTS5 table (the text lives in
//! `versions` already) whose rowid is that id, with two columns: `owner`, one token naming the
//! owner (`o<hex of tenant>x<hex of workspace>`), and `content`. A write of text replaces the
//! path's entry, a write of bytes or a delete removes it, in the transaction of the write: a
//! search never sees a file other than the live one. A query matches the owner's token and any
//! of the words, so the index itself keeps to the owner (another owner's entries are never
//! read); it takes the best-ranked candidates (bm25 over `content`), and their lines are scored
//! as every backend scores them (`wsp_store::search`).

use rusqlite::{Connection, Row, ToSql};
use wsp_store::search::{self, INDEXED_CHARS, MAX_CANDIDATE_FILES, SearchQuery, SearchResults};
use wsp_store::write::prefix_end;
use wsp_store::{FileWrite, StoreError};
use wsp_types::{Owner, WorkspacePath};

use crate::files::{parse_path, sqlite_error};

/// Removes the path's entry from the index (nothing when it has none).
const UNINDEX_TEXT: &str = "
    DELETE FROM search_text WHERE rowid = (
        SELECT id FROM search_docs WHERE tenant = ?1 AND workspace = ?2 AND path = ?3)";

const FORGET_DOC: &str = "
    DELETE FROM search_docs WHERE tenant = ?1 AND workspace = ?2 AND path = ?3";

/// The path's id, made when it has none.
const DOC_ID: &str = "
    INSERT INTO search_docs (tenant, workspace, path) VALUES (?1, ?2, ?3)
    ON CONFLICT (tenant, workspace, path) DO UPDATE SET tenant = excluded.tenant
    RETURNING id";

const INDEX_TEXT: &str = "INSERT INTO search_text (rowid, owner, content) VALUES (?1, ?2, ?3)";

/// The owner's best-ranked files matching `?1` (an FTS5 query naming the owner's token) under
/// a prefix (`?4` up to, not including, `?5`), with their live text: at most `?6`. The index
/// drives (`CROSS JOIN` fixes the order); each match finds its path and text through keys, and
/// `?2`, `?3` check the owner again.
const CANDIDATES_RANGE: &str = "
    SELECT d.path, v.content
    FROM search_text AS t
    CROSS JOIN search_docs AS d ON d.id = t.rowid
    CROSS JOIN files AS f ON f.tenant = d.tenant AND f.workspace = d.workspace
        AND f.path = d.path
    CROSS JOIN versions AS v ON v.tenant = f.tenant AND v.workspace = f.workspace
        AND v.path = f.path AND v.life = f.life AND v.version = f.version
    WHERE search_text MATCH ?1 AND d.tenant = ?2 AND d.workspace = ?3
      AND d.path >= ?4 AND d.path < ?5 AND f.live = 1 AND v.base64 = 0
    ORDER BY bm25(search_text, 0.0, 1.0), d.path
    LIMIT ?6";

/// [`CANDIDATES_RANGE`] for a prefix with no end (`?4` and above), at most `?5`.
const CANDIDATES_FROM: &str = "
    SELECT d.path, v.content
    FROM search_text AS t
    CROSS JOIN search_docs AS d ON d.id = t.rowid
    CROSS JOIN files AS f ON f.tenant = d.tenant AND f.workspace = d.workspace
        AND f.path = d.path
    CROSS JOIN versions AS v ON v.tenant = f.tenant AND v.workspace = f.workspace
        AND v.path = f.path AND v.life = f.life AND v.version = f.version
    WHERE search_text MATCH ?1 AND d.tenant = ?2 AND d.workspace = ?3
      AND d.path >= ?4 AND f.live = 1 AND v.base64 = 0
    ORDER BY bm25(search_text, 0.0, 1.0), d.path
    LIMIT ?5";

fn params3<'a>(owner: &'a Owner, path: &'a WorkspacePath) -> (&'a str, &'a str, &'a str) {
    (
        owner.tenant.as_str(),
        owner.workspace.as_str(),
        path.as_str(),
    )
}

/// Makes the index follow a write of `write` to `path`, in the write's transaction.
pub(crate) fn index(
    tx: &Connection,
    owner: &Owner,
    path: &WorkspacePath,
    write: &FileWrite,
) -> rusqlite::Result<()> {
    let params = params3(owner, path);
    tx.prepare_cached(UNINDEX_TEXT)?.execute(params)?;
    if write.encoding.is_binary() {
        tx.prepare_cached(FORGET_DOC)?.execute(params)?;
        return Ok(());
    }
    let id: i64 = tx
        .prepare_cached(DOC_ID)?
        .query_row(params, |row| row.get(0))?;
    let text = search::indexed_part(&write.content);
    tx.prepare_cached(INDEX_TEXT)?
        .execute((id, search::owner_token(owner), text))?;
    Ok(())
}

/// Removes `path` from the index, in a delete's transaction.
pub(crate) fn unindex(
    tx: &Connection,
    owner: &Owner,
    path: &WorkspacePath,
) -> rusqlite::Result<()> {
    let params = params3(owner, path);
    tx.prepare_cached(UNINDEX_TEXT)?.execute(params)?;
    tx.prepare_cached(FORGET_DOC)?.execute(params)?;
    Ok(())
}

/// The FTS5 query: the owner's token in `owner`, and in `content` any of the words, each a
/// quoted prefix (`"deploy"*`).
fn match_expression(owner: &Owner, query: &SearchQuery) -> String {
    let words = query
        .terms()
        .iter()
        // Words are letters and digits only: nothing to escape inside the quotes.
        .map(|t| format!("\"{t}\"*"))
        .collect::<Vec<_>>()
        .join(" OR ");
    format!(
        "owner : \"{}\" AND content : ({words})",
        search::owner_token(owner)
    )
}

/// Searches the owner's live text files.
pub(crate) fn run(
    conn: &Connection,
    owner: &Owner,
    query: &SearchQuery,
) -> Result<SearchResults, StoreError> {
    let fail = |e| sqlite_error("search", e);
    let expression = match_expression(owner, query);
    let (tenant, workspace) = (owner.tenant.as_str(), owner.workspace.as_str());
    let start = query.prefix().as_str();
    let end = prefix_end(start);
    // One more than read, to know whether there were more.
    let cap = (MAX_CANDIDATE_FILES + 1) as i64;
    let (sql, params): (&str, Vec<&dyn ToSql>) = match &end {
        Some(end) => (
            CANDIDATES_RANGE,
            vec![&expression, &tenant, &workspace, &start, end, &cap],
        ),
        None => (
            CANDIDATES_FROM,
            vec![&expression, &tenant, &workspace, &start, &cap],
        ),
    };
    let mut candidates: Vec<(WorkspacePath, String)> = Vec::new();
    let read = |row: &Row<'_>| -> rusqlite::Result<(WorkspacePath, String)> {
        Ok((parse_path(row.get(0)?, 0)?, row.get(1)?))
    };
    conn.prepare_cached(sql)
        .and_then(|mut stmt| {
            let rows = stmt.query_map(params.as_slice(), read)?;
            for row in rows {
                candidates.push(row?);
            }
            Ok(())
        })
        .map_err(fail)?;
    let truncated = candidates.len() > MAX_CANDIDATE_FILES;
    candidates.truncate(MAX_CANDIDATE_FILES);
    let files = candidates.len() as u64;
    let hits = candidates
        .iter()
        .flat_map(|(path, text)| search::scan_lines(path, text, query.terms()))
        .collect();
    Ok(search::rank(hits, query.limit(), files, truncated))
}

#[cfg(test)]
pub(crate) const STATEMENTS: &[&str] = &[UNINDEX_TEXT, FORGET_DOC, DOC_ID, INDEX_TEXT];

#[cfg(test)]
pub(crate) const QUERIES: &[&str] = &[CANDIDATES_RANGE, CANDIDATES_FROM];

const _: () = assert!(
    INDEXED_CHARS == 200_000,
    "the migration indexes 200,000 characters"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The writes find the path's entry through keys (the FTS5 table by rowid), and a query
    /// reads each candidate's rows through keys: the only scan is the index's own MATCH.
    #[test]
    fn statements_use_keys() {
        let conn = Connection::open_in_memory().unwrap();
        for migration in crate::schema::MIGRATIONS {
            conn.execute_batch(migration).unwrap();
        }
        for sql in STATEMENTS.iter().chain(QUERIES) {
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
                // The FTS5 table is always read through its own index: a rowid (`0:=`) or a
                // MATCH (`M`); every other table through a key.
                let fts = step.starts_with("SCAN search_text VIRTUAL TABLE INDEX 0:=")
                    || step.starts_with("SCAN t VIRTUAL TABLE INDEX 0:M");
                assert!(!step.starts_with("SCAN") || fts, "{step} in {sql}");
            }
            if QUERIES.contains(sql) {
                assert!(plan[0].starts_with("SCAN t VIRTUAL TABLE"), "{plan:?}");
                for table in [
                    "d USING INTEGER PRIMARY KEY",
                    "f USING PRIMARY KEY",
                    "v USING INDEX",
                ] {
                    assert!(
                        plan.iter()
                            .any(|s| s.starts_with(&format!("SEARCH {table}"))),
                        "{table} not in {plan:?}"
                    );
                }
            }
        }
    }

    /// A database written before the index (schema 6) gets its live text files indexed by the
    /// migration: a tombstoned file and a binary one are not; the owner's token it writes
    /// (uppercase hex) matches the one queries use (lowercase).
    #[test]
    fn the_migration_indexes_the_live_text_files() {
        let conn = Connection::open_in_memory().unwrap();
        let migrations = crate::schema::MIGRATIONS;
        for migration in &migrations[..6] {
            conn.execute_batch(migration).unwrap();
        }
        conn.execute_batch(
            "INSERT INTO owners (tenant, workspace, seq, live_files) VALUES
                 ('z', 'w', 3, 2), ('u', 'w', 1, 1);
             INSERT INTO files (tenant, workspace, path, life, version, live, seq) VALUES
                 ('z', 'w', 'MEMORY.md', 1, 1, 1, 1),
                 ('z', 'w', 'gone.md', 1, 2, 0, 3),
                 ('z', 'w', 'logo.png', 1, 1, 1, 2),
                 ('u', 'w', 'MEMORY.md', 1, 1, 1, 1);
             INSERT INTO versions (tenant, workspace, path, life, version, seq, deleted,
                 content_type, updated_at, size, base64, content) VALUES
                 ('z', 'w', 'MEMORY.md', 1, 1, 1, 0, 'text/markdown', 0, 15, 0, 'Friday deploys'),
                 ('z', 'w', 'gone.md', 1, 1, 2, 0, 'text/markdown', 0, 6, 0, 'friday'),
                 ('z', 'w', 'gone.md', 1, 2, 3, 1, NULL, 0, NULL, 0, NULL),
                 ('z', 'w', 'logo.png', 1, 1, 2, 0, 'image/png', 0, 6, 1, 'ZnJpZGF5'),
                 ('u', 'w', 'MEMORY.md', 1, 1, 1, 0, 'text/markdown', 0, 9, 0, 'friday u');",
        )
        .unwrap();
        conn.execute_batch(migrations[6]).unwrap();
        let t = Owner::parse("z", "w").unwrap();
        let query = SearchQuery::new("friday", wsp_types::WorkspacePrefix::all(), 10).unwrap();
        let found = run(&conn, &t, &query).unwrap();
        let paths: Vec<(&str, &str)> = found
            .hits
            .iter()
            .map(|h| (h.path.as_str(), h.snippet.as_str()))
            .collect();
        assert_eq!(paths, [("MEMORY.md", "Friday deploys")]);
        // The migration wrote the token with uppercase hex (SQLite's hex()), the query asks
        // in lowercase: the tokenizer folds case.
        assert_eq!(search::owner_token(&t), "o7ax77");
    }
}
