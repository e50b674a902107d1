//! The physical jail beyond the vectors: prefix siblings, a symlink followed by `..`, hard links,
//! a directory swapped for a symlink while the agent works, special files, and what opting in to
//! links inside the directory allows.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, VfsErrorCode, WorkspaceConfig};

use crate::support::{Disk, glob, grep, ls, read};

#[tokio::test]
async fn prefix_siblings_never_match() {
    let disk = Disk::new();
    disk.write("R/a", "inside\n");
    disk.write("R_evil/a", "evil\n");
    let table = MountTable::builder()
        .workspace(WorkspaceConfig::new(
            "/project",
            AccessScope::ReadOnly,
            MountConfig::physical(disk.root()),
        ))
        .build()
        .unwrap();
    let vfs = Vfs::builder(table).build().unwrap();
    assert_eq!(read(&vfs, "/project/a").await.unwrap(), "inside");
    for path in ["/project_evil/a", "/projec", "/project.bak/a", "/projectx"] {
        let err = read(&vfs, path).await.unwrap_err();
        assert_eq!(err.code, VfsErrorCode::PermissionDenied, "{path}");
        assert_eq!(
            vfs.ls(path).await.unwrap_err().code,
            VfsErrorCode::PermissionDenied,
            "{path}"
        );
    }
    // `ls /` shows the mount point only; nothing of R_evil.
    assert_eq!(ls(&vfs, "/").await.unwrap(), ["project/"]);
}

#[tokio::test]
async fn a_symlink_then_dotdot_never_reaches_outside() {
    let disk = Disk::new();
    std::fs::create_dir(disk.path("OUTSIDE/inner")).unwrap();
    disk.write("R/secret.txt", "inside copy\n");
    disk.symlink(disk.outside().join("inner"), "R/d");
    // Lexically `R/secret.txt`; the kernel would resolve it to `OUTSIDE/secret`.
    disk.symlink("d/../secret", "R/l");
    for follow in [false, true] {
        let vfs = disk.vfs(follow);
        let got = read(&vfs, "/ws/l").await;
        if let Ok(text) = &got {
            assert!(!text.contains("SECRET"), "follow {follow}: {text}");
        }
        assert!(
            got.is_err(),
            "follow {follow}: a link through an escaping link is refused: {got:?}"
        );
        // The agent cannot spell the same thing itself.
        assert_eq!(
            read(&vfs, "/ws/d/../secret").await.unwrap_err().code,
            VfsErrorCode::InvalidPath
        );
        assert_eq!(
            read(&vfs, "/ws/d/secret").await.unwrap_err().code,
            VfsErrorCode::PermissionDenied
        );
    }
}

#[tokio::test]
async fn links_that_stay_inside_are_followed_only_when_the_mount_opts_in() {
    let disk = Disk::new();
    disk.write("R/real/file.md", "real content\n");
    disk.symlink("real/file.md", "R/alias.md");
    disk.symlink("real", "R/dir");
    let strict = disk.vfs(false);
    for path in ["/ws/alias.md", "/ws/dir/file.md"] {
        assert_eq!(
            read(&strict, path).await.unwrap_err().code,
            VfsErrorCode::PermissionDenied,
            "{path}"
        );
    }
    let follow = disk.vfs(true);
    for path in ["/ws/alias.md", "/ws/dir/file.md"] {
        assert_eq!(read(&follow, path).await.unwrap(), "real content", "{path}");
    }
    // An absolute target is refused even when it names a file inside: the handle knows no host paths.
    disk.symlink(disk.root().join("real/file.md"), "R/abs.md");
    assert_eq!(
        read(&follow, "/ws/abs.md").await.unwrap_err().code,
        VfsErrorCode::PermissionDenied
    );
    std::fs::remove_file(disk.path("R/abs.md")).unwrap();
    // Writing through an inside link writes the target; deleting removes the link only.
    crate::support::write(&follow, "/ws/alias.md", "new content\n").await;
    assert_eq!(
        std::fs::read_to_string(disk.path("R/real/file.md")).unwrap(),
        "new content\n"
    );
    assert!(
        std::fs::symlink_metadata(disk.path("R/alias.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    follow
        .call("delete_file", json!({"path": "/ws/alias.md"}))
        .await
        .unwrap();
    assert!(disk.path("R/real/file.md").exists());
    assert!(std::fs::symlink_metadata(disk.path("R/alias.md")).is_err());
    // Listings show links as links; walks never follow them.
    let names = ls(&follow, "/ws").await.unwrap();
    assert_eq!(names, ["dir", "real/"]);
    assert_eq!(
        glob(&follow, "**/*.md", Some("/ws")).await.unwrap(),
        ["/ws/real/file.md"]
    );
}

#[tokio::test]
async fn hard_links_are_not_read_and_never_written_through() {
    let disk = Disk::new();
    std::fs::hard_link(disk.outside().join("target.txt"), disk.path("R/hl.txt")).unwrap();
    disk.write("R/plain.txt", "outside target? no, plain\n");
    let before = disk.outside_snapshot();
    let vfs = disk.vfs(false);
    let err = read(&vfs, "/ws/hl.txt").await.unwrap_err();
    assert_eq!(err.code, VfsErrorCode::PermissionDenied);
    assert!(err.message.contains("hard link"), "{err:?}");
    let edit = vfs
        .call(
            "edit_file",
            json!({"path": "/ws/hl.txt", "old_string": "outside", "new_string": "pwned"}),
        )
        .await
        .unwrap_err();
    assert_eq!(edit.code, VfsErrorCode::PermissionDenied);
    let found = vfs
        .grep(wsp_vfs::GrepArgs {
            pattern: "outside".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(found.matches.len(), 1, "only the plain file: {found:?}");
    assert_eq!(found.skipped_refused, 1);
    // A write replaces the name inside the root; the shared inode outside keeps its content.
    crate::support::write(&vfs, "/ws/hl.txt", "replaced\n").await;
    assert_eq!(
        std::fs::read_to_string(disk.path("R/hl.txt")).unwrap(),
        "replaced\n"
    );
    assert_eq!(disk.outside_snapshot(), before);
    // A delete removes the name only.
    std::fs::hard_link(disk.outside().join("secret"), disk.path("R/hl2")).unwrap();
    vfs.call("delete_file", json!({"path": "/ws/hl2"}))
        .await
        .unwrap();
    assert_eq!(disk.outside_snapshot(), before);
    // Opting in reads them.
    std::fs::hard_link(disk.outside().join("secret"), disk.path("R/hl3")).unwrap();
    let table = MountTable::builder()
        .workspace(
            WorkspaceConfig::new(
                "/ws",
                AccessScope::ReadOnly,
                MountConfig::physical(disk.root()),
            )
            .allow_hard_links(true),
        )
        .build()
        .unwrap();
    let trusting = Vfs::builder(table).build().unwrap();
    assert_eq!(
        read(&trusting, "/ws/hl3").await.unwrap(),
        "TOP SECRET outside"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_mid_call_cannot_escape() {
    for follow in [false, true] {
        let disk = Disk::new();
        disk.write("R/d/f", "inside\n");
        disk.write("OUTSIDE/f", "SECRET swapped\n");
        disk.symlink(disk.outside(), "R/d_link");
        let before = disk.outside_snapshot();
        let vfs = Arc::new(disk.vfs(follow));
        let stop = Arc::new(AtomicBool::new(false));
        let (root, stop2) = (disk.root(), stop.clone());
        // Swap R/d between the real directory and a symlink to OUTSIDE, atomically (no moment
        // without an R/d that a write could recreate), as fast as possible.
        let swapper = std::thread::spawn(move || {
            use rustix::fs::{CWD, RenameFlags, renameat_with};
            let (d, link) = (root.join("d"), root.join("d_link"));
            let mut swaps = 0u64;
            while !stop2.load(Ordering::Relaxed) && swaps < 1_000_000 {
                renameat_with(CWD, &d, CWD, &link, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
            }
            swaps
        });
        let (mut reads_ok, mut writes_ok) = (0, 0);
        for i in 0..400 {
            match read(&vfs, "/ws/d/f").await {
                Ok(text) => {
                    assert_eq!(text, "inside", "follow {follow}");
                    reads_ok += 1;
                }
                Err(e) => disk.assert_no_host_path(&e),
            }
            let path = format!("/ws/d/new{i}.txt");
            if vfs
                .call("write_file", json!({"path": path, "content": "x"}))
                .await
                .is_ok()
            {
                writes_ok += 1;
            }
            let _ = grep(&vfs, "SECRET", Some("/ws"))
                .await
                .map(|m| assert!(m.is_empty(), "{m:?}"));
        }
        eprintln!("follow {follow}: {reads_ok} reads ok, {writes_ok} writes ok of 400");
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 0);
        assert_eq!(
            disk.outside_snapshot(),
            before,
            "follow {follow}: OUTSIDE changed ({reads_ok} reads, {writes_ok} writes ok)"
        );
    }
}

#[tokio::test]
async fn special_files_are_refused_without_hanging() {
    let disk = Disk::new();
    let status = std::process::Command::new("mkfifo")
        .arg(disk.path("R/pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let vfs = disk.vfs(false);
    let (vfs, result) = crate::support::within("read a FIFO", move || {
        let result = crate::support::block_on(read(&vfs, "/ws/pipe"));
        (vfs, result)
    });
    let err = result.unwrap_err();
    assert_eq!(err.code, VfsErrorCode::PermissionDenied);
    // Listings leave special files out.
    assert!(ls(&vfs, "/ws").await.unwrap().is_empty());
}

#[tokio::test]
async fn writes_create_parents_atomically_and_leave_no_temporary_files() {
    let disk = Disk::new();
    let vfs = disk.vfs(false);
    crate::support::write(&vfs, "/ws/a/b/c.md", "deep\n").await;
    assert_eq!(
        std::fs::read_to_string(disk.path("R/a/b/c.md")).unwrap(),
        "deep\n"
    );
    crate::support::write(&vfs, "/ws/a/b/c.md", "again\n").await;
    let names: Vec<_> = std::fs::read_dir(disk.path("R/a/b"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["c.md"]);
    // Permissions of a replaced file are kept.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        disk.path("R/a/b/c.md"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    crate::support::write(&vfs, "/ws/a/b/c.md", "third\n").await;
    let mode = std::fs::metadata(disk.path("R/a/b/c.md"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o640);
    // A file where a directory is needed.
    let err = vfs
        .call(
            "write_file",
            json!({"path": "/ws/a/b/c.md/x", "content": ""}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidPath);
    let err = vfs
        .call("write_file", json!({"path": "/ws/a/b", "content": ""}))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::IsDirectory);
    let err = vfs
        .call("delete_file", json!({"path": "/ws/a"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::IsDirectory);
}

#[tokio::test]
async fn a_symlinked_intermediate_directory_is_refused_for_every_tool() {
    let disk = Disk::new();
    disk.write("OUTSIDE/sub/f.md", "SECRET deep\n");
    disk.symlink(disk.outside(), "R/mid");
    let before = disk.outside_snapshot();
    let vfs = disk.vfs(false);
    for (tool, args) in [
        ("read_file", json!({"path": "/ws/mid/sub/f.md"})),
        ("ls", json!({"path": "/ws/mid/sub"})),
        (
            "write_file",
            json!({"path": "/ws/mid/sub/g.md", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "/ws/mid/sub/f.md", "old_string": "SECRET", "new_string": "x"}),
        ),
        ("delete_file", json!({"path": "/ws/mid/sub/f.md"})),
        ("glob", json!({"pattern": "**", "path": "/ws/mid"})),
        ("grep", json!({"pattern": "SECRET", "path": "/ws/mid/sub"})),
    ] {
        let err = vfs.call(tool, args).await.unwrap_err();
        assert_eq!(err.code, VfsErrorCode::PermissionDenied, "{tool}: {err:?}");
        disk.assert_no_host_path(&err);
    }
    assert!(grep(&vfs, "SECRET", None).await.unwrap().is_empty());
    assert_eq!(disk.outside_snapshot(), before);
}
