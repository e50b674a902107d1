//! `cargo xtask bench http`: the HTTP file path of `wsp serve` against what the same machine
//! does without it, in one run.
//!
//! Servers, each on a free port of 127.0.0.1:
//! - `wsp serve` (release build, default settings) on a fresh SQLite data directory; with
//!   `WSP_BENCH_POSTGRES_URL` also on PostgreSQL, one replica and three;
//! - the baseline `hello` of `wsp-bench`: bare hyper answering every request with the same body
//!   (1 KiB or 64 KiB), so that the machine, the kernel, tokio and hyper are measured alone;
//! - nginx with WebDAV, when `nginx` is installed (`apt-get install nginx-light`): static GET of
//!   the same files, WebDAV PUT (no fsync) of the same sizes. Without it the bench says so.
//!
//! Every server is driven by the same load generator (`load` of `wsp-bench`: closed-loop
//! keep-alive HTTP/1.1 connections), scenario by scenario with the servers interleaved, in
//! rounds, so a noisy neighbour hits them all. It prints req/s, p50 and p99 per scenario and
//! server (the mean of the rounds), the ratios, and the peak resident set of each `wsp serve`.
//! A benchmark: it never fails on a number.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Result;

const USAGE: &str = "usage: cargo xtask bench http [--seconds S] [--rounds N]

  --seconds S   how long each scenario is measured on each server (default 5, after 1 s warm-up)
  --rounds N    how many times the whole set runs, interleaved (default 2)";

/// The scenarios: a name, connections, what to read and write, and the body size.
struct Scenario {
    name: &'static str,
    connections: usize,
    /// Reads the file of this size (1 KiB or 64 KiB), when it reads.
    get: Option<usize>,
    /// Of each 100 requests, how many write a 1 KiB file.
    put_percent: u64,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "GET 1 KiB, 64 connections",
        connections: 64,
        get: Some(1024),
        put_percent: 0,
    },
    Scenario {
        name: "GET 64 KiB, 64 connections",
        connections: 64,
        get: Some(65_536),
        put_percent: 0,
    },
    Scenario {
        name: "PUT 1 KiB, 1 connection",
        connections: 1,
        get: None,
        put_percent: 100,
    },
    Scenario {
        name: "PUT 1 KiB, 8 connections",
        connections: 8,
        get: None,
        put_percent: 100,
    },
    Scenario {
        name: "PUT 1 KiB, 64 connections",
        connections: 64,
        get: None,
        put_percent: 100,
    },
    Scenario {
        name: "mixed 80% GET / 20% PUT, 64 connections",
        connections: 64,
        get: Some(1024),
        put_percent: 20,
    },
];

/// What a server is, as the load generator addresses it.
pub(crate) struct Target {
    /// Its name in the table.
    name: String,
    /// `http://HOST:PORT` of each replica.
    pub(crate) urls: Vec<String>,
    /// How it names the files: `/v1/host/workspace/files/` or `/`.
    kind: Kind,
    /// The key, for wsp.
    pub(crate) key: Option<String>,
    /// Its processes (killed on drop) and their pids, for the peak resident set.
    pub(crate) processes: Vec<Child>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Wsp,
    /// Answers every request with a body of this size.
    Hello(usize),
    Nginx,
}

impl Drop for Target {
    fn drop(&mut self) {
        for p in &mut self.processes {
            // nginx's master stops its workers on SIGTERM; SIGKILL would orphan them, still
            // listening and running.
            if self.kind == Kind::Nginx {
                let _ = Command::new("kill")
                    .args(["-TERM", &p.id().to_string()])
                    .status();
                let until = Instant::now() + Duration::from_secs(5);
                while Instant::now() < until && matches!(p.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}

impl Target {
    /// The `load` arguments for `scenario`, or `None` when this server does not take part.
    fn load_args(&self, scenario: &Scenario) -> Option<Vec<String>> {
        let file = |bytes: usize| format!("bench/get-{}k.md", bytes / 1024);
        let (get, put) = match self.kind {
            Kind::Wsp => (
                scenario
                    .get
                    .map(|b| format!("/v1/host/workspace/files/{}", file(b))),
                "/v1/host/workspace/files/bench/put-".to_owned(),
            ),
            Kind::Hello(size) if scenario.put_percent == 0 && scenario.get == Some(size) => {
                (Some("/".to_owned()), String::new())
            }
            Kind::Hello(_) => return None,
            // nginx takes part in the pure reads and the writes at 64 connections.
            Kind::Nginx if scenario.put_percent == 0 => {
                (scenario.get.map(|b| format!("/{}", file(b))), String::new())
            }
            Kind::Nginx if scenario.get.is_none() && scenario.connections == 64 => {
                (None, "/dav/put-".to_owned())
            }
            Kind::Nginx => return None,
        };
        let mut args = vec!["--connections".to_owned(), scenario.connections.to_string()];
        for url in &self.urls {
            args.extend(["--target".to_owned(), url.clone()]);
        }
        if let Some(key) = &self.key {
            args.extend(["--bearer".to_owned(), key.clone()]);
        }
        if let Some(get) = get {
            args.extend(["--get".to_owned(), get]);
        }
        if scenario.put_percent > 0 {
            args.extend([
                "--put".to_owned(),
                put,
                "--put-percent".to_owned(),
                scenario.put_percent.to_string(),
                "--body".to_owned(),
                "1024".to_owned(),
            ]);
            if self.kind == Kind::Wsp {
                args.push("--json".to_owned());
            }
        }
        Some(args)
    }

    /// The largest peak resident set of its processes, in MiB (Linux), when known.
    fn peak_rss_mib(&self) -> Option<f64> {
        self.processes
            .iter()
            .filter_map(|p| {
                let status = std::fs::read_to_string(format!("/proc/{}/status", p.id())).ok()?;
                let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
                let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib / 1024.0)
            })
            .reduce(f64::max)
    }
}

/// One measurement.
#[derive(Default, Clone)]
struct Figures {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

/// Runs `cargo xtask bench http ARGS`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let (seconds, rounds) = parse_args(args)?;
    let bins = build()?;
    let work = Workdir::new("http")?;
    let mut targets = vec![
        start_wsp(
            &bins.wsp,
            &work.0.join("sqlite"),
            &[],
            1,
            "wsp serve (SQLite)",
        )?,
        start_hello(&bins.hello, 1024)?,
        start_hello(&bins.hello, 65_536)?,
    ];
    match start_nginx(&work.0.join("nginx")) {
        Ok(nginx) => targets.push(nginx),
        Err(why) => println!("nginx: skipped ({why})"),
    }
    match std::env::var("WSP_BENCH_POSTGRES_URL") {
        Ok(url) => {
            for replicas in [1, 3] {
                let schema = format!("wsp_bench_{}_{replicas}", std::process::id());
                let store = ["--store", url.as_str(), "--pg-schema", schema.as_str()];
                let name = format!(
                    "wsp serve (PostgreSQL, {replicas} replica{})",
                    if replicas == 1 { "" } else { "s" }
                );
                targets.push(start_wsp(
                    &bins.wsp,
                    &work.0.join(&schema),
                    &store,
                    replicas,
                    &name,
                )?);
            }
        }
        Err(_) => println!("PostgreSQL: skipped (set WSP_BENCH_POSTGRES_URL to a database URL)"),
    }

    // figures[scenario][target]: one per round.
    let mut figures = vec![vec![Vec::<Figures>::new(); targets.len()]; SCENARIOS.len()];
    for round in 1..=rounds {
        println!("== round {round} of {rounds}");
        for (s, scenario) in SCENARIOS.iter().enumerate() {
            for (t, target) in targets.iter().enumerate() {
                let Some(args) = target.load_args(scenario) else {
                    continue;
                };
                let f = load(&bins.load, &args, seconds)?;
                println!(
                    "  {:<42} {:<34} {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms{}",
                    scenario.name,
                    target.name,
                    f.rps,
                    f.p50_ms,
                    f.p99_ms,
                    if f.errors > 0 {
                        format!("  {} errors", f.errors)
                    } else {
                        String::new()
                    }
                );
                figures[s][t].push(f);
            }
        }
    }
    report(&targets, &figures, seconds, rounds);
    Ok(())
}

fn parse_args(args: &[String]) -> Result<(f64, usize)> {
    let mut seconds = 5.0;
    let mut rounds = 2;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(USAGE)?;
        match flag.as_str() {
            "--seconds" => {
                seconds = value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| (0.5..=600.0).contains(s))
                    .ok_or(USAGE)?;
            }
            "--rounds" => {
                rounds = value
                    .parse()
                    .ok()
                    .filter(|r| (1..=20).contains(r))
                    .ok_or(USAGE)?;
            }
            _ => return Err(USAGE.into()),
        }
    }
    Ok((seconds, rounds))
}

/// The release programs the bench runs.
struct Binaries {
    wsp: PathBuf,
    hello: PathBuf,
    load: PathBuf,
}

fn build() -> Result<Binaries> {
    let built = crate::bench::release_programs(&[
        ("wsp-cli", "wsp"),
        ("wsp-bench", "hello"),
        ("wsp-bench", "load"),
    ])?;
    let [wsp, hello, load]: [PathBuf; 3] = built
        .try_into()
        .map_err(|_| "cargo build gave the wrong number of programs")?;
    Ok(Binaries { wsp, hello, load })
}

/// Runs `load` for `seconds` after a second of warm-up.
fn load(program: &Path, args: &[String], seconds: f64) -> Result<Figures> {
    let out = Command::new(program)
        .args(args)
        .args(["--seconds", &seconds.to_string(), "--warmup", "1"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run load: {e}"))?;
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        format!(
            "load printed no report ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    Ok(Figures {
        rps: report["rps"].as_f64().unwrap_or(0.0),
        p50_ms: report["p50_ms"].as_f64().unwrap_or(0.0),
        p99_ms: report["p99_ms"].as_f64().unwrap_or(0.0),
        errors: report["errors"].as_u64().unwrap_or(0),
    })
}

/// A temporary directory, removed on drop.
pub(crate) struct Workdir(pub(crate) PathBuf);

impl Workdir {
    /// `wsp-bench-<bench>-<pid>` in the temporary directory.
    pub(crate) fn new(bench: &str) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("wsp-bench-{bench}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts `program ARGS` and waits for the stdout line starting with `marker`; returns the
/// child and the rest of that line.
fn start_until(mut cmd: Command, marker: &str, what: &str) -> Result<(Child, String)> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("{what} did not start within 60 s").into());
        }
        match lines.next() {
            Some(line) => {
                let line = line?;
                if let Some(rest) = line.strip_prefix(marker) {
                    // Keep draining its output so that it never blocks on a full pipe.
                    std::thread::spawn(move || lines.for_each(drop));
                    return Ok((child, rest.trim().to_owned()));
                }
            }
            None => {
                let status = child.wait()?;
                return Err(format!("{what} exited early ({status})").into());
            }
        }
    }
}

/// `wsp serve` on `store` (default: the SQLite file of `data`), `replicas` processes sharing
/// it, a key, and the two files the reads fetch.
pub(crate) fn start_wsp(
    wsp: &Path,
    data: &Path,
    store: &[&str],
    replicas: usize,
    name: &str,
) -> Result<Target> {
    std::fs::create_dir_all(data)?;
    let location: Vec<String> = if store.is_empty() {
        vec!["--data".into(), data.display().to_string()]
    } else {
        store.iter().map(|s| (*s).to_owned()).collect()
    };
    let out = Command::new(wsp)
        .args([
            "keys",
            "create",
            "--tenant",
            "bench",
            "--workspace",
            "bench",
        ])
        .args(&location)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "wsp keys create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let key = String::from_utf8(out.stdout)?
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    let mut target = Target {
        name: name.to_owned(),
        urls: Vec::new(),
        kind: Kind::Wsp,
        key: Some(key.clone()),
        processes: Vec::new(),
    };
    for _ in 0..replicas {
        let mut cmd = Command::new(wsp);
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(store);
        let (child, rest) = start_until(cmd, "wsp listening on ", name)?;
        target.processes.push(child);
        target.urls.push(
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    for size in [1024, 65_536] {
        let file = data.join(format!("get-{}k.md", size / 1024));
        std::fs::write(&file, "x".repeat(size))?;
        let put = Command::new(wsp)
            .args([
                "files",
                "put",
                &format!("bench/get-{}k.md", size / 1024),
                "--file",
            ])
            .arg(&file)
            .args(["--url", &target.urls[0], "--key", &key])
            .output()?;
        if !put.status.success() {
            return Err(format!(
                "seeding {name} failed: {}",
                String::from_utf8_lossy(&put.stderr)
            )
            .into());
        }
    }
    Ok(target)
}

fn start_hello(hello: &Path, bytes: usize) -> Result<Target> {
    let mut cmd = Command::new(hello);
    cmd.arg(bytes.to_string());
    let name = format!("hyper hello-world ({} KiB)", bytes / 1024);
    let (child, addr) = start_until(cmd, "listening on ", &name)?;
    Ok(Target {
        name,
        urls: vec![format!("http://{addr}")],
        kind: Kind::Hello(bytes),
        key: None,
        processes: vec![child],
    })
}

/// nginx with static files and a WebDAV location, in `dir`; `Err` says why it cannot run.
fn start_nginx(dir: &Path) -> std::result::Result<Target, String> {
    let nginx = ["nginx", "/usr/sbin/nginx"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .arg("-v")
                .stderr(Stdio::null())
                .status()
                .is_ok()
        })
        .ok_or("nginx is not installed; `apt-get install nginx-light` adds it")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let root = dir.join("root");
    for sub in ["bench", "dav", "tmp", "logs"] {
        std::fs::create_dir_all(root.join(sub)).map_err(|e| e.to_string())?;
    }
    // Started by root, nginx's workers run as an unprivileged user: they write the uploads.
    for sub in ["dav", "tmp"] {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(root.join(sub), std::fs::Permissions::from_mode(0o777))
            .map_err(|e| e.to_string())?;
    }
    for size in [1024, 65_536] {
        let file = root.join(format!("bench/get-{}k.md", size / 1024));
        std::fs::write(file, "x".repeat(size)).map_err(|e| e.to_string())?;
    }
    let conf = dir.join("nginx.conf");
    let d = dir.display();
    let r = root.display();
    std::fs::write(
        &conf,
        format!(
            "worker_processes auto;\ndaemon off;\npid {d}/nginx.pid;\nerror_log stderr error;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  keepalive_requests 1000000;\n  client_body_temp_path {r}/tmp;\n  proxy_temp_path {r}/tmp;\n\
               fastcgi_temp_path {r}/tmp;\n  uwsgi_temp_path {r}/tmp;\n  scgi_temp_path {r}/tmp;\n\
               server {{\n    listen 127.0.0.1:{port};\n    root {r};\n\
                 location /dav/ {{ dav_methods PUT; create_full_put_path on; }}\n  }}\n}}\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut child = Command::new(nginx)
        .args(["-p"])
        .arg(dir)
        .args(["-c"])
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start nginx: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return Err(format!("nginx exited ({status}): {}", err.trim()));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("nginx did not listen within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let version = Command::new(nginx)
        .arg("-v")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .replace("nginx version: ", "")
        })
        .unwrap_or_default();
    Ok(Target {
        name: format!("{version} (static, WebDAV)"),
        urls: vec![format!("http://127.0.0.1:{port}")],
        kind: Kind::Nginx,
        key: None,
        processes: vec![child],
    })
}

/// The mean of the rounds.
fn mean(rounds: &[Figures]) -> Option<Figures> {
    if rounds.is_empty() {
        return None;
    }
    let n = rounds.len() as f64;
    Some(Figures {
        rps: rounds.iter().map(|f| f.rps).sum::<f64>() / n,
        p50_ms: rounds.iter().map(|f| f.p50_ms).sum::<f64>() / n,
        p99_ms: rounds.iter().map(|f| f.p99_ms).sum::<f64>() / n,
        errors: rounds.iter().map(|f| f.errors).sum(),
    })
}

fn report(targets: &[Target], figures: &[Vec<Vec<Figures>>], seconds: f64, rounds: usize) {
    println!(
        "\n== results: mean of {rounds} round(s) of {seconds} s per scenario and server \
         (load generator: wsp-bench `load`, closed loop, keep-alive)\n"
    );
    println!("| scenario | server | req/s | p50 ms | p99 ms | errors |");
    println!("|---|---|---:|---:|---:|---:|");
    for (s, scenario) in SCENARIOS.iter().enumerate() {
        for (t, target) in targets.iter().enumerate() {
            if let Some(f) = mean(&figures[s][t]) {
                println!(
                    "| {} | {} | {:.0} | {:.2} | {:.2} | {} |",
                    scenario.name, target.name, f.rps, f.p50_ms, f.p99_ms, f.errors
                );
            }
        }
    }
    let rps = |s: usize, kind: &dyn Fn(&Target) -> bool| {
        targets
            .iter()
            .position(kind)
            .and_then(|t| mean(&figures[s][t]))
            .map(|f| f.rps)
    };
    let sqlite = |t: &Target| t.name == "wsp serve (SQLite)";
    let nginx = |t: &Target| t.kind == Kind::Nginx;
    println!("\n| ratio | value |");
    println!("|---|---:|");
    let ratio = |name: &str, a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => println!("| {name} | {:.2}x |", a / b),
        _ => println!("| {name} | (not measured) |"),
    };
    ratio("wsp GET 1 KiB / nginx GET", rps(0, &sqlite), rps(0, &nginx));
    ratio(
        "wsp GET 1 KiB / hyper hello-world",
        rps(0, &sqlite),
        rps(0, &|t| t.kind == Kind::Hello(1024)),
    );
    ratio(
        "wsp GET 64 KiB / nginx GET",
        rps(1, &sqlite),
        rps(1, &nginx),
    );
    ratio(
        "wsp GET 64 KiB / hyper hello-world",
        rps(1, &sqlite),
        rps(1, &|t| t.kind == Kind::Hello(65_536)),
    );
    ratio(
        "wsp PUT (64 conn.) / nginx WebDAV PUT",
        rps(4, &sqlite),
        rps(4, &nginx),
    );
    ratio(
        "wsp PUT 64 / 1 connections",
        rps(4, &sqlite),
        rps(2, &sqlite),
    );
    ratio(
        "wsp mixed 80/20 / wsp GET",
        rps(5, &sqlite),
        rps(0, &sqlite),
    );
    println!();
    for target in targets.iter().filter(|t| t.kind == Kind::Wsp) {
        match target.peak_rss_mib() {
            Some(mib) => println!("peak RSS of {}: {mib:.1} MiB", target.name),
            None => println!("peak RSS of {}: unknown (needs /proc)", target.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(kind: Kind) -> Target {
        Target {
            name: String::new(),
            urls: vec!["http://127.0.0.1:1".into(), "http://127.0.0.1:2".into()],
            kind,
            key: (kind == Kind::Wsp).then(|| "k".into()),
            processes: Vec::new(),
        }
    }

    #[test]
    fn each_server_takes_part_where_it_can() {
        let wsp = target(Kind::Wsp);
        let hello = target(Kind::Hello(1024));
        let nginx = target(Kind::Nginx);
        let takes = |t: &Target| {
            SCENARIOS
                .iter()
                .map(|s| t.load_args(s).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(takes(&wsp), [true; 6]);
        assert_eq!(takes(&hello), [true, false, false, false, false, false]);
        assert_eq!(takes(&nginx), [true, true, false, false, true, false]);
        let mixed = wsp.load_args(&SCENARIOS[5]).unwrap().join(" ");
        assert!(
            mixed.contains("--target http://127.0.0.1:1 --target http://127.0.0.1:2"),
            "{mixed}"
        );
        assert!(
            mixed.contains("--get /v1/host/workspace/files/bench/get-1k.md"),
            "{mixed}"
        );
        assert!(
            mixed.contains("--put-percent 20") && mixed.ends_with("--json"),
            "{mixed}"
        );
        let dav = nginx.load_args(&SCENARIOS[4]).unwrap().join(" ");
        assert!(
            dav.contains("--put /dav/put-") && !dav.contains("--json"),
            "{dav}"
        );
    }

    #[test]
    fn arguments_are_bounded() {
        assert_eq!(parse_args(&[]).unwrap(), (5.0, 2));
        let args = |a: &str| a.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            parse_args(&args("--seconds 10 --rounds 3")).unwrap(),
            (10.0, 3)
        );
        for bad in ["--seconds 0", "--rounds 0", "--rounds", "--fast 1"] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
    }
}
