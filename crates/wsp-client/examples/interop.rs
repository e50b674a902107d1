//! Drives a running host through `wsp-client`: the same checks as the OpenWOP Python client's.
//!
//! `cargo run -p wsp-client --example interop -- BASE_URL API_KEY [--agent AGENT_ID] [--json REPORT]`
//!
//! With `--agent`, the host serves the agent inventory and AGENT_ID is an agent the key may see.
//!
//! Prints `PASS name` / `FAIL name: reason` per check and closes with `N passed, N failed`.

use std::process::ExitCode;

use wsp_client::{Client, PutOptions};
use wsp_types::{ErrorCode, WorkspacePath};

type Check = Result<(), String>;

fn expect(cond: bool, why: impl Into<String>) -> Check {
    if cond { Ok(()) } else { Err(why.into()) }
}

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).expect("the checks use valid paths")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(key)) = (args.first(), args.get(1)) else {
        eprintln!("usage: interop BASE_URL API_KEY [--json REPORT]");
        return ExitCode::from(2);
    };
    let report = args
        .iter()
        .position(|a| a == "--json")
        .and_then(|i| args.get(i + 1));
    let agent_id = args
        .iter()
        .position(|a| a == "--agent")
        .and_then(|i| args.get(i + 1));
    let client = match Client::new(url) {
        Ok(c) => c.with_key(key.clone()),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let root = format!("interop/rust-{}", std::process::id());
    let plan = p(&format!("{root}/plan.md"));
    let mut results: Vec<(&str, Check)> = Vec::new();

    results.push((
        "discovery",
        async {
            let d = client.discovery().await.map_err(|e| e.to_string())?;
            expect(
                d.workspace.is_some_and(|w| w.supported),
                "workspace not advertised",
            )
        }
        .await,
    ));
    let mut etag1 = None;
    results.push((
        "put create",
        async {
            let f = client
                .put(&plan, "# Plan", PutOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            etag1 = f.etag.clone();
            expect(f.version.get() == 1, format!("version {}", f.version))
        }
        .await,
    ));
    results.push((
        "put if_match fresh",
        async {
            let tag = etag1.clone().map(wsp_types::ETag::from_wire);
            let f = client
                .put(
                    &plan,
                    "# Plan v2",
                    PutOptions {
                        if_match: tag,
                        ..Default::default()
                    },
                )
                .await
                .map_err(|e| e.to_string())?;
            expect(f.version.get() == 2, format!("version {}", f.version))
        }
        .await,
    ));
    results.push((
        "put if_match stale -> 409",
        async {
            let tag = etag1.clone().map(wsp_types::ETag::from_wire);
            match client
                .put(
                    &plan,
                    "lost",
                    PutOptions {
                        if_match: tag,
                        ..Default::default()
                    },
                )
                .await
            {
                Err(e) => expect(
                    e.code() == Some(ErrorCode::WorkspaceConflict),
                    e.to_string(),
                ),
                Ok(_) => Err("a stale If-Match was accepted".into()),
            }
        }
        .await,
    ));
    results.push((
        "get and get version",
        async {
            let f = client.get(&plan, None).await.map_err(|e| e.to_string())?;
            expect(f.content == "# Plan v2", "live content")?;
            let old = client
                .get(&plan, Some(1))
                .await
                .map_err(|e| e.to_string())?;
            expect(old.content == "# Plan", "version 1 content")
        }
        .await,
    ));
    results.push((
        "list",
        async {
            let l = client
                .list(Some(&format!("{root}/")))
                .await
                .map_err(|e| e.to_string())?;
            expect(
                l.files.len() == 1 && l.files[0].path == plan,
                format!("{:?}", l.files),
            )
        }
        .await,
    ));
    results.push((
        "history",
        async {
            let h = client.history(&plan).await.map_err(|e| e.to_string())?;
            let v: Vec<u64> = h.versions.iter().map(|m| m.version.get()).collect();
            expect(v == [2, 1], format!("versions {v:?}"))
        }
        .await,
    ));
    results.push((
        "put_bytes and get bytes",
        async {
            let logo = p(&format!("{root}-bin/logo.png"));
            let raw: Vec<u8> = (0..=255u8).chain([0xC3, 0x28, 0]).collect();
            let options = PutOptions {
                content_type: Some("image/png".into()),
                ..PutOptions::default()
            };
            client
                .put_bytes(&logo, &raw, options)
                .await
                .map_err(|e| e.to_string())?;
            let got = client.get(&logo, None).await.map_err(|e| e.to_string())?;
            let bytes = got.bytes().map_err(|e| e.to_string())?;
            expect(
                *bytes == *raw && got.content_type == "image/png",
                format!("read back {} bytes of {}", bytes.len(), got.content_type),
            )
        }
        .await,
    ));
    results.push((
        "delete",
        async {
            client
                .delete(&plan, None)
                .await
                .map_err(|e| e.to_string())?;
            match client.get(&plan, None).await {
                Err(e) => expect(e.code() == Some(ErrorCode::NotFound), e.to_string()),
                Ok(_) => Err("deleted file still readable".into()),
            }
        }
        .await,
    ));

    if let Some(id) = agent_id {
        let mut listed = None;
        results.push((
            "agents (inventory)",
            async {
                let d = client.discovery().await.map_err(|e| e.to_string())?;
                let runtime = d.agents.and_then(|a| a.manifest_runtime);
                expect(
                    runtime.is_some_and(|r| r.supported),
                    "agents.manifestRuntime not advertised",
                )?;
                let inv = client.agents().await.map_err(|e| e.to_string())?;
                let ids: Vec<&str> = inv.agents.iter().map(|a| a.agent_id.as_str()).collect();
                expect(ids.contains(&id.as_str()), format!("{id} not in {ids:?}"))?;
                expect(ids.is_sorted(), format!("not sorted: {ids:?}"))?;
                expect(
                    inv.total == ids.len() as u64,
                    format!("total {}", inv.total),
                )?;
                listed = inv.agents.into_iter().find(|a| &a.agent_id == id);
                Ok(())
            }
            .await,
        ));
        results.push((
            "agent and unknown agent -> 404",
            async {
                let one = client.agent(id).await.map_err(|e| e.to_string())?;
                expect(
                    Some(&one) == listed.as_ref(),
                    "the entry differs from the list's",
                )?;
                match client.agent("interop.no-such-agent").await {
                    Err(e) => expect(e.code() == Some(ErrorCode::NotFound), e.to_string()),
                    Ok(a) => Err(format!("an unknown agent answered {a:?}")),
                }
            }
            .await,
        ));
    }

    let mut passed = 0;
    for (name, r) in &results {
        match r {
            Ok(()) => {
                passed += 1;
                println!("PASS {name}");
            }
            Err(why) => println!("FAIL {name}: {why}"),
        }
    }
    let failed = results.len() - passed;
    if let Some(path) = report {
        let checks: Vec<_> = results
            .iter()
            .map(|(n, r)| serde_json::json!({"name": n, "pass": r.is_ok(), "reason": r.clone().err().unwrap_or_default()}))
            .collect();
        let doc = serde_json::json!({
            "client": "wsp-client (Rust)",
            "clientVersion": env!("CARGO_PKG_VERSION"),
            "checks": checks,
        });
        if let Err(e) = std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap_or_default())
        {
            eprintln!("error: cannot write {path}: {e}");
            return ExitCode::from(2);
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
