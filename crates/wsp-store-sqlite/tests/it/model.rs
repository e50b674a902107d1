//! What the SQLite file stores, step by step, under the battery's model scripts.
//!
//! The battery's model test (`behaves_like_the_memory_store`) compares what clients observe;
//! this one runs the same generated scripts (through `wsp_store::battery::run_script`, against
//! `MemoryStore` with a short feed retention) and checks after every committed step that the
//! rows the SQLite file stores are exactly those an independent model keeps: per path, its
//! newest row, the newest `max_versions` versions of its live life, and for each open snapshot
//! the newest row at or before its sequence number; a deleted path that nothing can see is
//! forgotten.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;
use wsp_store::MemoryStore;
use wsp_store::battery::{Applied, check_scripts, run_script, script_limits};
use wsp_store_sqlite::{SqliteOptions, SqliteStore};

const FEED_RETENTION: u64 = 6;

/// One stored row in the model: a version or a tombstone.
#[derive(Debug, Clone)]
struct Row {
    seq: u64,
    life: u64,
    file: bool,
}

/// The retention rule, written independently of both stores.
#[derive(Debug, Default)]
struct Model {
    seq: BTreeMap<&'static str, u64>,
    lives: u64,
    rows: BTreeMap<(&'static str, &'static str), Vec<Row>>,
    /// Open snapshots: (tenant, seq).
    open: Vec<(&'static str, u64)>,
}

impl Model {
    fn pinned(&self, tenant: &str) -> Vec<u64> {
        self.open
            .iter()
            .filter(|(t, _)| *t == tenant)
            .map(|(_, s)| *s)
            .collect()
    }

    fn next_seq(&mut self, tenant: &'static str) -> u64 {
        let seq = self.seq.entry(tenant).or_default();
        *seq += 1;
        *seq
    }

    fn prune(rows: &mut Vec<Row>, keep: usize, pinned: &[u64]) {
        let live_life = rows.last().filter(|r| r.file).map(|r| r.life);
        let mut needed: Vec<bool> = (0..rows.len()).map(|i| i + 1 == rows.len()).collect();
        let window = rows
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, r)| r.file && Some(r.life) == live_life)
            .take(keep);
        for (i, _) in window {
            needed[i] = true;
        }
        for s in pinned {
            if let Some(i) = rows.iter().rposition(|r| r.seq <= *s) {
                needed[i] = true;
            }
        }
        let mut index = 0;
        rows.retain(|_| {
            index += 1;
            needed[index - 1]
        });
    }

    fn put(&mut self, tenant: &'static str, path: &'static str, keep: usize) {
        let seq = self.next_seq(tenant);
        let pinned = self.pinned(tenant);
        let rows = self.rows.entry((tenant, path)).or_default();
        let life = match rows.last() {
            Some(r) if r.file => r.life,
            _ => {
                self.lives += 1;
                self.lives
            }
        };
        rows.push(Row {
            seq,
            life,
            file: true,
        });
        Self::prune(rows, keep, &pinned);
    }

    fn delete(&mut self, tenant: &'static str, path: &'static str, keep: usize) {
        let seq = self.next_seq(tenant);
        let pinned = self.pinned(tenant);
        if pinned.is_empty() {
            self.rows.remove(&(tenant, path));
            return;
        }
        let rows = self.rows.get_mut(&(tenant, path)).expect("a live path");
        let life = rows.last().expect("a live row").life;
        rows.push(Row {
            seq,
            life,
            file: false,
        });
        Self::prune(rows, keep, &pinned);
    }

    fn release(&mut self, index: usize, keep: usize) {
        let (tenant, _) = self.open.remove(index);
        let pinned = self.pinned(tenant);
        for ((t, _), rows) in self.rows.iter_mut() {
            if *t == tenant {
                Self::prune(rows, keep, &pinned);
            }
        }
        if pinned.is_empty() {
            self.rows
                .retain(|(t, _), rows| *t != tenant || rows.iter().any(|r| r.file));
        }
    }

    /// Per (tenant, path), the sequence numbers of the rows kept.
    fn stored(&self) -> BTreeMap<(String, String), Vec<u64>> {
        self.rows
            .iter()
            .map(|((t, p), rows)| {
                (
                    (t.to_string(), p.to_string()),
                    rows.iter().map(|r| r.seq).collect(),
                )
            })
            .collect()
    }
}

/// The same, read from the database file.
fn stored(raw: &Connection) -> BTreeMap<(String, String), Vec<u64>> {
    let mut stored: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    let mut stmt = raw
        .prepare("SELECT tenant, path, seq FROM versions ORDER BY tenant, path, seq")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?)))
        .unwrap();
    for row in rows {
        let (tenant, path, seq): (String, String, i64) = row.unwrap();
        stored.entry((tenant, path)).or_default().push(seq as u64);
    }
    stored
}

/// Every path with rows has a `files` row, and no other path has one.
fn files_rows(raw: &Connection) -> BTreeSet<(String, String)> {
    let mut stmt = raw.prepare("SELECT tenant, path FROM files").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

impl Model {
    fn apply(&mut self, applied: &Applied, keep: usize) {
        match *applied {
            Applied::Put { tenant, path } => self.put(tenant, path, keep),
            Applied::Delete { tenant, path } => self.delete(tenant, path, keep),
            Applied::Snapshot { tenant, seq } => self.open.push((tenant, seq)),
            Applied::Release { index, .. } => self.release(index, keep),
        }
    }
}

/// The stored rows agree with the model after every committed step of every script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_stores_the_rows_the_model_keeps() {
    check_scripts(24, |keep, ops| async move {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let db = dir.path().join("wsp.sqlite3");
        let limits = script_limits(keep);
        let options = SqliteOptions::default().feed_retention(FEED_RETENTION);
        let sql = SqliteStore::open_with(&db, limits, options).map_err(|e| e.to_string())?;
        let memory = MemoryStore::new(limits).with_feed_retention(FEED_RETENTION);
        let raw = Connection::open(&db).map_err(|e| e.to_string())?;
        let mut model = Model::default();
        let mut observe = |applied: &Applied| {
            model.apply(applied, keep as usize);
            let (rows, expected) = (stored(&raw), model.stored());
            if rows != expected {
                return Err(format!(
                    "stored rows {rows:?}, the model keeps {expected:?}"
                ));
            }
            let with_rows: BTreeSet<_> = expected.into_keys().collect();
            let files = files_rows(&raw);
            if files != with_rows {
                return Err(format!(
                    "files rows {files:?}, paths with rows {with_rows:?}"
                ));
            }
            Ok(())
        };
        run_script(&sql, &memory, keep, &ops, &mut observe).await
    });
}
