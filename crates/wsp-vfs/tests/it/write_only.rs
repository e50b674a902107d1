//! Write-only Workspaces cannot be probed: whatever sits at or above a name (a directory, a
//! symbolic link, a FIFO, a regular file above it, a link loop, a link leading outside), a
//! refused write answers with the same code and the same text, naming only the path the agent
//! gave. Physical, virtual and overlay Mounts alike.

use serde_json::{Value, json};
use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, VfsError, VfsErrorCode, WorkspaceConfig};

use crate::support::{Disk, vfs_with, write};

/// The one answer a refused write in the write-only Workspace `/out` gives for `path`.
fn refusal(path: &str) -> String {
    format!(
        "{path} cannot be written: the write-only workspace /out does not say why a write is \
         refused (the name, or a name above it, may be in use); choose another name"
    )
}

fn mkfifo(disk: &Disk, rel: &str) {
    let status = std::process::Command::new("mkfifo")
        .arg(disk.path(rel))
        .status()
        .unwrap();
    assert!(status.success());
}

/// The object `args` with the keys of the object `extra` added.
fn merged(mut args: Value, extra: &Value) -> Value {
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    args
}

/// Calls `write_file` with `args` (the path and content are filled in) for each path, expects
/// every call to be refused, and checks that every refusal is the same answer.
async fn assert_refused_alike(vfs: &Vfs, cases: &[(&str, Value)], what: &str) {
    for (path, extra) in cases {
        let args = merged(json!({"path": path, "content": "payload"}), extra);
        let err: VfsError = vfs
            .call("write_file", args.clone())
            .await
            .expect_err(&format!("{what}: {args} should be refused"));
        assert_eq!(
            (err.code, err.message.as_str()),
            (VfsErrorCode::Conflict, refusal(path).as_str()),
            "{what}: {args}"
        );
    }
}

/// The tools a write-only Workspace does not offer are refused by the scope alone, the same
/// way whatever the name is, when another Workspace makes them part of the catalogue.
async fn assert_other_tools_refused_alike(vfs: &Vfs, paths: &[&str], what: &str) {
    for (tool, extra) in [
        ("read_file", json!({})),
        ("edit_file", json!({"old_string": "a", "new_string": "b"})),
        ("delete_file", json!({})),
        ("ls", json!({})),
    ] {
        let mut answers = Vec::new();
        for path in paths {
            let args = merged(json!({"path": path}), &extra);
            let err = vfs.call(tool, args).await.unwrap_err();
            assert_eq!(
                err.code,
                VfsErrorCode::PermissionDenied,
                "{what}: {tool} {path}"
            );
            answers.push(err.message.replace(path, "PATH"));
        }
        answers.dedup();
        assert_eq!(
            answers.len(),
            1,
            "{what}: {tool} answers differ: {answers:?}"
        );
    }
}

#[tokio::test]
async fn a_physical_write_only_workspace_refuses_every_occupied_name_alike() {
    let disk = Disk::new();
    disk.write("R/dir/inner.txt", "inner\n");
    disk.write("R/file.txt", "file\n");
    disk.write("R/target.txt", "target\n");
    disk.symlink("target.txt", "R/link");
    disk.symlink(disk.outside().join("secret"), "R/escape");
    disk.symlink("dir", "R/dirlink");
    disk.symlink("loop2", "R/loop1");
    disk.symlink("loop1", "R/loop2");
    mkfifo(&disk, "R/fifo");
    let _socket = std::os::unix::net::UnixListener::bind(disk.path("R/socket")).unwrap();
    let before = disk.outside_snapshot();

    for follow in [false, true] {
        let what = format!("physical, follow_symlinks = {follow}");
        let table = MountTable::builder()
            .workspace(
                WorkspaceConfig::new(
                    "/out",
                    AccessScope::WriteOnly,
                    MountConfig::physical(disk.root()),
                )
                .follow_symlinks(follow),
            )
            .workspace(WorkspaceConfig::new(
                "/rw",
                AccessScope::ReadWrite,
                MountConfig::physical(disk.outside()),
            ))
            .build()
            .unwrap();
        let vfs = Vfs::builder(table).build().unwrap();
        // The successful ones succeed, with the same answer whether or not a file was there.
        // (The second round overwrites what the first wrote.)
        for path in ["/out/free.txt", "/out/new/deep/free.txt"] {
            let out = vfs
                .call("write_file", json!({"path": path, "content": "ok"}))
                .await
                .unwrap();
            assert_eq!(out.text, format!("wrote 2 bytes to {path}\n"), "{what}");
        }
        let mut refused: Vec<(&str, Value)> = vec![
            ("/out/dir", json!({})),
            ("/out/fifo", json!({})),
            ("/out/socket", json!({})),
            ("/out/file.txt/x", json!({})),
            ("/out/file.txt/x/y.md", json!({})),
            ("/out/fifo/x", json!({})),
            ("/out/escape", json!({})),
            ("/out/escape/x", json!({})),
            ("/out/loop1", json!({})),
            ("/out/loop1/x", json!({})),
            ("/out", json!({})),
            ("/out/dir", json!({"create_only": true})),
            ("/out/file.txt", json!({"create_only": true})),
            ("/out/fifo", json!({"create_only": true})),
        ];
        if !follow {
            // Without following, every link is refused, wherever it leads.
            refused.extend([
                ("/out/link", json!({})),
                ("/out/dirlink", json!({})),
                ("/out/dirlink/x", json!({})),
            ]);
        } else {
            refused.extend([
                ("/out/dirlink", json!({})),
                ("/out/link", json!({"create_only": true})),
            ]);
        }
        assert_refused_alike(&vfs, &refused, &what).await;
        assert_other_tools_refused_alike(
            &vfs,
            &[
                "/out/free.txt",
                "/out/dir",
                "/out/fifo",
                "/out/nothing",
                "/out/file.txt/x",
            ],
            &what,
        )
        .await;
    }
    assert_eq!(disk.outside_snapshot(), before, "nothing outside changed");
    assert!(disk.path("R/dir").is_dir());
    assert_eq!(
        std::fs::read_to_string(disk.path("R/file.txt")).unwrap(),
        "file\n"
    );
}

#[tokio::test]
async fn a_virtual_write_only_workspace_refuses_every_occupied_name_alike() {
    let (vfs, _) = vfs_with(&[
        (
            "/out",
            AccessScope::WriteOnly,
            MountConfig::virtual_namespace("ns"),
        ),
        (
            "/rw",
            AccessScope::ReadWrite,
            MountConfig::virtual_namespace("ns"),
        ),
    ]);
    // What the write-only agent cannot see, written through the read-write view.
    write(&vfs, "/rw/dir/inner.txt", "inner\n").await;
    write(&vfs, "/rw/file.txt", "file\n").await;
    let out = vfs
        .call(
            "write_file",
            json!({"path": "/out/free.txt", "content": "ok"}),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "wrote 2 bytes to /out/free.txt\n");
    let out = vfs
        .call(
            "write_file",
            json!({"path": "/out/file.txt", "content": "ok"}),
        )
        .await
        .unwrap();
    assert_eq!(
        out.text, "wrote 2 bytes to /out/file.txt\n",
        "overwrite alike"
    );
    assert_refused_alike(
        &vfs,
        &[
            ("/out/dir", json!({})),
            ("/out/file.txt/x", json!({})),
            ("/out/file.txt/x/y.md", json!({})),
            ("/out", json!({})),
            ("/out/dir", json!({"create_only": true})),
            ("/out/file.txt", json!({"create_only": true})),
        ],
        "virtual",
    )
    .await;
    assert_other_tools_refused_alike(
        &vfs,
        &[
            "/out/free.txt",
            "/out/dir",
            "/out/nothing",
            "/out/file.txt/x",
        ],
        "virtual",
    )
    .await;
    // A name the store cannot hold says so: that depends only on the name the agent chose.
    let err = vfs
        .call(
            "write_file",
            json!({"path": "/out/_draft.md", "content": "x"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidPath, "{err:?}");
}

#[tokio::test]
async fn an_overlay_write_only_workspace_refuses_every_occupied_name_alike() {
    let disk = Disk::new();
    disk.write("R/dir/inner.txt", "inner\n");
    disk.write("R/file.txt", "file\n");
    disk.symlink(disk.outside().join("secret"), "R/escape");
    mkfifo(&disk, "R/fifo");
    let (vfs, _) = vfs_with(&[
        (
            "/out",
            AccessScope::WriteOnly,
            MountConfig::overlay("up", disk.root()),
        ),
        (
            "/rw",
            AccessScope::ReadWrite,
            MountConfig::overlay("up", disk.root()),
        ),
    ]);
    write(&vfs, "/rw/udir/inner.txt", "upper inner\n").await;
    write(&vfs, "/rw/ufile.txt", "upper file\n").await;
    for path in [
        "/out/free.txt",
        "/out/file.txt",
        "/out/ufile.txt",
        "/out/escape",
    ] {
        let out = vfs
            .call("write_file", json!({"path": path, "content": "ok"}))
            .await
            .unwrap();
        assert_eq!(out.text, format!("wrote 2 bytes to {path}\n"));
    }
    assert_refused_alike(
        &vfs,
        &[
            ("/out/dir", json!({})),
            ("/out/udir", json!({})),
            ("/out/fifo", json!({})),
            ("/out/file.txt/x", json!({})),
            ("/out/ufile.txt/x", json!({})),
            ("/out/fifo/x", json!({})),
            ("/out", json!({})),
            ("/out/dir", json!({"create_only": true})),
            ("/out/file.txt", json!({"create_only": true})),
            ("/out/ufile.txt", json!({"create_only": true})),
        ],
        "overlay",
    )
    .await;
    assert_other_tools_refused_alike(
        &vfs,
        &["/out/free.txt", "/out/dir", "/out/fifo", "/out/nothing"],
        "overlay",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(disk.path("R/file.txt")).unwrap(),
        "file\n",
        "the lower layer is never written"
    );
}

#[tokio::test]
async fn read_write_workspaces_still_say_what_is_in_the_way() {
    let disk = Disk::new();
    disk.write("R/dir/inner.txt", "inner\n");
    disk.write("R/file.txt", "file\n");
    let vfs = disk.vfs(false);
    let code = |args: Value| {
        let vfs = &vfs;
        async move { vfs.call("write_file", args).await.unwrap_err().code }
    };
    assert_eq!(
        code(json!({"path": "/ws/dir", "content": ""})).await,
        VfsErrorCode::IsDirectory
    );
    assert_eq!(
        code(json!({"path": "/ws/file.txt/x", "content": ""})).await,
        VfsErrorCode::InvalidPath
    );
    assert_eq!(
        code(json!({"path": "/ws/file.txt", "content": "", "create_only": true})).await,
        VfsErrorCode::Conflict
    );
}
