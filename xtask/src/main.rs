//! `cargo xtask`: the project's automation, written in Rust so it runs wherever cargo does.
//!
//! Every generated artefact has one module with a `generate(check: bool)` function. With
//! `check == false` it rewrites the artefact; with `check == true` it rebuilds it in memory
//! and fails when the committed file differs. `cargo xtask check` runs every generator in
//! check mode.
//!
//! **Invariant:** nothing depends on this crate, and it is the only crate that depends on
//! typify.

mod apicheck;
mod asyncapi;
mod bench;
mod bench_http;
mod bench_soak;
mod codegen;
mod config_schema;
mod conformance;
mod console;
mod fuzz;
mod host;
mod interop;
mod man;
mod matrix;
mod openapi;
mod package;
mod project;
mod schemas;
mod sdks;

use std::process::ExitCode;

/// What every task returns: an error is printed and turns into a non-zero exit status.
type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

/// A generator: rewrites its artefact, or under `check` fails when the committed one is stale.
type Generator = fn(bool) -> Result<()>;

/// Every generated artefact, in the order `cargo xtask check` verifies them. A new generator
/// (such as `openapi`) is one more row here and one more module.
const GENERATORS: &[(&str, Generator)] = &[
    ("codegen", codegen::generate),
    ("asyncapi", asyncapi::generate),
    ("openapi", openapi::generate),
    ("sdk-versions", sdks::versions),
];

const USAGE: &str = "\
usage: cargo xtask <task> [--check]

tasks:
  codegen [--check]   generate crates/wsp-types/src/wire.rs from schemas/ (typify) and
                      schemas/config/{wsp,mounts}.schema.json from Rust types (schemars)
  asyncapi [--check]  generate api/asyncapi.yaml (AsyncAPI 3.0)
  openapi [--check]   generate api/openapi.json (OpenAPI 3.1) from the server's annotations
  check               run every generator with --check; fails when any output is stale
  conformance [ARGS]  run the conformance suite against `wsp serve` on every backend
                      (reports in target/conformance/; ARGS go to `wsp conformance`)
  interop             drive `wsp serve` with the OpenWOP Python client 1.8.0 and wsp-client,
                      and `wsp mcp` with the MCP Python SDK (stdio and HTTP)
  interop-matrix      write INTEROP-MATRIX.md from the reports in target/conformance/
  console             the web console's tests in headless Chromium (apt-get installs chromium
                      and chromium-driver when missing; screenshots in target/console/)
  man [--out DIR]     write the man pages of `wsp` (wsp.1, one per subcommand) into DIR
                      (default target/man)
  bench vfs [--iterations N]
                      time read_file, write_file and ls over MCP stdio: `wsp mcp` against
                      the reference filesystem server (npm), ratios against the same run
  bench snapshot      snapshot creation cost at 10, 1,000 and 100,000 files (SQLite and memory)
  bench http [--seconds S] [--rounds N]
                      wsp serve's file path (GET, PUT at 1/8/64 connections, mixed) against a
                      bare hyper server and nginx (when installed), with ratios and peak RSS
  bench soak [--minutes M] [--sample S]
                      mixed load (GETs, PUTs, change-feed subscribers, runs) on wsp serve
                      (SQLite) for M minutes (30), its resident set every S seconds (30) and
                      the slope over the last two thirds in MiB per 10 minutes
  package             cargo package every published crate, each verified from its package
                      alone (earlier extractions of the workspace's crates removed first)
  api-check [--report]
                      check api/openapi.json as SDK users do: Redocly and Spectral lint,
                      Schemathesis against `wsp serve` (--report: print, never fail)
  sdk-versions [--check]
                      set the versions of the packages of sdks/ to the workspace's
  sdks [--generate] [--backend sqlite|postgres]...
                      build, type-check and test the TypeScript and Python packages of
                      sdks/ against wsp serve on SQLite and PostgreSQL (reports in
                      target/conformance/; --generate rewrites their generated types)
  fuzz [--seconds N] [TARGET...]
                      build the libFuzzer targets of fuzz/ and run each N s (default 60); a
                      crash is saved in fuzz/regressions/<target>/ and fails the task

--check rebuilds the output in memory and fails if the committed file differs.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Task {
    /// Print the usage.
    Help,
    /// Run every generator in check mode.
    CheckAll,
    /// Run one generator (the index into [`GENERATORS`]), in check mode or not.
    Generate { index: usize, check: bool },
    /// Run the conformance suite on every backend, passing these arguments through.
    Conformance(Vec<String>),
    /// Run the client interop checks.
    Interop,
    /// Write INTEROP-MATRIX.md.
    Matrix,
    /// Write the man pages into this directory.
    Man(std::path::PathBuf),
    /// Run a benchmark, with its arguments.
    Bench(Vec<String>),
    /// Fuzz, with the arguments of [`fuzz::run`].
    Fuzz(Vec<String>),
    /// Check the OpenAPI document, with the arguments of [`apicheck::run`].
    ApiCheck(Vec<String>),
    /// `cargo package` of every published crate.
    Package,
    /// The console's browser tests.
    Console,
    /// The packages of `sdks/`, with the arguments of [`sdks::run`].
    Sdks(Vec<String>),
}

fn parse(args: &[String]) -> Result<Task> {
    let Some((task, flags)) = args.split_first() else {
        return Ok(Task::Help);
    };
    match task.as_str() {
        "conformance" => return Ok(Task::Conformance(flags.to_vec())),
        "interop" if flags.is_empty() => return Ok(Task::Interop),
        "interop-matrix" if flags.is_empty() => return Ok(Task::Matrix),
        "man" => return Ok(Task::Man(man::out_dir(flags)?)),
        "bench" => return Ok(Task::Bench(flags.to_vec())),
        "fuzz" => return Ok(Task::Fuzz(flags.to_vec())),
        "api-check" => return Ok(Task::ApiCheck(flags.to_vec())),
        "package" if flags.is_empty() => return Ok(Task::Package),
        "console" if flags.is_empty() => return Ok(Task::Console),
        "sdks" => return Ok(Task::Sdks(flags.to_vec())),
        _ => {}
    }
    let check = match flags {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err(format!("unexpected arguments {flags:?}\n\n{USAGE}").into()),
    };
    match task.as_str() {
        "-h" | "--help" | "help" if !check => Ok(Task::Help),
        // `check` already means "check everything".
        "check" if !check => Ok(Task::CheckAll),
        name => match GENERATORS.iter().position(|(n, _)| *n == name) {
            Some(index) => Ok(Task::Generate { index, check }),
            None => Err(format!("unknown task {:?}\n\n{USAGE}", args.join(" ")).into()),
        },
    }
}

fn run(args: &[String]) -> Result<()> {
    match parse(args)? {
        Task::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Task::CheckAll => check_all(),
        Task::Generate { index, check } => (GENERATORS[index].1)(check),
        Task::Conformance(extra) => conformance::run(&extra),
        Task::Interop => interop::run(),
        Task::Matrix => matrix::run(),
        Task::Man(out) => man::run(&out),
        Task::Bench(args) => bench::run(&args),
        Task::Fuzz(args) => fuzz::run(&args),
        Task::ApiCheck(args) => apicheck::run(&args),
        Task::Package => package::run(),
        Task::Console => console::run(),
        Task::Sdks(args) => sdks::run(&args),
    }
}

/// Runs every generator in check mode and reports all stale artefacts, not only the first.
fn check_all() -> Result<()> {
    let mut failures = Vec::new();
    for (name, generate) in GENERATORS {
        match generate(true) {
            Ok(()) => println!("{name}: up to date"),
            Err(err) => failures.push(format!("{name}: {err}")),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &str, expect: Option<Task>) {
        let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        assert_eq!(parse(&args).ok(), expect, "{args:?}");
    }

    #[test]
    fn parses_tasks_and_the_check_flag() {
        check("", Some(Task::Help));
        check("--help", Some(Task::Help));
        check("check", Some(Task::CheckAll));
        check(
            "codegen",
            Some(Task::Generate {
                index: 0,
                check: false,
            }),
        );
        check(
            "codegen --check",
            Some(Task::Generate {
                index: 0,
                check: true,
            }),
        );
        check(
            "asyncapi --check",
            Some(Task::Generate {
                index: 1,
                check: true,
            }),
        );
        check("check --check", None);
        check("codegen --force", None);
        check("codegen --check --check", None);
        check(
            "openapi",
            Some(Task::Generate {
                index: 2,
                check: false,
            }),
        );
        check("bench-nothing", None);
        check("conformance", Some(Task::Conformance(vec![])));
        check(
            "conformance --strict",
            Some(Task::Conformance(vec!["--strict".into()])),
        );
        check("interop", Some(Task::Interop));
        check("interop --x", None);
        check("interop-matrix", Some(Task::Matrix));
        check(
            "man",
            Some(Task::Man(crate::project::project_root().join("target/man"))),
        );
        check("man --out /tmp/pages", Some(Task::Man("/tmp/pages".into())));
        check("man --out", None);
        check("man --check", None);
        check("bench vfs", Some(Task::Bench(vec!["vfs".into()])));
        check("fuzz paths", Some(Task::Fuzz(vec!["paths".into()])));
        check("api-check", Some(Task::ApiCheck(vec![])));
        check("console", Some(Task::Console));
        check("console --x", None);
        check("sdks", Some(Task::Sdks(vec![])));
        check(
            "sdk-versions --check",
            Some(Task::Generate {
                index: 3,
                check: true,
            }),
        );
    }
}
