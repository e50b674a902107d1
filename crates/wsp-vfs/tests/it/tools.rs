//! The tools: the catalogue per table, reading with offsets, conditional writes, edit errors,
//! write-only semantics and dispatch.

use serde_json::json;
use wsp_vfs::{
    AccessScope, EditFileArgs, MountConfig, ReadFileArgs, ToolName, Vfs, VfsErrorCode, VfsLimits,
    WriteFileArgs,
};

use crate::support::{Disk, vfs_with, write};

fn names(vfs: &Vfs) -> Vec<String> {
    vfs.tools().into_iter().map(|t| t.name).collect()
}

/// Workspaces as `(prefix, scope)`.
type Table = &'static [(&'static str, AccessScope)];

#[test]
fn the_catalogue_follows_the_aggregate_scopes() {
    use AccessScope::*;
    let v = |ns: &str| MountConfig::virtual_namespace(ns);
    let cases: &[(Table, &[&str])] = &[
        (&[], &[]),
        (&[("/a", ReadOnly)], &["ls", "read_file", "glob", "grep"]),
        (
            &[("/a", ReadOnly), ("/b", ReadOnly)],
            &["ls", "read_file", "glob", "grep"],
        ),
        (&[("/a", WriteOnly)], &["write_file"]),
        (
            &[("/a", ReadOnly), ("/a/out", WriteOnly)],
            &["ls", "read_file", "glob", "grep", "write_file"],
        ),
        (
            &[("/a", ReadWrite)],
            &[
                "ls",
                "read_file",
                "glob",
                "grep",
                "write_file",
                "edit_file",
                "delete_file",
            ],
        ),
        (
            &[("/a", ReadOnly), ("/a/src", ReadWrite), ("/o", WriteOnly)],
            &[
                "ls",
                "read_file",
                "glob",
                "grep",
                "write_file",
                "edit_file",
                "delete_file",
            ],
        ),
        (
            &[("/a", WriteOnly), ("/b", ReadWrite)],
            &[
                "ls",
                "read_file",
                "glob",
                "grep",
                "write_file",
                "edit_file",
                "delete_file",
            ],
        ),
    ];
    for (table, expect) in cases {
        let entries: Vec<_> = table
            .iter()
            .map(|(p, s)| (*p, *s, v(&p.replace('/', "x"))))
            .collect();
        let (vfs, _) = vfs_with(&entries);
        assert_eq!(names(&vfs), *expect, "{table:?}");
        for tool in ToolName::ALL {
            assert_eq!(
                vfs.offers(tool),
                expect.contains(&tool.as_str()),
                "{tool} for {table:?}"
            );
        }
    }
}

#[tokio::test]
async fn tools_outside_the_catalogue_are_refused_even_by_name() {
    let (vfs, _) = vfs_with(&[(
        "/a",
        AccessScope::ReadOnly,
        MountConfig::virtual_namespace("a"),
    )]);
    let err = vfs
        .call("write_file", json!({"path": "/a/x", "content": ""}))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidArgument);
    assert!(err.message.contains("ls, read_file, glob, grep"), "{err:?}");
    let err = vfs
        .call("ls", json!({"path": "/a", "recursive": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidArgument);
    assert!(err.message.contains("unknown field"), "{err:?}");
    let err = vfs.call("read_file", json!({})).await.unwrap_err();
    assert!(err.message.contains("missing field `path`"), "{err:?}");
    let err = vfs
        .call("run_command", json!({"cmd": "ls"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidArgument);
}

/// Runs `check` once over a physical Mount and once over a virtual one, both at `/m` (rw).
async fn on_both_kinds<F, Fut>(check: F)
where
    F: Fn(Vfs, &'static str) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let disk = Disk::new();
    let (physical, _) = vfs_with(&[(
        "/m",
        AccessScope::ReadWrite,
        MountConfig::physical(disk.root()),
    )]);
    check(physical, "physical").await;
    let (virt, _) = vfs_with(&[(
        "/m",
        AccessScope::ReadWrite,
        MountConfig::virtual_namespace("m"),
    )]);
    check(virt, "virtual").await;
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages() {
    on_both_kinds(|vfs, kind| async move {
        write(&vfs, "/m/five.txt", "one\ntwo\nthree\nfour\nfive\n").await;
        let read = |offset, limit| {
            let vfs = &vfs;
            async move {
                vfs.read_file(ReadFileArgs {
                    path: "/m/five.txt".into(),
                    offset,
                    limit,
                })
                .await
            }
        };
        let all = read(None, None).await.unwrap();
        assert_eq!(
            (all.total_lines, all.start_line, all.lines.len(), all.more),
            (5, 1, 5, false),
            "{kind}"
        );
        let page = read(Some(2), Some(2)).await.unwrap();
        assert_eq!(page.lines, ["two", "three"], "{kind}");
        assert!(page.more);
        let text = wsp_vfs::ToolResult::render(&page);
        assert!(
            text.starts_with(
                "     2\ttwo\n     3\tthree\n(lines 2-3 of 5; continue with offset=4; etag \""
            ),
            "{kind}: {text}"
        );
        assert_eq!(
            read(Some(0), Some(1)).await.unwrap().lines,
            ["one"],
            "{kind}"
        );
        let past = read(Some(9), None).await.unwrap();
        assert!(past.lines.is_empty() && !past.more, "{kind}");
        assert!(wsp_vfs::ToolResult::render(&past).contains("offset 9 is past the end"));
        assert_eq!(
            read(None, Some(0)).await.unwrap_err().code,
            VfsErrorCode::InvalidArgument
        );
        write(&vfs, "/m/empty.txt", "").await;
        let empty = vfs
            .read_file(ReadFileArgs {
                path: "/m/empty.txt".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            wsp_vfs::ToolResult::render(&empty).contains("is empty"),
            "{kind}"
        );
        assert_eq!(
            all.etag,
            vfs.read_file(ReadFileArgs {
                path: "/m/five.txt".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .etag
        );
    })
    .await;
}

#[tokio::test]
async fn read_file_and_ls_send_their_bulk_once() {
    on_both_kinds(|vfs, kind| async move {
        write(&vfs, "/m/d/a.md", "alpha\nbeta\n").await;
        write(&vfs, "/m/d/b.md", "b").await;
        let read = vfs
            .call("read_file", json!({"path": "/m/d/a.md"}))
            .await
            .unwrap();
        assert!(
            read.text.starts_with("     1\talpha\n     2\tbeta\n"),
            "{kind}"
        );
        let s = &read.structured;
        assert_eq!(
            (&s["total_lines"], &s["returned_lines"], &s["more"]),
            (&json!(2), &json!(2), &json!(false)),
            "{kind}"
        );
        assert!(s["etag"].as_str().unwrap().starts_with('"'), "{kind}");
        assert!(
            s.get("lines").is_none(),
            "{kind}: the lines are in the text only"
        );

        let ls = vfs.call("ls", json!({"path": "/m/d"})).await.unwrap();
        assert_eq!(ls.structured["entry_count"], 2, "{kind}");
        assert!(ls.structured.get("entries").is_none(), "{kind}");
        // Sizes only where the store has them without a `stat` per entry.
        let want = match kind {
            "physical" => "/m/d:\na.md\nb.md\n",
            _ => "/m/d:\na.md (11 bytes)\nb.md (1 bytes)\n",
        };
        assert_eq!(ls.text, want, "{kind}");
        let one = vfs.call("ls", json!({"path": "/m/d/a.md"})).await.unwrap();
        assert_eq!(one.text, "/m/d/a.md (file, 11 bytes)\n", "{kind}");
    })
    .await;
}

#[tokio::test]
async fn long_lines_are_cut_and_big_files_refused() {
    let disk = Disk::new();
    disk.write("R/long.txt", &format!("{}\nshort\n", "é".repeat(3000)));
    disk.write("R/big.txt", &"x".repeat(8001));
    let limits = VfsLimits {
        max_read_bytes: 8000,
        max_write_bytes: 10,
        ..VfsLimits::default()
    };
    let table = wsp_vfs::MountTable::builder()
        .workspace(wsp_vfs::WorkspaceConfig::new(
            "/ws",
            AccessScope::ReadWrite,
            MountConfig::physical(disk.root()),
        ))
        .build()
        .unwrap();
    let vfs = Vfs::builder(table).limits(limits).build().unwrap();
    let read = vfs
        .read_file(ReadFileArgs {
            path: "/ws/long.txt".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        read.lines[0].ends_with("… [line cut: 1000 more characters]"),
        "{}",
        &read.lines[0][3900..]
    );
    assert_eq!(read.lines[1], "short");
    let err = vfs
        .read_file(ReadFileArgs {
            path: "/ws/big.txt".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::TooLarge);
    assert!(err.message.contains("use grep"), "{err:?}");
    let err = vfs
        .call(
            "write_file",
            json!({"path": "/ws/w.txt", "content": "01234567890"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::TooLarge);
}

#[tokio::test]
async fn stale_etags_and_create_only_conflict() {
    on_both_kinds(|vfs, kind| async move {
        let first = vfs
            .write_file(WriteFileArgs {
                path: "/m/a.md".into(),
                content: "v1\n".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(first.created, Some(true), "{kind}");
        let etag = vfs
            .read_file(ReadFileArgs {
                path: "/m/a.md".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .etag;
        assert_eq!(
            Some(&etag),
            first.etag.as_ref(),
            "{kind}: write and read agree on the etag"
        );
        let cond = |content: &str, if_match: &str| WriteFileArgs {
            path: "/m/a.md".into(),
            content: content.into(),
            if_match: Some(if_match.into()),
            create_only: false,
        };
        let second = vfs.write_file(cond("v2\n", &etag)).await.unwrap();
        assert_eq!(second.created, Some(false));
        // The etag from before the second write is now stale.
        let err = vfs.write_file(cond("v3\n", &etag)).await.unwrap_err();
        assert_eq!(err.code, VfsErrorCode::Conflict, "{kind}");
        assert!(
            err.message
                .contains("changed since you read it; read it again"),
            "{err:?}"
        );
        // Unquoted etags are accepted too.
        let fresh = second.etag.unwrap();
        vfs.write_file(cond("v3\n", fresh.trim_matches('"')))
            .await
            .unwrap();
        let edit = EditFileArgs {
            path: "/m/a.md".into(),
            old_string: "v3".into(),
            new_string: "v4".into(),
            if_match: Some(fresh),
            ..Default::default()
        };
        assert_eq!(
            vfs.edit_file(edit).await.unwrap_err().code,
            VfsErrorCode::Conflict,
            "{kind}: edit with a stale etag"
        );
        // if_match on a file that does not exist.
        let err = vfs
            .write_file(WriteFileArgs {
                path: "/m/none.md".into(),
                content: "x".into(),
                if_match: Some("\"e\"".into()),
                create_only: false,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code, VfsErrorCode::Conflict, "{kind}");
        let create = |path: &str| WriteFileArgs {
            path: path.into(),
            content: "new".into(),
            if_match: None,
            create_only: true,
        };
        assert_eq!(
            vfs.write_file(create("/m/a.md")).await.unwrap_err().code,
            VfsErrorCode::Conflict,
            "{kind}"
        );
        assert_eq!(
            vfs.write_file(create("/m/b.md")).await.unwrap().created,
            Some(true),
            "{kind}"
        );
        assert_eq!(
            crate::support::read(&vfs, "/m/a.md").await.unwrap(),
            "v3",
            "{kind}: refused writes changed nothing"
        );
        let both = WriteFileArgs {
            path: "/m/c.md".into(),
            content: "x".into(),
            if_match: Some("\"e\"".into()),
            create_only: true,
        };
        assert_eq!(
            vfs.write_file(both).await.unwrap_err().code,
            VfsErrorCode::InvalidArgument
        );
    })
    .await;
}

#[tokio::test]
async fn edit_file_errors_tell_the_model_what_to_do() {
    on_both_kinds(|vfs, kind| async move {
        write(&vfs, "/m/code.rs", "let a = 1;\nlet b = 1;\nlet c = 2;\n").await;
        let edit = |old: &str, new: &str, replace_all: bool| EditFileArgs {
            path: "/m/code.rs".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all,
            if_match: None,
        };
        let cases: &[(EditFileArgs, VfsErrorCode, &str)] = &[
            (edit("let d", "x", false), VfsErrorCode::InvalidArgument, "was not found in /m/code.rs. Read the file again"),
            (edit("= 1;", "= 3;", false), VfsErrorCode::InvalidArgument, "occurs 2 times in /m/code.rs (at lines 1, 2); include more"),
            (edit("", "x", false), VfsErrorCode::InvalidArgument, "old_string is empty"),
            (edit("a", "a", false), VfsErrorCode::InvalidArgument, "the same"),
        ];
        for (args, code, message) in cases {
            let err = vfs.edit_file(args.clone()).await.unwrap_err();
            assert_eq!(err.code, *code, "{kind} {args:?}");
            assert!(err.message.contains(message), "{kind}: {:?} lacks {message:?}", err.message);
        }
        let one = vfs.edit_file(edit("let c = 2;", "let c = 3;", false)).await.unwrap();
        assert_eq!(one.replacements, 1);
        let all = vfs.edit_file(edit("= 1;", "= 9;", true)).await.unwrap();
        assert_eq!(all.replacements, 2);
        assert_eq!(crate::support::read(&vfs, "/m/code.rs").await.unwrap(), "let a = 9;\nlet b = 9;\nlet c = 3;");
        let missing = EditFileArgs { path: "/m/none.rs".into(), ..edit("a", "b", false) };
        assert_eq!(vfs.edit_file(missing).await.unwrap_err().code, VfsErrorCode::NotFound);
        let text = vfs.call("edit_file", json!({"path": "/m/code.rs", "old_string": "9", "new_string": "8", "replace_all": true})).await.unwrap().text;
        assert!(text.starts_with("replaced 2 occurrences in /m/code.rs; etag "), "{text}");
    })
    .await;
}

#[tokio::test]
async fn delete_file_and_directories() {
    on_both_kinds(|vfs, kind| async move {
        write(&vfs, "/m/d/x.md", "x").await;
        assert_eq!(
            vfs.call("delete_file", json!({"path": "/m/d"}))
                .await
                .unwrap_err()
                .code,
            VfsErrorCode::IsDirectory,
            "{kind}"
        );
        assert_eq!(
            vfs.call("read_file", json!({"path": "/m/d"}))
                .await
                .unwrap_err()
                .code,
            VfsErrorCode::IsDirectory,
            "{kind}"
        );
        assert_eq!(
            vfs.call("write_file", json!({"path": "/m/d", "content": ""}))
                .await
                .unwrap_err()
                .code,
            VfsErrorCode::IsDirectory,
            "{kind}"
        );
        assert_eq!(
            vfs.call("write_file", json!({"path": "/m/d/x.md/y", "content": ""}))
                .await
                .unwrap_err()
                .code,
            VfsErrorCode::InvalidPath,
            "{kind}"
        );
        let out = vfs
            .call("delete_file", json!({"path": "/m/d/x.md"}))
            .await
            .unwrap();
        assert_eq!(out.text, "deleted /m/d/x.md\n");
        assert_eq!(
            vfs.call("delete_file", json!({"path": "/m/d/x.md"}))
                .await
                .unwrap_err()
                .code,
            VfsErrorCode::NotFound,
            "{kind}"
        );
        assert_eq!(
            vfs.call("read_file", json!({"path": "/m/d/x.md"}))
                .await
                .unwrap_err()
                .code,
            VfsErrorCode::NotFound,
            "{kind}"
        );
    })
    .await;
}

#[tokio::test]
async fn write_only_creates_and_overwrites_without_revealing_anything() {
    let disk = Disk::new();
    for mount in [
        MountConfig::physical(disk.root()),
        MountConfig::virtual_namespace("out"),
    ] {
        let (vfs, _) = vfs_with(&[("/out", AccessScope::WriteOnly, mount.clone())]);
        let first = vfs
            .call("write_file", json!({"path": "/out/r.md", "content": "one"}))
            .await
            .unwrap();
        let again = vfs
            .call("write_file", json!({"path": "/out/r.md", "content": "two"}))
            .await
            .unwrap();
        // Same shape whether the file existed: no etag, no created flag.
        assert_eq!(first.text, "wrote 3 bytes to /out/r.md\n", "{mount:?}");
        assert_eq!(again.text, first.text);
        assert_eq!(first.structured, json!({"path": "/out/r.md", "size": 3}));
        let err = vfs
            .call(
                "write_file",
                json!({"path": "/out/r.md", "content": "x", "if_match": "\"e\""}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, VfsErrorCode::PermissionDenied);
        // create_only must say that the one name it was given exists; nothing more.
        let err = vfs
            .call(
                "write_file",
                json!({"path": "/out/r.md", "content": "x", "create_only": true}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, VfsErrorCode::Conflict);
        assert!(
            !err.message.contains("two") && !err.message.contains("version"),
            "{err:?}"
        );
        for (tool, args) in [
            ("read_file", json!({"path": "/out/r.md"})),
            ("ls", json!({"path": "/out"})),
            (
                "edit_file",
                json!({"path": "/out/r.md", "old_string": "two", "new_string": "x"}),
            ),
            ("delete_file", json!({"path": "/out/r.md"})),
        ] {
            let err = vfs.call(tool, args).await.unwrap_err();
            assert_eq!(
                err.code,
                VfsErrorCode::InvalidArgument,
                "{tool} is not even offered"
            );
        }
        assert_eq!(
            vfs.ls("/out").await.unwrap_err().code,
            VfsErrorCode::PermissionDenied
        );
        let read = vfs
            .read_file(ReadFileArgs {
                path: "/out/r.md".into(),
                ..Default::default()
            })
            .await;
        assert_eq!(read.unwrap_err().code, VfsErrorCode::PermissionDenied);
        let glob = vfs
            .glob(wsp_vfs::GlobArgs {
                pattern: "**".into(),
                path: None,
            })
            .await;
        assert_eq!(glob.unwrap_err().code, VfsErrorCode::PermissionDenied);
    }
    assert_eq!(std::fs::read_to_string(disk.path("R/r.md")).unwrap(), "two");
}

#[tokio::test]
async fn virtual_names_follow_the_store_rules() {
    let (vfs, _) = vfs_with(&[(
        "/v",
        AccessScope::ReadWrite,
        MountConfig::virtual_namespace("v"),
    )]);
    let err = vfs
        .call(
            "write_file",
            json!({"path": "/v/_draft.md", "content": "x"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidPath);
    assert!(err.message.contains("ASCII letters"), "{err:?}");
    write(&vfs, "/v/report..final.md", "ok").await;
    assert_eq!(
        crate::support::read(&vfs, "/v/report..final.md")
            .await
            .unwrap(),
        "ok"
    );
    let err = vfs
        .call("read_file", json!({"path": "/v/_draft.md"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidPath);
}

#[test]
fn the_filesystem_and_its_calls_can_cross_tasks() {
    fn shared<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    shared::<Vfs>();
    shared::<wsp_vfs::ItemsProfile>();
    let (vfs, _) = vfs_with(&[(
        "/m",
        AccessScope::ReadWrite,
        MountConfig::virtual_namespace("m"),
    )]);
    send(&vfs.call("grep", json!({"pattern": "x"})));
    send(&vfs.glob(wsp_vfs::GlobArgs::default()));
    send(&vfs.edit_file(EditFileArgs::default()));
}

#[tokio::test]
async fn listings_and_walks_stop_at_their_limits_and_say_so() {
    let disk = Disk::new();
    for i in 0..30 {
        disk.write(&format!("R/f{i:02}"), "x\n");
    }
    let limits = VfsLimits {
        max_list_entries: 5,
        max_walk_entries: 7,
        ..VfsLimits::default()
    };
    let store = std::sync::Arc::new(wsp_store::MemoryStore::default());
    let table = wsp_vfs::MountTable::builder()
        .workspace(wsp_vfs::WorkspaceConfig::new(
            "/ws",
            AccessScope::ReadWrite,
            MountConfig::physical(disk.root()),
        ))
        // Hides the host file f03.
        .workspace(wsp_vfs::WorkspaceConfig::new(
            "/ws/f03",
            AccessScope::ReadWrite,
            MountConfig::virtual_namespace("nested"),
        ))
        .workspace(wsp_vfs::WorkspaceConfig::new(
            "/o",
            AccessScope::ReadWrite,
            MountConfig::overlay("up", disk.root()),
        ))
        .build()
        .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(store)
        .limits(limits)
        .build()
        .unwrap();
    let names = |listing: wsp_vfs::Listing| -> (Vec<String>, bool) {
        (
            listing.entries.into_iter().map(|e| e.name).collect(),
            listing.truncated,
        )
    };
    assert_eq!(
        names(vfs.ls("/ws").await.unwrap()),
        (
            ["f00", "f01", "f02", "f03", "f04"]
                .map(String::from)
                .to_vec(),
            true
        )
    );
    // The walk visits 7 entries (f03 among them, left to its own Workspace) and says it stopped.
    let globbed = vfs
        .glob(wsp_vfs::GlobArgs {
            pattern: "**".into(),
            path: Some("/ws".into()),
        })
        .await
        .unwrap();
    let found: Vec<String> = globbed.matches.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        found,
        [
            "/ws/f00", "/ws/f01", "/ws/f02", "/ws/f04", "/ws/f05", "/ws/f06"
        ]
    );
    assert!(globbed.truncated);
    // Upper whiteouts hide the first ten lower names: the listing still fills up with the next.
    for i in 0..10 {
        vfs.call("delete_file", json!({"path": format!("/o/f{i:02}")}))
            .await
            .unwrap();
    }
    assert_eq!(
        names(vfs.ls("/o").await.unwrap()),
        (
            ["f10", "f11", "f12", "f13", "f14"]
                .map(String::from)
                .to_vec(),
            true
        )
    );
    // A directory that fits is not cut.
    for i in 5..30 {
        std::fs::remove_file(disk.path(&format!("R/f{i:02}"))).unwrap();
    }
    assert_eq!(
        names(vfs.ls("/ws").await.unwrap()),
        (
            ["f00", "f01", "f02", "f03", "f04"]
                .map(String::from)
                .to_vec(),
            false
        )
    );
}

#[tokio::test]
async fn a_file_written_as_bytes_is_read_as_those_bytes() {
    let (vfs, store) = vfs_with(&[(
        "/m",
        AccessScope::ReadWrite,
        MountConfig::virtual_namespace("m"),
    )]);
    use wsp_store::WorkspaceStore as _;
    // Written over HTTP with contentEncoding base64: zero bytes spell "AAAA" in base64.
    let bytes = [0u8; 30];
    store
        .put(
            &wsp_types::Owner::parse("vfs", "m").unwrap(),
            &wsp_types::WorkspacePath::parse("img/blank.png").unwrap(),
            wsp_store::FileWrite::bytes(&bytes, wsp_types::MediaType::parse("image/png").unwrap()),
            wsp_store::Precondition::None,
        )
        .await
        .unwrap();
    let out = vfs
        .call("read_file", json!({"path": "/m/img/blank.png"}))
        .await
        .unwrap();
    assert!(
        out.text
            .starts_with("(/m/img/blank.png is a binary file of 30 bytes; not shown."),
        "{}",
        out.text
    );
    assert_eq!(out.structured["binary"], true);
    assert_eq!(out.structured["size"], 30);
    // grep searches the bytes, not their base64 spelling, and says it skipped a binary file.
    let out = vfs
        .call("grep", json!({"pattern": "AAAA", "path": "/m"}))
        .await
        .unwrap();
    assert!(out.text.contains("1 binary"), "{}", out.text);
    assert!(!out.text.contains("blank.png:"), "{}", out.text);
}
