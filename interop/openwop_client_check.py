"""Drive a running wsp host with the unmodified OpenWOP Python client.

Usage: python openwop_client_check.py BASE_URL API_KEY [--agent AGENT_ID] [--json REPORT]

With --agent, the host serves the agent inventory (RFC 0072/0074) and AGENT_ID is an agent the
key may see: `agents_list` and `agents_get` are checked too.

Each check prints one line, `PASS <name>` or `FAIL <name>: <reason>`, and the run ends with the
plain closing line `N passed, N failed`. The exit status is 1 when any check failed.
"""

import json
import sys
import uuid

from openwop_client import OpenwopClient, PutWorkspaceFileRequest, WopError


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    report_path = None
    if "--json" in sys.argv:
        report_path = sys.argv[sys.argv.index("--json") + 1]
        args = [a for a in args if a != report_path]
    agent_id = None
    if "--agent" in sys.argv:
        agent_id = sys.argv[sys.argv.index("--agent") + 1]
        args = [a for a in args if a != agent_id]
    base_url, api_key = args[0], args[1]
    client = OpenwopClient(base_url=base_url, api_key=api_key)
    root = f"interop/{uuid.uuid4().hex[:8]}"
    results = []

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

    state = {}

    def discovery():
        caps = client.discovery_capabilities()
        expect(caps.protocolVersion, "protocolVersion is empty")

    def put_create():
        f = client.put_workspace_file(f"{root}/plan.md", PutWorkspaceFileRequest(content="# Plan"))
        expect(f.version == 1, f"version {f.version}, want 1")
        expect(isinstance(f.etag, str) and f.etag, "etag missing")
        expect(f.contentType == "text/markdown", f"contentType {f.contentType}")
        state["etag1"] = f.etag

    def put_if_match_fresh():
        f = client.put_workspace_file(
            f"{root}/plan.md", PutWorkspaceFileRequest(content="# Plan v2"), if_match=state["etag1"]
        )
        expect(f.version == 2, f"version {f.version}, want 2")
        state["etag2"] = f.etag

    def put_if_match_stale():
        try:
            client.put_workspace_file(
                f"{root}/plan.md", PutWorkspaceFileRequest(content="lost"), if_match=state["etag1"]
            )
        except WopError as err:
            expect(err.status == 409, f"status {err.status}, want 409")
            expect(err.envelope is not None and err.envelope.error == "workspace_conflict",
                   f"envelope {err.envelope}")
            return
        raise AssertionError("a stale If-Match was accepted")

    def get_file():
        f = client.get_workspace_file(f"{root}/plan.md")
        expect(f is not None and f.content == "# Plan v2", f"got {f}")
        old = client.get_workspace_file(f"{root}/plan.md", version=1)
        expect(old is not None and old.content == "# Plan", f"version 1 is {old}")
        expect(client.get_workspace_file(f"{root}/absent.md") is None, "absent file not None")

    def list_files():
        client.put_workspace_file(f"{root}/a.md", PutWorkspaceFileRequest(content="a", contentType="text/plain"))
        files = client.list_workspace_files(prefix=f"{root}/")
        paths = [f.path for f in files]
        expect(paths == [f"{root}/a.md", f"{root}/plan.md"], f"paths {paths}")
        expect(all(f.content == "" for f in files), "list carried content")

    def delete_file():
        expect(client.delete_workspace_file(f"{root}/a.md") is True, "delete did not return True")
        expect(client.get_workspace_file(f"{root}/a.md") is None, "deleted file still readable")
        expect(client.delete_workspace_file(f"{root}/a.md") is False, "second delete not False")
        again = client.put_workspace_file(f"{root}/a.md", PutWorkspaceFileRequest(content="again"))
        expect(again.version == 1, f"re-created at version {again.version}")
        client.delete_workspace_file(f"{root}/a.md")
        client.delete_workspace_file(f"{root}/plan.md")

    def agents_list():
        agents = client.agents_list()
        expect(agents is not None, "agents_list returned None: the inventory is not served")
        ids = [a.agentId for a in agents]
        expect(agent_id in ids, f"{agent_id} not in {ids}")
        expect(ids == sorted(ids), f"not sorted by agentId: {ids}")
        for a in agents:
            expect(a.persona and a.label and a.modelClass, f"empty fields in {a}")
            expect(a.packName and a.packVersion, f"no pack in {a}")
            expect(isinstance(a.toolAllowlist, list), f"toolAllowlist of {a.agentId}")
        state["agent"] = next(a for a in agents if a.agentId == agent_id)

    def agents_get():
        one = client.agents_get(agent_id)
        expect(one is not None, f"agents_get({agent_id!r}) returned None")
        expect(one == state["agent"], f"agents_get differs from the list: {one} vs {state['agent']}")
        missing = client.agents_get(f"interop.no-such-agent.{uuid.uuid4().hex[:8]}")
        expect(missing is None, f"an unknown agent returned {missing}")

    def agents_unauthenticated():
        stranger = OpenwopClient(base_url=base_url, api_key="wsp_000000000000_" + "0" * 64)
        try:
            stranger.agents_list()
        except WopError as err:
            expect(err.status == 401, f"status {err.status}, want 401")
            expect(err.envelope is not None and err.envelope.error == "unauthenticated",
                   f"envelope {err.envelope}")
            return
        raise AssertionError("an unknown key got an agent list")

    check("discovery_capabilities", discovery)
    check("put_workspace_file create", put_create)
    check("put_workspace_file if_match fresh", put_if_match_fresh)
    check("put_workspace_file if_match stale -> 409", put_if_match_stale)
    check("get_workspace_file", get_file)
    check("list_workspace_files", list_files)
    check("delete_workspace_file", delete_file)
    if agent_id is not None:
        check("agents_list", agents_list)
        check("agents_get (and unknown -> None)", agents_get)
        check("agents_list unknown key -> 401", agents_unauthenticated)

    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    if report_path:
        with open(report_path, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "client": "openwop-client (Python)",
                    "clientVersion": "1.8.0",
                    "checks": [{"name": n, "pass": ok, "reason": r} for n, ok, r in results],
                },
                fh,
                indent=2,
            )
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
