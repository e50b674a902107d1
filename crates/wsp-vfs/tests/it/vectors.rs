//! Every `vfs_path` and `disk_setups` case of the repository's `conformance/vectors/paths.json`:
//! the `vfs_path` cases read from the file, the `disk_setups` built here (one per case, by name).

use serde_json::json;
use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, VfsErrorCode, WorkspaceConfig};

use crate::support::{Disk, outcome, read};

/// The repository's adversarial vectors, `conformance/vectors/paths.json`, read at run time.
fn vectors() -> serde_json::Value {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/vectors/paths.json");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    serde_json::from_str(&text).expect("the vectors are JSON")
}

/// The `vfs_path` group as `(path, op, expect)`: `op` `None` means every tool that takes a path
/// must answer `expect` (for `ok`: the natural operations on the path succeed).
fn vfs_path_cases() -> Vec<(String, Option<String>, String)> {
    let cases: Vec<_> = vectors()["vfs_path"]
        .as_array()
        .expect("a vfs_path group")
        .iter()
        .map(|v| {
            let text = |key: &str| v[key].as_str().map(str::to_owned);
            (
                text("path").expect("path"),
                text("op"),
                text("expect").expect("expect"),
            )
        })
        .collect();
    assert!(cases.len() >= 17, "only {} vfs_path vectors", cases.len());
    cases
}

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
    for (path, op, expect) in &vfs_path_cases() {
        let (path, op, expect) = (path.as_str(), op.as_deref(), expect.as_str());
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
        assert_eq!(exists.code, VfsErrorCode::PermissionDenied, "{tool}");
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

#[test]
fn every_disk_setup_vector_has_a_setup_here() {
    let names: Vec<&str> = setups().iter().map(|s| s.0).collect();
    let doc = vectors();
    let cases = doc["disk_setups"].as_array().expect("a disk_setups group");
    assert!(cases.len() >= 6, "only {} disk setups", cases.len());
    for case in cases {
        let name = case["name"].as_str().expect("name");
        assert!(names.contains(&name), "no setup for the vector {name:?}");
    }
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
                        VfsErrorCode::PermissionDenied | VfsErrorCode::InvalidPath
                    ),
                    "{name} (follow {follow}): {err:?}"
                ),
                Expect::Denied => assert_eq!(err.code, VfsErrorCode::PermissionDenied, "{name}"),
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
