"""Drive `wsp mcp` with the official MCP Python SDK, over stdio and over streamable HTTP.

Usage: python mcp_client_check.py WSP_BINARY [--json REPORT]

For a read-only, a write-only and a mixed mount table, and on each transport, the client lists
the tools (the exact set is checked), calls every tool, and checks that a call the scopes refuse
is a tool result with `isError` and the error code. Over HTTP the client sends the bearer token
`wsp mcp --http` printed, and a client without it is refused (401). It also checks that virtual
files survive a restart (they live in the data directory's SQLite file), the `items`
profile's tool sets, and the prompt `run_start_context` (`--context-root`) on both transports:
listed, rendered within its budget, its marked paths readable with `read_file`. Over seed 003's
layout (the workspace read-only, `memory/` and the session index writable) 8 concurrent
sessions append 40 memory lines with `memory_append` and record themselves with
`session_record`, none lost, and `memory_search` finds every line: once as 8 HTTP sessions of
one server, once as 8 stdio servers sharing one data directory.

Each check prints one line, `PASS <name>` or `FAIL <name>: <reason>`, and the run ends with the
plain closing line `N passed, N failed`. The exit status is 1 when any check failed.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from importlib.metadata import version
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

# rmcp logs every JSON-RPC error it sends at WARN; the refused calls here are on purpose.
SERVER_LOG = "warn,rmcp=error"

READ_TOOLS = ["ls", "read_file", "glob", "grep"]
EXPECTED_TOOLS = {
    "ro": READ_TOOLS,
    "wo": ["write_file"],
    "mixed": READ_TOOLS + ["write_file", "edit_file", "delete_file"],
}


def tables(project: Path) -> dict:
    """The three mount tables, as TOML text."""
    ro = f'[[workspace]]\npath = "/project"\nscope = "ro"\nmount = {{ physical = "{project}" }}\n'
    wo = '[[workspace]]\npath = "/outbox"\nscope = "wo"\nmount = { virtual = "outbox" }\n'
    scratch = '[[workspace]]\npath = "/project/scratch"\nscope = "rw"\nmount = { virtual = "scratch" }\n'
    return {"ro": ro, "wo": wo, "mixed": "\n".join([ro, scratch, wo])}


class Checks:
    def __init__(self):
        self.results = []

    def record(self, name, ok, reason=""):
        self.results.append({"name": name, "pass": ok, **({"reason": reason} if reason else {})})
        print(f"PASS {name}" if ok else f"FAIL {name}: {reason}", flush=True)

    async def run(self, name, fn):
        try:
            await fn()
            self.record(name, True)
        except Exception as exc:  # a failed check is data, never a crash
            self.record(name, False, "; ".join(f"{type(e).__name__}: {e}" for e in leaves(exc)))


def expect(cond, why):
    if not cond:
        raise AssertionError(why)


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def call_ok(client, name, args) -> str:
    result = await client.call_tool(name, args)
    expect(not result.is_error, f"{name} {args} failed: {text_of(result)}")
    return text_of(result)


async def call_refused(client, name, args, code):
    result = await client.call_tool(name, args)
    expect(result.is_error, f"{name} {args} was not refused: {text_of(result)}")
    expect(text_of(result).startswith(f"{code}: "), f"text {text_of(result)!r}, want {code}")
    structured = result.structured_content or {}
    expect(structured.get("error", {}).get("code") == code, f"structuredContent {structured}")


async def exercise(client, table, project: Path, tag: str):
    """Calls every tool the table offers; returns nothing, raises on the first surprise."""
    host = str(project)
    instructions = client.instructions or ""
    expect(instructions.startswith("## Filesystem map"), f"instructions {instructions[:60]!r}")
    expect(host not in instructions, "the instructions show a host path")
    if table in ("ro", "mixed"):
        listing = await call_ok(client, "ls", {"path": "/project"})
        expect("README.md" in listing, f"ls: {listing!r}")
        if table == "mixed":
            expect("scratch/" in listing, f"ls does not show the nested workspace: {listing!r}")
        read = await call_ok(client, "read_file", {"path": "/project/README.md"})
        expect(read.startswith("     1\t# Demo"), f"read_file: {read!r}")
        found = await call_ok(client, "glob", {"pattern": "**/*.rs", "path": "/project"})
        expect("/project/src/main.rs" in found, f"glob: {found!r}")
        hits = await call_ok(client, "grep", {"pattern": "fn main", "path": "/project"})
        expect("/project/src/main.rs" in hits, f"grep: {hits!r}")
        await call_refused(client, "read_file", {"path": "/etc/passwd"}, "permission_denied")
        await call_refused(client, "read_file", {"path": "/project/../etc/passwd"}, "invalid_path")
    if table == "ro":
        try:
            await client.call_tool("write_file", {"path": "/project/x.md", "content": "x"})
        except MCPError as err:
            expect("unknown tool" in err.message, f"error {err.message!r}")
        else:
            raise AssertionError("write_file was callable on a read-only table")
        expect(not (project / "x.md").exists(), "a refused write reached the disk")
    if table == "wo":
        wrote = await call_ok(client, "write_file", {"path": f"/outbox/{tag}.md", "content": "report"})
        expect("etag" not in wrote, f"a write-only result shows an etag: {wrote!r}")
        await call_refused(client, "write_file", {"path": "/project/x.md", "content": "x"}, "permission_denied")
        await call_refused(
            client, "write_file", {"path": f"/outbox/{tag}.md", "content": "x", "if_match": "e"}, "permission_denied"
        )
    if table == "mixed":
        path = f"/project/scratch/{tag}.md"
        await call_ok(client, "write_file", {"path": path, "content": "TODO: ship\n"})
        await call_ok(client, "edit_file", {"path": path, "old_string": "TODO", "new_string": "DONE"})
        read = await call_ok(client, "read_file", {"path": path})
        expect("DONE: ship" in read, f"after edit_file: {read!r}")
        await call_ok(client, "write_file", {"path": f"/outbox/{tag}.md", "content": "report"})
        await call_ok(client, "delete_file", {"path": path})
        await call_refused(client, "read_file", {"path": path}, "not_found")
        await call_refused(client, "write_file", {"path": "/project/README.md", "content": "x"}, "permission_denied")
        await call_refused(client, "read_file", {"path": f"/outbox/{tag}.md"}, "permission_denied")
        await call_refused(client, "edit_file", {"path": "/project/README.md", "old_string": "#", "new_string": "!"},
                           "permission_denied")
        expect((project / "README.md").read_text() == "# Demo\nhello\n", "a refused edit changed the disk")


class HttpServer:
    """`wsp mcp --http 127.0.0.1:0` as a child process; its URL from its first stdout line and
    the bearer token it made from the second."""

    def __init__(self, wsp, args):
        self.proc = subprocess.Popen(
            [wsp, "mcp", *args, "--http", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
            env={**os.environ, "WSP_LOG": SERVER_LOG},
        )
        line = self.proc.stdout.readline()
        prefix = "wsp mcp listening on "
        if not line.startswith(prefix):
            self.close()
            raise RuntimeError(f"wsp mcp --http did not start: {line!r}")
        self.url = line[len(prefix):].strip()
        line = self.proc.stdout.readline()
        prefix = "bearer token: "
        if not line.startswith(prefix):
            self.close()
            raise RuntimeError(f"wsp mcp --http printed no token: {line!r}")
        self.token = line[len(prefix):].strip()

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def leaves(exc):
    """The exceptions inside `exc`, through any exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


@contextlib.asynccontextmanager
async def connect(target, **kwargs):
    """An SDK client session: over stdio for `StdioServerParameters`, over streamable HTTP with
    the server's bearer token for an `HttpServer`."""
    if isinstance(target, HttpServer):
        headers = {"Authorization": f"Bearer {target.token}"}
        async with create_mcp_http_client(headers=headers) as http_client:
            async with Client(streamable_http_client(target.url, http_client=http_client), **kwargs) as client:
                yield client
    else:
        async with Client(target, **kwargs) as client:
            yield client


def stdio_params(wsp, args):
    return StdioServerParameters(command=wsp, args=["mcp", *args], env={"WSP_LOG": SERVER_LOG})


async def main() -> int:
    args = sys.argv[1:]
    report_path = None
    if "--json" in args:
        at = args.index("--json")
        report_path = args[at + 1]
        del args[at : at + 2]
    wsp = args[0]
    checks = Checks()
    negotiated = {}

    with tempfile.TemporaryDirectory(prefix="wsp-mcp-interop-") as tmp:
        root = Path(tmp)
        project = root / "project"
        (project / "src").mkdir(parents=True)
        (project / "README.md").write_text("# Demo\nhello\n")
        (project / "src" / "main.rs").write_text('fn main() {\n    println!("hello");\n}\n')
        data = root / "data"
        mount_files = {}
        for name, toml in tables(project).items():
            mount_files[name] = root / f"{name}.toml"
            mount_files[name].write_text(toml)

        for transport in ("stdio", "http"):
            for table in ("ro", "wo", "mixed"):
                server_args = ["--mounts", str(mount_files[table]), "--data", str(data)]
                http = None
                try:
                    if transport == "http":
                        http = HttpServer(wsp, server_args)
                        target = http
                    else:
                        target = stdio_params(wsp, server_args)
                    async with connect(target) as client:
                        negotiated[transport] = client.protocol_version

                        async def list_tools(client=client, table=table):
                            tools = (await client.list_tools()).tools
                            names = [t.name for t in tools]
                            expect(names == EXPECTED_TOOLS[table], f"tools {names}, want {EXPECTED_TOOLS[table]}")
                            for t in tools:
                                expect(t.input_schema.get("type") == "object", f"{t.name}: input schema {t.input_schema}")
                                expect(t.annotations is not None, f"{t.name}: no annotations")
                                expect(t.annotations.read_only_hint == (t.name in READ_TOOLS),
                                       f"{t.name}: readOnlyHint {t.annotations.read_only_hint}")

                        await checks.run(f"{transport} {table}: tools/list is exactly {', '.join(EXPECTED_TOOLS[table])}",
                                         list_tools)
                        await checks.run(
                            f"{transport} {table}: every tool called; refused calls are isError with the code",
                            lambda client=client, table=table: exercise(client, table, project, f"{transport}-{table}"),
                        )
                except Exception as exc:
                    checks.record(f"{transport} {table}: connect", False, f"{type(exc).__name__}: {exc}")
                finally:
                    if http:
                        http.close()

        async def empty_table():
            empty = root / "empty.toml"
            empty.write_text("")
            async with Client(stdio_params(wsp, ["--mounts", str(empty), "--data", str(data)])) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                expect(names == [], f"tools {names}")

        await checks.run("stdio empty table: no tools", empty_table)

        async def http_without_token():
            http = HttpServer(wsp, ["--mounts", str(mount_files["mixed"]), "--data", str(data)])
            try:
                # The SDK reports the refusal as an error without the HTTP status ...
                refused = False
                try:
                    with anyio.fail_after(30):
                        async with Client(http.url) as client:
                            await client.list_tools()
                except Exception as exc:
                    refused = any(isinstance(e, MCPError) for e in leaves(exc))
                    if not refused:
                        raise
                expect(refused, "a client without the bearer token got in")
                # ... so the status is checked on the wire: 401 with a Bearer challenge.
                body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "wsp-interop", "version": "0"}}}
                async with create_mcp_http_client() as raw:
                    for headers in ({}, {"Authorization": "Bearer " + "0" * 64}):
                        response = await raw.post(
                            http.url, json=body, headers={"Accept": "application/json, text/event-stream", **headers}
                        )
                        expect(response.status_code == 401, f"status {response.status_code} with {headers}")
                        expect(response.headers.get("www-authenticate") == "Bearer",
                               f"WWW-Authenticate {response.headers.get('www-authenticate')!r}")
            finally:
                http.close()

        await checks.run("http without the bearer token: refused (401)", http_without_token)

        async def legacy_handshake(transport):
            server_args = ["--mounts", str(mount_files["mixed"]), "--data", str(data)]
            http = HttpServer(wsp, server_args) if transport == "http" else None
            try:
                target = http if http else stdio_params(wsp, server_args)
                async with connect(target, mode="legacy") as client:
                    negotiated[f"{transport} legacy"] = client.protocol_version
                    names = [t.name for t in (await client.list_tools()).tools]
                    expect(names == EXPECTED_TOOLS["mixed"], f"tools {names}")
                    with warnings.catch_warnings():
                        # The SDK warns that ping left the protocol in 2026-07-28; this session is older.
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await client.send_ping()
                    await exercise(client, "mixed", project, f"{transport}-legacy")
            finally:
                if http:
                    http.close()

        for transport in ("stdio", "http"):
            await checks.run(
                f"{transport} initialize handshake (mode=legacy): tools/list, ping, calls",
                lambda transport=transport: legacy_handshake(transport),
            )

        async def restart_keeps_virtual_files():
            server_args = ["--mounts", str(mount_files["mixed"]), "--data", str(data)]
            async with Client(stdio_params(wsp, server_args)) as client:
                await call_ok(client, "write_file", {"path": "/project/scratch/keep.md", "content": "kept\n"})
            async with Client(stdio_params(wsp, server_args)) as client:
                read = await call_ok(client, "read_file", {"path": "/project/scratch/keep.md"})
                expect(read.startswith("     1\tkept"), f"after restart: {read!r}")

        await checks.run("stdio restart: virtual files persist in the data directory", restart_keeps_virtual_files)

        async def items_profile():
            private = ["--profile", "items", "--data", str(data), "--agent", "main", "--publish-to", "cook"]
            async with Client(stdio_params(wsp, private)) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                want = ["workspace_list", "workspace_read", "workspace_write", "workspace_delete", "workspace_publish"]
                expect(names == want, f"private agent tools {names}")
                await call_ok(client, "workspace_write", {"key": "recipe", "value": "soup"})
                listed = await call_ok(client, "workspace_list", {})
                expect("recipe" in listed, f"workspace_list: {listed!r}")
                await call_ok(client, "workspace_publish", {"key": "recipe", "target_agent_id": "cook"})
                await call_refused(client, "workspace_publish", {"key": "recipe", "target_agent_id": "nobody"},
                                   "not_found")
            shared = ["--profile", "items", "--data", str(data), "--agent", "cook", "--shared"]
            async with Client(stdio_params(wsp, shared)) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                expect("workspace_publish" not in names, f"shared agent tools {names}")
                read = await call_ok(client, "workspace_read", {"key": "inbox/recipe"})
                expect("soup" in read, f"published item: {read!r}")

        await checks.run("stdio items profile: tool sets, publish one way", items_profile)

        agent = root / "agent"
        (agent / "knowledge").mkdir(parents=True)
        (agent / "AGENTS.md").write_text("# Reviewer\nYou review pull requests.\n")
        (agent / "MEMORY.md").write_text("".join(f"- fact {i}\n" for i in range(1, 600)))
        (agent / "knowledge" / "style.md").write_text("Tabs.\n")
        agent_table = root / "agent.toml"
        agent_table.write_text(
            f'[[workspace]]\npath = "/workspace"\nscope = "ro"\nmount = {{ physical = "{agent}" }}\n'
        )

        async def context_prompt(client):
            prompts = (await client.list_prompts()).prompts
            expect([p.name for p in prompts] == ["run_start_context"], f"prompts {[p.name for p in prompts]}")
            expect([a.name for a in prompts[0].arguments] == ["budget", "session", "run", "strict"], f"arguments {prompts[0].arguments}")
            got = await client.get_prompt("run_start_context", arguments={"budget": "500", "session": "s-1"})
            expect(len(got.messages) == 1, f"{len(got.messages)} messages")
            text = got.messages[0].content.text
            expect(len(text) // 4 <= 500, f"{len(text)} characters for a budget of 500 tokens")
            expect("You review pull requests." in text, "AGENTS.md not in the block")
            expect(text.startswith("## Session Context\n"), "no ## Session Context first")
            expect("- Session: s-1\n" in text, "the session id is not in the Session Context")
            expect("read /workspace/MEMORY.md or use memory_search for older entries]" in text,
                   "no truncation marker naming /workspace/MEMORY.md and memory_search")
            expect("- /workspace/knowledge/style.md" in text, "the knowledge listing lacks /workspace/knowledge/style.md")
            read = await call_ok(client, "read_file", {"path": "/workspace/MEMORY.md", "offset": 590})
            expect("fact 599" in read, f"read_file of the marked path: {read[:80]!r}")
            try:
                await client.get_prompt("run_start_context", arguments={"budget": "none"})
                raise AssertionError("a budget of 'none' was accepted")
            except MCPError as exc:
                expect("budget" in str(exc), f"error {exc}")

        async def prompt_stdio():
            args = ["--mounts", str(agent_table), "--context-root", "/workspace"]
            async with Client(stdio_params(wsp, args)) as client:
                await context_prompt(client)

        async def prompt_http():
            http = HttpServer(wsp, ["--mounts", str(agent_table), "--context-root", "/workspace"])
            try:
                async with connect(http) as client:
                    await context_prompt(client)
            finally:
                http.close()

        await checks.run("stdio prompt run_start_context: listed, rendered within budget, paths readable", prompt_stdio)
        await checks.run("http prompt run_start_context: listed, rendered within budget, paths readable", prompt_http)

        memory_table = root / "memory.toml"
        memory_table.write_text(
            f'[[workspace]]\npath = "/workspace"\nscope = "ro"\nmount = {{ physical = "{agent}" }}\n\n'
            '[[workspace]]\npath = "/workspace/memory"\nscope = "rw"\nmount = { virtual = "memory" }\n\n'
            '[[workspace]]\npath = "/workspace/agents/reviewer/sessions"\nscope = "rw"\n'
            'mount = { virtual = "sessions" }\n\n'
            '[[workspace]]\npath = "/outbox"\nscope = "wo"\nmount = { virtual = "outbox" }\n'
        )

        async def memory_loop(targets, tag):
            """8 sessions at once (one per target), each appending 5 lines and recording itself;
            then every line is in the log once and found by memory_search."""

            async def one_session(target, n):
                async with connect(target) as client:
                    names = [t.name for t in (await client.list_tools()).tools]
                    for tool in ("memory_append", "memory_search", "session_record"):
                        expect(tool in names, f"{tool} not in {names}")
                    for i in range(5):
                        said = await call_ok(client, "memory_append", {"text": f"{tag} session {n} note {i}"})
                        expect(said.startswith("appended line "), f"memory_append: {said!r}")
                    await call_ok(client, "session_record", {"session_id": f"{tag}-{n}", "summary": f"session {n}"})

            async with anyio.create_task_group() as group:
                for n, target in enumerate(targets):
                    group.start_soon(one_session, target, n)
            async with connect(targets[0]) as client:
                found = await client.call_tool("memory_search", {"query": f"{tag} note", "limit": 50})
                expect(not found.is_error, f"memory_search: {text_of(found)}")
                data = found.structured_content or {}
                expect(data.get("total") == 40, f"memory_search found {data.get('total')} lines, want 40")
                lines = {m["snippet"] for m in data["matches"]}
                want = {f"{tag} session {n} note {i}" for n in range(8) for i in range(5)}
                expect(lines == want, f"missing {sorted(want - lines)[:3]}")
                index = json.loads(
                    "\n".join(
                        line.split("\t", 1)[1] if "\t" in line else ""
                        for line in (await call_ok(client, "read_file", {
                            "path": "/workspace/agents/reviewer/sessions/sessions.json", "limit": 2000,
                        })).splitlines()
                        if line[:1].isdigit() or line.lstrip()[:1].isdigit()
                    )
                )
                ids = {s["id"] for s in index["sessions"]}
                expect({f"{tag}-{n}" for n in range(8)} <= ids, f"session index holds {sorted(ids)}")

        async def memory_http():
            data_dir = root / "memory-http"
            http = HttpServer(wsp, ["--mounts", str(memory_table), "--data", str(data_dir),
                                    "--context-root", "/workspace", "--agent", "reviewer"])
            try:
                await memory_loop([http] * 8, "http")
            finally:
                http.close()

        async def memory_stdio():
            data_dir = root / "memory-stdio"
            args = ["--mounts", str(memory_table), "--data", str(data_dir),
                    "--context-root", "/workspace", "--agent", "reviewer"]
            await memory_loop([stdio_params(wsp, args) for _ in range(8)], "stdio")

        async def resources(client, tag):
            await call_ok(client, "write_file", {"path": f"/outbox/{tag}.md", "content": "dropped"})
            listed = [r.uri for r in (await client.list_resources()).resources]
            expect("wsp:///workspace/MEMORY.md" in listed, f"resources {listed[:5]}")
            expect(not any(u.startswith("wsp:///outbox") for u in listed), "a write-only file is listed")
            got = await client.read_resource("wsp:///workspace/MEMORY.md")
            content = got.contents[0]
            expect(content.text.startswith("- fact 1\n"), f"read {content.text[:40]!r}")
            etag = (content.meta or {}).get("etag")
            expect(etag, f"no etag in _meta: {content.meta}")
            shown = await call_ok(client, "read_file", {"path": "/workspace/MEMORY.md", "limit": 1})
            expect(etag in shown, "the resource's etag is not read_file's")
            uri = f"wsp:///workspace/memory/watched-{tag}.md"
            async with client.listen(resource_subscriptions=[uri]) as sub:
                expect(uri in (sub.honored.resource_subscriptions or []), f"honored {sub.honored}")
                await call_ok(client, "write_file", {"path": f"/workspace/memory/watched-{tag}.md", "content": "one\n"})
                with anyio.fail_after(15):
                    event = await sub.__anext__()
                expect(getattr(event, "uri", None) == uri, f"event {event!r}")

        resource_args = ["--mounts", str(memory_table), "--context-root", "/workspace", "--agent", "reviewer"]

        async def resources_stdio():
            args = [*resource_args, "--data", str(root / "resources-stdio")]
            async with Client(stdio_params(wsp, args)) as client:
                await resources(client, "stdio")

        async def resources_http():
            http = HttpServer(wsp, [*resource_args, "--data", str(root / "resources-http")])
            try:
                async with connect(http) as client:
                    await resources(client, "http")
            finally:
                http.close()

        await checks.run("stdio resources: listed and read with the etag, never write-only; listen hears of a write",
                         resources_stdio)
        await checks.run("http resources: listed and read with the etag, never write-only; listen hears of a write",
                         resources_http)
        await checks.run("http memory tools: 8 concurrent sessions append 40 lines, none lost, all found; sessions recorded",
                         memory_http)
        await checks.run("stdio memory tools: 8 servers on one data directory append 40 lines, none lost, all found; sessions recorded",
                         memory_stdio)

    passed = sum(1 for r in checks.results if r["pass"])
    failed = len(checks.results) - passed
    print(f"negotiated protocol versions: {negotiated}")
    print(f"{passed} passed, {failed} failed")
    if report_path:
        Path(report_path).write_text(
            json.dumps(
                {
                    "client": "mcp (Python SDK)",
                    "clientVersion": version("mcp"),
                    "host": "wsp mcp (stdio, http)",
                    "protocolVersions": negotiated,
                    "checks": checks.results,
                },
                indent=2,
            )
            + "\n"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
