"""The change feed, sync and async, against a real `wsp serve`."""

from __future__ import annotations

import asyncio
import threading
from contextlib import aclosing, closing
from typing import AsyncIterator, Iterator

import httpx
import pytest

from conftest import Server
from wsp_client import AsyncClient, AuthenticationError, Client, WorkspaceEvent


def position(client: Client) -> int:
    """The feed position now: a new run's `eventsUrl` is positioned at its snapshot."""
    run = client.create_run("sdk-py-events")
    client.cancel_run(run.run_id)
    assert run.since is not None
    return run.since


def take(events: Iterator[WorkspaceEvent], root: str, count: int) -> list[WorkspaceEvent]:
    """The next `count` events under `root` (other tests write to the same owner)."""
    taken: list[WorkspaceEvent] = []
    for event in events:
        if event.path.startswith(root):
            taken.append(event)
            if len(taken) == count:
                break
    return taken


def test_events_stream_as_they_arrive(server: Server) -> None:
    """the feed yields each event as it arrives, while the stream stays open."""
    root = server.root("feed")
    with Client(server.url, server.key) as wsp:
        since = position(wsp)
        with closing(wsp.events(since)) as feed:
            wsp.put_file(f"{root}/a.md", "a")
            [first] = take(feed, root, 1)
            assert (first.type, first.path, first.version, first.deleted) == ("workspace.updated", f"{root}/a.md", 1, False)
            # Written only after the first event was read: the open stream delivers them.
            written = wsp.put_file(f"{root}/a.md", "b")
            wsp.delete_file(f"{root}/a.md", if_match=written.etag)
            second, third = take(feed, root, 2)
            assert second.version == 2 and third.deleted
            assert first.sequence < second.sequence < third.sequence


def test_events_resume(server: Server) -> None:
    """closing the iterator closes the stream; a new one resumes after the last event."""
    root = server.root("resume")
    with Client(server.url, server.key) as wsp:
        since = position(wsp)
        for name in ("1", "2", "3"):
            wsp.put_file(f"{root}/{name}.md", name)
        last = since
        with closing(wsp.events(since)) as feed:
            for event in feed:
                last = event.sequence
                if event.path == f"{root}/1.md":
                    break
        with closing(wsp.events(last)) as feed:
            assert [e.path for e in take(feed, root, 2)] == [f"{root}/2.md", f"{root}/3.md"]


class _BreakAfterFirstEvent(httpx.BaseTransport):
    """Passes requests to the network; the first change-feed answer breaks after one event."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.last_event_ids: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if not request.url.path.endswith("/events"):
            return response
        self.last_event_ids.append(request.headers.get("Last-Event-ID"))
        if len(self.last_event_ids) > 1:
            return response
        return httpx.Response(response.status_code, headers=response.headers, stream=_OneEvent(response))


class _OneEvent(httpx.SyncByteStream):
    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        seen = b""
        for chunk in self.response.iter_raw():
            seen += chunk
            start = seen.find(b"data:")
            end = seen.find(b"\n\n", start)
            if start >= 0 and end >= 0:
                yield seen[: end + 2]
                self.response.close()
                raise httpx.ReadError("connection reset")

    def close(self) -> None:
        self.response.close()


def test_events_reconnect(server: Server) -> None:
    """a broken stream reconnects with Last-Event-ID and loses and repeats nothing."""
    root = server.root("reconnect")
    transport = _BreakAfterFirstEvent()
    with Client(server.url, server.key) as wsp, Client(server.url, server.key, transport=transport) as flaky:
        since = position(wsp)
        for name in ("1", "2", "3"):
            wsp.put_file(f"{root}/{name}.md", name)
        with closing(flaky.events(since, reconnect_delay=0.01)) as feed:
            events = take(feed, root, 3)
    assert [e.path for e in events] == [f"{root}/{n}.md" for n in ("1", "2", "3")]
    sequences = [e.sequence for e in events]
    assert sequences == sorted(set(sequences))
    assert len(transport.last_event_ids) >= 2, "the client did not reconnect"
    assert transport.last_event_ids[0] == str(since)
    assert int(transport.last_event_ids[1] or 0) > since


def test_events_refused_key(server: Server) -> None:
    """a refused key is a typed error, not a hang."""
    with Client(server.url, "wsp_000000000000_not-a-key") as stranger:
        with pytest.raises(AuthenticationError):
            next(iter(stranger.events(0)))


async def atake(events: AsyncIterator[WorkspaceEvent], root: str, count: int) -> list[WorkspaceEvent]:
    taken: list[WorkspaceEvent] = []
    async for event in events:
        if event.path.startswith(root):
            taken.append(event)
            if len(taken) == count:
                break
    return taken


async def test_async_events_and_update(server: Server) -> None:
    """the async client: the feed, and eight concurrent update_file calls losing nothing."""
    root = server.root("async")
    path = f"{root}/counter.md"
    async with AsyncClient(server.url, server.key) as wsp:
        run = await wsp.create_run("sdk-py-async")
        await wsp.cancel_run(run.run_id)

        async def append(i: int) -> None:
            async def change(f: object) -> str:
                await asyncio.sleep(0)
                return (getattr(f, "text", "") or "") + f"line {i}\n"

            await wsp.update_file(path, change)

        await asyncio.gather(*(append(i) for i in range(8)))
        assert sorted((await wsp.get_file(path)).text.strip().split("\n")) == [f"line {i}" for i in range(8)]
        async with aclosing(wsp.events(run.since)) as feed:
            events = await atake(feed, root, 8)
        assert [e.version for e in events] == list(range(1, 9))
        data = bytes(range(256))
        await wsp.put_file(f"{root}/b.bin", data)
        assert (await wsp.get_file(f"{root}/b.bin")).data == data


def test_no_thread_leak_on_close(server: Server) -> None:
    """closing a client closes its connections (no thread or socket is left to the caller)."""
    before = threading.active_count()
    with Client(server.url, server.key) as wsp:
        wsp.list_files("sdk-py/")
    assert threading.active_count() == before
