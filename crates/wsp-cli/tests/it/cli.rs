//! The `wsp` binary as a user drives it: serve, keys, files, and `kill -9` durability.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::support;
use crate::support::{WSP, serve, wsp};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn first_start_prints_an_admin_key_once_and_files_work_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let key = server.key().to_owned();
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", key.as_str()),
    ];

    let put = wsp(&["files", "put", "notes/plan.md"], &env, Some("# Plan\n"));
    assert!(put.status.success(), "{}", stderr(&put));
    assert!(
        stdout(&put).starts_with("notes/plan.md\tv1\t\""),
        "{}",
        stdout(&put)
    );

    let got = wsp(&["files", "get", "notes/plan.md"], &env, None);
    assert_eq!(stdout(&got), "# Plan\n");

    let json = wsp(
        &["files", "put", "notes/plan.md", "--json"],
        &env,
        Some("# Plan v2\n"),
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["version"], 2);
    let etag = v["etag"].as_str().unwrap().to_owned();

    let stale = wsp(
        &["files", "put", "notes/plan.md", "--if-match", "\"nope\""],
        &env,
        Some("x"),
    );
    assert!(!stale.status.success());
    assert!(
        stderr(&stale).contains("workspace_conflict"),
        "{}",
        stderr(&stale)
    );
    let fresh = wsp(
        &["files", "put", "notes/plan.md", "--if-match", &etag],
        &env,
        Some("v3"),
    );
    assert!(fresh.status.success(), "{}", stderr(&fresh));

    let ls = wsp(&["files", "ls", "--prefix", "notes/"], &env, None);
    assert!(
        stdout(&ls).starts_with("notes/plan.md\tv3\ttext/markdown\t"),
        "{}",
        stdout(&ls)
    );
    let history = wsp(&["files", "history", "notes/plan.md", "--json"], &env, None);
    let h: serde_json::Value = serde_json::from_slice(&history.stdout).unwrap();
    assert_eq!(h["versions"].as_array().unwrap().len(), 3);
    let old = wsp(
        &["files", "get", "notes/plan.md", "--version", "1"],
        &env,
        None,
    );
    assert_eq!(stdout(&old), "# Plan\n");

    let rm = wsp(&["files", "rm", "notes/plan.md"], &env, None);
    assert!(rm.status.success());
    let gone = wsp(&["files", "get", "notes/plan.md"], &env, None);
    assert!(!gone.status.success());
    assert!(stderr(&gone).contains("not_found"), "{}", stderr(&gone));
    let bad = wsp(&["files", "get", "../etc/passwd"], &env, None);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("invalid path"), "{}", stderr(&bad));
    drop(server);

    // A restart on the same data dir prints no new key, and the old key still works.
    let again = serve(dir.path(), &[]);
    assert_eq!(again.first_key, None);
    let env = [
        ("WSP_URL", again.url.as_str()),
        ("WSP_API_KEY", key.as_str()),
    ];
    let ls = wsp(&["files", "ls", "--json"], &env, None);
    assert!(ls.status.success(), "{}", stderr(&ls));
}

#[test]
fn keys_created_while_serving_work_at_once_and_revocation_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let server = serve(dir.path(), &[]);
    let created = wsp(
        &[
            "keys",
            "create",
            "--data",
            data,
            "--tenant",
            "t-a",
            "--workspace",
            "w-a",
            "--scopes",
            "workspace:read",
        ],
        &[],
        None,
    );
    assert!(created.status.success(), "{}", stderr(&created));
    let out = stdout(&created);
    let key = out.lines().last().unwrap().to_owned();
    assert!(key.starts_with("wsp_"), "the key is the last line: {out}");
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", key.as_str()),
    ];
    let ls = wsp(&["files", "ls"], &env, None);
    assert!(
        ls.status.success(),
        "a new key works at once: {}",
        stderr(&ls)
    );
    let put = wsp(&["files", "put", "a.md"], &env, Some("x"));
    assert!(
        stderr(&put).contains("forbidden"),
        "read-only key: {}",
        stderr(&put)
    );

    let list = wsp(&["keys", "list", "--data", data, "--json"], &[], None);
    let rows: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2);
    assert!(
        !stdout(&list).contains(&key[17..]),
        "secrets are never listed"
    );

    let id = &key[4..16];
    let revoked = wsp(&["keys", "revoke", "--data", data, id], &[], None);
    assert!(revoked.status.success(), "{}", stderr(&revoked));
    // Revocation takes effect within the key cache's lifetime.
    std::thread::sleep(wsp_server::KEY_CACHE_TTL + Duration::from_millis(200));
    let denied = wsp(&["files", "ls"], &env, None);
    assert!(
        stderr(&denied).contains("unauthenticated"),
        "{}",
        stderr(&denied)
    );
    let unknown = wsp(
        &["keys", "revoke", "--data", data, "000000000000"],
        &[],
        None,
    );
    assert!(!unknown.status.success());
}

#[test]
fn bad_input_is_one_line_with_its_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let busy = wsp(
        &[
            "serve",
            "--addr",
            server.addr(),
            "--data",
            dir.path().to_str().unwrap(),
        ],
        &[],
        None,
    );
    assert_eq!(busy.status.code(), Some(1));
    let err = stderr(&busy);
    assert!(err.starts_with("error: cannot listen on"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let unusable = wsp(
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data",
            file.to_str().unwrap(),
        ],
        &[],
        None,
    );
    assert_eq!(unusable.status.code(), Some(1));
    let err = stderr(&unusable);
    assert!(err.starts_with("error: cannot use data directory"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let bad_scope = wsp(
        &[
            "keys",
            "create",
            "--data",
            dir.path().to_str().unwrap(),
            "--tenant",
            "t",
            "--workspace",
            "w",
            "--scopes",
            "root",
        ],
        &[],
        None,
    );
    assert_eq!(bad_scope.status.code(), Some(2));
    assert!(
        stderr(&bad_scope).contains("unknown scope"),
        "{}",
        stderr(&bad_scope)
    );
    let no_server = wsp(
        &["files", "ls", "--url", "http://127.0.0.1:9", "--key", "k"],
        &[],
        None,
    );
    assert_eq!(no_server.status.code(), Some(8));
    assert!(
        stderr(&no_server).contains("cannot reach 127.0.0.1:9: connection refused"),
        "{}",
        stderr(&no_server)
    );
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let key = server.key().to_owned();
    let url = server.url.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = wsp_client::Client::new(&url).unwrap().with_key(key.clone());
    // Writers run until the server dies; every 200 is remembered with its content.
    let acknowledged = runtime.block_on(async {
        let mut acked: Vec<(String, u64, String)> = Vec::new();
        let mut server = server;
        for i in 0..400u32 {
            if i == 200 {
                // SIGKILL: no shutdown handler, no flush, mid-stream.
                kill_9(&mut server.child);
            }
            let path = format!("kill9/f{}.md", i % 37);
            let body = format!("write {i} ").repeat(50 + (i as usize % 100));
            let p = wsp_types::WorkspacePath::parse(&path).unwrap();
            match client.put(&p, body.clone(), Default::default()).await {
                Ok(f) => acked.push((path, f.version.get(), body)),
                Err(wsp_client::Error::Transport(_)) => break,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        drop(server);
        acked
    });
    assert!(
        acknowledged.len() >= 200,
        "writes were acknowledged before the kill"
    );
    let restarted = serve(dir.path(), &[]);
    let client = wsp_client::Client::new(&restarted.url)
        .unwrap()
        .with_key(key);
    runtime.block_on(async {
        // The newest acknowledged write of each path is its live content; older ones are history.
        let mut latest = std::collections::BTreeMap::new();
        for (path, version, body) in &acknowledged {
            latest.insert(path.clone(), (*version, body.clone()));
        }
        for (path, (version, body)) in latest {
            let p = wsp_types::WorkspacePath::parse(&path).unwrap();
            let live = client.get(&p, None).await.unwrap();
            assert!(
                live.version.get() >= version,
                "{path}: acknowledged v{version} lost"
            );
            let at = client.get(&p, Some(version)).await.unwrap();
            assert_eq!(at.content, body, "{path} v{version} has its full body");
        }
    });
}

/// The same under 64 concurrent writers, whose writes the server makes durable in shared
/// group commits: `kill -9` once 600 writes are acknowledged; after a restart every
/// acknowledged write is there, whole, at its version.
#[test]
fn acknowledged_writes_of_64_concurrent_writers_survive_kill_9() {
    const WRITERS: usize = 64;
    const ACKS_BEFORE_KILL: usize = 600;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let key = server.key().to_owned();
    let url = server.url.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = wsp_client::Client::new(&url).unwrap().with_key(key.clone());
    let (acks, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let acknowledged = runtime.block_on(async {
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let (client, acks) = (client.clone(), acks.clone());
            writers.push(tokio::spawn(async move {
                for i in 0u32.. {
                    let path = format!("kill9-64/w{w:02}/f{}.md", i % 4);
                    let body = format!("writer {w} write {i} ").repeat(20 + (i as usize % 40));
                    let p = wsp_types::WorkspacePath::parse(&path).unwrap();
                    match client.put(&p, body.clone(), Default::default()).await {
                        Ok(f) => {
                            if acks.send((path, f.version.get(), body)).is_err() {
                                return;
                            }
                        }
                        Err(wsp_client::Error::Transport(_)) => return,
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            }));
        }
        drop(acks);
        let mut server = server;
        let mut acked = Vec::new();
        while let Some(ack) = seen.recv().await {
            acked.push(ack);
            if acked.len() == ACKS_BEFORE_KILL {
                // SIGKILL while the other writers' requests are in flight.
                kill_9(&mut server.child);
            }
        }
        for writer in writers {
            writer.await.unwrap();
        }
        acked
    });
    assert!(acknowledged.len() >= ACKS_BEFORE_KILL);
    let restarted = serve(dir.path(), &[]);
    let client = wsp_client::Client::new(&restarted.url)
        .unwrap()
        .with_key(key);
    runtime.block_on(async {
        for (path, version, body) in &acknowledged {
            let p = wsp_types::WorkspacePath::parse(path).unwrap();
            let at = client
                .get(&p, Some(*version))
                .await
                .unwrap_or_else(|e| panic!("{path}: acknowledged v{version} lost: {e}"));
            assert_eq!(&at.content, body, "{path} v{version} has its full body");
        }
    });
}

fn kill_9(child: &mut Child) {
    // `Child::kill` sends SIGKILL on Unix.
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn files_watch_prints_the_change_feed() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let key = server.key().to_owned();
    let env = [
        ("WSP_URL", server.url.as_str()),
        ("WSP_API_KEY", key.as_str()),
    ];
    let put = wsp(&["files", "put", "a.md"], &env, Some("one"));
    assert!(put.status.success());
    let mut watch = Command::new(WSP)
        .args([
            "files",
            "watch",
            "--since",
            "0",
            "--url",
            &server.url,
            "--key",
            &key,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "1\ta.md\tv1");
    wsp(&["files", "put", "a.md"], &env, Some("two"));
    wsp(&["files", "rm", "a.md"], &env, None);
    assert_eq!(lines.next().unwrap().unwrap(), "2\ta.md\tv2");
    assert_eq!(lines.next().unwrap().unwrap(), "3\ta.md\tv3");
    watch.kill().unwrap();
    watch.wait().unwrap();
}

#[test]
fn runs_survive_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let key = server.key().to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let path = wsp_types::WorkspacePath::parse("AGENTS.md").unwrap();
    let run_id = runtime.block_on(async {
        let c = wsp_client::Client::new(&server.url)
            .unwrap()
            .with_key(key.clone());
        c.put(&path, "as the run started", Default::default())
            .await
            .unwrap();
        let run = c.create_run("survivor").await.unwrap();
        c.put(&path, "after the run started", Default::default())
            .await
            .unwrap();
        run.run_id
    });
    drop(server);
    let again = serve(dir.path(), &[]);
    runtime.block_on(async {
        let c = wsp_client::Client::new(&again.url).unwrap().with_key(key);
        let run = c.get_run(&run_id).await.unwrap();
        assert_eq!(run.status, wsp_types::wire::RunStatus::Running);
        assert_eq!(run.workflow_id, "survivor");
        let seen = c.get_run_file(&run_id, &path).await.unwrap();
        assert_eq!(seen.content, "as the run started");
        assert_eq!(
            c.get(&path, None).await.unwrap().content,
            "after the run started"
        );
    });
}

/// PUTs `content` to `doc.md` with `Idempotency-Key: key`: (status, replayed?, body).
async fn keyed_put(url: &str, api_key: &str, key: &str, content: &str) -> (u16, bool, String) {
    let resp = reqwest::Client::new()
        .put(format!("{url}/v1/host/workspace/files/doc.md"))
        .bearer_auth(api_key)
        .header("idempotency-key", key)
        .json(&serde_json::json!({ "content": content }))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let replayed = resp
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true");
    (status, replayed, resp.text().await.unwrap())
}

#[test]
fn idempotency_replays_survive_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let key = server.key().to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let first = runtime.block_on(keyed_put(&server.url, &key, "k-restart", "once"));
    assert_eq!((first.0, first.1), (200, false), "{}", first.2);
    drop(server);
    let again = serve(dir.path(), &[]);
    runtime.block_on(async {
        let replay = keyed_put(&again.url, &key, "k-restart", "once").await;
        assert_eq!(replay, (first.0, true, first.2.clone()));
        // Same key, another request: refused, as before the restart.
        let (status, _, body) = keyed_put(&again.url, &key, "k-restart", "twice").await;
        assert_eq!(status, 409);
        assert!(body.contains("idempotency_key_mismatch"), "{body}");
        // The write happened once.
        let c = wsp_client::Client::new(&again.url).unwrap().with_key(key);
        let live = c
            .get(&wsp_types::WorkspacePath::parse("doc.md").unwrap(), None)
            .await
            .unwrap();
        assert_eq!((live.version.get(), live.content.as_str()), (1, "once"));
    });
}

#[cfg(unix)]
#[test]
fn sigterm_drains_and_logs_without_terminal_colours() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let mut server = support::start(
        support::serve_command(dir.path(), &[])
            .env("WSP_LOG", "info")
            .stderr(Stdio::piped()),
    );
    let mut log_pipe = server.child.stderr.take().unwrap();
    server.terminate();
    let mut log = String::new();
    log_pipe.read_to_string(&mut log).unwrap();
    let status = server.child.wait().unwrap();
    assert!(status.success(), "exit after SIGTERM: {status}");
    assert!(
        log.contains("shutting down: draining in-flight requests"),
        "{log}"
    );
    // Standard error is a pipe here, not a terminal: no colour escapes in the log.
    assert!(!log.contains('\x1b'), "{log:?}");
}
