//! Every `vfs_path` and `disk_setups` case of `shared/vectors/paths.json`, copied here as data.

use serde_json::json;
use wsp_vfs::{AccessScope, ErrorCode, MountConfig, MountTable, Vfs, WorkspaceConfig};

use crate::support::{Disk, outcome, read};

/// `(path, op, expect)`: `op` `None` means every tool that takes a path must answer `expect`
/// (for `ok`: the natural operations on the path succeed).
const VFS_PATH: &[(&str, Option<&str>, &str)] = &[
    ("/ws/a.md", None, "ok"),
    ("/ws", None, "ok"),
    ("/ws/", None, "ok"),
    ("/ws_evil/a.md", None, "permission_denied"),
    ("/w", None, "permission_denied"),
    ("/ws/../etc/passwd", None, "invalid_path"),
    ("/ws/a/../../x", None, "invalid_path"),
    ("..", None, "invalid_path"),
    ("ws/a.md", None, "invalid_path"),
    ("/ws\\..\\x", None, "invalid_path"),
    ("/ws/a\u{0}.md", None, "invalid_path"),
    ("~/x", None, "invalid_path"),
    ("C:\\x", None, "invalid_path"),
    ("/etc/passwd", None, "permission_denied"),
    ("/ws/report..final.md", None, "ok"),
    ("/ws/ro/x.md", Some("write_file"), "permission_denied"),
    ("/ws/ro/x.md", Some("read_file"), "not_found"),
];

/// The vectors' table: `/ws` (rw, physical root R) and `/ws/ro` (ro).
fn vectors_vfs(disk: &Disk) -> Vfs {
    let table = MountTable::builder()
        .workspace(WorkspaceConfig::new(
            "/ws",
            AccessScope::ReadWrite,
            MountConfig::physical(disk.root()),
        ))
        .workspace(WorkspaceConfig::new(
            "/ws/ro",
            AccessScope::ReadOnly,
            MountConfig::virtual_namespace("ro"),
        ))
        .build()
        .unwrap();
    Vfs::builder(table)
        .virtual_store(std::sync::Arc::new(wsp_store::MemoryStore::default()))
        .build()
        .unwrap()
}

fn args_for(tool: &str, path: &str) -> serde_json::Value {
    match tool {
        "write_file" => json!({"path": path, "content": "hello\n"}),
        "edit_file" => json!({"path": path, "old_string": "hello", "new_string": "bye"}),
        "glob" => json!({"pattern": "**", "path": path}),
        "grep" => json!({"pattern": "hello", "path": path}),
        _ => json!({"path": path}),
    }
}

const PATH_TOOLS: [&str; 7] = [
    "ls",
    "read_file",
    "write_file",
    "edit_file",
    "delete_file",
    "glob",
    "grep",
];

#[tokio::test]
async fn vfs_path_vectors() {
    let disk = Disk::new();
    let vfs = vectors_vfs(&disk);
    for &(path, op, expect) in VFS_PATH {
        match (op, expect) {
            (Some(tool), expect) => {
                let got = outcome(&vfs, tool, args_for(tool, path)).await;
                let got = got.map(|_| "ok".to_owned()).unwrap_or_else(|code| code);
                assert_eq!(got, expect, "{tool} {path:?}");
            }
            (None, "ok") if path.trim_end_matches('/') == "/ws" => {
                let listing = vfs
                    .ls(path)
                    .await
                    .unwrap_or_else(|e| panic!("ls {path:?}: {e}"));
                assert_eq!(listing.path.as_str(), "/ws");
                let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
                assert!(
                    names.contains(&"ro"),
                    "the nested workspace shows in {names:?}"
                );
            }
            (None, "ok") => {
                outcome(&vfs, "write_file", args_for("write_file", path))
                    .await
                    .unwrap();
                assert_eq!(read(&vfs, path).await.unwrap(), "hello", "{path}");
                for tool in ["ls", "glob", "grep", "edit_file", "delete_file"] {
                    let got = outcome(&vfs, tool, args_for(tool, path)).await;
                    assert!(got.is_ok(), "{tool} {path:?}: {got:?}");
                }
            }
            (None, expect) => {
                for tool in PATH_TOOLS {
                    let got = outcome(&vfs, tool, args_for(tool, path)).await;
                    assert_eq!(
                        got.as_ref().map_err(String::as_str),
                        Err(expect),
                        "{tool} {path:?}"
                    );
                }
            }
        }
    }
    // `same_as`: `/ws/` is `/ws`.
    assert_eq!(vfs.ls("/ws/").await.unwrap(), vfs.ls("/ws").await.unwrap());
}

#[tokio::test]
async fn a_denied_path_answers_the_same_whether_or_not_it_exists() {
    let disk = Disk::new();
    disk.write("R_evil/secret", "evil secret\n");
    let vfs = vectors_vfs(&disk);
    for tool in PATH_TOOLS {
        let exists = vfs
            .call(tool, args_for(tool, "/ws_evil/secret"))
            .await
            .unwrap_err();
        let absent = vfs
            .call(tool, args_for(tool, "/ws_evil/nothing"))
            .await
            .unwrap_err();
        assert_eq!(exists.code, ErrorCode::PermissionDenied, "{tool}");
        assert_eq!(exists.code, absent.code, "{tool}");
        assert_eq!(
            exists.message.replace("secret", "X"),
            absent.message.replace("nothing", "X"),
            "{tool}"
        );
        disk.assert_no_host_path(&exists);
    }
}

/// What a disk setup must end in.
enum Expect {
    /// `permission_denied` or `invalid_path`, and no content returned.
    Refused,
    /// `permission_denied`.
    Denied,
}

/// `(name, setup, tool, path)` for each `disk_setups` case.
type Setup = (&'static str, fn(&Disk), &'static str, &'static str, Expect);

fn setups() -> Vec<Setup> {
    vec![
        (
            "symlink to outside file",
            |d| {
                // The vector names /etc/hostname; a file outside with known content proves more.
                d.symlink("/etc/hostname", "R/link");
                d.symlink(d.outside().join("secret"), "R/link2");
            },
            "read_file",
            "/ws/link",
            Expect::Refused,
        ),
        (
            "symlink to outside file (known content)",
            |d| d.symlink(d.outside().join("secret"), "R/link2"),
            "read_file",
            "/ws/link2",
            Expect::Refused,
        ),
        (
            "write through symlink",
            |d| d.symlink(d.outside().join("target.txt"), "R/out"),
            "write_file",
            "/ws/out",
            Expect::Refused,
        ),
        (
            "symlinked directory then new file",
            |d| d.symlink(d.outside(), "R/d"),
            "write_file",
            "/ws/d/new.txt",
            Expect::Refused,
        ),
        (
            "relative symlink climbing out",
            |d| d.symlink("../OUTSIDE/secret", "R/x"),
            "read_file",
            "/ws/x",
            Expect::Refused,
        ),
        (
            "symlink loop",
            |d| {
                d.symlink("b", "R/a");
                d.symlink("a", "R/b");
            },
            "read_file",
            "/ws/a",
            Expect::Refused,
        ),
        (
            "sibling with the root's name as prefix",
            |d| d.write("R_evil/secret", "evil secret\n"),
            "read_file",
            "/ws_evil/secret",
            Expect::Denied,
        ),
    ]
}

#[tokio::test]
async fn disk_setup_vectors() {
    for follow in [false, true] {
        for (name, setup, tool, path, expect) in setups() {
            let disk = Disk::new();
            setup(&disk);
            let before = disk.outside_snapshot();
            let vfs = disk.vfs(follow);
            let (vfs, result) = crate::support::within(name, move || {
                let result = crate::support::block_on(vfs.call(tool, args_for(tool, path)));
                (vfs, result)
            });
            let err = match result {
                Ok(out) => panic!("{name} (follow {follow}): not refused: {}", out.text),
                Err(err) => err,
            };
            match expect {
                Expect::Refused => assert!(
                    matches!(
                        err.code,
                        ErrorCode::PermissionDenied | ErrorCode::InvalidPath
                    ),
                    "{name} (follow {follow}): {err:?}"
                ),
                Expect::Denied => assert_eq!(err.code, ErrorCode::PermissionDenied, "{name}"),
            }
            assert!(
                !err.message.contains("SECRET") && !err.message.contains("secret\n"),
                "{name}: {err:?}"
            );
            disk.assert_no_host_path(&err);
            assert_eq!(
                disk.outside_snapshot(),
                before,
                "{name} (follow {follow}): OUTSIDE changed"
            );
            // Whatever else the agent tries on the same path, nothing outside leaks or changes.
            for other in PATH_TOOLS {
                if let Ok(out) = vfs.call(other, args_for(other, path)).await {
                    assert!(
                        !out.text.contains("SECRET"),
                        "{name}: {other} leaked {}",
                        out.text
                    );
                }
            }
            let after_all = disk.outside_snapshot();
            assert_eq!(
                after_all, before,
                "{name} (follow {follow}): OUTSIDE changed by another tool"
            );
        }
    }
}
