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
//!
//! Every mount hides paths by its deny rules (the default list, and `private/**` besides on
//! `/virt`): `.env` files, a `.git` directory, a key whose name holds a random marker, links to
//! them, files of the virtual layers. They all hold the marker, which no output may show.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use wsp_store::{FileWrite, MemoryStore, Precondition, WorkspaceStore};
use wsp_types::{MediaType, Owner, WorkspacePath, WorkspacePrefix};
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
    /// In the name or the content of every path the deny rules hide; no output may contain it.
    denied: String,
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
        denied: format!("denied-{}", crate::random_hex()),
    };
    let secret = &host.secret;
    let denied = &host.denied;
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
    write(host.dir("rw/.env"), denied);
    write(host.dir("rw/.git/config"), denied);
    write(host.dir(&format!("rw/keys/{denied}.pem")), denied);
    write(host.dir("ro/r.md"), "read only\n");
    write(host.dir("ro/sub/s.md"), "lower layer\n");
    write(host.dir("ro/sub/.env.local"), denied);
    std::fs::create_dir(host.dir("wo")).expect("a directory");
    write(host.dir("follow/in.md"), "inside\n");
    symlink("in.md", host.dir("follow/inner"));
    symlink("../outside/secret.txt", host.dir("follow/out"));
    symlink("../outside", host.dir("follow/outdir"));
    write(host.dir("follow/.env"), denied);
    write(host.dir("follow/.git/HEAD"), denied);
    symlink(".env", host.dir("follow/notes.txt"));
    symlink(".env", host.dir(&format!("follow/{denied}")));
    symlink(".git", host.dir("follow/docs"));
    host
}

/// The files of the virtual layers that the deny rules hide, by namespace.
fn denied_virtual(host: &Host) -> Vec<(&'static str, String)> {
    vec![
        ("virt", format!("private/{}.md", host.denied)),
        ("virt", "conf/.env".to_owned()),
        ("ov", format!("keys/{}.pem", host.denied)),
    ]
}

/// The paths under the mounts that the deny rules hide, with what they are (links as such):
/// by name, or as links to hidden paths.
fn denied_files(host: &Host) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    for root in ["rw", "ro", "follow"] {
        for (path, node) in tree(&host.dir(root)) {
            let name = path.to_string_lossy();
            let link_to_hidden = root == "follow" && (name == "notes.txt" || name == "docs");
            if hidden_by_default(&name) || name.contains(&host.denied) || link_to_hidden {
                out.insert(Path::new(root).join(path), node);
            }
        }
    }
    out
}

/// The content of each of [`denied_virtual`] now (`None` once gone).
async fn denied_virtual_now(host: &Host, store: &MemoryStore) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for (ns, path) in denied_virtual(host) {
        let owner = Owner::parse("vfs", ns).expect("a valid owner");
        let path = WorkspacePath::parse(&path).expect("a valid store path");
        out.push(store.get(&owner, &path, None).await.ok().map(|f| f.content));
    }
    out
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
        .workspace(
            WorkspaceConfig::new("/virt", ReadWrite, MountConfig::virtual_namespace("virt"))
                .deny_extra(["private/**"]),
        )
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

/// Whether the default deny list hides `path` (relative to a mount) by one of the patterns
/// this target's files and an agent's likely writes meet: a `.env`, a `.git`, a key.
fn hidden_by_default(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.split('/').any(|c| {
        c == ".env"
            || c.starts_with(".env.")
            || c == ".git"
            || c.ends_with(".pem")
            || c.ends_with(".key")
    })
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
/// no result or error may show the host path or the content of a file outside the mounts, no
/// result or error may show the name or the content of a path the deny rules hide, and no
/// such path may change.
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
    let hidden = denied_files(&host);
    let store = Arc::new(MemoryStore::default());
    let vfs = Vfs::builder(table(&host))
        .virtual_store(store.clone())
        .build()
        .expect("the filesystem builds");
    let base = host.base.path().to_string_lossy().into_owned();
    crate::block_on(async {
        for (ns, path) in denied_virtual(&host) {
            let owner = Owner::parse("vfs", ns).expect("a valid owner");
            let path = WorkspacePath::parse(&path).expect("a valid store path");
            let write = FileWrite::text(host.denied.clone(), MediaType::from_static("text/plain"));
            store
                .put(&owner, &path, write, Precondition::None)
                .await
                .expect("the memory store takes a file");
        }
        let hidden_virtual = denied_virtual_now(&host, &store).await;
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
            assert!(
                !shown.contains(&host.denied),
                "{what} showed a path the deny rules hide, or its content:\n{shown}"
            );
        }
        assert_eq!(
            denied_virtual_now(&host, &store).await,
            hidden_virtual,
            "a virtual file the deny rules hide changed"
        );
        let seeded = denied_virtual(&host);
        for ns in ["virt", "ov"] {
            let owner = Owner::parse("vfs", ns).expect("a valid owner");
            for meta in store
                .list(&owner, &WorkspacePrefix::all())
                .await
                .expect("the memory store lists")
            {
                let path = meta.path.as_str();
                let hidden =
                    hidden_by_default(path) || (ns == "virt" && path.starts_with("private/"));
                assert!(
                    !hidden || seeded.iter().any(|(n, p)| *n == ns && p == path),
                    "a write reached {ns}:{path}, which the deny rules hide"
                );
            }
        }
    });
    assert_eq!(
        denied_files(&host),
        hidden,
        "a file the deny rules hide changed"
    );
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
