//! Overlay Mounts: reads fall through to the host directory, writes and deletes stay in the
//! virtual upper layer, deletes of lower files leave whiteouts, listings are the union.

use serde_json::json;
use wsp_store::WorkspaceStore;
use wsp_types::{Owner, WorkspacePrefix};
use wsp_vfs::{AccessScope, MountConfig, ReadFileArgs, VfsErrorCode, WriteFileArgs};

use crate::support::{Disk, glob, grep, ls, read, vfs_with, write};

#[tokio::test]
async fn overlay_reads_through_and_writes_on_top() {
    let disk = Disk::new();
    disk.write("R/a.txt", "lower a\n");
    disk.write("R/d/b.txt", "lower b\n");
    disk.write("R/keep.txt", "lower keep\n");
    let before = std::fs::read_dir(disk.root()).unwrap().count();
    let (vfs, store) = vfs_with(&[(
        "/o",
        AccessScope::ReadWrite,
        MountConfig::overlay("up", disk.root()),
    )]);

    assert_eq!(read(&vfs, "/o/a.txt").await.unwrap(), "lower a");
    assert_eq!(ls(&vfs, "/o").await.unwrap(), ["a.txt", "d/", "keep.txt"]);

    // Copy-on-write: the upper layer shadows, the host file is untouched.
    let lower_etag = vfs
        .read_file(ReadFileArgs {
            path: "/o/a.txt".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .etag;
    let args = WriteFileArgs {
        path: "/o/a.txt".into(),
        content: "upper a\n".into(),
        if_match: Some(lower_etag.clone()),
        create_only: false,
    };
    let written = vfs.write_file(args.clone()).await.unwrap();
    assert_eq!(written.created, Some(false));
    assert_eq!(read(&vfs, "/o/a.txt").await.unwrap(), "upper a");
    assert_eq!(
        std::fs::read_to_string(disk.path("R/a.txt")).unwrap(),
        "lower a\n"
    );
    assert_eq!(
        vfs.write_file(args).await.unwrap_err().code,
        VfsErrorCode::Conflict,
        "the lower etag is stale now"
    );
    write(&vfs, "/o/new.txt", "only upper\n").await;
    write(&vfs, "/o/d/c.txt", "upper c\n").await;
    assert!(!disk.path("R/new.txt").exists() && !disk.path("R/d/c.txt").exists());
    // The union, deduplicated.
    assert_eq!(
        ls(&vfs, "/o").await.unwrap(),
        ["a.txt", "d/", "keep.txt", "new.txt"]
    );
    assert_eq!(ls(&vfs, "/o/d").await.unwrap(), ["b.txt", "c.txt"]);
    assert_eq!(
        glob(&vfs, "**/*.txt", Some("/o")).await.unwrap(),
        [
            "/o/a.txt",
            "/o/d/b.txt",
            "/o/d/c.txt",
            "/o/keep.txt",
            "/o/new.txt"
        ]
    );
    assert_eq!(
        grep(&vfs, "lower", Some("/o")).await.unwrap(),
        ["/o/d/b.txt:1", "/o/keep.txt:1"]
    );
    assert_eq!(
        grep(&vfs, "upper", Some("/o")).await.unwrap(),
        ["/o/a.txt:1", "/o/d/c.txt:1", "/o/new.txt:1"]
    );

    // Deleting a lower file leaves a whiteout; the host file stays.
    vfs.call("delete_file", json!({"path": "/o/keep.txt"}))
        .await
        .unwrap();
    vfs.call("delete_file", json!({"path": "/o/a.txt"}))
        .await
        .unwrap();
    for path in ["/o/keep.txt", "/o/a.txt"] {
        assert_eq!(
            read(&vfs, path).await.unwrap_err().code,
            VfsErrorCode::NotFound,
            "{path}"
        );
        assert_eq!(
            vfs.call("delete_file", json!({"path": path}))
                .await
                .unwrap_err()
                .code,
            VfsErrorCode::NotFound
        );
    }
    assert_eq!(
        std::fs::read_to_string(disk.path("R/keep.txt")).unwrap(),
        "lower keep\n"
    );
    assert_eq!(
        std::fs::read_to_string(disk.path("R/a.txt")).unwrap(),
        "lower a\n"
    );
    assert_eq!(ls(&vfs, "/o").await.unwrap(), ["d/", "new.txt"]);
    assert_eq!(
        glob(&vfs, "*.txt", Some("/o")).await.unwrap(),
        ["/o/new.txt"]
    );
    assert!(grep(&vfs, "keep", None).await.unwrap().is_empty());
    let owner = Owner::parse("vfs", "up").unwrap();
    let upper = store.list(&owner, &WorkspacePrefix::all()).await.unwrap();
    let whiteouts: Vec<&str> = upper
        .iter()
        .filter(|m| m.content_type == "application/vnd.wsp.whiteout")
        .map(|m| m.path.as_str())
        .collect();
    assert_eq!(whiteouts, ["a.txt", "keep.txt"]);

    // A deleted name can be created again, and create_only sees it as absent.
    let again = WriteFileArgs {
        path: "/o/keep.txt".into(),
        content: "reborn\n".into(),
        if_match: None,
        create_only: true,
    };
    assert_eq!(vfs.write_file(again).await.unwrap().created, Some(true));
    assert_eq!(read(&vfs, "/o/keep.txt").await.unwrap(), "reborn");
    // create_only on a file only the lower layer has is a conflict.
    let exists = WriteFileArgs {
        path: "/o/d/b.txt".into(),
        content: "x".into(),
        if_match: None,
        create_only: true,
    };
    assert_eq!(
        vfs.write_file(exists).await.unwrap_err().code,
        VfsErrorCode::Conflict
    );
    // Deleting an upper-only file removes it outright.
    vfs.call("delete_file", json!({"path": "/o/new.txt"}))
        .await
        .unwrap();
    assert_eq!(
        read(&vfs, "/o/new.txt").await.unwrap_err().code,
        VfsErrorCode::NotFound
    );
    // Directories stay directories across layers.
    assert_eq!(
        vfs.call("read_file", json!({"path": "/o/d"}))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::IsDirectory
    );
    assert_eq!(
        vfs.call("write_file", json!({"path": "/o/d", "content": ""}))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::IsDirectory
    );
    // A whited-out lower file no longer blocks a directory of the same name.
    write(&vfs, "/o/a.txt/x", "under a deleted file's name\n").await;
    assert_eq!(ls(&vfs, "/o/a.txt").await.unwrap(), ["x"]);
    assert_eq!(
        vfs.call("read_file", json!({"path": "/o/a.txt"}))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::IsDirectory
    );
    assert_eq!(
        vfs.call("write_file", json!({"path": "/o/d/b.txt/x", "content": ""}))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::InvalidPath
    );
    // Nothing was ever written to the host directory.
    assert_eq!(std::fs::read_dir(disk.root()).unwrap().count(), before);
}

#[tokio::test]
async fn overlay_lower_layer_keeps_the_jail() {
    let disk = Disk::new();
    disk.symlink(disk.outside().join("secret"), "R/link");
    let (vfs, _) = vfs_with(&[(
        "/o",
        AccessScope::ReadWrite,
        MountConfig::overlay("up", disk.root()),
    )]);
    assert_eq!(
        read(&vfs, "/o/link").await.unwrap_err().code,
        VfsErrorCode::PermissionDenied
    );
    assert!(grep(&vfs, "SECRET", None).await.unwrap().is_empty());
    // The agent may delete the name (a whiteout); the link and its target stay on the host.
    vfs.call("delete_file", json!({"path": "/o/link"}))
        .await
        .unwrap();
    assert!(
        std::fs::symlink_metadata(disk.path("R/link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(ls(&vfs, "/o").await.unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_read_only_overlay_is_just_a_union() {
    let disk = Disk::new();
    disk.write("R/a.txt", "lower\n");
    let (vfs, _) = vfs_with(&[
        (
            "/o",
            AccessScope::ReadOnly,
            MountConfig::overlay("shared", disk.root()),
        ),
        (
            "/draft",
            AccessScope::ReadWrite,
            MountConfig::virtual_namespace("shared"),
        ),
    ]);
    write(&vfs, "/draft/b.txt", "from the draft\n").await;
    assert_eq!(ls(&vfs, "/o").await.unwrap(), ["a.txt", "b.txt"]);
    assert_eq!(
        vfs.call("write_file", json!({"path": "/o/c.txt", "content": ""}))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::PermissionDenied
    );
}
