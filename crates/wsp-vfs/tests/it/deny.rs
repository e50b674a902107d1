//! Deny rules: the paths of a Workspace the agent never sees. A denied path is absent for every
//! tool (not listed, matched or searched; read as a missing file) and refused to every change
//! with the answer a path outside every Workspace gets; a link to a denied path is denied too.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, VfsErrorCode, WorkspaceConfig};

use crate::support::{Disk, glob, ls};

/// What the denied files hold; no output may ever show it.
const SECRET: &str = "sekret-7f3a";

/// A checkout under `R`: visible files, and the default list's secrets and `.git`.
fn checkout(disk: &Disk) {
    disk.write("R/README.md", "hello from the readme\n");
    disk.write("R/src/main.rs", "fn main() {}\n");
    disk.write("R/.env", &format!("API_KEY={SECRET}\n"));
    disk.write("R/config/.env.production", &format!("DB={SECRET}\n"));
    disk.write("R/certs/server.pem", &format!("-----BEGIN {SECRET}-----\n"));
    disk.write(
        "R/.git/config",
        &format!("url = https://me:{SECRET}@host\n"),
    );
    disk.write("R/.git/HEAD", "ref: refs/heads/main\n");
}

/// The denied paths of [`checkout`] under the prefix `root`.
fn denied(root: &str) -> Vec<String> {
    [
        ".env",
        "config/.env.production",
        "certs/server.pem",
        ".git",
        ".git/config",
        ".git/HEAD",
    ]
    .iter()
    .map(|p| format!("{root}/{p}"))
    .collect()
}

fn physical(disk: &Disk, scope: AccessScope, follow: bool) -> Vfs {
    let table = MountTable::builder()
        .workspace(
            WorkspaceConfig::new("/ws", scope, MountConfig::physical(disk.root()))
                .follow_symlinks(follow),
        )
        .build()
        .unwrap();
    Vfs::builder(table).build().unwrap()
}

fn with_path(tool: &str, path: &str) -> Value {
    match tool {
        "write_file" => json!({"path": path, "content": "overwritten\n"}),
        "edit_file" => json!({"path": path, "old_string": SECRET, "new_string": "x"}),
        "glob" => json!({"pattern": "**", "path": path}),
        "grep" => json!({"pattern": SECRET, "path": path}),
        _ => json!({"path": path}),
    }
}

/// The outcome of `tool` on `path`, with `path` written `<path>` in the text, so two paths'
/// answers can be compared.
async fn answer(vfs: &Vfs, tool: &str, path: &str) -> (Option<VfsErrorCode>, String) {
    match vfs.call(tool, with_path(tool, path)).await {
        Ok(out) => (None, out.text.replace(path, "<path>")),
        Err(e) => (Some(e.code), e.message.replace(path, "<path>")),
    }
}

/// Every name `ls` shows below `dir`, recursively, as full paths.
async fn listed(vfs: &Vfs, dir: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        for name in ls(vfs, &dir).await.unwrap() {
            let path = format!(
                "{}/{}",
                dir.trim_end_matches('/'),
                name.trim_end_matches('/')
            );
            if name.ends_with('/') {
                todo.push(path.clone());
            }
            out.insert(path);
        }
    }
    out
}

/// `hidden` (paths below `root`) are absent for every read tool, exactly like a path that does
/// not exist, and nothing any read tool answers shows [`SECRET`] or names one of them.
async fn assert_absent(vfs: &Vfs, root: &str, hidden: &[String]) {
    let missing = format!("{root}/no-such-name");
    let shown = listed(vfs, root).await;
    let globbed: BTreeSet<String> = glob(vfs, "**", Some(root))
        .await
        .unwrap()
        .into_iter()
        .collect();
    let grep = vfs
        .grep(wsp_vfs::GrepArgs {
            pattern: SECRET.into(),
            path: Some(root.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(grep.matches.is_empty(), "grep found the secret: {grep:?}");
    let everything = vfs
        .grep(wsp_vfs::GrepArgs {
            pattern: ".".into(),
            path: Some(root.into()),
            regex: true,
            max_results: Some(1000),
        })
        .await
        .unwrap();
    let grepped: BTreeSet<String> = everything
        .matches
        .iter()
        .map(|m| m.path.to_string())
        .collect();
    for h in hidden {
        let under = |p: &String| p == h || p.starts_with(&format!("{h}/"));
        assert!(!shown.iter().any(under), "ls shows {h}: {shown:?}");
        assert!(!globbed.iter().any(under), "glob matches {h}: {globbed:?}");
        assert!(!grepped.iter().any(under), "grep searched {h}: {grepped:?}");
        for tool in ["ls", "read_file", "glob", "grep"] {
            let got = answer(vfs, tool, h).await;
            assert_eq!(got.0, Some(VfsErrorCode::NotFound), "{tool} {h}: {got:?}");
            assert_eq!(got, answer(vfs, tool, &missing).await, "{tool} {h}");
        }
        let read = vfs.read_whole(h).await.unwrap_err();
        assert_eq!(read.code, VfsErrorCode::NotFound, "read_whole {h}");
    }
    for path in shown.iter().chain(&globbed) {
        if let Ok(text) = crate::support::read(vfs, path).await {
            assert!(!text.contains(SECRET), "{path} shows the secret");
        }
    }
}

/// The defect: a read-only mount of a checkout showed its `.env` (and `.git`, keys) to
/// `read_file`, `ls`, `glob` and `grep`. With no `deny` key the default list hides them.
#[tokio::test]
async fn a_checkouts_secrets_are_absent_from_a_read_only_physical_mount_by_default() {
    let disk = Disk::new();
    checkout(&disk);
    let vfs = physical(&disk, AccessScope::ReadOnly, false);
    assert_absent(&vfs, "/ws", &denied("/ws")).await;
    // What is not denied is all there.
    assert_eq!(
        listed(&vfs, "/ws").await,
        [
            "/ws/README.md",
            "/ws/certs",
            "/ws/config",
            "/ws/src",
            "/ws/src/main.rs"
        ]
        .map(String::from)
        .into(),
    );
    let grep = vfs
        .grep(wsp_vfs::GrepArgs {
            pattern: "e".into(),
            path: Some("/".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    // Two text files searched and nothing skipped: grep never opened a denied file.
    assert_eq!(
        (
            grep.files_searched,
            grep.skipped_binary,
            grep.skipped_large,
            grep.skipped_refused
        ),
        (2, 0, 0, 0),
        "{grep:?}"
    );
}
