//! `cargo xtask api-check`: `api/openapi.json` checked the way SDK users check it, by three
//! pinned third-party tools, each a step of its own with a one-line verdict:
//!
//! 1. Redocly CLI `lint` with the `recommended` ruleset (`xtask/api-tools/redocly.yaml`);
//! 2. Spectral `lint` with the `spectral:oas` ruleset (`xtask/api-tools/.spectral.yaml`),
//!    failing on warnings;
//! 3. Schemathesis against a live `wsp serve` (SQLite on a temporary data directory, a free
//!    port, a key with every scope): every check, every phase including stateful testing
//!    (links inferred from the document), a fixed seed and [`MAX_EXAMPLES`] cases per
//!    operation.
//!
//! The tools are pinned in `xtask/api-tools/` (`package.json` and `package-lock.json` for npm,
//! `requirements.txt` for pip) and installed under `target/api-tools/` (`node_modules`, and a
//! virtual environment `venv`); each install is redone only when its pins change. Every step
//! runs even when an earlier one fails; the task prints a summary at the end and fails when
//! any step found something, unless `--report` is given. Reports of the last run are kept in
//! `target/api-tools/reports/` (Schemathesis's JSON, JUnit and HAR; the HAR holds the key the
//! run used, which died with the run's temporary data directory).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Result;
use crate::host;
use crate::interop::{STAMP, npm_ci, pins, python_venv, stamped};
use crate::project::project_root;

/// The document checked, relative to the project root.
const DOCUMENT: &str = "api/openapi.json";
/// Where the pins and rulesets live, relative to the project root.
const PINS: &str = "xtask/api-tools";
/// Test cases Schemathesis generates per operation and phase.
const MAX_EXAMPLES: &str = "25";
/// The seed of every Schemathesis run, so that two runs send the same requests.
const SEED: &str = "20260101";

const USAGE: &str = "usage: cargo xtask api-check [--report]

  --report   print every finding but exit 0 (the default fails when any step finds something)";

/// What one step found.
struct Verdict {
    /// The step found nothing to report.
    passed: bool,
    /// The counts, e.g. `3 errors, 5 warnings`.
    counts: String,
}

/// Runs `cargo xtask api-check ARGS`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let report_only = match args {
        [] => false,
        [flag] if flag == "--report" => true,
        _ => return Err(USAGE.into()),
    };
    let tools = tools_dir();
    std::fs::create_dir_all(tools.join("reports"))?;

    println!("== installing the pinned tools under {}", tools.display());
    let node = node_tools(&tools);
    let python = python_tools(&tools);

    type Step<'a> = (&'static str, Box<dyn FnOnce() -> Result<Verdict> + 'a>);
    let steps: Vec<Step> = vec![
        (
            "redocly",
            Box::new(|| redocly(node.as_ref().map_err(|e| e.to_string())?)),
        ),
        (
            "spectral",
            Box::new(|| spectral(node.as_ref().map_err(|e| e.to_string())?)),
        ),
        (
            "schemathesis",
            Box::new(|| schemathesis(python.as_ref().map_err(|e| e.to_string())?, &tools)),
        ),
    ];
    let mut summary = Vec::new();
    for (name, step) in steps {
        println!("\n== {name}");
        let started = Instant::now();
        let verdict = step();
        let took = started.elapsed();
        let line = match &verdict {
            Ok(v) => format!(
                "{name}: {} ({}) in {}",
                if v.passed { "passed" } else { "FAILED" },
                v.counts,
                seconds(took)
            ),
            Err(e) => format!("{name}: ERROR ({e}) in {}", seconds(took)),
        };
        println!("{line}");
        summary.push((line, matches!(verdict, Ok(Verdict { passed: true, .. }))));
    }

    println!("\n== api-check summary");
    for (line, _) in &summary {
        println!("{line}");
    }
    let failed: Vec<&str> = summary
        .iter()
        .filter(|(_, passed)| !passed)
        .map(|(line, _)| line.split(':').next().unwrap_or_default())
        .collect();
    if failed.is_empty() || report_only {
        Ok(())
    } else {
        Err(format!("api-check failed: {}", failed.join(", ")).into())
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// `target/api-tools/` (under `CARGO_TARGET_DIR` when set).
fn tools_dir() -> PathBuf {
    crate::project::target_dir().join("api-tools")
}

/// `npm ci` of the pinned linters into `tools/node_modules` (unless the same pins are there);
/// returns `node_modules/.bin`.
fn node_tools(tools: &Path) -> Result<PathBuf> {
    npm_ci(&project_root().join(PINS), tools)
}

/// The pinned Python tools in `tools/venv` (installed unless the same pins are there);
/// returns the `st` program.
fn python_tools(tools: &Path) -> Result<PathBuf> {
    let pins = pins(&project_root().join(PINS), &["requirements.txt"])?;
    let venv = tools.join("venv");
    if stamped(&venv, &pins) {
        println!("pip tools: pins unchanged, installed");
    } else {
        python_venv(&venv, &project_root().join(PINS).join("requirements.txt"))?;
        std::fs::write(venv.join(STAMP), &pins)?;
    }
    Ok(venv.join("bin").join("st"))
}

/// Runs `cmd`, echoing its command line (with `secret`, if any, shown as `***`), and returns
/// its output.
fn capture(cmd: &mut Command, secret: Option<&str>) -> Result<Output> {
    let program = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| {
            let a = a.to_string_lossy();
            if a.contains(' ') {
                format!("'{a}'")
            } else {
                a.into_owned()
            }
        })
        .collect();
    let mut line = args.join(" ");
    if let Some(secret) = secret {
        line = line.replace(secret, "***");
    }
    println!("$ {program} {line}");
    cmd.output()
        .map_err(|e| format!("cannot run {program}: {e}").into())
}

/// A tool's JSON output, or an error quoting what it said.
fn json_output(out: &Output, what: &str) -> Result<Value> {
    serde_json::from_slice(&out.stdout).map_err(|_| {
        format!(
            "{what} printed no JSON ({}): {}{}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stdout), 20),
            tail(&String::from_utf8_lossy(&out.stderr), 20)
        )
        .into()
    })
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A JSON pointer (`#/a/b~1c`) from path segments.
fn pointer(path: &[Value]) -> String {
    let mut out = String::from("#");
    for segment in path {
        let text = match segment {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push('/');
        out.push_str(&text.replace('~', "~0").replace('/', "~1"));
    }
    out
}

/// Step 1: `redocly lint` with the recommended ruleset.
fn redocly(bin: &Path) -> Result<Verdict> {
    let out = capture(
        Command::new(bin.join("redocly"))
            .args(["lint", "--config"])
            .arg(format!("{PINS}/redocly.yaml"))
            .args(["--format=json", DOCUMENT])
            .env("REDOCLY_TELEMETRY", "off")
            .env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true")
            .current_dir(project_root()),
        None,
    )?;
    let report = json_output(&out, "redocly")?;
    let problems = report["problems"].as_array().cloned().unwrap_or_default();
    for p in &problems {
        let location = &p["location"][0];
        println!(
            "  {:<7} {:<26} {} (line {})  {}",
            p["severity"].as_str().unwrap_or("?"),
            p["ruleId"].as_str().unwrap_or("?"),
            location["pointer"].as_str().unwrap_or("#"),
            location["start"]["line"],
            p["message"].as_str().unwrap_or_default(),
        );
    }
    let errors = report["totals"]["errors"].as_u64().unwrap_or(0);
    let warnings = report["totals"]["warnings"].as_u64().unwrap_or(0);
    Ok(Verdict {
        passed: problems.is_empty() && out.status.success(),
        counts: format!("{errors} errors, {warnings} warnings"),
    })
}

/// Step 2: `spectral lint` with `spectral:oas`, failing on warnings.
fn spectral(bin: &Path) -> Result<Verdict> {
    let out = capture(
        Command::new(bin.join("spectral"))
            .args(["lint", "--ruleset"])
            .arg(format!("{PINS}/.spectral.yaml"))
            .args(["--fail-severity=warn", "--format=json", "--quiet", DOCUMENT])
            .current_dir(project_root()),
        None,
    )?;
    let report = json_output(&out, "spectral")?;
    let problems = report.as_array().cloned().unwrap_or_default();
    let mut counts = [0usize; 4];
    for p in &problems {
        let severity = p["severity"].as_u64().unwrap_or(0).min(3) as usize;
        counts[severity] += 1;
        println!(
            "  {:<7} {:<26} {} (line {})  {}",
            ["error", "warning", "info", "hint"][severity],
            p["code"].as_str().unwrap_or("?"),
            pointer(p["path"].as_array().map_or(&[][..], Vec::as_slice)),
            p["range"]["start"]["line"].as_u64().unwrap_or(0) + 1,
            p["message"].as_str().unwrap_or_default(),
        );
    }
    Ok(Verdict {
        passed: problems.is_empty() && out.status.success(),
        counts: format!(
            "{} errors, {} warnings, {} infos, {} hints",
            counts[0], counts[1], counts[2], counts[3]
        ),
    })
}

/// Step 3: Schemathesis against a live `wsp serve` on SQLite.
fn schemathesis(st: &Path, tools: &Path) -> Result<Verdict> {
    let host = host::start("sqlite", &[])?;
    let key = host.create_key("default", host::ALL_SCOPES)?;
    let reports = tools.join("reports");
    // Schemathesis reads `schemathesis.toml` and writes `.hypothesis/` in its working
    // directory: the reports directory, so that nothing in the project steers or receives them.
    let report_json = reports.join("schemathesis.json");
    let _ = std::fs::remove_file(&report_json);
    let out = capture(
        Command::new(st)
            .arg("run")
            .arg(project_root().join(DOCUMENT))
            .args(["--url", &host.url])
            .arg("--header")
            .arg(format!("Authorization: Bearer {key}"))
            .args(["--checks", "all"])
            .args(["--phases", "examples,coverage,fuzzing,stateful"])
            .args(["--max-examples", MAX_EXAMPLES, "--seed", SEED])
            .args(["--generation-database", "none", "--workers", "1"])
            // Schemathesis would hide every header named like a secret, `Idempotency-Key`
            // too, which is what some findings are about: only the key is hidden, below.
            .args(["--output-sanitize", "false"])
            .args(["--no-color", "--report", "json,junit,har"])
            .arg("--report-dir")
            .arg(&reports)
            .arg("--report-json-path")
            .arg(&report_json)
            .arg("--report-junit-path")
            .arg(reports.join("schemathesis.xml"))
            .arg("--report-har-path")
            .arg(reports.join("schemathesis.har"))
            .env("NO_COLOR", "1")
            .current_dir(&reports),
        Some(&key),
    )?;
    let stdout = String::from_utf8_lossy(&out.stdout).replace(&key, "***");
    let report: Value = std::fs::read(&report_json)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| {
            format!(
                "schemathesis wrote no report ({}): {}{}",
                out.status,
                tail(&stdout, 30),
                tail(&String::from_utf8_lossy(&out.stderr), 30)
            )
        })?;
    print_sections(&stdout);
    let phases: Vec<String> = ["examples", "coverage", "fuzzing", "stateful"]
        .iter()
        .map(|phase| {
            let status = report["phases"][phase]["status"].as_str().unwrap_or("?");
            format!("{phase} {status}")
        })
        .collect();
    println!("  phases: {}", phases.join(", "));
    // How much of the stateful phase ran: its scenarios, and the links it followed.
    for line in stdout.lines().map(str::trim) {
        if line.starts_with("Scenarios:") || line.starts_with("API Links:") {
            println!(
                "  stateful {}",
                line.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
    }
    for failure in report["failures"].as_array().into_iter().flatten() {
        let operations: Vec<&str> = failure["operations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        println!(
            "  {} {}: {} ({})",
            failure["code"].as_str().unwrap_or("?"),
            failure["title"].as_str().unwrap_or("?"),
            failure["count"],
            operations.join(", ")
        );
    }
    for error in report["errors"].as_array().into_iter().flatten() {
        println!("  error: {error}");
    }
    let cases = &report["test_cases"];
    let operations = &report["operations"];
    let unique = cases["unique_failures"].as_u64().unwrap_or(0);
    let errors = report["errors"].as_array().map_or(0, Vec::len);
    Ok(Verdict {
        passed: out.status.success() && unique == 0 && errors == 0,
        counts: format!(
            "{unique} unique failures in {} test cases, {errors} errors; {} of {} operations \
             tested, seed {SEED}",
            cases["generated"], operations["tested"], operations["total"]
        ),
    })
}

/// Prints Schemathesis's own account of its findings: the `FAILURES`, `ERRORS` and `WARNINGS`
/// sections of its output (not the progress lines around them).
fn print_sections(stdout: &str) {
    let mut printing = false;
    for line in stdout.lines() {
        if let Some(title) = section_title(line) {
            printing = matches!(title, "FAILURES" | "ERRORS" | "WARNINGS");
        }
        if printing {
            println!("{line}");
        }
    }
}

/// `FAILURES` for a banner line such as `===== FAILURES =====`.
fn section_title(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("==")?.trim_matches('=').trim();
    (!inner.is_empty() && line.ends_with("==")).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_escape_their_segments() {
        let path = json!(["paths", "/v1/runs/{runId}", "get", 0, "a~b"]);
        assert_eq!(
            pointer(path.as_array().unwrap()),
            "#/paths/~1v1~1runs~1{runId}/get/0/a~0b"
        );
        assert_eq!(pointer(&[]), "#");
    }

    #[test]
    fn only_banner_lines_are_sections() {
        assert_eq!(section_title("===== FAILURES ====="), Some("FAILURES"));
        assert_eq!(
            section_title("===== 3 failures, 1 warning in 2.0s ====="),
            Some("3 failures, 1 warning in 2.0s")
        );
        assert_eq!(section_title("________ GET /v1/runs ________"), None);
        assert_eq!(section_title("==="), None);
    }
}
