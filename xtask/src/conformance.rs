//! `cargo xtask conformance`: the whole suite against `wsp serve` on every available backend.

use std::process::Command;

use crate::Result;
use crate::host::{self, SECRET_ID, SECRET_VALUE};
use crate::project::project_root;

/// Backends tested, with the extra `wsp serve` arguments each needs: memory, SQLite, and
/// PostgreSQL when `WSP_TEST_POSTGRES_URL` names a database (CI sets it).
fn backends() -> Vec<(String, Vec<String>)> {
    let mut all = vec![("memory".to_owned(), vec![]), ("sqlite".to_owned(), vec![])];
    match std::env::var("WSP_TEST_POSTGRES_URL") {
        Ok(url) => all.push((url, vec![])),
        Err(_) => eprintln!(
            "note: WSP_TEST_POSTGRES_URL is not set: the PostgreSQL backend is not tested"
        ),
    }
    all
}

/// Runs the suite on each backend; reports land in `target/conformance/wsp-<backend>.{json,xml}`.
pub(crate) fn run(extra_args: &[String]) -> Result<()> {
    let wsp = host::wsp_binary()?;
    let reports = host::report_dir()?;
    let mut failed = Vec::new();
    for (store, serve_args) in backends() {
        let name = if store.starts_with("postgres") {
            "postgres"
        } else {
            store.as_str()
        };
        println!("== wsp serve --store {name}");
        let serve_args: Vec<&str> = serve_args.iter().map(String::as_str).collect();
        let host = host::start(&store, &serve_args)?;
        let status = Command::new(&wsp)
            .arg("conformance")
            .args(["--url", &host.url])
            .args(["--key-a", &host.key_a, "--key-b", &host.key_b])
            .args(["--key-readonly", &host.key_readonly])
            .args(&host.agent_args)
            .args(["--secret", &format!("{SECRET_ID}={SECRET_VALUE}")])
            .arg("--expected-failures")
            .arg(project_root().join("conformance/expected-failures"))
            .arg("--report-json")
            .arg(reports.join(format!("wsp-{name}.json")))
            .arg("--junit")
            .arg(reports.join(format!("wsp-{name}.xml")))
            .args(extra_args)
            .status()?;
        if !status.success() {
            failed.push(name.to_owned());
        }
    }
    // The agent scenarios once more with `installScope: host` (the backends above run them
    // scoped per tenant); discovery is checked again because it advertises the scope.
    println!("== wsp serve --store sqlite, agents with installScope host");
    let host = host::start_scoped("sqlite", &[], "host")?;
    let status = Command::new(&wsp)
        .arg("conformance")
        .args(["--url", &host.url])
        .args(["--key-a", &host.key_a, "--key-b", &host.key_b])
        .args(["--key-readonly", &host.key_readonly])
        .args(&host.agent_args)
        .args([
            "--filter", "WS-DISC", "--filter", "WS-AGT", "--filter", "WS-PUB",
        ])
        .arg("--expected-failures")
        .arg(project_root().join("conformance/expected-failures"))
        .arg("--report-json")
        .arg(reports.join("wsp-sqlite-host-scope.json"))
        .arg("--junit")
        .arg(reports.join("wsp-sqlite-host-scope.xml"))
        .args(extra_args)
        .status()?;
    if !status.success() {
        failed.push("sqlite-host-scope".to_owned());
    }
    if failed.is_empty() {
        println!(
            "conformance: every backend passed; reports in {}",
            reports.display()
        );
        Ok(())
    } else {
        Err(format!("conformance failed on: {}", failed.join(", ")).into())
    }
}
