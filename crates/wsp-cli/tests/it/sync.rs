//! `wsp files push` and `wsp files pull` against the real `wsp serve`, on a tree of 1,000 files.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use wsp_client::{Client, PutOptions};
use wsp_types::WorkspacePath;

use crate::support;
use crate::support::{Server, serve};

impl Server {
    /// `wsp files ARGS` against this server, with its admin key.
    fn files(&self, args: &[&str]) -> Output {
        let env = [("WSP_URL", self.url.as_str()), ("WSP_API_KEY", self.key())];
        support::wsp(&[&["files"][..], args].concat(), &env, None)
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The last line of standard output: the summary.
fn summary(o: &Output) -> String {
    out(o).lines().last().unwrap_or_default().to_owned()
}

/// Every file under `dir` (relative `/` path -> content), the sync manifest left out.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                pending.push(p);
            } else if p.file_name().unwrap() != ".wsp-sync.json" {
                let rel = p.strip_prefix(dir).unwrap();
                let rel: Vec<&str> = rel.iter().map(|c| c.to_str().unwrap()).collect();
                files.insert(rel.join("/"), std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    files
}

fn path(p: &str) -> WorkspacePath {
    WorkspacePath::parse(p).unwrap()
}

#[test]
fn push_and_pull_sync_a_thousand_files_and_never_overwrite_a_remote_change() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .build()
        .unwrap();
    let remote = |p: &str| runtime.block_on(client.get(&path(&format!("tree/{p}")), None));

    let src = dir.path().join("src");
    for i in 0..1000 {
        let file = src.join(format!("d{}/s{}/f{i}.md", i % 10, i % 7));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, format!("# file {i}\n")).unwrap();
    }
    let src_arg = src.to_str().unwrap();

    let first = server.files(&["push", src_arg, "--prefix", "tree/"]);
    assert!(first.status.success(), "{}", err(&first));
    assert_eq!(summary(&first), "1000 uploaded, 0 unchanged, 0 conflict");
    let listed = runtime.block_on(client.list(Some("tree/"))).unwrap();
    assert_eq!(listed.files.len(), 1000);

    // Pull into another folder: the same tree.
    let copy = dir.path().join("copy");
    let pulled = server.files(&["pull", copy.to_str().unwrap(), "--prefix", "tree/"]);
    assert!(pulled.status.success(), "{}", err(&pulled));
    assert_eq!(summary(&pulled), "1000 downloaded, 0 unchanged, 0 conflict");
    assert_eq!(tree(&copy), tree(&src));
    let again = server.files(&["pull", copy.to_str().unwrap(), "--prefix", "tree/"]);
    assert_eq!(summary(&again), "0 downloaded, 1000 unchanged, 0 conflict");

    // Nothing changed: nothing uploads.
    let idle = server.files(&["push", src_arg, "--prefix", "tree/"]);
    assert!(idle.status.success(), "{}", err(&idle));
    assert_eq!(summary(&idle), "0 uploaded, 1000 unchanged, 0 conflict");

    // Four files change locally; one of them and one other change remotely meanwhile.
    for i in [1, 2, 3, 4] {
        let file = src.join(format!("d{}/s{}/f{i}.md", i % 10, i % 7));
        std::fs::write(file, format!("# file {i}, edited locally\n")).unwrap();
    }
    for i in [4, 5] {
        let p = path(&format!("tree/d{}/s{}/f{i}.md", i % 10, i % 7));
        runtime
            .block_on(client.put(&p, format!("remote edit {i}"), PutOptions::default()))
            .unwrap();
    }
    let second = server.files(&["push", src_arg, "--prefix", "tree/"]);
    assert!(!second.status.success(), "a conflict exits non-zero");
    assert_eq!(summary(&second), "3 uploaded, 996 unchanged, 1 conflict");
    assert!(
        out(&second).contains("tree/d4/s4/f4.md\tconflict"),
        "{}",
        out(&second)
    );
    assert!(out(&second).contains("tree/d1/s1/f1.md\tuploaded"));
    assert!(
        !out(&second).contains("f5.md\tuploaded"),
        "{}",
        out(&second)
    );
    assert_eq!(remote("d4/s4/f4.md").unwrap().content, "remote edit 4");
    assert_eq!(remote("d5/s5/f5.md").unwrap().content, "remote edit 5");
    assert_eq!(
        remote("d1/s1/f1.md").unwrap().content,
        "# file 1, edited locally\n"
    );

    // --delete --dry-run reports and changes nothing; --delete removes what the folder lacks.
    for i in [10, 11, 12] {
        std::fs::remove_file(src.join(format!("d{}/s{}/f{i}.md", i % 10, i % 7))).unwrap();
    }
    std::fs::write(src.join("new.md"), "# new\n").unwrap();
    let dry = server.files(&[
        "push",
        src_arg,
        "--prefix",
        "tree/",
        "--delete",
        "--dry-run",
    ]);
    assert_eq!(
        summary(&dry),
        "1 would upload, 3 would delete, 996 unchanged, 1 would conflict"
    );
    assert!(
        out(&dry).contains("tree/d0/s3/f10.md\twould delete"),
        "{}",
        out(&dry)
    );
    assert!(out(&dry).contains("tree/new.md\twould upload"));
    assert_eq!(
        runtime
            .block_on(client.list(Some("tree/")))
            .unwrap()
            .files
            .len(),
        1000
    );
    assert!(remote("new.md").is_err(), "a dry run writes nothing");

    let del = server.files(&["push", src_arg, "--prefix", "tree/", "--delete"]);
    assert_eq!(
        summary(&del),
        "1 uploaded, 3 deleted, 996 unchanged, 1 conflict"
    );
    let names: Vec<String> = runtime
        .block_on(client.list(Some("tree/")))
        .unwrap()
        .files
        .into_iter()
        .map(|f| f.path.as_str().to_owned())
        .collect();
    assert_eq!(names.len(), 998);
    assert!(!names.contains(&"tree/d0/s3/f10.md".to_owned()));
    assert!(names.contains(&"tree/new.md".to_owned()));

    // Pull brings the remote edits, keeps the conflicting local edit, and refuses nothing else.
    let back = server.files(&["pull", src_arg, "--prefix", "tree/"]);
    assert!(!back.status.success());
    assert_eq!(summary(&back), "1 downloaded, 996 unchanged, 1 conflict");
    assert!(
        out(&back).contains("tree/d4/s4/f4.md\tconflict"),
        "{}",
        out(&back)
    );
    assert_eq!(
        std::fs::read_to_string(src.join("d5/s5/f5.md")).unwrap(),
        "remote edit 5"
    );
    assert_eq!(
        std::fs::read_to_string(src.join("d4/s4/f4.md")).unwrap(),
        "# file 4, edited locally\n"
    );
}

/// A push or pull draws a progress bar on standard error when it is a terminal, ending full
/// above the summary; anywhere else (a pipe, a log, `--json`) it is absent and only the plain
/// lines are written.
#[test]
fn a_progress_bar_only_at_a_terminal() {
    use std::io::Read as _;
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    for i in 0..5 {
        std::fs::write(folder.join(format!("f{i}.md")), format!("file {i}")).unwrap();
    }
    let folder_arg = folder.to_str().unwrap();
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", server.key()),
    ];

    // At a terminal: the bar, full at the end; the per-file lines and the summary on stdout.
    let (mut controller, terminal) = support::pty();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(terminal)
        .unwrap();
    let pushed = Command::new(support::WSP)
        .args(["files", "push", folder_arg])
        .envs(env)
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stderr(Stdio::from(terminal))
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{}", err(&pushed));
    assert_eq!(summary(&pushed), "5 uploaded, 0 unchanged, 0 conflict");
    assert_eq!(out(&pushed).lines().count(), 6, "{}", out(&pushed));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = controller.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut drawn = Vec::new();
    while !String::from_utf8_lossy(&drawn).contains("5/5 files") {
        let chunk = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no full bar: {:?}", String::from_utf8_lossy(&drawn)));
        drawn.extend(chunk);
    }
    assert!(String::from_utf8_lossy(&drawn).contains("#####"));

    // Not a terminal: no bar, and the same plain lines. A local change the host does not
    // have is no conflict for pull: it stays, and the line says to push it.
    std::fs::write(folder.join("f0.md"), "changed").unwrap();
    let piped = server.files(&["pull", folder_arg]);
    assert!(piped.status.success(), "{}", err(&piped));
    assert!(!err(&piped).contains("files "), "{}", err(&piped));
    assert!(!err(&piped).contains('\u{1b}'), "{}", err(&piped));
    assert!(
        out(&piped).contains("f0.md\tunchanged\tchanged locally; push to upload"),
        "{}",
        out(&piped)
    );
    assert_eq!(summary(&piped), "0 downloaded, 5 unchanged, 0 conflict");
}

#[test]
fn binary_files_travel_as_bytes_through_put_get_push_and_pull() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .build()
        .unwrap();
    // Every byte value, a NUL and an invalid UTF-8 sequence among them.
    let image: Vec<u8> = (0..=255u8).chain([0xC3, 0x28, 0x00, 0xFF]).collect();

    // `files put --file` with bytes that are not UTF-8 sends them as base64.
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("img")).unwrap();
    std::fs::write(src.join("img/logo.png"), &image).unwrap();
    std::fs::write(src.join("notes.md"), "# Notes\n").unwrap();
    let put = server.files(&[
        "put",
        "one/logo.png",
        "--file",
        src.join("img/logo.png").to_str().unwrap(),
        "--content-type",
        "image/png",
    ]);
    assert!(put.status.success(), "{}", err(&put));
    let stored = runtime
        .block_on(client.get(&path("one/logo.png"), None))
        .unwrap();
    assert_eq!(stored.content_type, "image/png");
    assert!(stored.encoding().is_binary());
    assert_eq!(&*stored.bytes().unwrap(), &image[..]);

    // `files get` writes the bytes, not their base64 spelling.
    let got = server.files(&["get", "one/logo.png"]);
    assert!(got.status.success(), "{}", err(&got));
    assert_eq!(got.stdout, image);

    // `--binary` sends valid UTF-8 as bytes too.
    let text_as_bytes = server.files(&[
        "put",
        "one/data.bin",
        "--file",
        src.join("notes.md").to_str().unwrap(),
        "--binary",
    ]);
    assert!(text_as_bytes.status.success(), "{}", err(&text_as_bytes));
    let bin = runtime
        .block_on(client.get(&path("one/data.bin"), None))
        .unwrap();
    assert!(bin.encoding().is_binary());
    assert_eq!(bin.content_type, "application/octet-stream");
    assert_eq!(&*bin.bytes().unwrap(), b"# Notes\n");

    // push uploads the image as bytes and the note as text; pull writes both back as they were.
    let pushed = server.files(&["push", src.to_str().unwrap(), "--prefix", "tree/"]);
    assert!(pushed.status.success(), "{}", err(&pushed));
    assert_eq!(summary(&pushed), "2 uploaded, 0 unchanged, 0 conflict");
    let remote = runtime
        .block_on(client.get(&path("tree/img/logo.png"), None))
        .unwrap();
    assert_eq!(&*remote.bytes().unwrap(), &image[..]);
    let note = runtime
        .block_on(client.get(&path("tree/notes.md"), None))
        .unwrap();
    assert!(!note.encoding().is_binary());
    let idle = server.files(&["push", src.to_str().unwrap(), "--prefix", "tree/"]);
    assert_eq!(summary(&idle), "0 uploaded, 2 unchanged, 0 conflict");

    let copy = dir.path().join("copy");
    let pulled = server.files(&["pull", copy.to_str().unwrap(), "--prefix", "tree/"]);
    assert!(pulled.status.success(), "{}", err(&pulled));
    assert_eq!(summary(&pulled), "2 downloaded, 0 unchanged, 0 conflict");
    assert_eq!(std::fs::read(copy.join("img/logo.png")).unwrap(), image);
    assert_eq!(std::fs::read(copy.join("notes.md")).unwrap(), b"# Notes\n");
    let again = server.files(&["pull", copy.to_str().unwrap(), "--prefix", "tree/"]);
    assert_eq!(summary(&again), "0 downloaded, 2 unchanged, 0 conflict");

    // A folder never synced that holds the same bytes adopts the remote file as unchanged.
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(fresh.join("img")).unwrap();
    std::fs::write(fresh.join("img/logo.png"), &image).unwrap();
    let adopted = server.files(&["push", fresh.to_str().unwrap(), "--prefix", "tree/"]);
    assert!(adopted.status.success(), "{}", err(&adopted));
    assert_eq!(summary(&adopted), "0 uploaded, 1 unchanged, 0 conflict");
}

impl Server {
    /// `wsp files ARGS` against this server with `key`.
    fn files_as(&self, key: &str, args: &[&str]) -> Output {
        let env = [("WSP_URL", self.url.as_str()), ("WSP_API_KEY", key)];
        support::wsp(&[&["files"][..], args].concat(), &env, None)
    }

    /// The paths of the live files under `prefix`.
    fn remote_paths(&self, prefix: &str) -> Vec<String> {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let client = Client::builder(&self.url).key(self.key()).build().unwrap();
        runtime
            .block_on(client.list(Some(prefix).filter(|p| !p.is_empty())))
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.path.as_str().to_owned())
            .collect()
    }

    /// A live file's media type.
    fn content_type(&self, name: &str) -> String {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let client = Client::builder(&self.url).key(self.key()).build().unwrap();
        runtime
            .block_on(client.get(&path(name), None))
            .unwrap()
            .content_type
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let file = root.join(rel);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

/// A git checkout: `.git/` never goes, `.gitignore` and `.wspignore` are honoured, and
/// `--exclude` / `--include` narrow it further.
#[test]
fn push_takes_what_git_would_and_never_dot_git() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let repo = dir.path().join("repo");
    for rel in [
        "notes/a.md",
        "notes/b.md",
        "notes/draft.tmp",
        "build/out.md",
        "scratch/x.md",
        ".git/HEAD",
        ".git/objects/12/3456",
        ".git/config",
    ] {
        write(&repo, rel, rel);
    }
    write(&repo, ".gitignore", "build/\n*.tmp\n");
    write(&repo, ".wspignore", "scratch/\n");
    let repo_arg = repo.to_str().unwrap();
    let pushed = server.files(&["push", repo_arg, "--prefix", "kb/"]);
    assert!(pushed.status.success(), "{}", err(&pushed));
    assert_eq!(
        server.remote_paths("kb/"),
        [
            "kb/.gitignore",
            "kb/.wspignore",
            "kb/notes/a.md",
            "kb/notes/b.md"
        ]
    );
    assert_eq!(summary(&pushed), "4 uploaded, 0 unchanged, 0 conflict");

    let only = server.files(&[
        "push",
        repo_arg,
        "--prefix",
        "only/",
        "--include",
        "notes/",
        "--exclude",
        "b.md",
    ]);
    assert!(only.status.success(), "{}", err(&only));
    assert_eq!(server.remote_paths("only/"), ["only/notes/a.md"]);

    // --delete leaves alone a remote file the rules leave out.
    write(&repo, "build/kept.md", "x");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .build()
        .unwrap();
    runtime
        .block_on(client.put(&path("kb/build/remote.md"), "r", PutOptions::default()))
        .unwrap();
    let deleted = server.files(&["push", repo_arg, "--prefix", "kb/", "--delete"]);
    assert!(deleted.status.success(), "{}", err(&deleted));
    assert!(
        server
            .remote_paths("kb/")
            .contains(&"kb/build/remote.md".to_owned())
    );
}

/// Each file goes with the media type of its extension; `--content-type EXT=TYPE` overrides.
#[test]
fn push_picks_media_types_from_extensions() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let src = dir.path().join("src");
    for rel in ["a.md", "b.yaml", "c.json", "Makefile", "d.ts", "e.csv"] {
        write(&src, rel, "{}");
    }
    std::fs::write(src.join("dot.png"), [0x89, b'P', b'N', b'G', 0, 1]).unwrap();
    let pushed = server.files(&[
        "push",
        src.to_str().unwrap(),
        "--content-type",
        "ts=application/typescript",
    ]);
    assert!(pushed.status.success(), "{}", err(&pushed));
    for (name, want) in [
        ("a.md", "text/markdown"),
        ("b.yaml", "application/yaml"),
        ("c.json", "application/json"),
        ("Makefile", "text/plain"),
        ("d.ts", "application/typescript"),
        ("e.csv", "text/csv"),
        ("dot.png", "image/png"),
    ] {
        assert_eq!(server.content_type(name), want, "{name}");
    }
    let bad = server.files(&["push", src.to_str().unwrap(), "--content-type", "ts"]);
    assert_eq!(bad.status.code(), Some(2), "{}", err(&bad));
}

/// The sync state belongs to a host and a key: the same folder pushed with another
/// workspace's key uploads everything there, and each workspace keeps its own state.
#[test]
fn the_sync_state_belongs_to_a_host_and_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve(&data, &[]);
    let other = support::create_key(&[
        "--data",
        data.to_str().unwrap(),
        "--tenant",
        "t2",
        "--workspace",
        "w2",
    ]);
    let src = dir.path().join("src");
    for i in 0..13 {
        write(&src, &format!("n{i}.md"), &format!("note {i}"));
    }
    let src_arg = src.to_str().unwrap();
    let first = server.files(&["push", src_arg]);
    assert_eq!(summary(&first), "13 uploaded, 0 unchanged, 0 conflict");
    let second = server.files_as(&other, &["push", src_arg]);
    assert!(second.status.success(), "{}", err(&second));
    assert_eq!(summary(&second), "13 uploaded, 0 unchanged, 0 conflict");
    // Both states are kept: neither workspace has anything left to send.
    assert_eq!(
        summary(&server.files(&["push", src_arg])),
        "0 uploaded, 13 unchanged, 0 conflict"
    );
    assert_eq!(
        summary(&server.files_as(&other, &["push", src_arg])),
        "0 uploaded, 13 unchanged, 0 conflict"
    );
    // The state names the key by its id, never the key.
    let state = std::fs::read_to_string(src.join(".wsp-sync.json")).unwrap();
    assert!(
        !state.contains(server.key()) && !state.contains(&other),
        "{state}"
    );
    let id = other.split('_').nth(1).unwrap();
    assert!(state.contains(&format!("wsp_{id}")), "{state}");
}

/// A state older than the host (a push stopped before it saved) is no conflict when the
/// contents are the same: push and pull record them as in sync.
#[test]
fn identical_content_is_in_sync_whatever_the_state_says() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let src = dir.path().join("src");
    for i in 0..20 {
        write(&src, &format!("f{i}.md"), &format!("v1 {i}"));
    }
    let src_arg = src.to_str().unwrap();
    assert!(server.files(&["push", src_arg]).status.success());
    let stale = std::fs::read(src.join(".wsp-sync.json")).unwrap();
    for i in 0..20 {
        write(&src, &format!("f{i}.md"), &format!("v2 {i}"));
    }
    assert!(server.files(&["push", src_arg]).status.success());
    // As if the second push had stopped before writing its state.
    std::fs::write(src.join(".wsp-sync.json"), &stale).unwrap();
    let pull = server.files(&["pull", src_arg]);
    assert!(pull.status.success(), "{}{}", out(&pull), err(&pull));
    assert_eq!(summary(&pull), "0 downloaded, 20 unchanged, 0 conflict");
    std::fs::write(src.join(".wsp-sync.json"), &stale).unwrap();
    let push = server.files(&["push", src_arg]);
    assert!(push.status.success(), "{}{}", out(&push), err(&push));
    assert_eq!(summary(&push), "0 uploaded, 20 unchanged, 0 conflict");
    // A real conflict still is one, with advice, and its own exit status.
    write(&src, "f0.md", "mine");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::builder(&server.url)
        .key(server.key())
        .build()
        .unwrap();
    runtime
        .block_on(client.put(&path("f0.md"), "theirs", PutOptions::default()))
        .unwrap();
    let conflict = server.files(&["push", src_arg]);
    assert_eq!(conflict.status.code(), Some(6), "{}", err(&conflict));
    assert!(err(&conflict).contains("hint:"), "{}", err(&conflict));
    assert!(err(&conflict).contains("--if-match"), "{}", err(&conflict));
}

/// The state is written as files land: a push killed half way left a state for what it had
/// done, and Ctrl-C stops, saves, says how to go on and exits 130; running it again finishes
/// with no conflict.
#[test]
fn an_interrupted_push_keeps_what_it_did() {
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let src = dir.path().join("src");
    for i in 0..1500 {
        write(&src, &format!("d{}/f{i}.md", i % 10), &format!("# {i}"));
    }
    let src_arg = src.to_str().unwrap();
    let spawn = || {
        Command::new(support::WSP)
            .args(["files", "push", src_arg])
            .env("WSP_URL", &server.url)
            .env("WSP_API_KEY", server.key())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_for = |n: usize| {
        while server.remote_paths("").len() < n {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let saved = || -> usize {
        let text = std::fs::read_to_string(src.join(".wsp-sync.json")).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        v["syncs"][0]["files"].as_object().map_or(0, |f| f.len())
    };

    // kill -9 after 300 uploads: the state saved by then holds at least 200.
    let mut child = spawn();
    wait_for(300);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(saved() >= 200, "{}", saved());

    // Ctrl-C after 600: stops, saves everything done, exit 130.
    let child = spawn();
    wait_for(600);
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", err(&out));
    assert!(
        err(&out).contains("run the same command again"),
        "{}",
        err(&out)
    );
    let remote = server.remote_paths("").len();
    assert!(remote < 1500, "the push was not stopped: {remote}");
    assert_eq!(saved(), remote);

    let again = server.files(&["push", src_arg]);
    assert!(again.status.success(), "{}", err(&again));
    assert_eq!(
        summary(&again),
        format!("{} uploaded, {remote} unchanged, 0 conflict", 1500 - remote)
    );
}

/// `push --delete` from an emptied folder: the files to go are listed and nothing goes without
/// a yes (`--yes`, or an answer at a terminal); `--dry-run` shows them; pull has `--dry-run`.
#[test]
fn mass_deletion_is_confirmed_first() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let src = dir.path().join("src");
    for i in 0..30 {
        write(&src, &format!("f{i:02}.md"), "x");
    }
    let src_arg = src.to_str().unwrap();
    assert!(server.files(&["push", src_arg]).status.success());
    for i in 0..30 {
        std::fs::remove_file(src.join(format!("f{i:02}.md"))).unwrap();
    }

    let refused = server.files(&["push", src_arg, "--delete"]);
    assert_eq!(refused.status.code(), Some(2), "{}", err(&refused));
    assert!(
        err(&refused).contains("f00.md\twill delete"),
        "{}",
        err(&refused)
    );
    assert!(err(&refused).contains("pass --yes"), "{}", err(&refused));
    assert_eq!(server.remote_paths("").len(), 30, "nothing was deleted");

    let dry = server.files(&["push", src_arg, "--delete", "--dry-run"]);
    assert!(dry.status.success(), "{}", err(&dry));
    assert_eq!(
        summary(&dry),
        "0 would upload, 30 would delete, 0 unchanged, 0 would conflict"
    );
    assert_eq!(server.remote_paths("").len(), 30);

    let copy = dir.path().join("copy");
    let pull = server.files(&["pull", copy.to_str().unwrap(), "--dry-run"]);
    assert!(pull.status.success(), "{}", err(&pull));
    assert_eq!(
        summary(&pull),
        "30 would download, 0 unchanged, 0 would conflict"
    );
    assert!(!copy.join("f00.md").exists());

    // At a terminal, the question is asked and only a yes deletes.
    let at_terminal = |answer: &str| {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let (mut controller, terminal) = support::pty();
        let input = std::fs::File::open(&terminal).unwrap();
        controller.write_all(answer.as_bytes()).unwrap();
        let out = Command::new(support::WSP)
            .args(["files", "push", src_arg, "--delete"])
            .env("WSP_URL", &server.url)
            .env("WSP_API_KEY", server.key())
            .stdin(Stdio::from(input))
            .output()
            .unwrap();
        drop(controller);
        out
    };
    let no = at_terminal("n\n");
    assert_eq!(no.status.code(), Some(2), "{}", err(&no));
    assert!(
        err(&no).contains("delete these 30 remote files? [y/N]"),
        "{}",
        err(&no)
    );
    assert!(
        err(&no).contains("not confirmed; nothing was changed"),
        "{}",
        err(&no)
    );
    assert_eq!(server.remote_paths("").len(), 30);
    let asked = at_terminal("y\n");
    assert!(asked.status.success(), "{}", err(&asked));
    assert!(server.remote_paths("").is_empty());
    for i in 0..30 {
        write(&src, &format!("f{i:02}.md"), "x");
    }
    assert!(server.files(&["push", src_arg]).status.success());
    for i in 0..30 {
        std::fs::remove_file(src.join(format!("f{i:02}.md"))).unwrap();
    }

    let yes = server.files(&["push", src_arg, "--delete", "--yes"]);
    assert!(yes.status.success(), "{}", err(&yes));
    assert_eq!(
        summary(&yes),
        "0 uploaded, 30 deleted, 0 unchanged, 0 conflict"
    );
    assert!(server.remote_paths("").is_empty());
}

/// Names outside RFC 0059's rule are skipped, listed, and the rule is said once; the rest goes.
#[test]
fn files_outside_the_path_rule_are_skipped_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let src = dir.path().join("src");
    for rel in [
        "ok.md",
        "my notes.md",
        "café.md",
        "sub/also ok?.md",
        "sub/fine.md",
    ] {
        write(&src, rel, "x");
    }
    let pushed = server.files(&["push", src.to_str().unwrap()]);
    assert!(pushed.status.success(), "{}", err(&pushed));
    assert_eq!(
        summary(&pushed),
        "2 uploaded, 0 unchanged, 0 conflict, 3 skipped"
    );
    assert_eq!(
        err(&pushed).matches("RFC 0059").count(),
        1,
        "{}",
        err(&pushed)
    );
    for name in ["my notes.md", "café.md", "sub/also ok?.md"] {
        assert!(
            out(&pushed).contains(&format!("{name}\tskipped\t")),
            "{name}: {}",
            out(&pushed)
        );
    }
    assert!(!out(&pushed).contains("not a valid workspace path"));
}
