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

    // Not a terminal: no bar, and the same plain lines.
    std::fs::write(folder.join("f0.md"), "changed").unwrap();
    let piped = server.files(&["pull", folder_arg]);
    assert!(!piped.status.success(), "a local change is a conflict");
    assert!(!err(&piped).contains("files "), "{}", err(&piped));
    assert!(!err(&piped).contains('\u{1b}'), "{}", err(&piped));
    assert_eq!(summary(&piped), "0 downloaded, 4 unchanged, 1 conflict");
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
