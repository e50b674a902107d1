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

/// The answer a change of `path` gets when `path` is under no Workspace, with the path written
/// `<path>`.
async fn refused_outside(vfs: &Vfs, tool: &str) -> (Option<VfsErrorCode>, String) {
    answer(vfs, tool, "/no-workspace/x").await
}

/// Every change of a denied path is refused exactly like a change outside every Workspace, and
/// changes nothing: existing or not, file or directory, any case.
#[tokio::test]
async fn changing_a_denied_path_is_refused_like_a_path_under_no_workspace() {
    let disk = Disk::new();
    checkout(&disk);
    let vfs = physical(&disk, AccessScope::ReadWrite, false);
    let before = std::fs::read_to_string(disk.path("R/.env")).unwrap();
    let mut paths = denied("/ws");
    paths.extend(
        [
            "/ws/sub/.env",
            "/ws/.ENV",
            "/ws/.git/hooks/pre-commit",
            "/ws/new.pem",
        ]
        .map(String::from),
    );
    for path in &paths {
        for tool in ["write_file", "edit_file", "delete_file"] {
            let got = answer(&vfs, tool, path).await;
            assert_eq!(got.0, Some(VfsErrorCode::PermissionDenied), "{tool} {path}");
            assert_eq!(got, refused_outside(&vfs, tool).await, "{tool} {path}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(disk.path("R/.env")).unwrap(),
        before
    );
    for never in ["R/sub", "R/.ENV", "R/new.pem", "R/.git/hooks"] {
        assert!(!disk.path(never).exists(), "{never} was created");
    }
    assert_absent(&vfs, "/ws", &denied("/ws")).await;
    // A write-only Workspace refuses them the same way, before anything else is looked at.
    let vfs = physical(&disk, AccessScope::WriteOnly, false);
    for path in &paths {
        let got = answer(&vfs, "write_file", path).await;
        assert_eq!(got, refused_outside(&vfs, "write_file").await, "{path}");
    }
    assert_eq!(
        std::fs::read_to_string(disk.path("R/.env")).unwrap(),
        before
    );
}

/// Deny applies to where a link leads as well as to the name asked: in a Workspace that follows
/// links, `notes.txt -> .env` and `docs -> .git` are absent to reads and refused to changes,
/// and `.env` is never read or written through them.
#[tokio::test]
async fn a_link_to_a_denied_path_is_denied_in_a_workspace_that_follows_links() {
    let disk = Disk::new();
    checkout(&disk);
    disk.symlink(".env", "R/notes.txt");
    disk.symlink(".git", "R/docs");
    disk.symlink("README.md", "R/readme-link.md");
    disk.symlink("../.env", "R/src/up.txt");
    let vfs = physical(&disk, AccessScope::ReadWrite, true);
    let mut hidden = denied("/ws");
    hidden.extend(
        [
            "/ws/notes.txt",
            "/ws/docs",
            "/ws/docs/config",
            "/ws/src/up.txt",
        ]
        .map(String::from),
    );
    assert_absent(&vfs, "/ws", &hidden).await;
    // A link to a visible file still works.
    assert_eq!(
        crate::support::read(&vfs, "/ws/readme-link.md")
            .await
            .unwrap(),
        "hello from the readme"
    );
    assert!(
        ls(&vfs, "/ws")
            .await
            .unwrap()
            .contains(&"readme-link.md".to_owned())
    );
    let before = std::fs::read_to_string(disk.path("R/.env")).unwrap();
    for path in [
        "/ws/notes.txt",
        "/ws/src/up.txt",
        "/ws/docs/config",
        "/ws/docs/new",
    ] {
        for tool in ["write_file", "edit_file", "delete_file"] {
            let got = answer(&vfs, tool, path).await;
            assert_eq!(got, refused_outside(&vfs, tool).await, "{tool} {path}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(disk.path("R/.env")).unwrap(),
        before
    );
    assert!(
        disk.path("R/notes.txt").is_symlink(),
        "the link was not removed"
    );
    assert!(!disk.path("R/.git/new").exists());
    // The same through an overlay whose lower layer follows links: the link is absent below,
    // so a write makes a new upper file and never reaches `.env`.
    let table = MountTable::builder()
        .workspace(
            WorkspaceConfig::new(
                "/ov",
                AccessScope::ReadWrite,
                MountConfig::overlay("ov", disk.root()),
            )
            .follow_symlinks(true),
        )
        .build()
        .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(std::sync::Arc::new(wsp_store::MemoryStore::default()))
        .build()
        .unwrap();
    let mut hidden = denied("/ov");
    hidden.extend(["/ov/notes.txt", "/ov/docs", "/ov/src/up.txt"].map(String::from));
    assert_absent(&vfs, "/ov", &hidden).await;
    let edit = answer(&vfs, "edit_file", "/ov/notes.txt").await;
    assert_eq!(edit, answer(&vfs, "edit_file", "/ov/no-such-name").await);
    crate::support::write(&vfs, "/ov/notes.txt", "my own notes").await;
    assert_eq!(
        crate::support::read(&vfs, "/ov/notes.txt").await.unwrap(),
        "my own notes"
    );
    assert_eq!(
        std::fs::read_to_string(disk.path("R/.env")).unwrap(),
        before
    );
}

/// Where links are not followed, a link to a denied file is refused as a link, and its answer
/// names nothing of the target.
#[tokio::test]
async fn a_link_to_a_denied_path_reveals_nothing_where_links_are_not_followed() {
    let disk = Disk::new();
    checkout(&disk);
    disk.symlink(".env", "R/notes.txt");
    let vfs = physical(&disk, AccessScope::ReadOnly, false);
    let err = vfs
        .call("read_file", json!({"path": "/ws/notes.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::PermissionDenied);
    assert!(
        !err.message.contains(".env") && !err.message.contains(SECRET),
        "{err:?}"
    );
    assert_absent(&vfs, "/ws", &denied("/ws")).await;
}

/// A virtual Mount: files the store holds under denied names (written over HTTP, say) are
/// absent, a directory holding only denied files is not shown, and changes are refused.
#[tokio::test]
async fn denied_files_of_a_virtual_mount_are_absent() {
    use wsp_store::{FileWrite, Precondition, WorkspaceStore};
    use wsp_types::{MediaType, Owner, WorkspacePath};
    let store = std::sync::Arc::new(wsp_store::MemoryStore::default());
    let owner = Owner::parse("vfs", "v").unwrap();
    for (path, content) in [
        ("notes.md", "visible notes\n".to_owned()),
        ("config/.env", format!("KEY={SECRET}\n")),
        ("keys/deploy.pem", format!("{SECRET}\n")),
        ("keys/README.md", "where keys live\n".to_owned()),
        ("private/plan.md", format!("{SECRET}\n")),
    ] {
        let write = FileWrite::text(content, MediaType::from_static("text/plain"));
        store
            .put(
                &owner,
                &WorkspacePath::parse(path).unwrap(),
                write,
                Precondition::None,
            )
            .await
            .unwrap();
    }
    let table = MountTable::builder()
        .workspace(
            WorkspaceConfig::new(
                "/v",
                AccessScope::ReadWrite,
                MountConfig::virtual_namespace("v"),
            )
            .deny_extra(["private/**"]),
        )
        .build()
        .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(store.clone())
        .build()
        .unwrap();
    let hidden: Vec<String> = [
        "/v/config",
        "/v/config/.env",
        "/v/keys/deploy.pem",
        "/v/private",
        "/v/private/plan.md",
    ]
    .map(String::from)
    .into();
    assert_absent(&vfs, "/v", &hidden).await;
    assert_eq!(
        listed(&vfs, "/v").await,
        ["/v/keys", "/v/keys/README.md", "/v/notes.md"]
            .map(String::from)
            .into()
    );
    for path in [
        "/v/config/.env",
        "/v/keys/deploy.pem",
        "/v/private/plan.md",
        "/v/private/new.md",
    ] {
        for tool in ["write_file", "edit_file", "delete_file"] {
            let got = answer(&vfs, tool, path).await;
            assert_eq!(got, refused_outside(&vfs, tool).await, "{tool} {path}");
        }
    }
    let files = store
        .list(&owner, &wsp_types::WorkspacePrefix::all())
        .await
        .unwrap();
    assert_eq!(files.len(), 5, "nothing written or deleted: {files:?}");
    assert!(vfs.denies("/v/config/.env") && !vfs.denies("/v/notes.md"));
}

/// An overlay: the rules hide a name in both layers, and a delete never whites one out.
#[tokio::test]
async fn denied_files_of_an_overlay_are_absent_in_both_layers() {
    use wsp_store::{FileWrite, Precondition, WorkspaceStore};
    use wsp_types::{MediaType, Owner, WorkspacePath};
    let disk = Disk::new();
    checkout(&disk);
    let store = std::sync::Arc::new(wsp_store::MemoryStore::default());
    let owner = Owner::parse("vfs", "up").unwrap();
    for path in ["app/.env", "certs/upper.pem"] {
        let write = FileWrite::text(format!("{SECRET}\n"), MediaType::from_static("text/plain"));
        store
            .put(
                &owner,
                &WorkspacePath::parse(path).unwrap(),
                write,
                Precondition::None,
            )
            .await
            .unwrap();
    }
    let table = MountTable::builder()
        .workspace(WorkspaceConfig::new(
            "/ov",
            AccessScope::ReadWrite,
            MountConfig::overlay("up", disk.root()),
        ))
        .build()
        .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(store.clone())
        .build()
        .unwrap();
    let mut hidden = denied("/ov");
    hidden.extend(["/ov/app", "/ov/app/.env", "/ov/certs/upper.pem"].map(String::from));
    assert_absent(&vfs, "/ov", &hidden).await;
    for path in [
        "/ov/.env",
        "/ov/app/.env",
        "/ov/certs/server.pem",
        "/ov/.git/config",
    ] {
        for tool in ["write_file", "edit_file", "delete_file"] {
            let got = answer(&vfs, tool, path).await;
            assert_eq!(got, refused_outside(&vfs, tool).await, "{tool} {path}");
        }
    }
    let upper = store
        .list(&owner, &wsp_types::WorkspacePrefix::all())
        .await
        .unwrap();
    assert_eq!(upper.len(), 2, "no write and no whiteout: {upper:?}");
}

/// `deny` replaces the default list, `deny = []` turns it off, `deny_extra` adds to either.
#[tokio::test]
async fn deny_replaces_the_default_list_and_deny_extra_adds_to_it() {
    let disk = Disk::new();
    checkout(&disk);
    disk.write("R/secrets/token.txt", "token\n");
    let table = |ws: WorkspaceConfig| {
        let vfs = Vfs::builder(MountTable::builder().workspace(ws).build().unwrap());
        vfs.build().unwrap()
    };
    let base = || {
        WorkspaceConfig::new(
            "/ws",
            AccessScope::ReadOnly,
            MountConfig::physical(disk.root()),
        )
    };
    let visible = |vfs: Vfs| async move {
        let mut out = Vec::new();
        for p in [
            "/ws/.env",
            "/ws/.git/HEAD",
            "/ws/secrets/token.txt",
            "/ws/README.md",
        ] {
            out.push(crate::support::read(&vfs, p).await.is_ok());
        }
        out
    };
    assert_eq!(visible(table(base())).await, [false, false, true, true]);
    assert_eq!(
        visible(table(base().deny(Vec::<String>::new()))).await,
        [true, true, true, true]
    );
    assert_eq!(
        visible(table(base().deny(["secrets"]))).await,
        [true, true, false, true]
    );
    assert_eq!(
        visible(table(base().deny_extra(["secrets/**"]))).await,
        [false, false, false, true]
    );
    assert_eq!(
        visible(table(base().deny(["*.md"]).deny_extra([".git"]))).await,
        [true, false, true, false]
    );
}

/// A walk never enters a denied directory: a `.git` with more entries than the walk's budget
/// costs nothing, and `ls` of a directory full of denied names still shows its visible ones.
#[tokio::test]
async fn denied_directories_cost_a_search_nothing() {
    let disk = Disk::new();
    checkout(&disk);
    for i in 0..50 {
        disk.write(&format!("R/.git/objects/{i:02}"), "blob\n");
        disk.write(&format!("R/a{i:02}.pem"), "key\n");
    }
    disk.write("R/zz.md", "last\n");
    let table = MountTable::builder()
        .workspace(WorkspaceConfig::new(
            "/ws",
            AccessScope::ReadOnly,
            MountConfig::physical(disk.root()),
        ))
        .build()
        .unwrap();
    let limits = wsp_vfs::VfsLimits {
        max_walk_entries: 20,
        max_list_entries: 5,
        ..Default::default()
    };
    let vfs = Vfs::builder(table).limits(limits).build().unwrap();
    let found = vfs
        .glob(wsp_vfs::GlobArgs {
            pattern: "**".into(),
            path: None,
        })
        .await
        .unwrap();
    assert!(!found.truncated, "{found:?}");
    assert_eq!(found.matches.len(), 3, "{found:?}");
    let listing = vfs.ls("/ws").await.unwrap();
    let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["README.md", "certs", "config", "src", "zz.md"]);
    assert!(!listing.truncated);
}
