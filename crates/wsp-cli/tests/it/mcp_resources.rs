//! `wsp mcp` under hostile tool calls: each is refused with a clear error, the process stays
//! alive and keeps answering, and its peak resident set stays bounded.
//!
//! The calls: an `edit_file` whose `replace_all` result would be 8 GB (a 4 MiB file of `a`,
//! `old_string` "a", a 2,000-byte `new_string`), and a `write_file` with `if_match` against a
//! 10 GB sparse file. The bound is on memory (`VmHWM` of the real process), not on time.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const WSP: &str = env!("CARGO_BIN_EXE_wsp");

/// The peak resident set `wsp mcp` may reach over the whole session. A debug build idles at
/// about 22 MiB, and the calls below take it to about 27 MiB (the 4 MiB file read once);
/// before the bounds, the edit took it past 2 GB and the `if_match` write tried to allocate
/// 10 GB.
const PEAK_RSS_LIMIT_KIB: u64 = 64 * 1024;

/// The address space the child may reserve (`ulimit -v`, KiB). Far above what it uses (thread
/// stacks and allocator arenas reserve more than they touch), it only makes a regression abort
/// the child instead of growing until the kernel kills some other process on the machine.
const ADDRESS_SPACE_CAP_KIB: u64 = 4 * 1024 * 1024;

/// 4 MiB: the default read and write limit.
const FOUR_MIB: usize = 4 * 1024 * 1024;

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    /// Starts `wsp mcp --profile files --mounts TABLE` under the address-space cap and
    /// initializes the MCP session.
    fn start(table: &std::path::Path, data: &std::path::Path) -> Self {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {ADDRESS_SPACE_CAP_KIB} && exec \"$0\" \"$@\""
            ))
            .arg(WSP)
            .args(["mcp", "--profile", "files", "--mounts"])
            .arg(table)
            .arg("--data")
            .arg(data)
            .env("WSP_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("wsp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut session = Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "wsp-cli-resource-test", "version": "0"}}),
        );
        assert!(init["result"].is_object(), "{init}");
        session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends one request and reads its response; a process that died says so.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        if line.is_empty() {
            let status = self.child.wait().unwrap();
            panic!("wsp mcp ended during {method} ({status})");
        }
        let response: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: stdout {line:?}"));
        assert_eq!(response["id"], id, "{response}");
        response
    }

    /// The result of a `tools/call`.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": args}));
        response["result"].clone()
    }

    /// The child's `VmHWM` (peak resident set), in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the process is alive");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status")
    }

    fn finish(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "wsp mcp exited with {status}");
    }
}

/// An error result's code and text, after checking it is one.
fn refusal(result: &Value) -> (&str, &str) {
    assert_eq!(result["isError"], true, "{result}");
    let code = result["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    (code, text)
}

#[test]
fn hostile_edits_and_conditional_writes_get_clear_errors_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), vec![b'a'; FOUR_MIB]).unwrap();
    // 10 GB that costs no disk: a hole.
    std::fs::File::create(ws.join("huge.bin"))
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    std::fs::write(ws.join("note.txt"), "still here\n").unwrap();
    let table = dir.path().join("mounts.toml");
    std::fs::write(
        &table,
        format!(
            "[[workspace]]\npath = \"/ws\"\nscope = \"rw\"\nmount = {{ physical = {:?} }}\n",
            ws.display().to_string()
        ),
    )
    .unwrap();

    let mut session = Session::start(&table, &dir.path().join("data"));

    // (a) The edit bomb: 4,194,304 matches of "a", each to become 2,000 bytes.
    let result = session.call(
        "edit_file",
        json!({"path": "/ws/a.txt", "old_string": "a", "new_string": "b".repeat(2000),
               "replace_all": true}),
    );
    let (code, text) = refusal(&result);
    assert_eq!(code, "too_large", "{result}");
    assert_eq!(
        text,
        "too_large: the edited file would be 8388608000 bytes, over write_file's limit of \
         4194304 bytes; replace fewer occurrences or with shorter text"
    );

    // (b) if_match against a 10 GB sparse file.
    let result = session.call(
        "write_file",
        json!({"path": "/ws/huge.bin", "content": "x",
               "if_match": "\"sha256-000000000000000000000000\""}),
    );
    let (code, text) = refusal(&result);
    assert_eq!(code, "too_large", "{result}");
    assert_eq!(
        text,
        "too_large: /ws/huge.bin is over 4194304 bytes, more than if_match can compare, so no \
         etag you hold can match it; leave out if_match to replace it"
    );

    // Still alive, still answering.
    let result = session.call("read_file", json!({"path": "/ws/note.txt"}));
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("     1\tstill here\n"), "{text}");

    let peak = session.peak_rss_kib();
    assert!(
        peak < PEAK_RSS_LIMIT_KIB,
        "wsp mcp peaked at {} MiB resident, over the bound of {} MiB",
        peak / 1024,
        PEAK_RSS_LIMIT_KIB / 1024
    );
    session.finish();

    // Nothing was changed.
    assert_eq!(
        std::fs::metadata(ws.join("a.txt")).unwrap().len(),
        FOUR_MIB as u64
    );
    assert_eq!(
        std::fs::metadata(ws.join("huge.bin")).unwrap().len(),
        10 << 30
    );
}
