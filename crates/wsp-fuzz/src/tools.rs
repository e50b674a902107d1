//! The `vfs_tools` target: tool calls with arbitrary names and JSON arguments against a mount
//! table over a fresh temporary directory.
//!
//! The input is up to sixteen calls, one a line: the tool name, a space, and its arguments as
//! JSON (a line whose arguments are not JSON passes them as a JSON string):
//!
//! ```text
//! write_file {"path": "/rw/notes.md", "content": "hello"}
//! read_file {"path": "/rw/link-out"}
//! grep {"pattern": "secret", "path": "/"}
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use wsp_store::MemoryStore;
use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, WorkspaceConfig};

/// Calls in one input at most.
const MAX_CALLS: usize = 16;

/// What a path in the host tree is, for comparing trees before and after.
#[derive(Debug, PartialEq)]
enum Node {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
    Other,
}

/// Every path below `root` (relative), with what it is; links are recorded, not followed.
fn tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).expect("below the root").to_owned();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let node = if meta.is_symlink() {
                Node::Link(std::fs::read_link(&path).unwrap_or_default())
            } else if meta.is_dir() {
                walk(root, &path, out);
                Node::Dir
            } else if meta.is_file() {
                Node::File(std::fs::read(&path).unwrap_or_default())
            } else {
                Node::Other
            };
            out.insert(rel, node);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The names in `dir` (not below it).
fn names(dir: &Path) -> BTreeSet<OsString> {
    std::fs::read_dir(dir)
        .expect("the temporary directory lists")
        .map(|e| e.expect("a readable directory entry").file_name())
        .collect()
}

/// The host directories of one run.
struct Host {
    /// Holds everything; removed when dropped.
    base: tempfile::TempDir,
    /// Text in every file outside the mounts; no output may contain it.
    secret: String,
}

impl Host {
    fn dir(&self, name: &str) -> PathBuf {
        self.base.path().join(name)
    }
}

fn write(path: PathBuf, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("a directory in the temporary directory");
    }
    std::fs::write(path, content).expect("a file in the temporary directory");
}

fn symlink(target: impl AsRef<Path>, link: PathBuf) {
    std::os::unix::fs::symlink(target, link).expect("a symbolic link in the temporary directory");
}

/// `outside/` (never mounted) holds the secret; `rw/` has links and a hard link that lead
/// there; `ro/` is read only and the lower layer of an overlay; `follow/` follows links.
fn host() -> Host {
    let base = tempfile::tempdir().expect("a temporary directory");
    let host = Host {
        base,
        secret: format!("outside-secret-{}", crate::random_hex()),
    };
    let secret = &host.secret;
    write(host.dir("outside/secret.txt"), secret);
    write(host.dir("outside/dir/inner.txt"), secret);
    write(host.dir("outside/hard.txt"), secret);
    write(host.dir("rw/a.md"), "alpha\nbeta\n");
    write(host.dir("rw/sub/b.md"), "gamma\n");
    symlink("../outside/secret.txt", host.dir("rw/link-out"));
    symlink(host.dir("outside/secret.txt"), host.dir("rw/abs-link"));
    symlink("../outside", host.dir("rw/link-dir"));
    symlink("loop2", host.dir("rw/loop1"));
    symlink("loop1", host.dir("rw/loop2"));
    std::fs::hard_link(host.dir("outside/hard.txt"), host.dir("rw/hard.txt"))
        .expect("a hard link in the temporary directory");
    write(host.dir("ro/r.md"), "read only\n");
    write(host.dir("ro/sub/s.md"), "lower layer\n");
    std::fs::create_dir(host.dir("wo")).expect("a directory");
    write(host.dir("follow/in.md"), "inside\n");
    symlink("in.md", host.dir("follow/inner"));
    symlink("../outside/secret.txt", host.dir("follow/out"));
    symlink("../outside", host.dir("follow/outdir"));
    host
}

fn table(host: &Host) -> MountTable {
    use AccessScope::{ReadOnly, ReadWrite, WriteOnly};
    let physical = |name: &str| MountConfig::physical(host.dir(name));
    MountTable::builder()
        .workspace(WorkspaceConfig::new("/rw", ReadWrite, physical("rw")))
        .workspace(WorkspaceConfig::new("/ro", ReadOnly, physical("ro")))
        .workspace(WorkspaceConfig::new("/wo", WriteOnly, physical("wo")))
        .workspace(
            WorkspaceConfig::new("/follow", ReadWrite, physical("follow")).follow_symlinks(true),
        )
        .workspace(WorkspaceConfig::new(
            "/virt",
            ReadWrite,
            MountConfig::virtual_namespace("virt"),
        ))
        .workspace(WorkspaceConfig::new(
            "/rw/nested",
            ReadOnly,
            MountConfig::virtual_namespace("nested"),
        ))
        .workspace(WorkspaceConfig::new(
            "/vo",
            WriteOnly,
            MountConfig::virtual_namespace("vo"),
        ))
        .workspace(WorkspaceConfig::new(
            "/ov",
            ReadWrite,
            MountConfig::overlay("ov", host.dir("ro")),
        ))
        .build()
        .expect("the mount table over the temporary directory is valid")
}

/// The calls of the input: `name args` per line.
fn calls(text: &str) -> Vec<(&str, Value)> {
    text.lines()
        .take(MAX_CALLS)
        .map(|line| {
            let (name, args) = line.split_once(' ').unwrap_or((line, ""));
            let args = serde_json::from_str(args).unwrap_or_else(|_| Value::from(args));
            (name, args)
        })
        .collect()
}

/// Runs the calls of the input (lossily decoded as UTF-8) through [`Vfs::call`] over physical
/// (with links and a hard link leading outside), virtual and overlay mounts in a fresh
/// temporary directory. Nothing may panic; the directory outside the mounts, the read-only
/// mount and the overlay's lower layer must not change, nothing may appear beside the mounts,
/// and no result or error may show the host path or the content of a file outside the mounts.
///
/// ```
/// wsp_fuzz::vfs_tools(b"read_file {\"path\": \"/rw/link-out\"}\nls {\"path\": \"/\"}");
/// ```
pub fn vfs_tools(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let host = host();
    let outside = tree(&host.dir("outside"));
    let read_only = tree(&host.dir("ro"));
    let top = names(host.base.path());
    let vfs = Vfs::builder(table(&host))
        .virtual_store(Arc::new(MemoryStore::default()))
        .build()
        .expect("the filesystem builds");
    let base = host.base.path().to_string_lossy().into_owned();
    crate::block_on(async {
        for (name, args) in calls(&text) {
            let what = format!("{name} {args}");
            let shown = match vfs.call(name, args).await {
                Ok(out) => format!("{}\n{}", out.text, out.structured),
                Err(err) => err.message,
            };
            assert!(
                !shown.contains(&host.secret),
                "{what} showed the content of a file outside the mounts:\n{shown}"
            );
            assert!(
                !shown.contains(&base),
                "{what} showed a host path:\n{shown}"
            );
        }
    });
    assert_eq!(
        tree(&host.dir("outside")),
        outside,
        "the directory outside the mounts changed"
    );
    assert_eq!(
        tree(&host.dir("ro")),
        read_only,
        "the read-only mount (and overlay lower layer) changed"
    );
    assert_eq!(
        names(host.base.path()),
        top,
        "something appeared beside the mounts"
    );
}
