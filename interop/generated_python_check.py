"""Drive a running wsp host with the client openapi-python-client generates from api/openapi.json.

Usage: python generated_python_check.py PACKAGE_PARENT DOCUMENT BASE_URL API_KEY
           --publisher-key KEY --shared-agent ID --agent ID [--json REPORT]

PACKAGE_PARENT holds the generated package `wsp_api` (generated unmodified, with no flag but
the output path). API_KEY holds every scope, `metrics:read` included; the publisher key acts as
a private agent of a user whose workspace approved the shared agent ID; ID after --agent is an
agent API_KEY may see.

Every operation of DOCUMENT is called through its generated function, and a last check fails
when one was not. The change feed is the exception the generator forces: it has no support for
Server-Sent Events (it reads the whole body, which never ends), so its error answer is taken
through the generated function and its stream through the generated client's own httpx client,
each event parsed by the generated `WorkspaceEvent` model.

Each check prints one line, `PASS <name>` or `FAIL <name>: <reason>`, and the run ends with the
plain closing line `N passed, N failed`. The exit status is 1 when any check failed.
"""

import base64
import json
import re
import sys
import uuid


def option(name):
    """The value after `--name` on the command line, removed from the positional arguments."""
    if name not in sys.argv:
        return None
    i = sys.argv.index(name)
    value = sys.argv[i + 1]
    del sys.argv[i : i + 2]
    return value


def main() -> int:
    report_path = option("--json")
    publisher_key = option("--publisher-key")
    shared_agent = option("--shared-agent")
    agent_id = option("--agent")
    package_parent, document_path, base_url, api_key = sys.argv[1:5]
    sys.path.insert(0, package_parent)

    from wsp_api import AuthenticatedClient, Client
    from wsp_api.api.agents import get_agent, list_agents, publish_workspace_file
    from wsp_api.api.discovery import discovery, openapi
    from wsp_api.api.health import healthz, readyz
    from wsp_api.api.metrics import metrics
    from wsp_api.api.runs import (
        cancel_run,
        create_run,
        get_run,
        get_run_context,
        get_run_workspace_file,
        list_run_workspace_files,
        list_runs,
    )
    from wsp_api.api.workspace import (
        append_memory,
        delete_workspace_file,
        get_workspace_context,
        get_workspace_file,
        get_workspace_file_history,
        list_workspace_files,
        put_workspace_file,
        search_workspace,
        workspace_events,
    )
    from wsp_api.models import (
        AgentInventory,
        ContentEncoding,
        AgentInventoryEntry,
        Discovery,
        ErrorEnvelope,
        MemoryAppend,
        MemoryAppended,
        PublishRequest,
        PublishResponse,
        PutWorkspaceFileIfNoneMatch,
        Run,
        RunCreate,
        RunCreated,
        RunList,
        WorkspaceContext,
        WorkspaceEvent,
        WorkspaceFile,
        WorkspaceFileCreate,
        WorkspaceFileHistory,
        WorkspaceFileList,
        WorkspaceSearchResults,
    )

    with open(document_path, encoding="utf-8") as fh:
        document = json.load(fh)
    operations = {
        op["operationId"]
        for item in document["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }

    client = AuthenticatedClient(base_url=base_url, token=api_key, timeout=30.0)
    public = Client(base_url=base_url, timeout=30.0)
    publisher = AuthenticatedClient(base_url=base_url, token=publisher_key, timeout=30.0)
    stranger = AuthenticatedClient(base_url=base_url, token="wsp_000000000000_not-a-key")
    root = f"gen-py/{uuid.uuid4().hex[:8]}"
    called = set()
    results = []
    state = {}

    def call(operation_id, module, *args, **kwargs):
        """The generated function of `operation_id`; the answer with its parsed body."""
        called.add(operation_id)
        return module.sync_detailed(*args, **kwargs)

    def check(name, fn):
        try:
            fn()
            results.append((name, True, ""))
            print(f"PASS {name}")
        except Exception as exc:  # a failed check is data, never a crash
            results.append((name, False, f"{type(exc).__name__}: {exc}"))
            print(f"FAIL {name}: {type(exc).__name__}: {exc}")

    def expect(cond, why):
        if not cond:
            raise AssertionError(why)

    def answered(response, status, model):
        expect(
            response.status_code == status,
            f"status {int(response.status_code)}, want {status}: {response.content[:300]!r}",
        )
        if model is not None:
            expect(
                isinstance(response.parsed, model),
                f"parsed as {type(response.parsed).__name__}, want {model.__name__}",
            )
        return response.parsed

    def discover():
        first = call("discovery", discovery, client=public)
        doc = answered(first, 200, Discovery)
        expect(doc.protocol_version, "protocolVersion is empty")
        etag = first.headers.get("etag")
        expect(etag, "no ETag on discovery")
        again = call("discovery", discovery, client=public, if_none_match=etag)
        expect(again.status_code == 304, f"If-None-Match answered {int(again.status_code)}")

    def health():
        answered(call("healthz", healthz, client=public), 200, None)
        answered(call("readyz", readyz, client=public), 200, None)

    def document_served():
        r = call("openapi", openapi, client=public)
        answered(r, 200, None)
        expect(json.loads(r.content)["openapi"].startswith("3."), "not an OpenAPI document")

    def metrics_text():
        r = call("metrics", metrics, client=client)
        answered(r, 200, None)
        expect(b"# TYPE" in r.content, "no metric families in the exposition")

    def put_create():
        f = answered(
            call(
                "putWorkspaceFile",
                put_workspace_file,
                f"{root}/plan.md",
                client=client,
                body=WorkspaceFileCreate(content="# Plan"),
                if_none_match=PutWorkspaceFileIfNoneMatch("*"),
            ),
            200,
            WorkspaceFile,
        )
        expect(f.version == 1, f"version {f.version}, want 1")
        expect(f.content_type == "text/markdown", f"contentType {f.content_type}")
        state["etag1"] = f.etag

    def put_if_match():
        f = answered(
            call(
                "putWorkspaceFile",
                put_workspace_file,
                f"{root}/plan.md",
                client=client,
                body=WorkspaceFileCreate(content="# Plan v2", content_type="text/markdown"),
                if_match=state["etag1"],
                idempotency_key=f"gen-py-{uuid.uuid4().hex}",
            ),
            200,
            WorkspaceFile,
        )
        expect(f.version == 2, f"version {f.version}, want 2")
        state["etag2"] = f.etag

    def put_stale():
        e = answered(
            call(
                "putWorkspaceFile",
                put_workspace_file,
                f"{root}/plan.md",
                client=client,
                body=WorkspaceFileCreate(content="lost"),
                if_match=state["etag1"],
            ),
            409,
            ErrorEnvelope,
        )
        expect(e.error, "empty error code")

    def get_and_version():
        f = answered(
            call("getWorkspaceFile", get_workspace_file, f"{root}/plan.md", client=client),
            200,
            WorkspaceFile,
        )
        expect(f.content == "# Plan v2", f"content {f.content!r}")
        old = answered(
            call(
                "getWorkspaceFile", get_workspace_file, f"{root}/plan.md", client=client, version=1
            ),
            200,
            WorkspaceFile,
        )
        expect(old.content == "# Plan", f"version 1 content {old.content!r}")

    def put_bytes():
        raw = bytes(range(256)) + b"\xc3\x28\x00"
        encoded = base64.b64encode(raw).decode("ascii")
        path = f"{root}-bin/logo.png"
        f = answered(
            call(
                "putWorkspaceFile",
                put_workspace_file,
                path,
                client=client,
                body=WorkspaceFileCreate(
                    content=encoded,
                    content_type="image/png",
                    content_encoding=ContentEncoding.BASE64,
                ),
            ),
            200,
            WorkspaceFile,
        )
        expect(f.content_encoding == ContentEncoding.BASE64, f"encoding {f.content_encoding}")
        got = answered(
            call("getWorkspaceFile", get_workspace_file, path, client=client), 200, WorkspaceFile
        )
        expect(base64.b64decode(got.content) == raw, "the bytes read back differ")
        expect(got.content_type == "image/png", f"contentType {got.content_type}")
        listed = answered(
            call("listWorkspaceFiles", list_workspace_files, client=client, prefix=path),
            200,
            WorkspaceFileList,
        )
        expect(
            [(m.size, m.content_encoding) for m in listed.files]
            == [(len(raw), ContentEncoding.BASE64)],
            f"listed {listed.files}",
        )
        bad = call(
            "putWorkspaceFile",
            put_workspace_file,
            path,
            client=client,
            body=WorkspaceFileCreate(content="AB==", content_encoding=ContentEncoding.BASE64),
        )
        answered(bad, 400, ErrorEnvelope)

    def list_and_history():
        files = answered(
            call("listWorkspaceFiles", list_workspace_files, client=client, prefix=f"{root}/"),
            200,
            WorkspaceFileList,
        )
        expect([m.path for m in files.files] == [f"{root}/plan.md"], f"listed {files.files}")
        history = answered(
            call(
                "getWorkspaceFileHistory",
                get_workspace_file_history,
                f"{root}/plan.md",
                client=client,
            ),
            200,
            WorkspaceFileHistory,
        )
        expect([m.version for m in history.versions] == [2, 1], "history is not [2, 1]")

    def runs():
        created = answered(
            call(
                "createRun",
                create_run,
                client=client,
                body=RunCreate(workflow_id="gen-py.workflow"),
            ),
            201,
            RunCreated,
        )
        run_id = created.run_id
        expect(created.status == "running", f"status {created.status}")
        # A write after the run started is not what the run sees.
        answered(
            call(
                "putWorkspaceFile",
                put_workspace_file,
                f"{root}/plan.md",
                client=client,
                body=WorkspaceFileCreate(content="# Plan v3"),
            ),
            200,
            WorkspaceFile,
        )
        run = answered(call("getRun", get_run, run_id, client=client), 200, Run)
        expect(run.workflow_id == "gen-py.workflow", f"workflowId {run.workflow_id}")
        files = answered(
            call(
                "listRunWorkspaceFiles",
                list_run_workspace_files,
                run_id,
                client=client,
                prefix=f"{root}/",
            ),
            200,
            WorkspaceFileList,
        )
        expect([m.version for m in files.files] == [2], f"run lists {files.files}")
        seen = answered(
            call(
                "getRunWorkspaceFile",
                get_run_workspace_file,
                run_id,
                f"{root}/plan.md",
                client=client,
            ),
            200,
            WorkspaceFile,
        )
        expect(seen.content == "# Plan v2", f"run read {seen.content!r}")
        cancelled = answered(call("cancelRun", cancel_run, run_id, client=client), 200, Run)
        expect(cancelled.status == "cancelled", f"status {cancelled.status}")
        page = answered(call("listRuns", list_runs, client=client, limit=1), 200, RunList)
        expect([r.run_id for r in page.runs] == [run_id], f"newest run {page.runs}")
        expect(page.runs[0].status == "cancelled", f"listed status {page.runs[0].status}")
        expect(isinstance(page.next_cursor, str), "no nextCursor on a full page")

    def memory_and_context():
        tag = f"genpy{uuid.uuid4().hex[:12]}"
        appended = answered(
            call("appendMemory", append_memory, client=client, body=MemoryAppend(text=f"{tag} remembered fact")),
            200,
            MemoryAppended,
        )
        expect(re.fullmatch(r"memory/\d{4}-\d{2}-\d{2}\.md", appended.path), f"path {appended.path}")
        found = answered(
            call("searchWorkspace", search_workspace, client=client, q=tag, prefix="memory/"),
            200,
            WorkspaceSearchResults,
        )
        expect(found.total == 1, f"total {found.total}")
        expect(found.matches[0].snippet == f"{tag} remembered fact", f"snippet {found.matches[0].snippet}")
        live = answered(
            call("getWorkspaceContext", get_workspace_context, client=client, budget=200),
            200,
            WorkspaceContext,
        )
        expect(live.report.used_tokens <= 200, f"used {live.report.used_tokens}")
        created = answered(
            create_run.sync_detailed(client=client, body=RunCreate(workflow_id="gen-py.context")),
            201,
            RunCreated,
        )
        seen = answered(
            call("getRunContext", get_run_context, created.run_id, client=client, budget=200),
            200,
            WorkspaceContext,
        )
        expect(seen.text == live.text, "a new run's context differs from the live one")
        answered(cancel_run.sync_detailed(created.run_id, client=client), 200, Run)

    def agents():
        inventory = answered(call("listAgents", list_agents, client=client), 200, AgentInventory)
        expect(agent_id in [a.agent_id for a in inventory.agents], f"{agent_id} not listed")
        entry = answered(call("getAgent", get_agent, agent_id, client=client), 200, AgentInventoryEntry)
        expect(entry.agent_id == agent_id, f"agentId {entry.agent_id}")
        answered(call("getAgent", get_agent, "wsp.unknown.agent", client=client), 404, ErrorEnvelope)

    def publish():
        source = f"{root}/recipe.md"
        answered(
            call(
                "putWorkspaceFile",
                put_workspace_file,
                source,
                client=publisher,
                body=WorkspaceFileCreate(content="# Soup"),
            ),
            200,
            WorkspaceFile,
        )
        published = answered(
            call(
                "publishWorkspaceFile",
                publish_workspace_file,
                client=publisher,
                body=PublishRequest(path=source, target_agent_id=shared_agent),
                idempotency_key=f"gen-py-{uuid.uuid4().hex}",
            ),
            200,
            PublishResponse,
        )
        expect(published.to_dict(), "empty publish answer")

    def feed():
        refused = call("workspaceEvents", workspace_events, client=client, since=-1)
        answered(refused, 400, ErrorEnvelope)
        with client.get_httpx_client().stream(
            "GET", "/v1/host/workspace/events", params={"since": 0}
        ) as stream:
            expect(stream.status_code == 200, f"status {stream.status_code}")
            expect(
                stream.headers["content-type"].startswith("text/event-stream"),
                f"content type {stream.headers['content-type']}",
            )
            event = {}
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    event = WorkspaceEvent.from_dict(json.loads(line[5:]))
                    break
        expect(isinstance(event, WorkspaceEvent), "no event read")
        expect(event.payload.path, "event without a path")

    def delete():
        r = call(
            "deleteWorkspaceFile",
            delete_workspace_file,
            f"{root}/plan.md",
            client=client,
            if_match=state["etag2"],
        )
        answered(r, 409, ErrorEnvelope)
        current = get_workspace_file.sync_detailed(f"{root}/plan.md", client=client).parsed
        answered(
            call(
                "deleteWorkspaceFile",
                delete_workspace_file,
                f"{root}/plan.md",
                client=client,
                if_match=current.etag,
            ),
            204,
            None,
        )
        answered(
            get_workspace_file.sync_detailed(f"{root}/plan.md", client=client), 404, ErrorEnvelope
        )

    def unauthenticated():
        r = list_workspace_files.sync_detailed(client=stranger)
        answered(r, 401, ErrorEnvelope)
        expect(
            r.headers.get("www-authenticate", "").startswith("Bearer"),
            "no WWW-Authenticate: Bearer",
        )

    def every_operation():
        missing = sorted(operations - called)
        expect(not missing, f"never called: {', '.join(missing)}")

    check("discovery, and 304 on If-None-Match", discover)
    check("healthz, readyz", health)
    check("openapi", document_served)
    check("metrics", metrics_text)
    check("putWorkspaceFile create (If-None-Match: *)", put_create)
    check("putWorkspaceFile If-Match fresh, Idempotency-Key", put_if_match)
    check("putWorkspaceFile If-Match stale -> 409", put_stale)
    check("getWorkspaceFile, and ?version", get_and_version)
    check("listWorkspaceFiles, getWorkspaceFileHistory", list_and_history)
    check("putWorkspaceFile bytes (contentEncoding base64), read back, listed size", put_bytes)
    check("createRun, getRun, run files, cancelRun, listRuns", runs)
    check("appendMemory, searchWorkspace, getWorkspaceContext, getRunContext", memory_and_context)
    check("listAgents, getAgent (and unknown -> 404)", agents)
    check("publishWorkspaceFile", publish)
    check("workspaceEvents (400 generated; stream via its httpx client)", feed)
    check("deleteWorkspaceFile stale -> 409, fresh -> 204", delete)
    check("unknown key -> 401 with WWW-Authenticate", unauthenticated)
    check("every operation of the document called", every_operation)

    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    if report_path:
        with open(report_path, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "client": "openapi-python-client (generated)",
                    "clientVersion": "0.29.1",
                    "checks": [{"name": n, "pass": ok, "reason": r} for n, ok, r in results],
                },
                fh,
                indent=2,
            )
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
