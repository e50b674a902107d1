//! `cargo xtask conformance`: the whole suite against `wsp serve` on every backend (memory,
//! SQLite, PostgreSQL).

use std::process::{Command, Stdio};

use crate::Result;
use crate::host::{self, SECRET_ID, SECRET_VALUE};
use crate::project::project_root;

/// Backends tested, with the extra `wsp serve` arguments each needs: memory, SQLite and
/// PostgreSQL ([`postgres_url`]). A PostgreSQL that cannot be had is a failure, never a skip.
fn backends(failed: &mut Vec<String>) -> Vec<(String, Vec<String>)> {
    let mut all = vec![("memory".to_owned(), vec![]), ("sqlite".to_owned(), vec![])];
    match postgres_url() {
        Ok(url) => all.push((url, vec![])),
        Err(e) => {
            eprintln!("error: the PostgreSQL backend cannot be tested: {e}");
            failed.push("postgres".to_owned());
        }
    }
    all
}

/// The PostgreSQL database for the suite: what the `wsp-pgtest` program prints, which is
/// `WSP_TEST_POSTGRES_URL` when set, else a throwaway cluster that lives as long as this xtask
/// process (the program's parent). xtask runs it rather than linking the `wsp-pgtest` crate, so
/// that it links no wsp crate; the program names the server on stderr, or says in one line
/// why there is none.
pub(crate) fn postgres_url() -> Result<String> {
    let program = host::build_binary("wsp-pgtest", "wsp-pgtest")?;
    let out = Command::new(&program)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if !out.status.success() {
        return Err("wsp-pgtest found no PostgreSQL (see the line above)".into());
    }
    let url = String::from_utf8(out.stdout).map_err(|_| "wsp-pgtest printed no URL")?;
    Ok(url.trim().to_owned())
}

/// Runs the suite on each backend; reports land in `target/conformance/wsp-<backend>.{json,xml}`.
pub(crate) fn run(extra_args: &[String]) -> Result<()> {
    let wsp = host::wsp_binary()?;
    let reports = host::report_dir()?;
    let mut failed = Vec::new();
    for (store, serve_args) in backends(&mut failed) {
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
