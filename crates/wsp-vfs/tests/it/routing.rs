//! Longest-prefix routing over overlapping Workspaces, listings of parents, search containment,
//! and proof that a refused operation never reaches a Store.

use std::sync::Arc;

use serde_json::json;
use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, VfsErrorCode, WorkspaceConfig};

use crate::support::{Disk, RecordingStore, glob, grep, ls, read, vfs_with, write};

/// Seed 004's main case: `/home` RO over a host directory, `/home/src` RW in the Virtual Store;
/// `/out` WO. The host directory has its own `src/`, which `/home/src` hides.
async fn home() -> (Disk, Vfs) {
    let disk = Disk::new();
    disk.write("R/readme.md", "home readme: needle\n");
    disk.write("R/notes/a.md", "note needle\n");
    disk.write("R/src/old.rs", "shadowed needle\n");
    let (vfs, _) = vfs_with(&[
        (
            "/home",
            AccessScope::ReadOnly,
            MountConfig::physical(disk.root()),
        ),
        (
            "/home/src",
            AccessScope::ReadWrite,
            MountConfig::virtual_namespace("src"),
        ),
        (
            "/out",
            AccessScope::WriteOnly,
            MountConfig::virtual_namespace("out"),
        ),
    ]);
    write(&vfs, "/home/src/main.rs", "fn main() {} // needle\n").await;
    write(&vfs, "/out/report.md", "needle in the outbox\n").await;
    (disk, vfs)
}

#[tokio::test]
async fn the_longest_prefix_decides() {
    let (disk, vfs) = home().await;
    let cases: &[(&str, &str, Result<(), VfsErrorCode>)] = &[
        ("read_file", "/home/readme.md", Ok(())),
        (
            "write_file",
            "/home/readme.md",
            Err(VfsErrorCode::PermissionDenied),
        ),
        (
            "edit_file",
            "/home/readme.md",
            Err(VfsErrorCode::PermissionDenied),
        ),
        (
            "delete_file",
            "/home/notes/a.md",
            Err(VfsErrorCode::PermissionDenied),
        ),
        (
            "write_file",
            "/home/new.md",
            Err(VfsErrorCode::PermissionDenied),
        ),
        ("read_file", "/home/src/main.rs", Ok(())),
        ("write_file", "/home/src/lib.rs", Ok(())),
        ("edit_file", "/home/src/main.rs", Ok(())),
        // The host's src/ is hidden by the nested Workspace.
        ("read_file", "/home/src/old.rs", Err(VfsErrorCode::NotFound)),
        ("delete_file", "/home/src/lib.rs", Ok(())),
        (
            "read_file",
            "/out/report.md",
            Err(VfsErrorCode::PermissionDenied),
        ),
        ("write_file", "/out/second.md", Ok(())),
        (
            "read_file",
            "/homework",
            Err(VfsErrorCode::PermissionDenied),
        ),
        // Mount points are directories.
        ("read_file", "/home/src", Err(VfsErrorCode::IsDirectory)),
        ("write_file", "/home/src", Err(VfsErrorCode::IsDirectory)),
        // ... except that a write-only Workspace answers every refused write alike.
        ("write_file", "/out", Err(VfsErrorCode::Conflict)),
    ];
    for (tool, path, expect) in cases {
        let args = match *tool {
            "write_file" => json!({"path": path, "content": "x\n"}),
            "edit_file" => json!({"path": path, "old_string": "needle", "new_string": "pin"}),
            _ => json!({"path": path}),
        };
        let got = vfs.call(tool, args).await.map(|_| ()).map_err(|e| e.code);
        assert_eq!(&got, expect, "{tool} {path}");
    }
    assert_eq!(
        std::fs::read_to_string(disk.path("R/readme.md")).unwrap(),
        "home readme: needle\n"
    );
}

#[tokio::test]
async fn listing_a_parent_shows_nested_workspaces() {
    let (_disk, vfs) = home().await;
    assert_eq!(
        ls(&vfs, "/home").await.unwrap(),
        ["notes/", "readme.md", "src/"]
    );
    let listing = vfs.ls("/home").await.unwrap();
    let src = listing.entries.iter().find(|e| e.name == "src").unwrap();
    assert!(src.mount_point);
    assert_eq!(ls(&vfs, "/home/src").await.unwrap(), ["main.rs"]);
    // `/` is under no Workspace, but it leads to some.
    assert_eq!(ls(&vfs, "/").await.unwrap(), ["home/", "out/"]);
    // A write-only Workspace is not listed.
    assert_eq!(
        vfs.ls("/out").await.unwrap_err().code,
        VfsErrorCode::PermissionDenied
    );
    // Listing a file shows the file.
    assert_eq!(ls(&vfs, "/home/readme.md").await.unwrap(), ["readme.md"]);
    assert!(
        vfs.ls("/home/readme.md")
            .await
            .unwrap()
            .into_output_text()
            .contains("(file, 20 bytes)")
    );
    assert_eq!(
        vfs.ls("/home/nothing").await.unwrap_err().code,
        VfsErrorCode::NotFound
    );
}

trait OutputText {
    fn into_output_text(self) -> String;
}

impl OutputText for wsp_vfs::Listing {
    fn into_output_text(self) -> String {
        wsp_vfs::ToolResult::render(&self)
    }
}

#[tokio::test]
async fn nested_mount_points_deeper_than_one_level_and_under_write_only() {
    let disk = Disk::new();
    let (vfs, _) = vfs_with(&[
        (
            "/a",
            AccessScope::ReadOnly,
            MountConfig::physical(disk.root()),
        ),
        (
            "/a/x/y/z",
            AccessScope::ReadWrite,
            MountConfig::virtual_namespace("z"),
        ),
        (
            "/w",
            AccessScope::WriteOnly,
            MountConfig::virtual_namespace("w"),
        ),
        (
            "/w/pub",
            AccessScope::ReadOnly,
            MountConfig::virtual_namespace("pub"),
        ),
    ]);
    // R has no x/, yet the path to the nested Workspace lists.
    assert_eq!(ls(&vfs, "/a").await.unwrap(), ["x/"]);
    assert_eq!(ls(&vfs, "/a/x").await.unwrap(), ["y/"]);
    assert_eq!(ls(&vfs, "/a/x/y").await.unwrap(), ["z/"]);
    let listing = vfs.ls("/w").await.unwrap();
    assert_eq!(listing.entries.len(), 1);
    assert!(listing.note.unwrap().contains("write-only"));
    write(&vfs, "/w/hidden.md", "x").await;
    assert_eq!(
        ls(&vfs, "/w").await.unwrap(),
        ["pub/"],
        "the write-only Workspace's own files stay hidden"
    );
}

#[tokio::test]
async fn glob_and_grep_stay_inside_what_the_scopes_allow() {
    let (_disk, vfs) = home().await;
    let all = glob(&vfs, "**/*", None).await.unwrap();
    assert_eq!(
        all,
        ["/home/notes/a.md", "/home/readme.md", "/home/src/main.rs"]
    );
    assert_eq!(
        glob(&vfs, "*.md", Some("/home")).await.unwrap(),
        ["/home/readme.md"]
    );
    assert_eq!(
        glob(&vfs, "**/*.rs", Some("/home")).await.unwrap(),
        ["/home/src/main.rs"]
    );
    assert_eq!(
        glob(&vfs, "/home/*/*.md", None).await.unwrap(),
        ["/home/notes/a.md"]
    );
    assert_eq!(
        glob(&vfs, "*", Some("/home/src")).await.unwrap(),
        ["/home/src/main.rs"]
    );
    let hits = grep(&vfs, "needle", None).await.unwrap();
    assert_eq!(
        hits,
        [
            "/home/notes/a.md:1",
            "/home/readme.md:1",
            "/home/src/main.rs:1"
        ]
    );
    assert_eq!(
        grep(&vfs, "needle", Some("/home/src")).await.unwrap(),
        ["/home/src/main.rs:1"]
    );
    assert_eq!(
        grep(&vfs, "needle", Some("/home/readme.md")).await.unwrap(),
        ["/home/readme.md:1"]
    );
    for (tool, path) in [
        ("glob", "/out"),
        ("grep", "/out"),
        ("glob", "/elsewhere"),
        ("grep", "/homework"),
    ] {
        let args = json!({"pattern": "*", "path": path});
        assert_eq!(
            vfs.call(tool, args).await.unwrap_err().code,
            VfsErrorCode::PermissionDenied,
            "{tool} {path}"
        );
    }
    assert_eq!(
        grep(&vfs, "needle", Some("/home/nothing"))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::NotFound
    );
}

#[tokio::test]
async fn grep_caps_results_and_says_so() {
    let (vfs, _) = vfs_with(&[(
        "/v",
        AccessScope::ReadWrite,
        MountConfig::virtual_namespace("v"),
    )]);
    write(&vfs, "/v/many.txt", &"hit\n".repeat(30)).await;
    write(&vfs, "/v/regex.txt", "a1\nb22\nc333\n").await;
    let out = vfs
        .call("grep", json!({"pattern": "hit", "max_results": 5}))
        .await
        .unwrap();
    assert_eq!(out.structured["matches"].as_array().unwrap().len(), 5);
    assert_eq!(out.structured["truncated"], true);
    assert!(out.text.contains("results cut"), "{}", out.text);
    // Literal by default; regex on request.
    assert!(grep(&vfs, "b2+", None).await.unwrap().is_empty());
    let args = wsp_vfs::GrepArgs {
        pattern: r"^[bc]\d{2,}$".into(),
        regex: true,
        ..Default::default()
    };
    let found: Vec<u64> = vfs
        .grep(args)
        .await
        .unwrap()
        .matches
        .iter()
        .map(|m| m.line)
        .collect();
    assert_eq!(found, [2, 3]);
    let bad = vfs
        .call("grep", json!({"pattern": "(", "regex": true}))
        .await
        .unwrap_err();
    assert_eq!(bad.code, VfsErrorCode::InvalidArgument);
    let bad = vfs
        .call("glob", json!({"pattern": "a[", "path": "/v"}))
        .await
        .unwrap_err();
    assert_eq!(bad.code, VfsErrorCode::InvalidArgument);
}

#[tokio::test]
async fn grep_skips_binary_and_huge_files() {
    let disk = Disk::new();
    disk.write("R/text.txt", "find me\n");
    std::fs::write(disk.path("R/bin.dat"), b"find me\0\x01\x02").unwrap();
    std::fs::write(disk.path("R/latin1.txt"), b"find me \xe9").unwrap();
    disk.write("R/huge.txt", &"find me\n".repeat(200_000));
    let vfs = disk.vfs(false);
    let out = vfs
        .grep(wsp_vfs::GrepArgs {
            pattern: "find me".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(out.matches.len(), 1);
    assert_eq!(
        (out.skipped_binary, out.skipped_large, out.files_searched),
        (2, 1, 1)
    );
    let text = wsp_vfs::ToolResult::render(&out);
    assert!(text.contains("skipped 2 binary, 1 too large"), "{text}");
    let read = vfs
        .read_file(wsp_vfs::ReadFileArgs {
            path: "/ws/bin.dat".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(read.binary && read.lines.is_empty());
}

#[tokio::test]
async fn a_refused_operation_never_reaches_the_store() {
    let store = Arc::new(RecordingStore::default());
    let table = MountTable::builder()
        .workspace(WorkspaceConfig::new(
            "/r",
            AccessScope::ReadOnly,
            MountConfig::virtual_namespace("r"),
        ))
        .workspace(WorkspaceConfig::new(
            "/w",
            AccessScope::WriteOnly,
            MountConfig::virtual_namespace("w"),
        ))
        .workspace(WorkspaceConfig::new(
            "/rw",
            AccessScope::ReadWrite,
            MountConfig::virtual_namespace("rw"),
        ))
        .build()
        .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(store.clone())
        .build()
        .unwrap();
    let refused = [
        ("write_file", json!({"path": "/r/a.md", "content": "x"})),
        (
            "edit_file",
            json!({"path": "/r/a.md", "old_string": "a", "new_string": "b"}),
        ),
        ("delete_file", json!({"path": "/r/a.md"})),
        ("ls", json!({"path": "/w"})),
        ("read_file", json!({"path": "/w/a.md"})),
        (
            "edit_file",
            json!({"path": "/w/a.md", "old_string": "a", "new_string": "b"}),
        ),
        ("delete_file", json!({"path": "/w/a.md"})),
        ("glob", json!({"pattern": "**", "path": "/w"})),
        ("grep", json!({"pattern": "a", "path": "/w/a.md"})),
        (
            "write_file",
            json!({"path": "/w/a.md", "content": "x", "if_match": "\"e\""}),
        ),
        ("read_file", json!({"path": "/elsewhere/a.md"})),
        (
            "write_file",
            json!({"path": "/rw/../r/a.md", "content": "x"}),
        ),
        ("write_file", json!({"path": "/rw", "content": "x"})),
        ("ls", json!({"path": "/nowhere"})),
        ("read_file", json!({"path": "/rw/a.md", "limit": 0})),
        (
            "edit_file",
            json!({"path": "/rw/a.md", "old_string": "", "new_string": "b"}),
        ),
        (
            "write_file",
            json!({"path": "/rw/a.md", "content": "x", "if_match": "\"e\"", "create_only": true}),
        ),
        ("write_file", json!({"path": "/rw/a.md"})),
        ("no_such_tool", json!({"path": "/rw/a.md"})),
    ];
    for (tool, args) in refused {
        assert!(vfs.call(tool, args.clone()).await.is_err(), "{tool} {args}");
        assert_eq!(store.calls(), 0, "{tool} {args} reached the store");
    }
    // The counter does count: an allowed call reaches the store.
    vfs.call("write_file", json!({"path": "/w/a.md", "content": "x"}))
        .await
        .unwrap();
    assert!(store.calls() > 0);
}

#[tokio::test]
async fn an_empty_table_has_no_tools_and_denies_every_path() {
    let vfs = Vfs::builder(MountTable::empty()).build().unwrap();
    assert!(vfs.tools().is_empty());
    for tool in ["ls", "read_file", "write_file", "glob"] {
        let err = vfs
            .call(tool, json!({"path": "/", "pattern": "*", "content": ""}))
            .await
            .unwrap_err();
        assert_eq!(
            err.code,
            VfsErrorCode::InvalidArgument,
            "{tool}: no such tool here"
        );
    }
    for path in ["/", "/etc/passwd", "/ws"] {
        assert_eq!(
            vfs.ls(path).await.unwrap_err().code,
            VfsErrorCode::PermissionDenied
        );
        assert_eq!(
            read(&vfs, path).await.unwrap_err().code,
            VfsErrorCode::PermissionDenied
        );
        assert_eq!(
            glob(&vfs, "**", Some(path)).await.unwrap_err().code,
            VfsErrorCode::PermissionDenied
        );
    }
    assert!(Vfs::empty().tools().is_empty());
}
