//! The deployment recipes in `deploy/`, read at run time and checked against the `wsp` they
//! deploy: every `wsp` flag and `WSP_*` variable they name exists; the systemd unit is sandboxed,
//! and its command line serves, answers the probes and stops on the unit's kill signal within its
//! stop timeout; the container file's runtime command and health check work; the compose file's
//! three replicas run as three processes on one PostgreSQL, behind the load balancer's own
//! configuration when HAProxy is installed.
//!
//! What needs a tool this machine may lack (a container tool that can build, `systemd-analyze`,
//! `haproxy`, `curl`) runs when the tool does; otherwise the test writes one line in capitals
//! on standard error, past libtest's capture, saying what was not done and why.

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use yaml_rust2::{Yaml, YamlLoader};

use crate::support;
use crate::support::WSP;

// ---------------------------------------------------------------------------------------------
// The repository and what `wsp` says about itself

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file of the repository, by its path from the root.
fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every file under `deploy/`, and `.dockerignore`, by path from the root.
fn deploy_files() -> Vec<String> {
    let mut files = vec![".dockerignore".to_owned()];
    let mut dirs = vec![root().join("deploy")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(root()).unwrap();
                files.push(rel.to_str().unwrap().to_owned());
            }
        }
    }
    files.sort();
    files
}

/// Writes `line` on standard error even while libtest captures the test's output.
fn loudly(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// `wsp`'s commands, flags and variables, from the `--help` of every command of the real binary.
#[derive(Default)]
struct Cli {
    /// The subcommands of each command path (`[]` is `wsp` itself).
    commands: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// The long flags of each command path.
    flags: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// Every `WSP_*` variable any help text names.
    variables: BTreeSet<String>,
    /// `wsp serve --help`.
    serve_help: String,
}

fn cli() -> &'static Cli {
    static CLI: OnceLock<Cli> = OnceLock::new();
    CLI.get_or_init(|| {
        let mut cli = Cli::default();
        let mut todo = vec![Vec::<String>::new()];
        while let Some(path) = todo.pop() {
            let out = Command::new(WSP)
                .args(&path)
                .arg("--help")
                .output()
                .unwrap();
            assert!(out.status.success(), "wsp {path:?} --help failed");
            let text = String::from_utf8(out.stdout).unwrap();
            let commands = commands_in_help(&text);
            for command in &commands {
                todo.push([&path[..], std::slice::from_ref(command)].concat());
            }
            cli.flags.insert(path.clone(), flags_in_help(&text));
            cli.variables.extend(variables_in(&text));
            if path == ["serve"] {
                cli.serve_help = text;
            }
            cli.commands.insert(path, commands);
        }
        cli
    })
}

/// The commands listed under `Commands:` (less `help`).
fn commands_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long flags of an options list (`  -h, --help`, `      --addr <ADDR>`).
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split([' ', ',', '=']).find(|t| t.starts_with("--")))
        .map(str::to_owned)
        .collect()
}

/// Every `WSP_NAME` in `text`.
fn variables_in(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("WSP_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if name.len() > 4 && !name.ends_with('_') {
            found.insert(name.clone());
        }
        rest = &rest[at + 4..];
    }
    found
}

/// The `[default: N]` of a `wsp serve` flag.
fn serve_default(flag: &str) -> String {
    let help = &cli().serve_help;
    let from = help
        .lines()
        .position(|l| l.trim_start().starts_with(flag))
        .unwrap_or_else(|| panic!("wsp serve has no {flag}"));
    help.lines()
        .skip(from)
        .find_map(|l| l.trim().strip_prefix("[default: "))
        .and_then(|d| d.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{flag} has no default"))
        .to_owned()
}

/// One `wsp` command line found in a file: where, the command path and the long flags given.
#[derive(Debug)]
struct Invocation {
    line: usize,
    path: Vec<String>,
    flags: Vec<String>,
}

/// Lines with `\` continuations joined, each with its 1-based number.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let (number, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                joined.push_str(head);
                joined.push(' ');
                pending = Some((number, joined));
            }
            None => {
                joined.push_str(line);
                lines.push((number, joined));
            }
        }
    }
    lines.extend(pending);
    lines
}

/// Every `wsp COMMAND...` in `text` (a command line, a unit's `ExecStart`, a code span in
/// prose): `wsp` or a path ending in `/wsp`, followed by one of `wsp`'s commands.
fn invocations(text: &str, cli: &Cli) -> Vec<Invocation> {
    let clean = |t: &str| t.trim_matches(|c| "`\"'()[],".contains(c)).to_owned();
    let mut found = Vec::new();
    for (line, joined) in logical_lines(text) {
        let tokens: Vec<&str> = joined.split_whitespace().collect();
        for (i, token) in tokens.iter().enumerate() {
            let program = clean(token);
            if program != "wsp" && !program.ends_with("/wsp") || token.ends_with('`') {
                continue;
            }
            let mut path = Vec::new();
            let mut j = i + 1;
            let mut ended = false;
            while let Some(next) = tokens.get(j) {
                let word = clean(next);
                if !cli.commands[&path].contains(&word) {
                    break;
                }
                path.push(word);
                j += 1;
                if next.ends_with('`') {
                    ended = true;
                    break;
                }
            }
            if path.is_empty() {
                continue;
            }
            let mut flags = Vec::new();
            while let (false, Some(next)) = (ended, tokens.get(j)) {
                if ["|", "||", "&&", ";", ">", "2>"].contains(next) || next.starts_with('#') {
                    break;
                }
                let word = clean(next);
                if let Some(flag) = word.strip_prefix("--") {
                    flags.push(format!("--{}", flag.split('=').next().unwrap()));
                }
                ended = next.ends_with('`');
                j += 1;
            }
            found.push(Invocation { line, path, flags });
        }
    }
    found
}

/// What in `text` (the file `name`) names a `wsp` flag or variable that does not exist.
fn unknown_names(name: &str, text: &str, cli: &Cli) -> Vec<String> {
    let mut errors = Vec::new();
    for call in invocations(text, cli) {
        for flag in &call.flags {
            if !cli.flags[&call.path].contains(flag) {
                errors.push(format!(
                    "{name}:{}: `wsp {}` has no flag {flag}",
                    call.line,
                    call.path.join(" ")
                ));
            }
        }
    }
    for variable in variables_in(text) {
        if !cli.variables.contains(&variable) {
            errors.push(format!("{name}: no wsp help names {variable}"));
        }
    }
    errors
}

#[test]
fn every_wsp_flag_and_variable_the_recipes_name_exists() {
    let cli = cli();
    let mut errors = Vec::new();
    let mut checked = BTreeSet::new();
    for file in deploy_files() {
        let text = read(&file);
        errors.extend(unknown_names(&file, &text, cli));
        for call in invocations(&text, cli) {
            checked.insert((file.clone(), call.path.join(" ")));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    // The command lines that matter were found, so the check above looked at them.
    for (file, command) in [
        ("deploy/systemd/wsp.service", "serve"),
        ("deploy/README.md", "serve"),
        ("deploy/README.md", "backup"),
        ("deploy/README.md", "keys create"),
    ] {
        assert!(
            checked.contains(&(file.to_owned(), command.to_owned())),
            "no `wsp {command}` found in {file}; found {checked:?}"
        );
    }
}

#[test]
fn the_name_check_refuses_a_renamed_flag_or_variable() {
    let cli = cli();
    let good = "ExecStart=/usr/local/bin/wsp serve --addr 127.0.0.1:8787 --data=/var/lib/wsp\n\
                Environment=WSP_LOG_FORMAT=json\n`wsp keys create --tenant t` and `wsp backup`";
    assert_eq!(unknown_names("good", good, cli), Vec::<String>::new());
    for (bad, error) in [
        (
            "ExecStart=/usr/local/bin/wsp serve --adress 127.0.0.1:8787",
            "good:1: `wsp serve` has no flag --adress",
        ),
        (
            "docker run --rm wsp backup \\\n  --data-dir /var/lib/wsp /backup",
            "good:1: `wsp backup` has no flag --data-dir",
        ),
        (
            "Environment=WSP_LISTEN=0.0.0.0:8787",
            "good: no wsp help names WSP_LISTEN",
        ),
    ] {
        assert_eq!(unknown_names("good", bad, cli), [error], "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// Processes and HTTP

/// The lines of a server's standard error (started piped), as they come.
fn follow_stderr(server: &mut support::Server) -> Receiver<String> {
    let (tx, log) = channel();
    let stderr = BufReader::new(server.child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    log
}

/// Waits for a line of `log` containing `needle`, at most `within`.
fn logged(log: &Receiver<String>, needle: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match log.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// Waits for `child` to exit, at most `within`.
fn wait_for_exit(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Sends signal `name` (`SIGTERM`, `TERM`) to process `pid`.
fn signal(pid: u32, name: &str) {
    let name = name.strip_prefix("SIG").unwrap_or(name);
    let sent = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {name} {pid}");
}

/// Runs `command` to its end, at most `within`; `Err` says why it did not finish.
fn run_within(command: &mut Command, within: Duration) -> Result<Output, String> {
    let shown = format!("{command:?}");
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{shown}: {e}"))?;
    let pid = child.id();
    let (tx, rx) = channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(within) {
        Ok(out) => out.map_err(|e| format!("{shown}: {e}")),
        Err(_) => {
            signal(pid, "KILL");
            Err(format!("{shown} did not finish within {within:?}"))
        }
    }
}

/// The last non-empty line of a command's standard error.
fn last_error_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("(nothing on stderr)")
        .to_owned()
}

/// One HTTP/1.1 request (the connection closed after it): the status and the whole response.
fn http(
    addr: &str,
    method: &str,
    target: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(key) = key {
        req.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    if let Some(body) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body.unwrap_or(""));
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp.get(9..12).and_then(|c| c.parse().ok());
    (
        status.unwrap_or_else(|| panic!("no status line: {resp:?}")),
        resp,
    )
}

/// `GET /healthz` and `GET /readyz` answer 200 at `addr`.
fn assert_probes_answer(addr: &str) {
    let (status, resp) = http(addr, "GET", "/healthz", None, None);
    assert_eq!(status, 200, "{resp}");
    assert!(resp.contains(r#""status":"ok""#), "{resp}");
    let (status, resp) = http(addr, "GET", "/readyz", None, None);
    assert_eq!(status, 200, "{resp}");
    assert!(resp.contains(r#""status":"ready""#), "{resp}");
}

/// `host:port` with the port replaced by 0 (a free one, which `wsp serve` then prints).
fn any_port(addr: &str) -> String {
    let (host, _) = addr.rsplit_once(':').unwrap();
    format!("{host}:0")
}

/// `127.0.0.1:PORT` for a port free right now.
fn free_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

// ---------------------------------------------------------------------------------------------
// The systemd unit

const UNIT: &str = "deploy/systemd/wsp.service";

/// A unit file: `(section, key, value)` in file order.
struct Unit(Vec<(String, String, String)>);

impl Unit {
    fn parse(text: &str) -> Unit {
        let mut section = String::new();
        let mut entries = Vec::new();
        for (_, line) in logical_lines(text) {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.to_owned();
                continue;
            }
            let (key, value) = line.split_once('=').expect("key=value");
            entries.push((
                section.clone(),
                key.trim().to_owned(),
                value.trim().to_owned(),
            ));
        }
        Unit(entries)
    }

    fn all(&self, section: &str, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(s, k, _)| s == section && k == key)
            .map(|(_, _, v)| v.as_str())
            .collect()
    }

    /// The one value of `[Service] key`; panics when it is missing or given twice.
    fn service(&self, key: &str) -> &str {
        match self.all("Service", key)[..] {
            [one] => one,
            ref other => panic!("{UNIT}: [Service] {key}= given {} times", other.len()),
        }
    }

    /// `ExecStart=`, split as systemd splits a line without quotes or variables.
    fn exec_start(&self) -> Vec<String> {
        let line = self.service("ExecStart");
        assert!(
            !line.contains(['"', '\'', '$', '%', ';']),
            "{UNIT}: ExecStart is plain words, so this test splits it as systemd does: {line}"
        );
        line.split_whitespace().map(str::to_owned).collect()
    }

    /// `Environment=` assignments.
    fn environment(&self) -> Vec<(String, String)> {
        self.all("Service", "Environment")
            .iter()
            .flat_map(|v| v.split_whitespace())
            .map(|a| {
                let (k, v) = a.split_once('=').expect("NAME=value");
                (k.to_owned(), v.to_owned())
            })
            .collect()
    }
}

/// The signal `ExecReload=/bin/kill -SIGNAL $MAINPID` sends (`SIGHUP`).
fn reload_signal(unit: &Unit) -> String {
    let reload = unit.service("ExecReload");
    let name = reload
        .strip_prefix("/bin/kill -")
        .and_then(|r| r.strip_suffix(" $MAINPID"))
        .unwrap_or_else(|| panic!("{UNIT}: ExecReload=/bin/kill -SIGNAL $MAINPID, not {reload}"));
    format!("SIG{}", name.trim_start_matches("SIG"))
}

/// The value of `--flag VALUE` or `--flag=VALUE` in `argv`.
fn flag_value<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            argv.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix(flag)?.strip_prefix('=')
        }
    })
}

/// Seconds in a systemd time span of the forms `30`, `30s` or `2min`.
fn seconds(span: &str) -> u64 {
    if let Some(min) = span.strip_suffix("min") {
        return min.trim().parse::<u64>().expect("minutes") * 60;
    }
    span.trim_end_matches('s')
        .trim()
        .parse()
        .expect("a time span in seconds")
}

/// The drain timeout `argv` and `env` give `wsp serve` (or its default).
fn drain_timeout(argv: &[String], env: &[(String, String)]) -> u64 {
    flag_value(argv, "--drain-timeout")
        .map(str::to_owned)
        .or_else(|| {
            env.iter()
                .find(|(k, _)| k == "WSP_DRAIN_TIMEOUT")
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| serve_default("--drain-timeout"))
        .parse()
        .unwrap()
}

#[test]
fn systemd_unit_is_sandboxed_and_keeps_secrets_off_the_command_line() {
    let unit = Unit::parse(&read(UNIT));
    for (key, value) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("StateDirectory", "wsp"),
        ("StateDirectoryMode", "0700"),
        ("KillSignal", "SIGTERM"),
        ("Restart", "on-failure"),
    ] {
        assert_eq!(unit.service(key), value, "{UNIT}: {key}=");
    }
    // systemctl reload re-reads the TLS files.
    assert_eq!(reload_signal(&unit), "SIGHUP");
    // A user of its own, never root.
    let dynamic = unit.all("Service", "DynamicUser") == ["yes"];
    let user = unit.all("Service", "User");
    assert!(
        dynamic || (user.len() == 1 && !["root", "0"].contains(&user[0])),
        "{UNIT}: DynamicUser=yes or a User= of its own, got {user:?}"
    );
    // The data directory is the state directory, and the one writable path.
    let argv = unit.exec_start();
    assert_eq!(argv[0], "/usr/local/bin/wsp");
    assert_eq!(argv[1], "serve");
    let data = format!("/var/lib/{}", unit.service("StateDirectory"));
    assert_eq!(
        flag_value(&argv, "--data"),
        Some(data.as_str()),
        "{UNIT}: --data"
    );
    assert_eq!(unit.all("Service", "ReadWritePaths"), [data.as_str()]);
    // systemd kills only after the server has drained.
    let drain = drain_timeout(&argv, &unit.environment());
    let stop = seconds(unit.service("TimeoutStopSec"));
    assert!(
        drain < stop,
        "--drain-timeout {drain} must end before TimeoutStopSec={stop}"
    );
    // Secrets come from a root-only environment file: never ExecStart (ps) nor Environment=
    // (systemctl show, readable by every user).
    assert!(
        !unit.all("Service", "EnvironmentFile").is_empty(),
        "{UNIT}: EnvironmentFile="
    );
    assert!(!unit.service("ExecStart").contains("postgres"));
    assert!(
        flag_value(&argv, "--store").is_none(),
        "{UNIT}: --store on the command line"
    );
    for (name, _) in unit.environment() {
        assert_ne!(
            name, "WSP_STORE",
            "{UNIT}: WSP_STORE belongs in the EnvironmentFile"
        );
    }
    let env_file = read("deploy/systemd/wsp.env");
    assert!(
        env_file.contains("WSP_STORE=postgres://"),
        "the example shows WSP_STORE"
    );
}

#[test]
fn systemd_unit_command_line_serves_and_stops_on_its_kill_signal_within_its_stop_timeout() {
    let unit = Unit::parse(&read(UNIT));
    let data = tempfile::tempdir().unwrap();
    let unit_data = format!("/var/lib/{}", unit.service("StateDirectory"));
    // ExecStart with the real binary, the data directory in a temporary one and a free port.
    let mut argv = unit.exec_start();
    argv[0] = WSP.to_owned();
    for i in 1..argv.len() {
        if argv[i] == unit_data {
            argv[i] = data.path().to_str().unwrap().to_owned();
        }
        if argv[i - 1] == "--addr" {
            argv[i] = any_port(&argv[i]);
        }
    }
    assert!(argv.iter().all(|a| a != &unit_data), "{argv:?}");
    // systemd starts the service with the unit's environment alone.
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env_clear()
        .envs(unit.environment())
        .current_dir(data.path())
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = support::start(&mut command);
    let log = follow_stderr(&mut server);
    // The admin key of the first start is on standard output: the journal.
    assert!(server.first_key.is_some(), "{}", server.listening);
    assert_probes_answer(server.addr());
    assert!(
        data.path().join("keys.sqlite3").exists(),
        "the data directory is --data"
    );

    // systemctl reload: the server handles the signal and keeps serving.
    let reload = reload_signal(&unit);
    signal(server.child.id(), &reload);
    assert!(
        logged(&log, &reload, Duration::from_secs(20)),
        "wsp logs the {reload} of systemctl reload"
    );
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "{reload} stopped wsp"
    );
    assert_probes_answer(server.addr());

    signal(server.child.id(), unit.service("KillSignal"));
    let stop = Duration::from_secs(seconds(unit.service("TimeoutStopSec")));
    let status = wait_for_exit(&mut server.child, stop).unwrap_or_else(|| {
        panic!(
            "still running {stop:?} after {}",
            unit.service("KillSignal")
        )
    });
    assert!(status.success(), "stops cleanly: {status}");
}

#[test]
fn systemd_analyze_accepts_the_unit_when_it_is_installed() {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        loudly("SYSTEMD UNIT NOT VERIFIED: systemd-analyze is not installed");
        return;
    };
    assert!(version.status.success());
    let dir = tempfile::tempdir().unwrap();
    let verify = |text: &str| {
        let file = dir.path().join("wsp.service");
        std::fs::write(&file, text.replace("/usr/local/bin/wsp", WSP)).unwrap();
        let out = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&file)
            .output()
            .unwrap();
        // Only what concerns this unit: verify also loads the host's units it depends on.
        let said: Vec<String> = [&out.stdout, &out.stderr]
            .iter()
            .flat_map(|o| {
                String::from_utf8_lossy(o)
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|l| l.contains("wsp.service"))
            .collect();
        (out.status.success(), said.join("\n"), file)
    };
    let text = read(UNIT);
    let (ok, said, file) = verify(&text);
    assert!(
        ok && said.is_empty(),
        "systemd-analyze verify {UNIT}:\n{said}"
    );
    // verify reports a directive it cannot parse, so the silence above means something.
    let (_, said, _) = verify(&text.replace("ProtectSystem=strict", "ProtectSystem=sometimes"));
    assert!(said.contains("sometimes"), "{said}");

    // The sandbox, as systemd rates it (from 0, fully sandboxed, to 10, not at all).
    verify(&text);
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(&file)
        .output()
        .unwrap();
    if !out.status.success() {
        loudly(&format!(
            "SYSTEMD SANDBOX NOT RATED: systemd-analyze security --offline failed: {}",
            last_error_line(&out)
        ));
        return;
    }
    let report = String::from_utf8_lossy(&out.stdout);
    let level: f64 = report
        .lines()
        .find_map(|l| l.split("Overall exposure level for wsp.service: ").nth(1))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no overall exposure level in:\n{report}"));
    assert!(level <= 2.5, "exposure {level} (at most 2.5):\n{report}");
}

// ---------------------------------------------------------------------------------------------
// The container file

const CONTAINER_FILE: &str = "deploy/Dockerfile";

/// One instruction of a container file, in its stage (0 is before the first `FROM`).
#[derive(Debug)]
struct Instruction {
    stage: usize,
    op: String,
    args: String,
}

fn container_file() -> Vec<Instruction> {
    let mut stage = 0;
    let mut instructions = Vec::new();
    let text = read(CONTAINER_FILE);
    let without_comments: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    for (_, line) in logical_lines(&without_comments) {
        let Some((op, args)) = line.trim().split_once(char::is_whitespace) else {
            continue;
        };
        let op = op.to_ascii_uppercase();
        if op == "FROM" {
            stage += 1;
        }
        let args = args.split_whitespace().collect::<Vec<_>>().join(" ");
        instructions.push(Instruction { stage, op, args });
    }
    instructions
}

/// The arguments of every `op` instruction of `stage`.
fn in_stage<'a>(file: &'a [Instruction], stage: usize, op: &str) -> Vec<&'a str> {
    file.iter()
        .filter(|i| i.stage == stage && i.op == op)
        .map(|i| i.args.as_str())
        .collect()
}

/// `ENV` of `stage` (`NAME=value` pairs).
fn env_of(file: &[Instruction], stage: usize) -> Vec<(String, String)> {
    in_stage(file, stage, "ENV")
        .iter()
        .flat_map(|a| a.split_whitespace())
        .map(|a| {
            let (k, v) = a.split_once('=').expect("ENV NAME=value");
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn env_value<'a>(env: &'a [(String, String)], name: &str) -> &'a str {
    env.iter()
        .rfind(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("{CONTAINER_FILE}: no ENV {name}"))
}

/// A JSON-array (exec form) argument.
fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("exec form expected: {args}: {e}"))
}

/// The runtime stage (the last) and its health check command.
fn health_check(file: &[Instruction]) -> Vec<String> {
    let last = file.last().unwrap().stage;
    let [check] = in_stage(file, last, "HEALTHCHECK")[..] else {
        panic!("{CONTAINER_FILE}: one HEALTHCHECK in the runtime stage");
    };
    let (_, command) = check.split_once("CMD ").expect("HEALTHCHECK ... CMD [...]");
    exec_form(command)
}

/// The workspace's minimum Rust version.
fn rust_version() -> String {
    read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("rust-version in Cargo.toml")
        .trim_matches('"')
        .to_owned()
}

#[test]
fn container_file_builds_in_two_stages_and_runs_wsp_unprivileged() {
    let file = container_file();
    let froms: Vec<&Instruction> = file.iter().filter(|i| i.op == "FROM").collect();
    assert_eq!(froms.len(), 2, "a builder and a runtime stage");
    let (runtime, builder) = (froms[1].stage, froms[0].stage);

    // The builder: Rust at the workspace's minimum version, building only wsp, locked.
    let rust = format!("RUST_VERSION={}", rust_version());
    assert_eq!(
        in_stage(&file, 0, "ARG"),
        [rust.as_str()],
        "the builder's Rust is rust-version"
    );
    let (image, name) = froms[0]
        .args
        .split_once(" AS ")
        .expect("FROM image AS name");
    assert!(image.starts_with("rust:${RUST_VERSION}"), "{image}");
    assert!(
        in_stage(&file, builder, "RUN")
            .iter()
            .any(|r| r.contains("cargo build --release --locked --bin wsp")),
        "the builder runs cargo build --release --locked --bin wsp"
    );
    let workdir = in_stage(&file, builder, "WORKDIR")[0];

    // The runtime: slim Debian with CA certificates and the binary from the builder.
    assert_eq!(froms[1].args, "debian:bookworm-slim");
    let install = in_stage(&file, runtime, "RUN")
        .into_iter()
        .find(|r| r.contains("apt-get install"))
        .expect("the runtime installs packages");
    assert!(install.contains("ca-certificates"), "{install}");
    let copy = format!("--from={name} {workdir}/target/release/wsp /usr/local/bin/wsp");
    assert_eq!(in_stage(&file, runtime, "COPY"), [copy.as_str()]);
    assert_eq!(
        in_stage(&file, runtime, "ENTRYPOINT"),
        [r#"["/usr/local/bin/wsp"]"#]
    );
    assert_eq!(in_stage(&file, runtime, "CMD"), [r#"["serve"]"#]);

    // A fixed, unprivileged UID and GID, made in the image and owning the data directory.
    let [user] = in_stage(&file, runtime, "USER")[..] else {
        panic!("one USER")
    };
    let (uid, gid) = user.split_once(':').expect("USER uid:gid");
    let (uid, gid): (u32, u32) = (uid.parse().unwrap(), gid.parse().unwrap());
    assert!(uid >= 1000 && gid >= 1000, "USER {user}");
    let setup = in_stage(&file, runtime, "RUN").join("\n");
    assert!(
        setup.contains(&format!("useradd --system --uid {uid} ")),
        "{setup}"
    );
    assert!(
        setup.contains(&format!("groupadd --system --gid {gid} ")),
        "{setup}"
    );
    let env = env_of(&file, runtime);
    let data = env_value(&env, "WSP_DATA");
    assert!(
        setup.contains(&format!("--owner=wsp --group=wsp --mode=0700 {data}")),
        "the data directory is made, owned by wsp, before the volume copies it: {setup}"
    );
    assert_eq!(
        in_stage(&file, runtime, "VOLUME"),
        [format!(r#"["{data}"]"#).as_str()]
    );

    // Every interface inside the container, on the exposed port; the health check probes it
    // with a program the runtime stage installs.
    let addr = env_value(&env, "WSP_ADDR");
    let (host, port) = addr.rsplit_once(':').unwrap();
    assert_eq!(host, "0.0.0.0");
    assert_eq!(in_stage(&file, runtime, "EXPOSE"), [port]);
    let check = health_check(&file);
    assert!(
        check.contains(&format!("http://127.0.0.1:{port}/healthz")),
        "{check:?}"
    );
    assert!(
        install.split_whitespace().any(|w| w == check[0]),
        "{} is installed",
        check[0]
    );
    assert!(
        check.contains(&"--fail".to_owned()),
        "an error status fails the check"
    );

    // docker stop and podman stop wait 10 s after STOPSIGNAL; the drain ends before.
    assert_eq!(in_stage(&file, runtime, "STOPSIGNAL"), ["SIGTERM"]);
    let drain: u64 = env_value(&env, "WSP_DRAIN_TIMEOUT").parse().unwrap();
    assert!(drain < 10, "WSP_DRAIN_TIMEOUT {drain} < docker stop's 10 s");

    // The build context leaves out build output and history.
    let ignore = read(".dockerignore");
    let ignored: BTreeSet<&str> = ignore.lines().map(|l| l.trim().trim_matches('/')).collect();
    for path in ["target", ".git"] {
        assert!(ignored.contains(path), ".dockerignore leaves out {path}");
    }
}

#[test]
fn container_command_serves_and_its_health_check_probes_it() {
    let file = container_file();
    let runtime = file.last().unwrap().stage;
    let entrypoint = exec_form(in_stage(&file, runtime, "ENTRYPOINT")[0]);
    let cmd = exec_form(in_stage(&file, runtime, "CMD")[0]);
    assert_eq!(entrypoint, ["/usr/local/bin/wsp"]);
    let data = tempfile::tempdir().unwrap();
    // The image's environment alone, with the data directory in a temporary one and a free
    // port on loopback (the test must not listen on every interface).
    let env: Vec<(String, String)> = env_of(&file, runtime)
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "WSP_ADDR" => (k, "127.0.0.1:0".to_owned()),
            "WSP_DATA" => (k, data.path().to_str().unwrap().to_owned()),
            _ => (k, v),
        })
        .collect();
    let mut command = Command::new(WSP);
    command
        .args(&cmd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let mut server = support::start(&mut command);
    assert!(
        server.first_key.is_some(),
        "the first start prints the admin key (docker logs)"
    );
    assert!(
        data.path().join("wsp.sqlite3").exists(),
        "WSP_DATA is the data directory"
    );
    assert_probes_answer(server.addr());

    let port = server.addr().rsplit_once(':').unwrap().1.to_owned();
    let check = health_check(&file);
    let probe = |path: &str| {
        let args: Vec<String> = check[1..]
            .iter()
            .map(|a| a.replace("127.0.0.1:8787/healthz", &format!("127.0.0.1:{port}{path}")))
            .collect();
        run_within(Command::new(&check[0]).args(&args), Duration::from_secs(10))
    };
    match probe("/healthz") {
        Err(why) if why.contains("No such file") => loudly(&format!(
            "CONTAINER HEALTH CHECK NOT RUN: {} is not installed here",
            check[0]
        )),
        healthy => {
            let healthy = healthy.unwrap();
            assert!(healthy.status.success(), "{}", last_error_line(&healthy));
            let missing = probe("/no-such-probe").unwrap();
            assert!(!missing.status.success(), "a 404 fails the health check");
        }
    }
    let stop = in_stage(&file, runtime, "STOPSIGNAL")[0];
    signal(server.child.id(), stop);
    let status = wait_for_exit(&mut server.child, Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "{stop} stops it within 10 s: {status:?}"
    );
}

/// A container tool that can build here (`podman` or `docker` whose `info` succeeds), or why
/// there is none.
fn container_tool() -> Result<&'static str, String> {
    let mut why = Vec::new();
    for tool in ["podman", "docker"] {
        match run_within(Command::new(tool).arg("info"), Duration::from_secs(30)) {
            Ok(out) if out.status.success() => return Ok(tool),
            Ok(out) => why.push(format!("`{tool} info` failed: {}", last_error_line(&out))),
            Err(e) if e.contains("No such file") => why.push(format!("{tool} is not installed")),
            Err(e) => why.push(e),
        }
    }
    Err(why.join("; "))
}

#[test]
fn container_image_builds_where_a_container_tool_can() {
    let tool = match container_tool() {
        Ok(tool) => tool,
        Err(why) => return loudly(&format!("CONTAINER IMAGE NOT BUILT: {why}")),
    };
    // The base images, with the file's ARG defaults; a registry out of reach is no failure of
    // the file, so it is said and the build is not attempted.
    let file = container_file();
    let args: Vec<(String, String)> = in_stage(&file, 0, "ARG")
        .iter()
        .map(|a| {
            let (k, v) = a.split_once('=').unwrap();
            (format!("${{{k}}}"), v.to_owned())
        })
        .collect();
    for from in file.iter().filter(|i| i.op == "FROM") {
        let mut image = from.args.split_whitespace().next().unwrap().to_owned();
        for (name, value) in &args {
            image = image.replace(name, value);
        }
        let pulled = run_within(
            Command::new(tool).args(["pull", &image]),
            Duration::from_secs(600),
        );
        match pulled {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                return loudly(&format!(
                    "CONTAINER IMAGE NOT BUILT: `{tool} pull {image}` failed: {}",
                    last_error_line(&out)
                ));
            }
            Err(e) => return loudly(&format!("CONTAINER IMAGE NOT BUILT: {e}")),
        }
    }
    let tag = format!("localhost/wsp-deploy-test:{}", std::process::id());
    let built = Command::new(tool)
        .args(["build", "--file"])
        .arg(root().join(CONTAINER_FILE))
        .args(["--tag", &tag])
        .arg(root())
        .status()
        .unwrap();
    assert!(built.success(), "{tool} build -f {CONTAINER_FILE} failed");
    let run = |args: &[&str]| {
        let out = Command::new(tool).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}",
            last_error_line(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let version = run(&["run", "--rm", &tag, "--version"]);
    assert!(version.starts_with("wsp "), "{version}");
    let check = health_check(&file);
    run(&["run", "--rm", "--entrypoint", &check[0], &tag, "--version"]);
    let user = run(&["image", "inspect", "--format", "{{.Config.User}}", &tag]);
    let runtime = file.last().unwrap().stage;
    assert_eq!(user.trim(), in_stage(&file, runtime, "USER")[0]);
    run(&["rmi", &tag]);
    loudly(&format!(
        "CONTAINER IMAGE BUILT with {tool} and removed: {tag}"
    ));
}

// ---------------------------------------------------------------------------------------------
// Three replicas on PostgreSQL behind a load balancer

const COMPOSE: &str = "deploy/replicas/compose.yaml";
const HAPROXY: &str = "deploy/replicas/haproxy.cfg";
/// The change feed, which the load balancer must stream and keep open.
const FEED: &str = "/v1/host/workspace/events";

/// A mapping with its `<<` merge keys resolved (compose's anchors and aliases).
fn merged(node: &Yaml) -> Yaml {
    let Some(hash) = node.as_hash() else {
        return node.clone();
    };
    let mut out = yaml_rust2::yaml::Hash::new();
    if let Some(Yaml::Hash(base)) = hash.get(&Yaml::String("<<".into())).map(merged) {
        out.extend(base);
    }
    for (k, v) in hash {
        if k.as_str() != Some("<<") {
            out.insert(k.clone(), merged(v));
        }
    }
    Yaml::Hash(out)
}

/// The compose file, merged.
fn compose() -> Yaml {
    let docs = YamlLoader::load_from_str(&read(COMPOSE)).expect("compose.yaml is YAML");
    merged(&docs[0])
}

/// A compose scalar as text.
fn scalar(node: &Yaml) -> String {
    match node {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// The services built from the container file (the wsp replicas), by name, in file order.
fn replicas(compose: &Yaml) -> Vec<(String, Yaml)> {
    compose["services"]
        .as_hash()
        .unwrap()
        .iter()
        .filter(|(_, s)| s["build"]["dockerfile"].as_str() == Some(CONTAINER_FILE))
        .map(|(name, s)| (scalar(name), s.clone()))
        .collect()
}

/// A service's `environment` mapping.
fn service_env(service: &Yaml) -> Vec<(String, String)> {
    service["environment"]
        .as_hash()
        .map(|h| h.iter().map(|(k, v)| (scalar(k), scalar(v))).collect())
        .unwrap_or_default()
}

/// The `(service, condition)` pairs a service waits for.
fn depends_on(service: &Yaml) -> Vec<(String, String)> {
    match &service["depends_on"] {
        Yaml::Hash(h) => h
            .iter()
            .map(|(k, v)| (scalar(k), scalar(&v["condition"])))
            .collect(),
        Yaml::Array(a) => a
            .iter()
            .map(|s| (scalar(s), "service_started".into()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The lines of one section of the HAProxy file (`backend wsp`), up to the next blank line,
/// without comments.
fn haproxy_section(name: &str) -> Vec<String> {
    let text = read(HAPROXY);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.starts_with('#'));
    lines
        .by_ref()
        .find(|l| *l == name)
        .unwrap_or_else(|| panic!("{HAPROXY}: no `{name}`"));
    lines
        .take_while(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `server NAME ADDRESS ...` lines of a backend: `(name, address, the rest)`.
fn servers(backend: &str) -> Vec<(String, String, String)> {
    haproxy_section(&format!("backend {backend}"))
        .iter()
        .filter_map(|l| l.strip_prefix("server "))
        .map(|l| {
            let mut words = l.splitn(3, ' ');
            let (name, addr) = (words.next().unwrap(), words.next().unwrap());
            (
                name.to_owned(),
                addr.to_owned(),
                words.next().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// An HAProxy time (`60s`, `1h`, `500ms`) in seconds.
fn haproxy_seconds(time: &str) -> u64 {
    let (number, unit) = time.split_at(
        time.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(time.len()),
    );
    let n: u64 = number.parse().unwrap();
    match unit {
        "ms" => n / 1000,
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        other => panic!("time unit {other}"),
    }
}

/// The value of `timeout NAME` in a section, else in `defaults`.
fn haproxy_timeout(section: &str, name: &str) -> u64 {
    let find = |s: &str| {
        haproxy_section(s).iter().find_map(|l| {
            let value = l.strip_prefix(&format!("timeout {name} "))?;
            Some(haproxy_seconds(value.trim()))
        })
    };
    find(section)
        .or_else(|| find("defaults"))
        .unwrap_or_else(|| panic!("{HAPROXY}: no timeout {name}"))
}

#[test]
fn compose_file_runs_three_replicas_on_postgresql_behind_the_load_balancer() {
    let compose = compose();
    let services = &compose["services"];
    let replicas = replicas(&compose);
    assert_eq!(replicas.len(), 3, "three wsp replicas");

    // PostgreSQL's password comes from the environment of `docker compose`, never the file.
    let postgres = services["postgres"].clone();
    let pg_env: BTreeMap<String, String> = service_env(&postgres).into_iter().collect();
    let password = &pg_env["POSTGRES_PASSWORD"];
    let variable = password
        .strip_prefix("${")
        .and_then(|p| p.split([':', '}']).next())
        .unwrap_or_else(|| panic!("POSTGRES_PASSWORD is ${{VARIABLE...}}, not {password}"));
    let max_connections: u64 = postgres["command"]
        .as_vec()
        .and_then(|c| {
            c.iter()
                .find_map(|a| a.as_str()?.strip_prefix("max_connections="))
        })
        .unwrap_or("100")
        .parse()
        .unwrap();

    let file = container_file();
    let image_env = env_of(&file, file.last().unwrap().stage);
    let mut pool_total = 0;
    for (name, replica) in &replicas {
        // The database URL, password included, in the environment only.
        assert!(
            replica["command"].is_badvalue(),
            "{name}: the image's command, no flags"
        );
        assert!(
            replica["entrypoint"].is_badvalue(),
            "{name}: the image's entrypoint"
        );
        let env: BTreeMap<String, String> = service_env(replica).into_iter().collect();
        let store = &env["WSP_STORE"];
        let expected = format!("postgres://{}:${{{variable}", pg_env["POSTGRES_USER"]);
        assert!(store.starts_with(&expected), "{name}: WSP_STORE {store}");
        assert!(
            store.ends_with(&format!("@postgres:5432/{}", pg_env["POSTGRES_DB"])),
            "{name}: WSP_STORE names the postgres service and its database: {store}"
        );
        pool_total += env
            .get("WSP_PG_MAX_CONNECTIONS")
            .cloned()
            .unwrap_or_else(|| serve_default("--pg-max-connections"))
            .parse::<u64>()
            .unwrap();
        // The container is killed only after wsp has drained.
        let drain: u64 = env
            .get("WSP_DRAIN_TIMEOUT")
            .map_or_else(
                || env_value(&image_env, "WSP_DRAIN_TIMEOUT"),
                String::as_str,
            )
            .parse()
            .unwrap();
        let grace = seconds(&scalar(&replica["stop_grace_period"]));
        assert!(
            drain < grace,
            "{name}: drain {drain} s < stop_grace_period {grace} s"
        );
    }
    assert!(
        pool_total < max_connections,
        "the replicas' pools ({pool_total}) stay below PostgreSQL's max_connections ({max_connections})"
    );

    // The first replica alone starts on an empty database (it creates the admin key); the
    // others wait until it is healthy.
    let first = &replicas[0].0;
    assert_eq!(
        depends_on(&replicas[0].1),
        [("postgres".to_owned(), "service_healthy".to_owned())]
    );
    for (name, replica) in &replicas[1..] {
        assert_eq!(
            depends_on(replica),
            [(first.clone(), "service_healthy".to_owned())],
            "{name}"
        );
    }
    assert!(
        postgres["healthcheck"]["test"].as_vec().is_some(),
        "service_healthy needs PostgreSQL's health check"
    );

    // The load balancer: this directory's HAProxy file, in front of exactly the replicas, on
    // the port wsp listens on inside the image.
    let lb = services["lb"].clone();
    let volumes: Vec<String> = lb["volumes"].as_vec().unwrap().iter().map(scalar).collect();
    assert!(
        volumes
            .iter()
            .any(|v| v.starts_with("./haproxy.cfg:") && v.ends_with(":ro")),
        "{volumes:?}"
    );
    let port = env_value(&image_env, "WSP_ADDR")
        .rsplit_once(':')
        .unwrap()
        .1
        .to_owned();
    let names: Vec<String> = replicas.iter().map(|(n, _)| n.clone()).collect();
    for backend in ["wsp", "wsp_feed"] {
        let servers = servers(backend);
        let listed: Vec<String> = servers.iter().map(|s| s.0.clone()).collect();
        assert_eq!(listed, names, "backend {backend}");
        for (name, addr, _) in &servers {
            assert_eq!(addr, &format!("{name}:{port}"), "backend {backend}");
        }
    }
}

#[test]
fn load_balancer_checks_readyz_and_keeps_the_change_feed_open() {
    let backend = haproxy_section("backend wsp");
    assert!(
        backend.contains(&"option httpchk".to_owned()),
        "{backend:?}"
    );
    assert!(backend.contains(&"http-check send meth GET uri /readyz".to_owned()));
    assert!(backend.contains(&"http-check expect status 200".to_owned()));
    assert!(
        backend
            .iter()
            .any(|l| l.starts_with("default-server check ")),
        "every server is checked"
    );
    // The feed goes to a backend of its own that waits long on the server, and the client side
    // waits long too; wsp sends a comment every 15 s on an idle feed.
    let frontend = haproxy_section("frontend wsp");
    assert!(
        frontend.contains(&format!("acl change_feed path {FEED}")),
        "{frontend:?}"
    );
    assert!(frontend.contains(&"use_backend wsp_feed if change_feed".to_owned()));
    assert!(haproxy_timeout("backend wsp_feed", "server") >= 600);
    assert!(haproxy_timeout("frontend wsp", "client") >= 600);
    for (name, _, rest) in servers("wsp_feed") {
        assert_eq!(
            rest,
            format!("track wsp/{name}"),
            "the feed follows the checks"
        );
    }
    let text = read(HAPROXY);
    assert!(
        !text.contains("http-buffer-request"),
        "requests are not buffered"
    );

    let Ok(out) = Command::new("haproxy")
        .args(["-c", "-f"])
        .arg(root().join(HAPROXY))
        .output()
    else {
        return loudly("LOAD BALANCER CONFIGURATION NOT CHECKED: haproxy is not installed");
    };
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !said.contains("[ALERT]"),
        "haproxy -c:\n{said}"
    );
}

/// A `wsp serve` replica started with the compose file's settings, its log lines in a channel.
struct Replica {
    server: support::Server,
    log: Receiver<String>,
    _data: tempfile::TempDir,
}

impl Replica {
    /// Waits for a log line containing `needle`, at most `within`.
    fn logged(&self, needle: &str, within: Duration) -> bool {
        logged(&self.log, needle, within)
    }
}

/// Starts replica `name` of the compose file: the image's environment under the service's,
/// the store replaced by the test's database and schema, a data directory and port of its own.
fn start_replica(env: &[(String, String)], db: &str, schema: &str) -> Replica {
    let data = tempfile::tempdir().unwrap();
    let env: Vec<(String, String)> = env
        .iter()
        .cloned()
        .map(|(k, v)| match k.as_str() {
            "WSP_STORE" => (k, db.to_owned()),
            "WSP_ADDR" => (k, "127.0.0.1:0".to_owned()),
            "WSP_DATA" => (k, data.path().to_str().unwrap().to_owned()),
            _ => (k, v),
        })
        .chain([("WSP_PG_SCHEMA".to_owned(), schema.to_owned())])
        .collect();
    let mut command = Command::new(WSP);
    command
        .arg("serve")
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = support::start(&mut command);
    let log = follow_stderr(&mut server);
    Replica {
        server,
        log,
        _data: data,
    }
}

/// Opens the change feed at `addr` from the start and reads until `needle` arrives.
fn feed_shows(addr: &str, key: &str, needle: &str) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {FEED}?since=0 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let n = s.read(&mut chunk).unwrap_or_else(|e| {
            panic!(
                "the feed at {addr} stopped before {needle}: {e}; {}",
                String::from_utf8_lossy(&seen)
            )
        });
        assert!(
            n > 0,
            "the feed at {addr} closed: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&chunk[..n]);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
}

/// `PUT` of `path` with `content` at `addr`; panics unless it answers 200.
fn put(addr: &str, key: &str, path: &str, content: &str) {
    let body = serde_json::json!({ "content": content }).to_string();
    let target = format!("/v1/host/workspace/files/{}", path.replace('/', "%2F"));
    let (status, resp) = http(addr, "PUT", &target, Some(key), Some(&body));
    assert_eq!(status, 200, "PUT {path} at {addr}: {resp}");
}

/// The content of `path` read at `addr`.
fn get(addr: &str, key: &str, path: &str) -> String {
    let target = format!("/v1/host/workspace/files/{}", path.replace('/', "%2F"));
    let (status, resp) = http(addr, "GET", &target, Some(key), None);
    assert_eq!(status, 200, "GET {path} at {addr}: {resp}");
    let body = resp.split_once("\r\n\r\n").unwrap().1;
    let file: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    file["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_from_the_compose_settings_share_one_postgresql() {
    let db = wsp_pgtest::database_url().to_owned();
    let schema = support::unique_schema("wsp_deploy");
    let compose = compose();
    let file = container_file();
    let image_env = env_of(&file, file.last().unwrap().stage);
    let envs: Vec<Vec<(String, String)>> = replicas(&compose)
        .iter()
        .map(|(_, service)| [image_env.clone(), service_env(service)].concat())
        .collect();
    assert_eq!(envs.len(), 3);

    // As compose starts them: the first on the empty database, the others once it is up.
    let started = tokio::task::spawn_blocking(move || {
        let mut replicas = vec![start_replica(&envs[0], &db, &schema)];
        for env in &envs[1..] {
            replicas.push(start_replica(env, &db, &schema));
        }
        (db, schema, replicas)
    });
    let (db, schema, replicas) = started.await.unwrap();
    let key = replicas[0].server.key().to_owned();
    for replica in &replicas[1..] {
        assert!(
            replica.server.first_key.is_none(),
            "one admin key, from the first replica"
        );
    }
    let addrs: Vec<String> = replicas
        .iter()
        .map(|r| r.server.addr().to_owned())
        .collect();

    let checked = tokio::task::spawn_blocking(move || {
        for addr in &addrs {
            assert_probes_answer(addr);
        }
        // A write through each replica is read through the others, and reaches the change
        // feed of another.
        for (i, addr) in addrs.iter().enumerate() {
            put(
                addr,
                &key,
                &format!("deploy/{i}.md"),
                &format!("written through {i}"),
            );
            for (j, other) in addrs.iter().enumerate() {
                assert_eq!(
                    get(other, &key, &format!("deploy/{i}.md")),
                    format!("written through {i}"),
                    "written through {i}, read through {j}"
                );
            }
        }
        feed_shows(&addrs[1], &key, "deploy/2.md");
        through_the_load_balancer(&replicas, &key);
        replicas
    });
    let replicas = checked.await.unwrap();
    drop(replicas);
    support::drop_schema(&db, &schema).await;
}

/// With HAProxy installed: the compose file's HAProxy configuration in front of the replicas
/// (their addresses in place of the compose service names, a free port, checks every 200 ms
/// instead of 5 s) checks each replica's `/readyz`, serves files and streams the change feed.
fn through_the_load_balancer(replicas: &[Replica], key: &str) {
    if Command::new("haproxy").arg("-v").output().is_err() {
        return loudly("LOAD BALANCER NOT RUN: haproxy is not installed");
    }
    let names: Vec<String> = servers("wsp").into_iter().map(|s| s.1).collect();
    let mut config = read(HAPROXY);
    for (name, replica) in names.iter().zip(replicas) {
        config = config.replace(&format!(" {name}"), &format!(" {}", replica.server.addr()));
    }
    let lb = free_addr();
    assert!(config.contains("bind :8787") && config.contains(" inter 5s "));
    config = config
        .replace("bind :8787", &format!("bind {lb}"))
        .replace(" inter 5s ", " inter 200ms ");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("haproxy.cfg");
    std::fs::write(&path, config).unwrap();
    let _haproxy = KillOnDrop(
        Command::new("haproxy")
            .args(["-db", "-f"])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Each replica sees the load balancer's readiness checks (and no longer the test's).
    for replica in replicas {
        replica.log.try_iter().for_each(drop);
    }
    for replica in replicas {
        assert!(
            replica.logged("/readyz", Duration::from_secs(20)),
            "the load balancer checks /readyz of {}",
            replica.server.addr()
        );
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(&lb).is_err() {
        assert!(Instant::now() < deadline, "HAProxy listens on {lb}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_probes_answer(&lb);
    put(&lb, key, "deploy/lb.md", "through the load balancer");
    for replica in replicas {
        assert_eq!(
            get(replica.server.addr(), key, "deploy/lb.md"),
            "through the load balancer"
        );
    }
    feed_shows(&lb, key, "deploy/lb.md");
}

/// A child process killed and waited for when dropped.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
