//! Fixtures: temporary directories, tables, a store that records every call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wsp_store::{MemoryStore, WorkspaceStore};
use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, VfsError, WorkspaceConfig};

/// A temporary directory holding a physical root `R`, a directory `OUTSIDE` next to it and
/// whatever else a test builds.
pub struct Disk {
    pub tmp: tempfile::TempDir,
}

impl Disk {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("R")).unwrap();
        std::fs::create_dir(tmp.path().join("OUTSIDE")).unwrap();
        std::fs::write(tmp.path().join("OUTSIDE/secret"), "TOP SECRET outside\n").unwrap();
        std::fs::write(tmp.path().join("OUTSIDE/target.txt"), "outside target\n").unwrap();
        Self { tmp }
    }

    pub fn root(&self) -> PathBuf {
        self.tmp.path().join("R")
    }

    pub fn outside(&self) -> PathBuf {
        self.tmp.path().join("OUTSIDE")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn symlink(&self, target: impl AsRef<Path>, link: &str) {
        std::os::unix::fs::symlink(target, self.path(link)).unwrap();
    }

    /// Every path under OUTSIDE with its content and modification time.
    pub fn outside_snapshot(&self) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let meta = std::fs::symlink_metadata(entry.path()).unwrap();
                let content = if meta.is_file() {
                    std::fs::read(entry.path()).unwrap()
                } else {
                    Vec::new()
                };
                out.insert(entry.path(), (content, meta.modified().unwrap()));
                if meta.is_dir() {
                    walk(&entry.path(), out);
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.outside(), &mut out);
        out
    }

    /// `/ws` over `R` (rw), with the link options given.
    pub fn vfs(&self, follow_symlinks: bool) -> Vfs {
        let table = MountTable::builder()
            .workspace(
                WorkspaceConfig::new(
                    "/ws",
                    AccessScope::ReadWrite,
                    MountConfig::physical(self.root()),
                )
                .follow_symlinks(follow_symlinks),
            )
            .build()
            .unwrap();
        Vfs::builder(table).build().unwrap()
    }

    /// Asserts that no error text shows where the files live on the host.
    pub fn assert_no_host_path(&self, err: &VfsError) {
        let host = self.tmp.path().to_string_lossy();
        assert!(!err.message.contains(host.as_ref()), "host path in {err:?}");
    }
}

/// A memory store that counts every call made to it.
#[derive(Default)]
pub struct RecordingStore {
    inner: MemoryStore,
    pub calls: AtomicUsize,
}

impl RecordingStore {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn record(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl WorkspaceStore for RecordingStore {
    wsp_store::forward_store!(|this| { this.record(); &this.inner };
        limits, list, get, put, delete, history, snapshot, snapshot_info, list_snapshots, release_snapshot,
        open_snapshots_before, count_open_snapshots, forget_released_snapshots, list_at, get_at,
        changes, subscribe);
}

/// A filesystem over `entries` (prefix, scope, mount) with a fresh memory Virtual Store.
pub fn vfs_with(entries: &[(&str, AccessScope, MountConfig)]) -> (Vfs, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::default());
    let mut table = MountTable::builder();
    for (path, scope, mount) in entries {
        table = table.workspace(WorkspaceConfig::new(*path, *scope, mount.clone()));
    }
    let vfs = Vfs::builder(table.build().unwrap())
        .virtual_store(store.clone())
        .author("agent-7")
        .build()
        .unwrap();
    (vfs, store)
}

/// Calls `tool` and returns the text or the error code.
pub async fn outcome(vfs: &Vfs, tool: &str, args: Value) -> Result<String, String> {
    vfs.call(tool, args)
        .await
        .map(|o| o.text)
        .map_err(|e| e.code.as_str().to_owned())
}

pub async fn write(vfs: &Vfs, path: &str, content: &str) {
    vfs.call("write_file", json!({"path": path, "content": content}))
        .await
        .unwrap();
}

pub async fn read(vfs: &Vfs, path: &str) -> Result<String, VfsError> {
    let out = vfs
        .read_file(wsp_vfs::ReadFileArgs {
            path: path.into(),
            ..Default::default()
        })
        .await?;
    Ok(out.lines.join("\n"))
}

/// The virtual paths of a glob result.
pub async fn glob(vfs: &Vfs, pattern: &str, path: Option<&str>) -> Result<Vec<String>, VfsError> {
    let args = wsp_vfs::GlobArgs {
        pattern: pattern.into(),
        path: path.map(str::to_owned),
    };
    Ok(vfs
        .glob(args)
        .await?
        .matches
        .into_iter()
        .map(|p| p.to_string())
        .collect())
}

/// `(path:line)` of each grep match.
pub async fn grep(vfs: &Vfs, pattern: &str, path: Option<&str>) -> Result<Vec<String>, VfsError> {
    let args = wsp_vfs::GrepArgs {
        pattern: pattern.into(),
        path: path.map(str::to_owned),
        ..Default::default()
    };
    Ok(vfs
        .grep(args)
        .await?
        .matches
        .into_iter()
        .map(|m| format!("{}:{}", m.path, m.line))
        .collect())
}

/// Entry names of `ls`, directories with a trailing `/`.
pub async fn ls(vfs: &Vfs, path: &str) -> Result<Vec<String>, VfsError> {
    Ok(vfs
        .ls(path)
        .await?
        .entries
        .into_iter()
        .map(|e| {
            if e.kind == wsp_vfs::EntryKind::Directory {
                format!("{}/", e.name)
            } else {
                e.name
            }
        })
        .collect())
}

/// Runs `f` on its own thread and fails the test if it has not finished within ten seconds
/// (a blocking call that hangs cannot be interrupted by an async timeout).
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what}: hung"))
}

/// Runs a future to completion on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}
