//! `cargo xtask fuzz [--seconds N] [TARGET...]`: coverage-guided fuzzing with libFuzzer.
//!
//! The targets are library functions of `crates/wsp-fuzz`; `fuzz/` is the cargo-fuzz project
//! that wraps each in a libFuzzer binary (its own workspace, built into `fuzz/target`). This
//! task installs the pinned cargo-fuzz into `target/tools` when it is missing, builds every
//! target once, and runs each for N seconds (two at a time on a machine with two cores or
//! more). libFuzzer starts from the committed seeds (`fuzz/corpus/<target>/`) and the committed
//! crashes (`fuzz/regressions/<target>/`), and writes what it learns to `fuzz/target/corpus`,
//! never to the committed directories. A crash is copied to `fuzz/regressions/<target>/`, where
//! `cargo test -p wsp-fuzz` replays it from then on, and the task fails naming the file.
//!
//! The build uses `--sanitizer none`: the workspace forbids `unsafe`, so AddressSanitizer would
//! check only the dependencies' unsafe code, at twice the run time and with nightly-only
//! compiler flags. Debug assertions (integer overflow included) stay on.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::Result;
use crate::project::{cargo, project_root};

/// The cargo-fuzz release the task installs and expects.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Seconds each target runs when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 60;

/// How long one input may run before libFuzzer calls it a hang (seconds).
const INPUT_TIMEOUT: u64 = 30;

/// Memory one fuzzing process may use (MiB).
const RSS_LIMIT_MB: u64 = 2048;

/// The host triple cargo-fuzz builds for by default, and so where the binaries are.
const TRIPLE: &str = "x86_64-unknown-linux-gnu";

const USAGE: &str = "usage: cargo xtask fuzz [--seconds N] [TARGET...]   (N from 1 to 86400; \
                     every target when none is named)";

/// What `cargo xtask fuzz` was asked.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    /// Seconds per target.
    seconds: u64,
    /// The targets named, or empty for all.
    targets: Vec<String>,
}

/// Reads `[--seconds N] [TARGET...]`.
pub(crate) fn parse(args: &[String]) -> Result<Options> {
    let mut seconds = DEFAULT_SECONDS;
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=86_400).contains(n))
                    .ok_or(USAGE)?;
            }
            name if !name.starts_with('-') => targets.push(name.to_owned()),
            _ => return Err(USAGE.into()),
        }
    }
    Ok(Options { seconds, targets })
}

/// Runs `cargo xtask fuzz` with the parsed options.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let options = parse(args)?;
    let root = project_root();
    let available = available_targets(&root)?;
    let targets = if options.targets.is_empty() {
        available.clone()
    } else {
        for t in &options.targets {
            if !available.contains(t) {
                return Err(format!(
                    "no fuzz target {t:?}; the targets are: {}",
                    available.join(", ")
                )
                .into());
            }
        }
        options.targets
    };
    let started = Instant::now();
    let cargo_fuzz = cargo_fuzz(&root)?;
    build(&root, &cargo_fuzz, &targets, targets == available)?;
    eprintln!(
        "fuzz: built {} target(s) in {:.0?}; running each for {} s",
        targets.len(),
        started.elapsed(),
        options.seconds
    );
    let jobs = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2);
    let mut failures = Vec::new();
    for batch in targets.chunks(jobs) {
        let runs: Vec<_> = batch
            .iter()
            .map(|t| fuzz_one(&root, t, options.seconds))
            .collect::<Result<_>>()?;
        for (target, child) in batch.iter().zip(runs) {
            if let Err(err) = finish(&root, target, child) {
                failures.push(err.to_string());
            }
        }
    }
    eprintln!("fuzz: done in {:.0?}", started.elapsed());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n\n").into())
    }
}

/// The targets of `fuzz/fuzz_targets/*.rs`, sorted.
fn available_targets(root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(root.join("fuzz/fuzz_targets"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "rs")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            out.push(stem.to_owned());
        }
    }
    out.sort();
    Ok(out)
}

/// Whether `program --version` names the pinned cargo-fuzz.
fn is_pinned(program: &Path) -> bool {
    Command::new(program)
        .arg("--version")
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|out| {
            String::from_utf8_lossy(&out.stdout).trim()
                == format!("cargo-fuzz {CARGO_FUZZ_VERSION}")
        })
}

/// The pinned cargo-fuzz: `target/tools/bin/cargo-fuzz`, else one on `PATH`, else installed
/// into `target/tools` from crates.io.
fn cargo_fuzz(root: &Path) -> Result<PathBuf> {
    let local = root.join("target/tools/bin/cargo-fuzz");
    if is_pinned(&local) {
        return Ok(local);
    }
    if is_pinned(Path::new("cargo-fuzz")) {
        return Ok(PathBuf::from("cargo-fuzz"));
    }
    eprintln!("fuzz: installing cargo-fuzz {CARGO_FUZZ_VERSION} into target/tools");
    let status = Command::new(cargo())
        .args(["install", "--locked", "--version", CARGO_FUZZ_VERSION])
        .arg("--root")
        .arg(root.join("target/tools"))
        .arg("cargo-fuzz")
        .status()?;
    if !status.success() || !is_pinned(&local) {
        return Err(format!("installing cargo-fuzz {CARGO_FUZZ_VERSION} failed ({status})").into());
    }
    Ok(local)
}

/// Builds the targets (all of them in one cargo run when `every` target is wanted).
///
/// `fuzz/Cargo.lock` starts as a copy of the workspace's `Cargo.lock` (it is not committed), so
/// the targets are built with exactly the versions the workspace tests; cargo adds libFuzzer's
/// own few dependencies.
fn build(root: &Path, cargo_fuzz: &Path, targets: &[String], every: bool) -> Result<()> {
    fs::copy(root.join("Cargo.lock"), root.join("fuzz/Cargo.lock"))?;
    let names: Vec<Option<&str>> = if every {
        vec![None]
    } else {
        targets.iter().map(|t| Some(t.as_str())).collect()
    };
    for name in names {
        let mut cmd = Command::new(cargo_fuzz);
        cmd.args(["fuzz", "build", "--fuzz-dir", "fuzz", "--sanitizer", "none"])
            .args(["--release", "--debug-assertions"])
            .current_dir(root);
        if let Some(name) = name {
            cmd.arg(name);
        }
        let status = cmd.status()?;
        if !status.success() {
            return Err(format!("building the fuzz targets failed ({status})").into());
        }
    }
    Ok(())
}

/// A fuzzing process under way.
struct Run {
    child: std::process::Child,
    log: PathBuf,
    artifacts: PathBuf,
}

/// Starts libFuzzer on `target` for `seconds`, its output in `fuzz/target/logs/<target>.log`.
fn fuzz_one(root: &Path, target: &str, seconds: u64) -> Result<Run> {
    let work = root.join("fuzz/target");
    let corpus = work.join("corpus").join(target);
    let artifacts = work.join("artifacts").join(target);
    let logs = work.join("logs");
    let _ = fs::remove_dir_all(&artifacts);
    for dir in [&corpus, &artifacts, &logs] {
        fs::create_dir_all(dir)?;
    }
    let log = logs.join(format!("{target}.log"));
    let binary = work.join(TRIPLE).join("release").join(target);
    let mut cmd = Command::new(&binary);
    // Temporary directories (the vfs_tools target makes one per input) in memory when the
    // machine has /dev/shm: disk latency would otherwise dominate the run.
    if Path::new("/dev/shm").is_dir() {
        cmd.env("TMPDIR", "/dev/shm");
    }
    cmd.arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1")
        // New inputs go to the first directory only: the committed ones are read, never written.
        .arg(&corpus);
    for committed in ["corpus", "regressions"] {
        let dir = root.join("fuzz").join(committed).join(target);
        if dir.is_dir() {
            cmd.arg(dir);
        }
    }
    let out = fs::File::create(&log)?;
    cmd.current_dir(root)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    Ok(Run {
        child,
        log,
        artifacts,
    })
}

/// Waits for a fuzzing process; on a crash, copies the input into `fuzz/regressions/<target>/`
/// and answers an error naming it.
fn finish(root: &Path, target: &str, mut run: Run) -> Result<()> {
    let status = run.child.wait()?;
    let log = fs::read_to_string(&run.log).unwrap_or_default();
    let execs = log
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .map_or("?", str::trim);
    let coverage = log
        .lines()
        .rev()
        .find_map(|l| l.split(" cov: ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("?");
    let mut crashes = Vec::new();
    for entry in fs::read_dir(&run.artifacts)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if ["crash-", "timeout-", "oom-", "leak-"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            let dest_dir = root.join("fuzz/regressions").join(target);
            fs::create_dir_all(&dest_dir)?;
            // An input already committed (a known regression still failing) is not copied again.
            let dest = match known(&dest_dir, &fs::read(&path)?)? {
                Some(known) => known,
                None => {
                    let dest = dest_dir.join(name);
                    fs::copy(&path, &dest)?;
                    dest
                }
            };
            crashes.push(
                dest.strip_prefix(root)
                    .unwrap_or(&dest)
                    .display()
                    .to_string(),
            );
        }
    }
    if status.success() && crashes.is_empty() {
        eprintln!("fuzz: {target}: ok ({execs} runs, coverage {coverage})");
        return Ok(());
    }
    let lines: Vec<&str> = log.lines().collect();
    eprintln!(
        "fuzz: {target}: FAILED ({status}); the end of {}:\n{}",
        run.log.display(),
        lines[lines.len().saturating_sub(40)..].join("\n")
    );
    if crashes.is_empty() {
        return Err(format!(
            "fuzz target {target} failed ({status}) without leaving an input; see {}",
            run.log.display()
        )
        .into());
    }
    Err(format!(
        "fuzz target {target} fails on {files} (kept in fuzz/regressions/{target}/).\n\
         Reproduce: cargo test -p wsp-fuzz --test it replay::{target}\n\
         (or run fuzz/target/{TRIPLE}/release/{target} {files}).\n\
         Commit the file with the fix: from then on `cargo test -p wsp-fuzz` replays it.",
        files = crashes.join(" ")
    )
    .into())
}

/// The file of `dir` whose content is `data`, if there is one.
fn known(dir: &Path, data: &[u8]) -> Result<Option<PathBuf>> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && fs::read(&path)? == data {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &str, expect: Option<(u64, &[&str])>) {
        let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        let want = expect.map(|(seconds, targets)| Options {
            seconds,
            targets: targets.iter().map(|t| (*t).to_owned()).collect(),
        });
        assert_eq!(parse(&args).ok(), want, "{args:?}");
    }

    #[test]
    fn parses_seconds_and_targets() {
        check("", Some((DEFAULT_SECONDS, &[])));
        check("--seconds 5", Some((5, &[])));
        check(
            "paths --seconds 5 sse_chunks",
            Some((5, &["paths", "sse_chunks"])),
        );
        check("paths", Some((DEFAULT_SECONDS, &["paths"])));
        check("--seconds", None);
        check("--seconds 0", None);
        check("--seconds x", None);
        check("--minutes 5", None);
    }

    #[test]
    fn every_target_has_a_seed_directory() {
        let root = project_root();
        let targets = available_targets(&root).unwrap();
        assert!(!targets.is_empty());
        for t in targets {
            assert!(
                root.join("fuzz/corpus").join(&t).is_dir(),
                "fuzz/corpus/{t} is missing"
            );
        }
    }
}
