//! A real throwaway cluster, from the machine's PostgreSQL programs: one for everything its
//! keeper runs, answering on 127.0.0.1, and gone (server, watchdog, directory, lock) once the
//! keeper has exited. As root, this also exercises running the server as `postgres`.

#![cfg(unix)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_wsp-pgtest");

/// Runs `wsp-pgtest` twice (each writing its URL to `$1/a` and `$1/b`, and what it says about
/// the server to `$1/a.err` and `$1/b.err`), says `ready`, then waits for a line on stdin.
const KEEPER: &str = r#"out=$1
"$0" >"$out/a" 2>"$out/a.err" || exit 1
"$0" >"$out/b" 2>"$out/b.err" || exit 1
echo ready
read _
"#;

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

fn port_of(url: &str) -> u16 {
    let (_, after) = url.rsplit_once(':').unwrap();
    after.split('/').next().unwrap().parse().unwrap()
}

fn answers(port: u16) -> bool {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
}

#[test]
fn one_cluster_for_everything_its_keeper_runs_and_nothing_left_after_it() {
    let out = tempfile::tempdir().unwrap();
    let mut keeper = Command::new("sh")
        .args(["-c", KEEPER, BIN])
        .arg(out.path())
        .env_remove(wsp_pgtest::URL_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    BufReader::new(keeper.stdout.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap();
    assert_eq!(said, "ready\n", "{}{}", read("a.err"), read("b.err"));

    let (a, b) = (read("a"), read("b"));
    assert_eq!(a, b, "both runs got the same cluster");
    let url = a.trim();
    assert!(url.starts_with("postgres://postgres:"), "{url}");
    let port = port_of(url);
    assert!(answers(port), "the server answers on 127.0.0.1:{port}");

    // What is printed names the server without its password, and the cluster's directory.
    let euid = rustix::process::geteuid().as_raw();
    let dir: PathBuf = std::env::temp_dir()
        .join(format!("wsp-pgtest-{euid}"))
        .join(keeper.id().to_string());
    let lock = dir.with_extension("lock");
    let shown = format!(
        "PostgreSQL: postgres://postgres@127.0.0.1:{port}/postgres (a throwaway cluster in {}, \
         removed when process {} ends)\n",
        dir.display(),
        keeper.id()
    );
    assert_eq!(read("a.err"), shown);
    assert_eq!(read("b.err"), shown);
    assert!(dir.join("data").is_dir() && lock.is_file());
    let data = format!("{}/data", dir.display());
    assert!(
        processes_mentioning(&data)
            .iter()
            .any(|p| p.contains("postgres")),
        "the server runs on {data}"
    );

    // The keeper ends: the watchdog stops the server and removes everything.
    keeper.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(keeper.wait().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(90);
    let dir_text = dir.display().to_string();
    let gone =
        |dir: &Path| !dir.exists() && !lock.exists() && processes_mentioning(&dir_text).is_empty();
    while !gone(&dir) {
        assert!(
            Instant::now() < deadline,
            "left behind: {} {} {:?}",
            dir.exists(),
            lock.exists(),
            processes_mentioning(&dir_text)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        !answers(port),
        "nothing answers on 127.0.0.1:{port} any more"
    );
}
