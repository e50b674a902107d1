//! The SQLite store against the reference `MemoryStore`, operation by operation.
//!
//! Random scripts of writes, deletes, re-creations, snapshots and releases run on both stores;
//! after every operation everything a client can observe must agree (lists, reads, history,
//! versioned reads, reads through every snapshot, the change feed), and the rows the SQLite file
//! stores must be exactly those the reference keeps: per path, its newest row, the newest
//! `max_versions` versions of its live life, and for each open snapshot the newest row at or
//! before its sequence number; a deleted path that nothing can see is forgotten.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;
use wsp_store::{
    ChangePage, FileWrite, Limits, MemoryStore, Precondition, StoreError, StoredFile,
    WorkspaceStore,
};
use wsp_store_sqlite::{SqliteOptions, SqliteStore};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

const PATHS: [&str; 4] = ["AGENTS.md", "MEMORY.md", "notes/a.md", "notes/b.md"];
const TENANTS: [&str; 2] = ["a", "b"];
const FEED_RETENTION: u64 = 6;

/// xorshift64*: a deterministic script from a seed, no dependency needed.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

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

/// A stored file without what differs by design between two stores (etag, time).
type Seen = (String, u64, String, String, u64, Option<String>);

fn seen(f: &StoredFile) -> Seen {
    (
        f.meta.path.as_str().to_owned(),
        f.meta.version,
        f.content.clone(),
        f.meta.content_type.clone(),
        f.meta.size,
        f.meta.author.clone(),
    )
}

fn outcome<T, U>(r: Result<T, StoreError>, f: impl Fn(&T) -> U) -> Result<U, StoreError> {
    r.as_ref().map(f).map_err(Clone::clone)
}

/// A feed page as (head, oldest, events as (seq, path, version, deleted)).
type FeedSeen = (u64, u64, Vec<(u64, String, u64, bool)>);

fn feed(page: &ChangePage) -> FeedSeen {
    (
        page.head,
        page.oldest,
        page.events
            .iter()
            .map(|e| (e.seq, e.path.as_str().to_owned(), e.version, e.deleted))
            .collect(),
    )
}

/// Snapshot ids in each store for one snapshot taken in both.
struct Taken {
    tenant: &'static str,
    memory: String,
    sqlite: String,
}

async fn compare(
    mem: &MemoryStore,
    sql: &SqliteStore,
    open: &[Taken],
    released: &[Taken],
    keep: u64,
    step: &str,
) {
    let all = WorkspacePrefix::all();
    for tenant in TENANTS {
        let o = Owner::parse(tenant, "w").unwrap();
        let names = |v: Vec<wsp_store::FileMeta>| -> Vec<(String, u64)> {
            v.into_iter()
                .map(|m| (m.path.into_string(), m.version))
                .collect()
        };
        assert_eq!(
            outcome(sql.list(&o, &all).await, |v| names(v.clone())),
            outcome(mem.list(&o, &all).await, |v| names(v.clone())),
            "list of {tenant} after {step}"
        );
        for p in PATHS {
            let p = WorkspacePath::parse(p).unwrap();
            let (m, s) = (mem.get(&o, &p, None).await, sql.get(&o, &p, None).await);
            assert_eq!(
                outcome(s, seen),
                outcome(m.clone(), seen),
                "{p} after {step}"
            );
            let versions = |h: &Vec<wsp_store::FileMeta>| -> Vec<u64> {
                h.iter().map(|m| m.version).collect()
            };
            assert_eq!(
                outcome(sql.history(&o, &p).await, versions),
                outcome(mem.history(&o, &p).await, versions),
                "history of {p} after {step}"
            );
            let top = m.map_or(1, |f| f.meta.version);
            for v in top.saturating_sub(keep + 1).max(1)..=top + 1 {
                assert_eq!(
                    outcome(sql.get(&o, &p, Some(v)).await, seen),
                    outcome(mem.get(&o, &p, Some(v)).await, seen),
                    "{p} version {v} after {step}"
                );
            }
        }
        for t in open.iter().chain(released).filter(|t| t.tenant == tenant) {
            assert_eq!(
                outcome(sql.list_at(&o, &t.sqlite, &all).await, |v| names(v.clone())),
                outcome(mem.list_at(&o, &t.memory, &all).await, |v| names(v.clone())),
                "list at a snapshot after {step}"
            );
            for p in PATHS {
                let p = WorkspacePath::parse(p).unwrap();
                assert_eq!(
                    outcome(sql.get_at(&o, &t.sqlite, &p).await, seen),
                    outcome(mem.get_at(&o, &t.memory, &p).await, seen),
                    "{p} at a snapshot after {step}"
                );
            }
        }
        assert_eq!(
            outcome(sql.changes(&o, 0, 100).await, feed),
            outcome(mem.changes(&o, 0, 100).await, feed),
            "feed of {tenant} after {step}"
        );
    }
}

async fn run(seed: u64, keep: u64, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wsp.sqlite3");
    let limits = Limits {
        max_file_bytes: 1024,
        max_files: 3,
        max_versions: keep,
    };
    let options = SqliteOptions::default().feed_retention(FEED_RETENTION);
    let sql = SqliteStore::open_with(&db, limits, options).unwrap();
    let mem = MemoryStore::new(limits).with_feed_retention(FEED_RETENTION);
    let raw = Connection::open(&db).unwrap();
    let mut model = Model::default();
    let mut dice = Dice(seed);
    let (mut open, mut released): (Vec<Taken>, Vec<Taken>) = (Vec::new(), Vec::new());
    for step in 0..steps {
        let tenant = TENANTS[dice.roll(TENANTS.len())];
        let o = Owner::parse(tenant, "w").unwrap();
        let path = PATHS[dice.roll(PATHS.len())];
        let p = WorkspacePath::parse(path).unwrap();
        let what = match dice.roll(10) {
            0..=4 => {
                let w = FileWrite::markdown(format!("{seed}/{step}"));
                let pre = if dice.roll(4) == 0 {
                    Precondition::IfNoneMatchAny
                } else {
                    Precondition::None
                };
                let (m, s) = (
                    mem.put(&o, &p, w.clone(), pre.clone()).await,
                    sql.put(&o, &p, w, pre).await,
                );
                assert_eq!(outcome(s, seen), outcome(m.clone(), seen), "step {step}");
                if m.is_ok() {
                    model.put(tenant, path, keep as usize);
                }
                format!("put {tenant} {path}")
            }
            5..=6 => {
                let (m, s) = (
                    mem.delete(&o, &p, Precondition::None).await,
                    sql.delete(&o, &p, Precondition::None).await,
                );
                assert_eq!(s, m, "step {step}");
                if m.is_ok() {
                    model.delete(tenant, path, keep as usize);
                }
                format!("delete {tenant} {path}")
            }
            7..=8 => {
                let (m, s) = (
                    mem.snapshot(&o, "run").await.unwrap(),
                    sql.snapshot(&o, "run").await.unwrap(),
                );
                assert_eq!(s.seq, m.seq, "step {step}");
                model.open.push((tenant, s.seq));
                open.push(Taken {
                    tenant,
                    memory: m.id,
                    sqlite: s.id,
                });
                format!("snapshot {tenant} at {}", s.seq)
            }
            _ if !open.is_empty() => {
                let index = dice.roll(open.len());
                let t = open.remove(index);
                let o = Owner::parse(t.tenant, "w").unwrap();
                let (m, s) = (
                    mem.release_snapshot(&o, &t.memory, "completed").await,
                    sql.release_snapshot(&o, &t.sqlite, "completed").await,
                );
                assert_eq!(
                    s.map(|i| (i.seq, i.released.map(|r| r.1))),
                    m.map(|i| (i.seq, i.released.map(|r| r.1))),
                    "step {step}"
                );
                model.release(index, keep as usize);
                released.push(t);
                format!("release a snapshot of {tenant}")
            }
            _ => "nothing".to_owned(),
        };
        let step = format!("step {step} ({what}, seed {seed})");
        // Released snapshots answer NotFound for good; the latest ones are enough to check.
        let recent = &released[released.len().saturating_sub(2)..];
        compare(&mem, &sql, &open, recent, keep, &step).await;
        assert_eq!(stored(&raw), model.stored(), "rows kept after {step}");
        let with_rows: BTreeSet<_> = model.stored().into_keys().collect();
        assert_eq!(files_rows(&raw), with_rows, "files rows after {step}");
    }
    // Releasing everything leaves only the live files' history windows.
    while !open.is_empty() {
        let t = open.remove(0);
        let o = Owner::parse(t.tenant, "w").unwrap();
        sql.release_snapshot(&o, &t.sqlite, "completed")
            .await
            .unwrap();
        mem.release_snapshot(&o, &t.memory, "completed")
            .await
            .unwrap();
        model.release(0, keep as usize);
        released.push(t);
    }
    compare(&mem, &sql, &open, &released, keep, "releasing all").await;
    assert_eq!(
        stored(&raw),
        model.stored(),
        "rows kept after releasing all"
    );
    let tombstones: i64 = raw
        .query_row("SELECT count(*) FROM versions WHERE deleted = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(tombstones, 0, "no snapshot open: no tombstone kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_and_shows_what_the_reference_does_with_one_version() {
    run(0x5eed_0001, 1, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_and_shows_what_the_reference_does_with_three_versions() {
    run(0x5eed_0002, 3, 200).await;
    run(0x5eed_0003, 3, 200).await;
}
