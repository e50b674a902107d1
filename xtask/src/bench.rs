//! `cargo xtask bench vfs`: `read_file`, `write_file` and `ls` over MCP stdio, `wsp mcp` against
//! the MCP reference filesystem server (`@modelcontextprotocol/server-filesystem` from npm),
//! with the same client in the same run.
//!
//! A benchmark, not a test: it prints ops/s, p50 and p99 per operation and server, and the
//! ratios against baselines measured in the same run: the reference server; an MCP `ping` to
//! the same `wsp mcp` process (the protocol round trip with no file work); and the file work
//! alone, done by this process with `std::fs` and no protocol (read a file; create a temporary
//! file, write it and rename it over the target; read a directory), which is the least any
//! server must spend on the disk. It never fails on a number.
//!
//! The client is a minimal blocking JSON-RPC client over the child's stdin and stdout (no MCP
//! library), so the time measured is the servers' and the pipe's, alike for both. Calls of the
//! two servers and the file work alone run in interleaved blocks, so a noisy neighbour on the
//! machine hits all three.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Result;
use crate::project::project_root;

/// The reference server, pinned so that runs compare.
const REFERENCE_PACKAGE: &str = "@modelcontextprotocol/server-filesystem";
const REFERENCE_VERSION: &str = "2026.8.31";

/// The protocol version both servers are offered at `initialize` (one with `ping`).
const PROTOCOL_VERSION: &str = "2025-11-25";

/// Timed calls per operation and server, unless `--iterations` says otherwise.
const DEFAULT_ITERATIONS: usize = 2000;
/// Calls per operation and server before timing starts.
const WARM_UP: usize = 100;
/// Calls in one block before switching to the other server.
const BLOCK: usize = 100;

const USAGE: &str = "usage: cargo xtask bench vfs [--iterations N]   (N from 100 to 100000)
       cargo xtask bench snapshot                (snapshot cost at 10, 1,000 and 100,000 files)
       cargo xtask bench http [--seconds S] [--rounds N]
                                                 (wsp serve against bare hyper and nginx)
       cargo xtask bench soak [--minutes M] [--sample S] [--connections N] [--subscribers N] [--runs N]
                                                 (resident set of wsp serve under mixed load)";

/// Runs `cargo xtask bench ARGS`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    match args {
        [name, rest @ ..] if name == "vfs" => vfs(parse_iterations(rest)?),
        [name] if name == "snapshot" => snapshot(),
        [name, rest @ ..] if name == "http" => crate::bench_http::run(rest),
        [name, rest @ ..] if name == "soak" => crate::bench_soak::run(rest),
        _ => Err(USAGE.into()),
    }
}

/// `cargo xtask bench snapshot`: the `snapshot` program of `wsp-bench`, in release mode.
fn snapshot() -> Result<()> {
    let status = std::process::Command::new(crate::project::cargo())
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "wsp-bench",
            "--bin",
            "snapshot",
        ])
        .current_dir(crate::project::project_root())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the snapshot benchmark failed ({status})").into())
    }
}

fn parse_iterations(args: &[String]) -> Result<usize> {
    match args {
        [] => Ok(DEFAULT_ITERATIONS),
        [flag, n] if flag == "--iterations" => match n.parse::<usize>() {
            Ok(n) if (100..=100_000).contains(&n) => Ok(n),
            _ => Err(USAGE.into()),
        },
        _ => Err(USAGE.into()),
    }
}

/// One operation as each server names it.
struct Op {
    /// The label in the table (our tool's name).
    label: &'static str,
    /// Our request: method and params.
    ours: fn(&Path, usize) -> (String, Value),
    /// The reference server's request, given its root directory.
    reference: fn(&Path, usize) -> (String, Value),
    /// The file work alone, in this process, given a root directory like the servers'.
    alone: fn(&Path, usize) -> std::io::Result<()>,
}

/// 4 KiB of text in 64 lines: a source file an agent reads and writes.
/// Built once, so no timed call pays for building it.
fn content() -> &'static str {
    static CONTENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CONTENT.get_or_init(|| {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789_".repeat(2);
        (0..64)
            .map(|i| format!("{i:04} {}\n", &text[..58]))
            .collect()
    })
}

fn tool(name: &str, arguments: Value) -> (String, Value) {
    (
        "tools/call".into(),
        json!({"name": name, "arguments": arguments}),
    )
}

fn ops() -> Vec<Op> {
    vec![
        Op {
            label: "ping",
            ours: |_, _| ("ping".into(), json!({})),
            reference: |_, _| ("ping".into(), json!({})),
            alone: |_, _| Ok(()),
        },
        Op {
            label: "read_file",
            ours: |_, _| tool("read_file", json!({"path": "/bench/read.md"})),
            reference: |root, _| {
                tool(
                    "read_text_file",
                    json!({"path": root.join("read.md").display().to_string()}),
                )
            },
            alone: |root, _| std::fs::read(root.join("read.md")).map(drop),
        },
        Op {
            label: "write_file",
            ours: |_, i| {
                tool(
                    "write_file",
                    json!({"path": format!("/bench/out/{}.md", i % 16), "content": content()}),
                )
            },
            reference: |root, i| {
                tool(
                    "write_file",
                    json!({"path": root.join(format!("out/{}.md", i % 16)).display().to_string(),
                           "content": content()}),
                )
            },
            alone: |root, i| {
                let temp = root.join("out").join(".bench-tmp");
                let mut file = std::fs::File::create_new(&temp)?;
                file.write_all(content().as_bytes())?;
                drop(file);
                std::fs::rename(&temp, root.join(format!("out/{}.md", i % 16)))
            },
        },
        Op {
            label: "ls",
            ours: |_, _| tool("ls", json!({"path": "/bench/list"})),
            reference: |root, _| {
                tool(
                    "list_directory",
                    json!({"path": root.join("list").display().to_string()}),
                )
            },
            alone: |root, _| {
                let mut names = Vec::new();
                for entry in std::fs::read_dir(root.join("list"))? {
                    let entry = entry?;
                    names.push((entry.file_name(), entry.file_type()?.is_dir()));
                }
                names.sort();
                Ok(())
            },
        },
    ]
}

/// A minimal MCP client over a child process's stdin and stdout.
struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StdioClient {
    /// Starts `cmd` and runs the `initialize` handshake.
    fn start(mut cmd: Command, what: &str) -> Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut client = Self {
            child,
            stdin,
            stdout,
            next_id: 1,
            line: String::new(),
        };
        client
            .request(
                "initialize",
                &json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                        "clientInfo": {"name": "wsp-xtask-bench", "version": env!("CARGO_PKG_VERSION")}}),
            )
            .map_err(|e| format!("{what}: initialize: {e}"))?;
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let mut text = serde_json::to_string(message)?;
        text.push('\n');
        self.stdin.write_all(text.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends one request and waits for its response; a tool result with `isError` is an error.
    fn request(&mut self, method: &str, params: &Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
                return Err(format!("the server closed stdout during {method}").into());
            }
            let message: Value = serde_json::from_str(&self.line)?;
            if message.get("method").is_some() {
                // A request or notification from the server: answer requests, skip the rest.
                if let Some(req) = message.get("id") {
                    self.send(&json!({"jsonrpc": "2.0", "id": req,
                        "error": {"code": -32601, "message": "not supported by this client"}}))?;
                }
                continue;
            }
            if message["id"] != json!(id) {
                continue;
            }
            if let Some(err) = message.get("error") {
                return Err(format!("{method}: {err}").into());
            }
            let result = message.get("result").cloned().unwrap_or(Value::Null);
            if result["isError"] == json!(true) {
                return Err(format!("{method} {params}: {}", result["content"]).into());
            }
            return Ok(result);
        }
    }
}

/// One timed round trip.
fn call(client: &mut StdioClient, (method, params): (String, Value)) -> Result<Duration> {
    let start = Instant::now();
    client.request(&method, &params)?;
    Ok(start.elapsed())
}

/// One timed run of the file work alone.
fn alone(op: &Op, root: &Path, i: usize) -> Result<Duration> {
    let start = Instant::now();
    (op.alone)(root, i).map_err(|e| format!("{} (file work alone): {e}", op.label))?;
    Ok(start.elapsed())
}

/// Percentiles and throughput of one operation on one server.
struct Stats {
    ops_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
}

fn stats(samples: &mut [Duration]) -> Stats {
    samples.sort();
    let total: f64 = samples.iter().map(Duration::as_secs_f64).sum();
    let at = |q: f64| {
        let i = ((samples.len() - 1) as f64 * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    Stats {
        ops_per_sec: samples.len() as f64 / total,
        p50_us: at(0.50),
        p99_us: at(0.99),
    }
}

/// A fresh directory tree the servers work in; removed on drop.
struct Workdir(PathBuf);

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The same files for each server: `read.md`, `list/` with 100 files, an empty `out/`.
fn populate(root: &Path) -> Result<()> {
    std::fs::create_dir_all(root.join("list"))?;
    std::fs::create_dir_all(root.join("out"))?;
    std::fs::write(root.join("read.md"), content())?;
    for i in 0..100 {
        std::fs::write(root.join(format!("list/file-{i:03}.md")), "x\n")?;
    }
    Ok(())
}

/// Builds `wsp` with the release profile (a benchmark of a debug build measures the wrong thing).
fn release_wsp() -> Result<PathBuf> {
    let mut built = release_programs(&[("wsp-cli", "wsp")])?;
    Ok(built.remove(0))
}

/// Builds each `(package, program)` with the release profile in one cargo run and returns the
/// programs' paths, in order.
pub(crate) fn release_programs(programs: &[(&str, &str)]) -> Result<Vec<PathBuf>> {
    let mut cmd = Command::new(crate::project::cargo());
    cmd.args(["build", "--release", "--quiet"]);
    for (package, program) in programs {
        cmd.args(["-p", package, "--bin", program]);
    }
    let status = cmd
        .current_dir(project_root())
        .status()
        .map_err(|e| format!("cannot run cargo build: {e}"))?;
    let names: Vec<&str> = programs.iter().map(|(_, p)| *p).collect();
    if !status.success() {
        return Err(format!("cargo build --release of {} failed", names.join(", ")).into());
    }
    let release = crate::project::target_dir().join("release");
    Ok(names
        .iter()
        .map(|name| release.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
        .collect())
}

/// Installs the pinned reference server under `target/bench/node_modules` (once) and returns
/// its entry point.
fn reference_server() -> Result<PathBuf> {
    let prefix = crate::project::target_dir().join("bench");
    let package = prefix.join("node_modules").join(REFERENCE_PACKAGE);
    let installed = std::fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|p| p["version"] == REFERENCE_VERSION);
    if !installed {
        std::fs::create_dir_all(&prefix)?;
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&prefix)
            .arg(format!("{REFERENCE_PACKAGE}@{REFERENCE_VERSION}"))
            .status()
            .map_err(|e| format!("cannot run npm (needs Node.js): {e}"))?;
        if !status.success() {
            return Err(
                format!("npm install {REFERENCE_PACKAGE}@{REFERENCE_VERSION} failed").into(),
            );
        }
    }
    Ok(package.join("dist").join("index.js"))
}

fn vfs(iterations: usize) -> Result<()> {
    let wsp = release_wsp()?;
    let node_server = reference_server()?;
    let work = Workdir(std::env::temp_dir().join(format!("wsp-bench-vfs-{}", std::process::id())));
    let ours_root = work.0.join("ours");
    let ref_root = work.0.join("reference");
    let alone_root = work.0.join("alone");
    populate(&ours_root)?;
    populate(&ref_root)?;
    populate(&alone_root)?;
    let mounts = work.0.join("mounts.toml");
    std::fs::write(
        &mounts,
        format!(
            "[[workspace]]\npath = \"/bench\"\nscope = \"rw\"\nmount = {{ physical = {:?} }}\n",
            ours_root.display().to_string()
        ),
    )?;

    let mut cmd = Command::new(&wsp);
    cmd.arg("mcp")
        .arg("--mounts")
        .arg(&mounts)
        .arg("--data")
        .arg(work.0.join("data"))
        .env("WSP_LOG", "warn")
        .stderr(Stdio::inherit());
    let mut ours = StdioClient::start(cmd, "wsp mcp")?;
    let mut cmd = Command::new("node");
    cmd.arg(&node_server).arg(&ref_root).stderr(Stdio::null());
    let mut reference = StdioClient::start(cmd, "the reference server")?;

    let ops = ops();
    // Per operation: wsp mcp, the reference server, the file work alone.
    let mut samples: Vec<[Vec<Duration>; 3]> = ops
        .iter()
        .map(|_| std::array::from_fn(|_| Vec::with_capacity(iterations)))
        .collect();
    let mut counter = 0usize;
    for op in &ops {
        for i in 0..WARM_UP {
            call(&mut ours, (op.ours)(&ours_root, i))?;
            call(&mut reference, (op.reference)(&ref_root, i))?;
            alone(op, &alone_root, i)?;
        }
    }
    println!(
        "bench vfs: {iterations} timed calls per operation and server (after {WARM_UP} warm-up), \
         one client, MCP stdio, blocks of {BLOCK} taking turns between the servers and the file \
         work alone, each round starting with the next of the three\n"
    );
    let mut round = 0;
    while samples[0][0].len() < iterations {
        for (op, s) in ops.iter().zip(samples.iter_mut()) {
            let n = BLOCK.min(iterations - s[0].len());
            // Each round starts with another of the three, so whatever one block leaves behind
            // (dirty pages, a journal commit) falls on each of them alike.
            for k in 0..3 {
                let who = (round + k) % 3;
                for _ in 0..n {
                    counter += 1;
                    s[who].push(match who {
                        0 => call(&mut ours, (op.ours)(&ours_root, counter))?,
                        1 => call(&mut reference, (op.reference)(&ref_root, counter))?,
                        _ => alone(op, &alone_root, counter)?,
                    });
                }
            }
        }
        round += 1;
    }
    drop(ours);
    drop(reference);

    let results: Vec<[Stats; 3]> = samples
        .iter_mut()
        .map(|s| std::array::from_fn(|i| stats(&mut s[i])))
        .collect();
    let servers = [
        "wsp mcp".to_owned(),
        format!("server-filesystem {REFERENCE_VERSION} (node)"),
        "file work alone (std::fs, no protocol)".to_owned(),
    ];
    println!(
        "{:<38} {:<12} {:>10} {:>10} {:>10}",
        "server", "operation", "ops/s", "p50 µs", "p99 µs"
    );
    for (s, server) in servers.iter().enumerate() {
        // The file work of a ping is nothing: no row.
        for (op, r) in ops.iter().zip(&results).skip(usize::from(s == 2)) {
            let r = &r[s];
            println!(
                "{:<38} {:<12} {:>10.0} {:>10.1} {:>10.1}",
                server, op.label, r.ops_per_sec, r.p50_us, r.p99_us
            );
        }
    }
    let ping = results[0][0].p50_us;
    println!(
        "\nratios (this run, p50 unless ops/s)\n\
         {:<12} {:>13} {:>15} {:>17} {:>19} {:>21}",
        "operation",
        "wsp/ref ops/s",
        "wsp / wsp ping",
        "ref / ref ping",
        "alone / wsp ping",
        "(wsp - alone) / ping",
    );
    for (op, r) in ops.iter().zip(&results).skip(1) {
        println!(
            "{:<12} {:>12.2}x {:>14.2}x {:>16.2}x {:>18.2}x {:>20.2}x",
            op.label,
            r[0].ops_per_sec / r[1].ops_per_sec,
            r[0].p50_us / ping,
            r[1].p50_us / results[0][1].p50_us,
            r[2].p50_us / ping,
            (r[0].p50_us - r[2].p50_us) / ping,
        );
    }
    let verdict = |met: bool| if met { "met" } else { "not met" };
    let (worst_op, worst) = ops
        .iter()
        .zip(&results)
        .skip(1)
        .map(|(op, r)| (op.label, r[0].p50_us / ping))
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    println!(
        "\ntarget: every call's p50 within 1.20x of a ping's: {} (worst: {worst_op} at {worst:.2}x)",
        verdict(worst <= 1.2)
    );
    for (op, r) in ops.iter().zip(&results).skip(1) {
        let floor = r[2].p50_us / ping;
        if floor > 0.2 {
            println!(
                "  {}: the file work alone costs {floor:.2}x a ping on this machine, so a call \
                 cannot come within 1.20x of one (wsp adds {:.2} pings beyond the file work)",
                op.label,
                (r[0].p50_us - r[2].p50_us) / ping
            );
        }
    }
    let write = &results[2];
    println!(
        "target: write_file at least 3x the reference's ops/s: {} ({:.2}x)",
        verdict(write[0].ops_per_sec >= 3.0 * write[1].ops_per_sec),
        write[0].ops_per_sec / write[1].ops_per_sec,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_iteration_count() {
        let args = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_owned).collect() };
        assert_eq!(parse_iterations(&args("")).unwrap(), DEFAULT_ITERATIONS);
        assert_eq!(parse_iterations(&args("--iterations 500")).unwrap(), 500);
        assert!(parse_iterations(&args("--iterations 5")).is_err());
        assert!(parse_iterations(&args("--iterations x")).is_err());
        assert!(parse_iterations(&args("--fast")).is_err());
        assert!(run(&args("nothing")).is_err());
    }

    #[test]
    fn percentiles_and_throughput() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let s = stats(&mut samples);
        assert_eq!(s.p50_us, 51.0);
        assert_eq!(s.p99_us, 99.0);
        assert!((s.ops_per_sec - 100.0 / 0.00505).abs() < 1e-6);
    }

    #[test]
    fn both_servers_get_the_same_content() {
        let text = content();
        assert_eq!(text.lines().count(), 64);
        assert_eq!(text.len(), 64 * 64);
    }
}
