//! `wsp memory` and `wsp sessions` against a running `wsp serve`: append and search the memory,
//! record and list sessions (concurrent recorders lose no entry), and clear refusals.

use std::process::Output;

use crate::support::{Server, serve, wsp};

fn run(server: &Server, args: &[&str]) -> Output {
    wsp(
        args,
        &[("WSP_URL", &server.url), ("WSP_API_KEY", server.key())],
        None,
    )
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn memory_lines_are_appended_and_found_and_sessions_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let today = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();

    let appended = run(&server, &["memory", "append", "Friday deploys are off."]);
    assert!(appended.status.success(), "{}", err(&appended));
    assert_eq!(out(&appended), format!("memory/{today}.md:1\tv1\n"));
    let again = run(&server, &["memory", "append", "Deploy on Tuesdays."]);
    assert_eq!(out(&again), format!("memory/{today}.md:2\tv2\n"));

    let found = run(&server, &["memory", "search", "friday deploy"]);
    assert!(found.status.success(), "{}", err(&found));
    assert_eq!(
        out(&found),
        format!(
            "memory/{today}.md:1: Friday deploys are off.\nmemory/{today}.md:2: Deploy on Tuesdays.\n"
        )
    );
    assert!(
        err(&found).starts_with("2 matching lines in 1 file searched"),
        "{}",
        err(&found)
    );
    let json = run(
        &server,
        &["memory", "search", "tuesdays", "--json", "--limit", "1"],
    );
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["matches"][0]["line"], 2);

    let refused = run(&server, &["memory", "append", "two\nlines"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(err(&refused).contains("line break"), "{}", err(&refused));

    // 6 recorders at once, then an update: 6 sessions, the summary kept.
    let children: Vec<_> = (0..6)
        .map(|n| {
            let (url, key) = (server.url.clone(), server.key().to_owned());
            std::thread::spawn(move || {
                let id = format!("s-{n}");
                wsp(
                    &[
                        "sessions",
                        "record",
                        &id,
                        "--agent",
                        "reviewer",
                        "--summary",
                        "first",
                    ],
                    &[("WSP_URL", &url), ("WSP_API_KEY", &key)],
                    None,
                )
            })
        })
        .collect();
    for c in children {
        let o = c.join().unwrap();
        assert!(o.status.success(), "{}", err(&o));
    }
    let updated = run(
        &server,
        &["sessions", "record", "s-3", "--agent", "reviewer"],
    );
    assert!(
        out(&updated).starts_with(
            "updated session s-3 in agents/reviewer/sessions/sessions.json (6 sessions)"
        ),
        "{}",
        out(&updated)
    );
    let listed = run(&server, &["sessions", "ls", "--agent", "reviewer"]);
    let lines: Vec<String> = out(&listed).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    for n in 0..6 {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("s-{n}\t")) && l.ends_with("\tfirst")),
            "s-{n} in {lines:?}"
        );
    }
    let empty = run(&server, &["sessions", "ls", "--agent", "nobody"]);
    assert!(
        empty.status.success() && out(&empty).is_empty(),
        "{}",
        err(&empty)
    );
    let bad = run(&server, &["sessions", "record", "../x"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(err(&bad).contains("session id"), "{}", err(&bad));
}
