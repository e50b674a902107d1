//! `wsp serve` keeps its data private: the data directory it creates is 0700 and every file in
//! it 0600 (the files, their WAL and shared-memory files, the keys, the approvals), whatever
//! the umask; a directory the user made keeps its mode, with a warning when others may write.

#![cfg(unix)]

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support;
use crate::support::{Server, WSP};

/// One pack, so that the server opens its approvals file too.
const AGENTS: &str = r#"
[agents]
install_scope = "tenant"

[[agents.packs]]
name = "acme.reviewer"
version = "1.0.0"

[[agents.packs.agents]]
id = "acme.reviewer.default"
persona = "Code Reviewer"
model_class = "coding"
tool_allowlist = []
system_prompt_ref = "prompts/reviewer.md"
"#;

/// The permission bits of `path`, in octal as `ls` and `chmod` write them.
fn mode(path: &Path) -> String {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    format!("{:o}", meta.permissions().mode() & 0o7777)
}

/// `wsp serve --data DATA --config (agents)` under umask 0, once it listens. Standard error is
/// piped, for [`stop`] to return.
fn serve(data: &Path, config_dir: &Path) -> Server {
    let config = config_dir.join("wsp.toml");
    std::fs::write(&config, AGENTS).unwrap();
    support::start(
        Command::new("sh")
            .args(["-c", r#"umask 0 && exec "$0" "$@""#, WSP])
            .args(["serve", "--addr", "127.0.0.1:0", "--data"])
            .arg(data)
            .arg("--config")
            .arg(&config)
            .env("WSP_LOG", "warn")
            .stdin(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

/// Stops the server; returns what it wrote to standard error.
fn stop(mut server: Server) -> String {
    let mut stderr = server.child.stderr.take().unwrap();
    server.child.kill().unwrap();
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    log
}

/// Every entry of `data` is a file of mode 600, and the server's files are among them.
fn assert_files_private(data: &Path) {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(data).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(entry.file_type().unwrap().is_file(), "{name}");
        assert_eq!(mode(&entry.path()), "600", "{name}");
        names.push(name);
    }
    for expected in [
        "wsp.sqlite3",
        "wsp.sqlite3-wal",
        "wsp.sqlite3-shm",
        "keys.sqlite3",
        "approvals.sqlite3",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
}

#[test]
fn a_data_directory_serve_creates_is_private_and_so_is_every_file_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("new").join("wsp-data");
    let server = serve(&data, tmp.path());
    assert_eq!(mode(&data), "700");
    assert_eq!(mode(&tmp.path().join("new")), "700", "a parent it created");
    assert_files_private(&data);
    let log = stop(server);
    assert!(!log.contains("writable by other users"), "{log}");
}

#[test]
fn a_data_directory_the_user_made_keeps_its_mode_and_warns_when_others_may_write() {
    let tmp = tempfile::tempdir().unwrap();

    let readable = tmp.path().join("readable");
    std::fs::create_dir(&readable).unwrap();
    std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = stop(serve(&readable, tmp.path()));
    assert_eq!(mode(&readable), "755");
    assert_files_private(&readable);
    assert!(!log.contains("writable by other users"), "{log}");

    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let log = stop(serve(&open, tmp.path()));
    assert_eq!(mode(&open), "777", "left as the user made it");
    assert_files_private(&open);
    assert!(
        log.contains(&format!(
            "the data directory {} is writable by other users (mode 777)",
            open.display()
        )),
        "{log}"
    );
}

/// `wsp mcp` creates the data directory of its virtual mounts as `wsp serve` does: 0700, with
/// its SQLite file 0600, whatever the umask.
#[test]
fn wsp_mcp_creates_its_data_directory_private() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("nested").join("wsp-data");
    let mounts = tmp.path().join("mounts.toml");
    std::fs::write(
        &mounts,
        "[[workspace]]\npath = \"/scratch\"\nscope = \"rw\"\nmount = { virtual = \"scratch\" }\n",
    )
    .unwrap();
    // stdin closed at once: the server opens its store, then ends with the session.
    let out = Command::new("sh")
        .args(["-c", r#"umask 0 && exec "$0" "$@""#, WSP])
        .args(["mcp", "--mounts"])
        .arg(&mounts)
        .arg("--data")
        .arg(&data)
        .env("WSP_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        data.join("wsp.sqlite3").exists(),
        "wsp mcp opened no store: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&data), "700", "the data directory");
    assert_eq!(
        mode(&tmp.path().join("nested")),
        "700",
        "a parent it created"
    );
    assert_eq!(mode(&data.join("wsp.sqlite3")), "600", "the database");
}
