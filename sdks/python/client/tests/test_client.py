"""wsp-client's sync client against a real `wsp serve`."""

from __future__ import annotations

import json
import threading
from typing import Iterator
from urllib.parse import unquote

import httpx
import pytest

from conftest import Server
from wsp_client import (
    AuthenticationError,
    Client,
    ConflictError,
    File,
    NotFoundError,
    PathError,
    PermissionDeniedError,
    __version__,
)


@pytest.fixture
def wsp(server: Server) -> Iterator[Client]:
    with Client(server.url, server.key) as client:
        yield client


def text_of(file: File | None) -> str:
    assert file is not None, "no file"
    return file.text


def test_discovery(wsp: Client) -> None:
    """discovery names the protocol and the workspace capability."""
    doc = wsp.discovery()
    assert doc["protocolVersion"]
    assert "workspace" in doc


def test_create_then_conflict(wsp: Client, server: Server) -> None:
    """put_file creates with If-None-Match: *, and a second create is a typed conflict."""
    path = f"{server.root('create')}/plan.md"
    first = wsp.put_file(path, "# Plan\n", if_none_match="*")
    assert (first.version, first.content_type, first.text) == (1, "text/markdown", "# Plan\n")
    assert first.etag.startswith('"')
    with pytest.raises(ConflictError) as raised:
        wsp.put_file(path, "again", if_none_match="*")
    assert raised.value.status == 409
    assert raised.value.code == "workspace_conflict"
    assert raised.value.current_version == 1
    assert text_of(wsp.get_file(path)) == "# Plan\n"


def test_if_match(wsp: Client, server: Server) -> None:
    """If-Match: a fresh etag writes, a stale one is refused and loses nothing."""
    path = f"{server.root('ifmatch')}/notes.md"
    v1 = wsp.put_file(path, "one")
    v2 = wsp.put_file(path, "two", if_match=v1.etag, content_type="text/plain")
    assert (v2.version, v2.content_type) == (2, "text/plain")
    with pytest.raises(ConflictError):
        wsp.put_file(path, "three", if_match=v1.etag)
    with pytest.raises(ConflictError):
        wsp.delete_file(path, if_match=v1.etag)
    assert wsp.get_file(path).text == "two"
    assert wsp.get_file(path, version=1).text == "one"
    assert [h.version for h in wsp.history(path)] == [2, 1]
    wsp.delete_file(path, if_match=v2.etag)
    assert wsp.find_file(path) is None
    with pytest.raises(NotFoundError):
        wsp.get_file(path)


def test_list(wsp: Client, server: Server) -> None:
    """list_files answers the files under a prefix, sorted, with etag and size."""
    root = server.root("list")
    wsp.put_file(f"{root}/b.md", "bb")
    wsp.put_file(f"{root}/a.md", "a")
    wsp.put_file(f"{root}-sibling.md", "not under the folder")
    files = wsp.list_files(f"{root}/")
    assert [f.path for f in files] == [f"{root}/a.md", f"{root}/b.md"]
    assert [f.size for f in files] == [1, 2]
    assert all(f.etag.startswith('"') for f in files)


def test_bytes(wsp: Client, server: Server) -> None:
    """bytes round-trip (contentEncoding base64), every byte value."""
    path = f"{server.root('bytes')}/blob.bin"
    data = bytes((i * 7) % 256 for i in range(512))
    written = wsp.put_file(path, data, content_type="application/octet-stream")
    assert written.binary
    read = wsp.get_file(path)
    assert read.content == data and read.data == data
    with pytest.raises(TypeError):
        _ = read.text
    [listed] = wsp.list_files(path)
    assert listed.binary and listed.size == 512


def test_update_reapplies_after_conflict(wsp: Client, server: Server) -> None:
    """update_file re-reads and re-applies its change when another writer got there first."""
    path = f"{server.root('rmw')}/log.md"
    wsp.put_file(path, "start\n")
    calls = 0

    def change(current: File | None) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            with Client(server.url, server.key) as other:
                other.update_file(path, lambda f: text_of(f) + "other\n")
        return text_of(current) + "mine\n"

    result = wsp.update_file(path, change)
    assert calls == 2
    assert result is not None and result.text == "start\nother\nmine\n" and result.version == 3


def test_update_concurrent_writers(wsp: Client, server: Server) -> None:
    """update_file: eight threads each append a line, none is lost."""
    path = f"{server.root('rmw8')}/counter.md"
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            with Client(server.url, server.key) as client:
                client.update_file(path, lambda f: (f.text if f else "") + f"line {i}\n")
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(wsp.get_file(path).text.strip().split("\n")) == [f"line {i}" for i in range(8)]


def test_update_gives_up(wsp: Client, server: Server) -> None:
    """update_file gives up with the last conflict after max_attempts."""
    path = f"{server.root('give-up')}/hot.md"
    wsp.put_file(path, "0")
    calls = 0

    def change(current: File | None) -> str:
        nonlocal calls
        calls += 1
        wsp.put_file(path, text_of(current) + "+")
        return "never written"

    with pytest.raises(ConflictError):
        wsp.update_file(path, change, max_attempts=3)
    assert calls == 3
    assert wsp.get_file(path).text == "0+++"


def test_typed_errors(server: Server) -> None:
    """errors are typed values with the envelope's code, message and details."""
    with Client(server.url, "wsp_000000000000_not-a-key") as stranger:
        with pytest.raises(AuthenticationError) as raised:
            stranger.list_files()
        assert raised.value.code == "unauthenticated" and raised.value.message
    with Client(server.url, server.readonly_key) as reader:
        with pytest.raises(PermissionDeniedError) as denied:
            reader.put_file(f"{server.root('ro')}/x.md", "x")
        assert denied.value.details["requiredScope"] == "workspace:write"


def test_paths_refused_before_sending(server: Server) -> None:
    """a path the server would refuse is refused before any request is sent."""
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    with Client(server.url, server.key, transport=httpx.MockTransport(record)) as offline:
        for bad in ["../etc/passwd", "a/../b", "/abs.md", "a//b", "a/./b", "", "sp ace.md", "x" * 257]:
            with pytest.raises(PathError):
                offline.get_file(bad)
    assert sent == []


def test_tenants(wsp: Client, server: Server) -> None:
    """keys of two tenants see two workspaces."""
    path = f"{server.root('tenants')}/private.md"
    wsp.put_file(path, "mine")
    with Client(server.url, server.other_key) as other:
        assert other.find_file(path) is None


def test_runs(wsp: Client, server: Server) -> None:
    """runs: a snapshot read sees the version of the run's start."""
    path = f"{server.root('runs')}/AGENTS.md"
    wsp.put_file(path, "before")
    run = wsp.create_run("sdk-py-test", inputs={"n": 1})
    assert run.status == "running" and run.since is not None
    wsp.put_file(path, "after")
    assert wsp.get_run_file(run.run_id, path).text == "before"
    assert wsp.get_file(path).text == "after"
    assert [(f.path, f.version) for f in wsp.list_run_files(run.run_id, path)] == [(path, 1)]
    seen = wsp.get_run(run.run_id)
    assert any(e.path == path and e.version == 1 for e in seen.workspace)
    assert wsp.run_context(run.run_id, budget=2000).report.used_tokens <= 2000
    assert any(r.run_id == run.run_id for r in wsp.list_runs(limit=50).runs)
    assert wsp.cancel_run(run.run_id).status == "cancelled"


def test_context(wsp: Client) -> None:
    """context as JSON and as text."""
    context = wsp.context(budget=1500, session="s-1")
    assert context.report.used_tokens <= 1500
    assert "## Session Context" in wsp.context_text(budget=1500, session="s-1")


def test_memory_and_search(wsp: Client) -> None:
    """append_memory, then search finds the line."""
    word = f"wombat{threading.get_ident()}{id(wsp)}"
    appended = wsp.append_memory(f"Remember the {word}.")
    assert appended.path.startswith("memory/")
    found = wsp.search(word, prefix="memory/")
    assert any(m.path == appended.path and word in m.snippet for m in found.matches)


def test_agents(wsp: Client) -> None:
    """agents: the inventory, and an unknown agent is not found."""
    assert isinstance(wsp.agents()["agents"], list)
    with pytest.raises(NotFoundError):
        wsp.agent("no.such.agent")


def test_version() -> None:
    """the package reports its version."""
    assert __version__.count(".") == 2


def test_path_vectors(wsp: Client, server: Server) -> None:
    """the shared path vectors: refused ones never leave the client, accepted ones are written."""
    with open(server.path_vectors, encoding="utf-8") as f:
        vectors = json.load(f)["http_path"]
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    with Client(server.url, server.key, transport=httpx.MockTransport(record)) as offline:
        for vector in vectors:
            path = "a" * 257 if vector["path"] == "LONG_257_CHARS" else unquote(vector["path"])
            if vector["expect"] == 400:
                with pytest.raises(PathError):
                    offline.put_file(path, "x")
                assert sent == [], vector["path"]
            else:
                assert wsp.put_file(path, "x").path == path
