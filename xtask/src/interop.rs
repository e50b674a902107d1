//! `cargo xtask interop`: real clients against `wsp serve` on the embedded default.
//!
//! - the OpenWOP Python client (`openwop-client` 1.8.0 from PyPI), unmodified, in its own
//!   virtual environment under `target/interop/venv`;
//! - `wsp-client`, through its `interop` example;
//! - the official MCP Python SDK (`mcp` from PyPI, same virtual environment) against `wsp mcp`,
//!   over stdio and streamable HTTP (`interop/mcp_client_check.py`).
//!
//! Each writes a JSON report to `target/conformance/client-*.json`.

use std::path::Path;
use std::process::Command;

use crate::Result;
use crate::host;
use crate::project::project_root;

/// Runs `cmd`; an error names `what` when it cannot start or exits unsuccessfully.
pub(crate) fn run_checked(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})").into())
    }
}

/// The virtual environment `dir` (created when missing) with `requirements` installed; returns
/// its Python.
pub(crate) fn python_venv(dir: &Path, requirements: &Path) -> Result<std::path::PathBuf> {
    let python = dir.join("bin").join("python");
    if !python.exists() {
        let interpreter = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run_checked(
            Command::new(interpreter).args(["-m", "venv"]).arg(dir),
            "creating the Python virtual environment",
        )?;
    }
    run_checked(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(requirements),
        &format!("pip install -r {}", requirements.display()),
    )?;
    Ok(python)
}

/// Runs every client; fails when any reports a failed check.
pub(crate) fn run() -> Result<()> {
    let reports = host::report_dir()?;
    let venv = reports
        .parent()
        .ok_or("target dir")?
        .join("interop")
        .join("venv");
    let python = python_venv(&venv, &project_root().join("interop/requirements.txt"))?;
    let host = host::start("sqlite", &[])?;
    let mut failures = Vec::new();

    println!("== openwop-client 1.8.0 (Python) against {}", host.url);
    let py = Command::new(&python)
        .arg(project_root().join("interop/openwop_client_check.py"))
        .args([&host.url, &host.key_a, "--agent", host::AGENT_A, "--json"])
        .arg(reports.join("client-openwop-python.json"))
        .status()?;
    if !py.success() {
        failures.push("openwop-client (Python)");
    }

    println!("== wsp-client against {}", host.url);
    let rust = Command::new(crate::project::cargo())
        .args([
            "run",
            "--quiet",
            "-p",
            "wsp-client",
            "--example",
            "interop",
            "--",
        ])
        .args([&host.url, &host.key_a, "--agent", host::AGENT_A, "--json"])
        .arg(reports.join("client-wsp-client.json"))
        .current_dir(project_root())
        .status()?;
    if !rust.success() {
        failures.push("wsp-client");
    }

    println!("== MCP Python SDK against wsp mcp (stdio, streamable HTTP)");
    let mcp = Command::new(&python)
        .arg(project_root().join("interop/mcp_client_check.py"))
        .arg(host::wsp_binary()?)
        .arg("--json")
        .arg(reports.join("client-mcp-python.json"))
        .status()?;
    if !mcp.success() {
        failures.push("mcp (Python SDK)");
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("interop failed for: {}", failures.join(", ")).into())
    }
}
