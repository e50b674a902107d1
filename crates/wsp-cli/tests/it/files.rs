//! `wsp files put` and friends against the real `wsp serve`: the size checked against the
//! host's `maxFileBytes` before sending, large files streamed from disk, media types from the
//! extension, `--if-match` that must be quoted; `wsp runs`; the principal of new keys; and
//! messages that say what applies (a private CA that did not sign, PostgreSQL unreachable).

use std::process::Output;

use wsp_client::Client;
use wsp_types::WorkspacePath;

use crate::support::{self, serve, wsp};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn path(p: &str) -> WorkspacePath {
    WorkspacePath::parse(p).unwrap()
}

/// A file over `maxFileBytes` is refused before anything is sent, naming that limit (not the
/// request body's); one under it goes, streamed from disk, and reads back byte for byte.
#[test]
fn put_checks_the_hosts_file_limit_first_and_streams_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 4 * 1024 * 1024;
    let server = serve(
        &dir.path().join("data"),
        &["--max-file-bytes", &limit.to_string()],
    );
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .build()
        .unwrap();

    // Bytes: as base64, 5 MiB would be 6.7 MiB of body, over the request limit too; the file
    // limit is the one that applies, and it is said.
    let big = dir.path().join("big.bin");
    let bytes: Vec<u8> = (0..5 * 1024 * 1024u32)
        .map(|i| (i % 251) as u8 | 0x80)
        .collect();
    std::fs::write(&big, &bytes).unwrap();
    let out = wsp(
        &["files", "put", "big.bin", "--file", big.to_str().unwrap()],
        &env,
        None,
    );
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("is {} bytes", bytes.len()))
            && err.contains(&format!("(maxFileBytes) is {limit} bytes"))
            && err.contains("nothing was sent"),
        "{err}"
    );
    assert!(!err.contains("request body"), "{err}");
    let missing = runtime.block_on(client.get(&path("big.bin"), None));
    assert!(missing.is_err());

    // Under the limit: streamed, and stored exactly (bytes, and text with every JSON escape).
    let ok = dir.path().join("ok.bin");
    std::fs::write(&ok, &bytes[..3 * 1024 * 1024 + 1]).unwrap();
    let out = wsp(
        &["files", "put", "ok.bin", "--file", ok.to_str().unwrap()],
        &env,
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stored = runtime.block_on(client.get(&path("ok.bin"), None)).unwrap();
    assert_eq!(&*stored.bytes().unwrap(), &bytes[..3 * 1024 * 1024 + 1]);
    assert_eq!(stored.content_type, "application/octet-stream");

    let text = "line \"quoted\" \\ tab\t é € 😀\u{1}\n".repeat(40_000);
    let note = dir.path().join("note.md");
    std::fs::write(&note, &text).unwrap();
    let out = wsp(
        &[
            "files",
            "put",
            "notes/note.md",
            "--file",
            note.to_str().unwrap(),
        ],
        &env,
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stored = runtime
        .block_on(client.get(&path("notes/note.md"), None))
        .unwrap();
    assert_eq!(stored.content, text);
    assert_eq!(stored.content_type, "text/markdown");
    assert!(!stored.encoding().is_binary());
}

/// The media type comes from the path's extension; `--content-type` overrides it.
#[test]
fn put_picks_the_media_type_from_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .build()
        .unwrap();
    for (name, extra, want) in [
        ("plan.md", &[][..], "text/markdown"),
        ("app.yaml", &[], "application/yaml"),
        ("data.json", &[], "application/json"),
        ("Makefile", &[], "text/plain"),
        (
            "notes.txt",
            &["--content-type", "text/x-notes"][..],
            "text/x-notes",
        ),
    ] {
        let out = wsp(
            &[&["files", "put", name][..], extra].concat(),
            &env,
            Some("{}"),
        );
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let stored = runtime.block_on(client.get(&path(name), None)).unwrap();
        assert_eq!(stored.content_type, want, "{name}");
    }
}

/// An unquoted `--if-match` is refused before sending, showing the quoted form; the host would
/// otherwise answer a conflict blaming the version.
#[test]
fn an_unquoted_if_match_is_refused_with_the_form_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let put = wsp(&["files", "put", "a.md"], &env, Some("one"));
    assert!(put.status.success(), "{}", stderr(&put));
    let etag = stdout(&put).trim().rsplit('\t').next().unwrap().to_owned();
    let bare = etag.trim_matches('"');
    for args in [
        &["files", "put", "a.md", "--if-match", bare][..],
        &["files", "rm", "a.md", "--if-match", bare],
    ] {
        let out = wsp(args, &env, Some("two"));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("double quotes") && err.contains(&format!("--if-match '\"{bare}\"'")),
            "{err}"
        );
        assert!(!err.contains("live version"), "{err}");
    }
    // Quoted, as printed, it works.
    let out = wsp(
        &["files", "put", "a.md", "--if-match", &etag],
        &env,
        Some("two"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `wsp runs`: start, list, show, the snapshot's files and one of them, cancel; a cancelled
/// run's files are gone.
#[test]
fn runs_are_started_listed_read_and_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];
    let run =
        |args: &[&str], stdin: Option<&str>| wsp(&[&["runs"][..], args].concat(), &env, stdin);
    let put = wsp(&["files", "put", "AGENTS.md"], &env, Some("# Before\n"));
    assert!(put.status.success(), "{}", stderr(&put));

    let started = run(&["start", "--workflow", "nightly"], None);
    assert!(started.status.success(), "{}", stderr(&started));
    let line = stdout(&started);
    let (id, status) = line.trim().split_once('\t').unwrap();
    assert_eq!(status, "running");
    let id = id.to_owned();
    let put = wsp(&["files", "put", "AGENTS.md"], &env, Some("# After\n"));
    assert!(put.status.success());

    let listed = run(&["ls"], None);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stdout(&listed).starts_with(&format!("{id}\trunning\tnightly\t")),
        "{}",
        stdout(&listed)
    );
    let shown = run(&["show", &id], None);
    assert!(
        stdout(&shown).contains("status:    running"),
        "{}",
        stdout(&shown)
    );
    assert!(
        stdout(&shown).contains("  AGENTS.md\tv1"),
        "{}",
        stdout(&shown)
    );
    let files = run(&["files", &id], None);
    assert_eq!(stdout(&files), "AGENTS.md\tv1\ttext/markdown\n");
    let got = run(&["get", &id, "AGENTS.md"], None);
    assert_eq!(stdout(&got), "# Before\n");
    let json = run(&["show", &id, "--json"], None);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["workflowId"], "nightly");

    let cancelled = run(&["cancel", &id], None);
    assert_eq!(stdout(&cancelled), format!("{id}\tcancelled\n"));
    let gone = run(&["get", &id, "AGENTS.md"], None);
    assert_eq!(gone.status.code(), Some(5), "{}", stderr(&gone));
    assert!(
        stderr(&gone).contains(&format!("run {id}")),
        "{}",
        stderr(&gone)
    );
}

/// A key made without `--principal` writes as `key-<its id>`, so two keys of one workspace are
/// told apart in the history (and the console's pages, which show it).
#[test]
fn each_new_key_writes_under_a_name_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve(&data, &[]);
    let data = data.to_str().unwrap();
    let mut ids = Vec::new();
    for text in ["one", "two"] {
        let key = support::create_key(&[
            "--data",
            data,
            "--tenant",
            "default",
            "--workspace",
            "default",
        ]);
        ids.push(key.split('_').nth(1).unwrap().to_owned());
        let env = [
            ("WSP_URL", server.url.as_str()),
            ("WSP_API_KEY", key.as_str()),
        ];
        let put = wsp(&["files", "put", "shared.md"], &env, Some(text));
        assert!(put.status.success(), "{}", stderr(&put));
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .build()
        .unwrap();
    let history = runtime
        .block_on(client.history(&path("shared.md")))
        .unwrap();
    let authors: Vec<String> = history
        .versions
        .iter()
        .map(|v| v.updated_by.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        authors,
        [format!("key-{}", ids[1]), format!("key-{}", ids[0])]
    );
    let listed = wsp(&["keys", "list", "--data", data], &[], None);
    assert!(
        stdout(&listed).contains(&format!("key-{}", ids[0])),
        "{}",
        stdout(&listed)
    );
}

/// A PostgreSQL store that cannot be reached says so once, not once per layer.
#[test]
fn an_unreachable_postgres_says_cannot_connect_once() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("postgres://postgres@127.0.0.1:{port}/test");
    let out = wsp(&["keys", "list", "--store", &url], &[], None);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.matches("cannot connect").count(), 1, "{err}");
    assert!(err.contains("onnection refused"), "{err}");
}
