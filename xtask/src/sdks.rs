//! `cargo xtask sdks`: the TypeScript and Python packages under `sdks/`, built and tested the way
//! their users build and test them, against a real `wsp serve` on SQLite and on PostgreSQL.
//!
//! 1. The packages' versions equal the workspace's ([`versions`], also a row of `cargo xtask
//!    check`).
//! 2. TypeScript (`sdks/typescript`, npm workspaces): the tree is copied to
//!    `target/sdks/typescript`, its lockfile installed with `npm ci` (again only when the pins
//!    change), the types generated from `api/openapi.json` by the pinned openapi-typescript
//!    compared with the committed `client/src/generated/openapi.ts` (`--generate` rewrites
//!    it), and every package compiled by `tsc --build` under `strict`.
//! 3. Python (`sdks/python`): a virtual environment `target/sdks/venv` gets
//!    `requirements.lock` with `pip install --require-hashes` (again only when it changes),
//!    then the packages themselves (built by their build backend, installed like a user's),
//!    and `mypy --strict` checks their sources and tests.
//! 4. For each backend a fresh `wsp serve` (the machinery of `cargo xtask conformance`, with
//!    PostgreSQL from the `wsp-pgtest` program), and each package's tests against it: node's
//!    test runner and pytest, with the server's URL and keys in the environment. Each run
//!    writes `target/conformance/client-sdk-<package>-<backend>.json`, one row of
//!    `INTEROP-MATRIX.md` (`cargo xtask interop-matrix`).
//!
//! Nothing is fetched once both installs are in place, so the task runs offline after its
//! first run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Result;
use crate::host;
use crate::interop::{STAMP, pins, run_checked, stamped};
use crate::project::{ensure_file_contents, project_root, target_dir};

const USAGE: &str = "usage: cargo xtask sdks [--generate] [--backend sqlite|postgres]...

  --generate   rewrite sdks/typescript/client/src/generated/openapi.ts from api/openapi.json
               (without it, a stale file fails the task)
  --backend    test against this backend only (repeatable; default: sqlite and postgres)";

/// The TypeScript packages: directory under `sdks/typescript`, npm name, and the label of
/// their interop report.
const TS_PACKAGES: &[(&str, &str, &str)] = &[
    ("client", "@wsp/client", "@wsp/client (TypeScript)"),
    (
        "langgraph",
        "@wsp/langgraph",
        "@wsp/langgraph (LangGraph.js BaseStore)",
    ),
    (
        "deepagents",
        "@wsp/deepagents",
        "@wsp/deepagents (Deep Agents backend)",
    ),
];

/// The Python packages: directory under `sdks/python`, distribution name, import name, and
/// the label of their interop report.
const PY_PACKAGES: &[(&str, &str, &str, &str)] = &[
    ("client", "wsp-client", "wsp_client", "wsp-client (Python)"),
    (
        "deepagents",
        "wsp-deepagents",
        "wsp_deepagents",
        "wsp-deepagents (Deep Agents backend, Python)",
    ),
];

/// The generated TypeScript types, relative to the project root.
const GENERATED_TS: &str = "sdks/typescript/client/src/generated/openapi.ts";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Args {
    generate: bool,
    backends: Vec<String>,
}

fn parse(args: &[String]) -> Result<Args> {
    let mut parsed = Args {
        generate: false,
        backends: Vec::new(),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--generate" => parsed.generate = true,
            "--backend" => match rest.next().map(String::as_str) {
                Some(b @ ("sqlite" | "postgres")) => parsed.backends.push(b.to_owned()),
                _ => return Err(USAGE.into()),
            },
            _ => return Err(USAGE.into()),
        }
    }
    if parsed.backends.is_empty() {
        parsed.backends = vec!["sqlite".into(), "postgres".into()];
    }
    Ok(parsed)
}

/// Runs `cargo xtask sdks ARGS`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let args = parse(args)?;
    versions(true)?;
    let work = target_dir().join("sdks");
    std::fs::create_dir_all(&work)?;

    println!("== TypeScript: npm ci, generated types, tsc --build (strict)");
    let ts = typescript(&work, args.generate)?;
    println!("== Python: pip install --require-hashes, the packages, mypy --strict");
    let python = python(&work)?;

    let reports = host::report_dir()?;
    let mut failed = Vec::new();
    for backend in &args.backends {
        let store = match backend.as_str() {
            "postgres" => match crate::conformance::postgres_url() {
                Ok(url) => url,
                Err(e) => {
                    eprintln!("error: the PostgreSQL backend cannot be tested: {e}");
                    failed.push("postgres".to_owned());
                    continue;
                }
            },
            other => other.to_owned(),
        };
        let host = host::start(&store, &[])?;
        // Each package gets a tenant of its own, so that its files count against its own
        // limits (the host allows 64 files per owner) and no package sees another's.
        let env = |tenant: &str| -> Result<Vec<(&'static str, String)>> {
            Ok(vec![
                ("WSP_URL", host.url.clone()),
                ("WSP_KEY", host.create_key(tenant, host::ALL_SCOPES)?),
                (
                    "WSP_KEY_READONLY",
                    host.create_key(tenant, "workspace:read")?,
                ),
                ("WSP_KEY_OTHER", host.key_b.clone()),
                (
                    "WSP_OPENAPI",
                    project_root().join(DOCUMENT).display().to_string(),
                ),
                (
                    "WSP_PATH_VECTORS",
                    project_root()
                        .join("conformance/vectors/paths.json")
                        .display()
                        .to_string(),
                ),
                ("WSP_REPORT_HOST", format!("wsp serve ({backend})")),
            ])
        };
        for (dir, name, label) in TS_PACKAGES {
            println!("== {name} against wsp serve ({backend}) at {}", host.url);
            let report = reports.join(format!("client-sdk-ts-{dir}-{backend}.json"));
            let env = env(&format!("sdk-ts-{dir}"))?;
            if let Err(e) = ts_tests(&ts, dir, label, &env, &report) {
                eprintln!("error: {e}");
                failed.push(format!("{name} ({backend})"));
            }
        }
        for (dir, name, _, label) in PY_PACKAGES {
            println!("== {name} against wsp serve ({backend}) at {}", host.url);
            let report = reports.join(format!("client-sdk-py-{dir}-{backend}.json"));
            let env = env(&format!("sdk-py-{dir}"))?;
            if let Err(e) = py_tests(&python, dir, label, &env, &report) {
                eprintln!("error: {e}");
                failed.push(format!("{name} ({backend})"));
            }
        }
    }
    if failed.is_empty() {
        println!(
            "sdks: every package passed; reports in {}",
            reports.display()
        );
        Ok(())
    } else {
        Err(format!("sdks failed: {}", failed.join(", ")).into())
    }
}

/// The OpenAPI document, relative to the project root.
const DOCUMENT: &str = "api/openapi.json";

/// Copies `sdks/typescript` into `work/typescript`, installs its lockfile, checks (or with
/// `generate` rewrites) the generated types and compiles every package; returns the copy.
fn typescript(work: &Path, generate: bool) -> Result<PathBuf> {
    let source = project_root().join("sdks/typescript");
    let dest = work.join("typescript");
    sync_tree(&source, &dest)?;
    let lock = pins(&source, &["package.json", "package-lock.json"])?;
    let modules = dest.join("node_modules");
    if stamped(&modules, &lock) {
        println!("npm packages: pins unchanged, installed");
    } else {
        run_checked(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dest),
            "npm ci in target/sdks/typescript (needs Node.js 20 and npm)",
        )?;
        std::fs::write(modules.join(STAMP), &lock)?;
    }
    let bin = modules.join(".bin");
    let generated = dest.join("openapi.generated.ts");
    run_checked(
        Command::new(bin.join("openapi-typescript"))
            .arg(project_root().join(DOCUMENT))
            .arg("--output")
            .arg(&generated)
            .current_dir(&dest),
        "openapi-typescript",
    )?;
    let text = std::fs::read_to_string(&generated)?;
    ensure_file_contents(
        GENERATED_TS,
        &text,
        !generate,
        "cargo xtask sdks --generate",
    )?;
    std::fs::write(dest.join("client/src/generated/openapi.ts"), &text)?;
    run_checked(
        Command::new(bin.join("tsc"))
            .arg("--build")
            .arg("--force")
            .current_dir(&dest),
        "tsc --build (strict) of sdks/typescript",
    )?;
    Ok(dest)
}

/// Makes `dest` a copy of `source` without `node_modules`, `dist` and build info, keeping
/// `dest/node_modules` (the installed packages, whose workspace links point into the copy).
fn sync_tree(source: &Path, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest)?;
    for entry in std::fs::read_dir(dest)? {
        let path = entry?.path();
        if path.file_name().is_some_and(|n| n == "node_modules") {
            continue;
        }
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    copy_dir(source, dest)
}

fn copy_dir(source: &Path, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest)?;
    for entry in std::fs::read_dir(source)? {
        let entry = entry?;
        let name = entry.file_name();
        let skip = name == "node_modules"
            || name == "dist"
            || name.to_string_lossy().ends_with(".tsbuildinfo");
        if skip {
            continue;
        }
        let from = entry.path();
        let to = dest.join(&name);
        if entry.file_type()?.is_dir() {
            copy_dir(&from, &to)?;
        } else {
            std::fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

/// Runs the compiled tests of the TypeScript package `dir` with the reporter `report.mjs`.
fn ts_tests(
    ts: &Path,
    dir: &str,
    label: &str,
    env: &[(&str, String)],
    report: &Path,
) -> Result<()> {
    let tests = ts.join(dir).join("dist/test");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&tests)
        .map_err(|e| format!("{}: {e}", tests.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".test.js"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no tests in {}", tests.display()).into());
    }
    let version = package_version(&ts.join(dir).join("package.json"))?;
    run_bounded(
        Command::new("node")
            .args([
                "--test",
                "--test-reporter=./report.mjs",
                "--test-reporter-destination=stdout",
            ])
            .args(&files)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("WSP_REPORT", report)
            .env("WSP_REPORT_CLIENT", label)
            .env("WSP_REPORT_VERSION", version)
            .current_dir(ts),
        &format!("the tests of sdks/typescript/{dir}"),
    )
}

/// How long one package's tests may run before they are stopped and fail: a test that leaves
/// a change-feed stream open would otherwise keep its runner waiting for ever.
const TEST_DEADLINE: Duration = Duration::from_secs(600);

/// Runs `cmd` like [`run_checked`], but kills it and fails after [`TEST_DEADLINE`].
fn run_bounded(cmd: &mut Command, what: &str) -> Result<()> {
    let mut child = cmd.spawn().map_err(|e| format!("{what}: {e}"))?;
    let deadline = Instant::now() + TEST_DEADLINE;
    loop {
        if let Some(status) = child.try_wait()? {
            return if status.success() {
                Ok(())
            } else {
                Err(format!("{what} failed ({status})").into())
            };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(
                format!("{what} did not finish within {} s", TEST_DEADLINE.as_secs()).into(),
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `version` of a `package.json`.
fn package_version(path: &Path) -> Result<String> {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    json["version"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{} has no version", path.display()).into())
}

/// The virtual environment `work/venv` with the locked requirements and the packages
/// installed, and the packages checked by `mypy --strict`; returns its Python.
fn python(work: &Path) -> Result<PathBuf> {
    let source = project_root().join("sdks/python");
    let venv = work.join("venv");
    let python = venv.join("bin").join("python");
    if !python.exists() {
        let interpreter = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run_checked(
            Command::new(interpreter).args(["-m", "venv"]).arg(&venv),
            "creating the Python virtual environment target/sdks/venv",
        )?;
    }
    let lock = pins(&source, &["requirements.lock"])?;
    if stamped(&venv, &lock) {
        println!("Python packages: pins unchanged, installed");
    } else {
        run_checked(
            Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--require-hashes", "--no-deps", "-r"])
                .arg(source.join("requirements.lock")),
            "pip install --require-hashes -r sdks/python/requirements.lock",
        )?;
        std::fs::write(venv.join(STAMP), &lock)?;
    }
    let mut install = Command::new(&python);
    install
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args([
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--force-reinstall",
        ]);
    for (dir, ..) in PY_PACKAGES {
        install.arg(source.join(dir));
    }
    run_checked(&mut install, "pip install of the packages of sdks/python")?;
    run_checked(
        Command::new(&python)
            .args(["-m", "pip", "check", "--disable-pip-version-check"])
            .env("PIP_NO_INDEX", "1"),
        "pip check (the locked requirements satisfy every package)",
    )?;
    let mut mypy = Command::new(&python);
    mypy.args(["-m", "mypy", "--strict", "--config-file"])
        .arg(source.join("pyproject.toml"));
    for (dir, ..) in PY_PACKAGES {
        mypy.arg(source.join(dir).join("src"))
            .arg(source.join(dir).join("tests"));
    }
    run_checked(mypy.current_dir(&source), "mypy --strict of sdks/python")?;
    Ok(python)
}

/// Runs pytest on the tests of the Python package `dir` (the installed package, not the
/// sources beside them).
fn py_tests(
    python: &Path,
    dir: &str,
    label: &str,
    env: &[(&str, String)],
    report: &Path,
) -> Result<()> {
    let source = project_root().join("sdks/python");
    let version = python_version(&source.join(dir).join("pyproject.toml"))?;
    run_bounded(
        Command::new(python)
            .args(["-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir"])
            .arg(&source)
            .arg(source.join(dir).join("tests"))
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("WSP_REPORT", report)
            .env("WSP_REPORT_CLIENT", label)
            .env("WSP_REPORT_VERSION", version)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(&source),
        &format!("the tests of sdks/python/{dir}"),
    )
}

/// The `version` of a `pyproject.toml`'s `[project]` table.
fn python_version(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path)?;
    quoted_after(&text, "\nversion = \"")
        .into_iter()
        .next()
        .map(|(s, e)| text[s..e].to_owned())
        .ok_or_else(|| format!("{} has no version", path.display()).into())
}

/// The byte ranges of the values that follow each `needle` in `text`, up to the next `"`.
fn quoted_after(text: &str, needle: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(needle) {
        let start = from + i + needle.len();
        let Some(len) = text[start..].find('"') else {
            break;
        };
        ranges.push((start, start + len));
        from = start + len;
    }
    ranges
}

/// The workspace's version (`[workspace.package] version` of the root `Cargo.toml`).
fn workspace_version() -> Result<String> {
    let text = std::fs::read_to_string(project_root().join("Cargo.toml"))?;
    let table = text
        .split("\n[workspace.package]")
        .nth(1)
        .ok_or("Cargo.toml has no [workspace.package]")?;
    let table = table.split("\n[").next().unwrap_or_default();
    quoted_after(table, "\nversion = \"")
        .into_iter()
        .next()
        .map(|(s, e)| table[s..e].to_owned())
        .ok_or_else(|| "[workspace.package] has no version".into())
}

/// Every place a package's own version, or the version of a sibling package it depends on, is
/// written: a file (from the project root) and the text that precedes the value.
const VERSION_PINS: &[(&str, &str)] = &[
    ("sdks/typescript/client/package.json", "\n  \"version\": \""),
    (
        "sdks/typescript/langgraph/package.json",
        "\n  \"version\": \"",
    ),
    (
        "sdks/typescript/langgraph/package.json",
        "\"@wsp/client\": \"",
    ),
    (
        "sdks/typescript/deepagents/package.json",
        "\n  \"version\": \"",
    ),
    (
        "sdks/typescript/deepagents/package.json",
        "\"@wsp/client\": \"",
    ),
    ("sdks/python/client/pyproject.toml", "\nversion = \""),
    (
        "sdks/python/client/src/wsp_client/_version.py",
        "__version__ = \"",
    ),
    ("sdks/python/deepagents/pyproject.toml", "\nversion = \""),
    ("sdks/python/deepagents/pyproject.toml", "\"wsp-client=="),
    (
        "sdks/python/deepagents/src/wsp_deepagents/_version.py",
        "__version__ = \"",
    ),
];

/// The packages of `sdks/` carry the workspace's version: in their manifests, in the version
/// their code reports, in their dependencies on each other and in the npm lockfile. Without
/// `check`, rewrites the manifests and code (then refresh the lockfile with
/// `npm install --package-lock-only` in `sdks/typescript`); with it, fails on any mismatch.
pub(crate) fn versions(check: bool) -> Result<()> {
    let version = workspace_version()?;
    let mut stale = Vec::new();
    let mut files: Vec<&str> = VERSION_PINS.iter().map(|(f, _)| *f).collect();
    files.dedup();
    for file in files {
        let mut text = std::fs::read_to_string(project_root().join(file))
            .map_err(|e| format!("{file}: {e}"))?;
        for (_, needle) in VERSION_PINS.iter().filter(|(f, _)| *f == file) {
            let ranges = quoted_after(&text, needle);
            if ranges.is_empty() {
                return Err(format!("{file}: no {needle:?} followed by a version").into());
            }
            // From the end, so that earlier ranges stay valid as the text changes length.
            for (start, end) in ranges.into_iter().rev() {
                if text[start..end] != version {
                    stale.push(format!("{file}: {} (want {version})", &text[start..end]));
                    text.replace_range(start..end, &version);
                }
            }
        }
        ensure_file_contents(file, &text, check, "cargo xtask sdk-versions")?;
    }
    let lock_path = "sdks/typescript/package-lock.json";
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(project_root().join(lock_path))?)?;
    for (dir, ..) in TS_PACKAGES {
        let entry = &lock["packages"][*dir];
        let mut seen = vec![entry["version"].as_str()];
        if let Some(dep) = entry["dependencies"]["@wsp/client"].as_str() {
            seen.push(Some(dep));
        }
        for v in seen {
            if v != Some(version.as_str()) {
                stale.push(format!(
                    "{lock_path}: {dir} at {v:?} (want {version}; run `npm install --package-lock-only` in sdks/typescript)"
                ));
            }
        }
    }
    if stale.is_empty() {
        Ok(())
    } else if check {
        Err(format!(
            "the packages of sdks/ are not at the workspace's version {version} (run `cargo xtask sdk-versions`):\n  {}",
            stale.join("\n  ")
        )
        .into())
    } else {
        for line in &stale {
            println!("rewrote {line}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Option<Args> {
        let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        parse(&args).ok()
    }

    #[test]
    fn parses_its_flags() {
        let both = vec!["sqlite".to_owned(), "postgres".to_owned()];
        assert_eq!(
            args(""),
            Some(Args {
                generate: false,
                backends: both.clone()
            })
        );
        assert_eq!(
            args("--generate"),
            Some(Args {
                generate: true,
                backends: both
            })
        );
        assert_eq!(
            args("--backend sqlite"),
            Some(Args {
                generate: false,
                backends: vec!["sqlite".into()]
            })
        );
        assert_eq!(args("--backend"), None);
        assert_eq!(args("--backend memory"), None);
        assert_eq!(args("--check"), None);
    }

    #[test]
    fn finds_every_quoted_value_after_a_needle() {
        let text = "{\n  \"version\": \"0.1.0\",\n  \"x\": {\"@wsp/client\": \"0.1.0\"}}";
        let ranges = quoted_after(text, "\"@wsp/client\": \"");
        assert_eq!(ranges.len(), 1);
        assert_eq!(&text[ranges[0].0..ranges[0].1], "0.1.0");
        assert!(quoted_after(text, "\"missing\": \"").is_empty());
        assert_eq!(quoted_after("a=\"1\" a=\"2\"", "a=\"").len(), 2);
    }

    #[test]
    fn the_packages_carry_the_workspace_version() {
        versions(true).unwrap();
    }
}
