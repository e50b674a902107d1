"""`Client` and `AsyncClient`: every operation of the wsp workspace API over httpx, in two
clients of the same shape (the async one's methods are coroutines, its change feed an async
iterator). Both send the same requests and read the same answers: each operation is described
once (`_Call`) and its answer parsed once."""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import time
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, Awaitable, Callable, Generator, Mapping, Union
from urllib.parse import quote

import httpx

from ._errors import (
    APIConnectionError,
    APIError,
    APIResponseError,
    ConflictError,
    NotFoundError,
    WspError,
    api_error,
    is_envelope,
)
from ._models import (
    File,
    FileInfo,
    MemoryAppended,
    PublishResult,
    Run,
    RunCreated,
    RunList,
    SearchResults,
    WorkspaceContext,
    WorkspaceEvent,
)
from ._paths import check_path, check_prefix, path_segment
from ._sse import SSEDecoder
from ._version import __version__

Content = Union[str, bytes]
"""A body to write: `str` is written as text, `bytes` as bytes (base64 on the wire)."""

Change = Callable[[Union[File, None]], Union[Content, None]]
"""The change of `update_file`: the new body for the file read (`None`: no file), or `None`
to leave it as it is."""

AsyncChange = Callable[[Union[File, None]], Union[Content, None, Awaitable[Union[Content, None]]]]
"""The change of `AsyncClient.update_file`: like `Change`, and may be a coroutine function."""

DEFAULT_TIMEOUT = httpx.Timeout(30.0)
"""Every request's timeout, but the change feed's."""

FEED_TIMEOUT = httpx.Timeout(30.0, read=45.0)
"""The change feed's: the server sends a comment every 15 s when idle, so 45 s without a byte
means the connection is gone and the iterator reconnects."""

_STREAM_ERROR_STATUS = {"unauthenticated": 401, "forbidden": 403, "rate_limited": 429, "service_unavailable": 503}


@dataclass
class _Call:
    """One request."""

    method: str
    path: str
    params: dict[str, str | int | bool] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    json: Any = None


def _params(**values: str | int | bool | None) -> dict[str, str | int | bool]:
    return {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in values.items() if v is not None}


def _headers(**values: str | None) -> dict[str, str]:
    names = {"if_match": "If-Match", "if_none_match": "If-None-Match", "idempotency_key": "Idempotency-Key"}
    return {names.get(k, k): v for k, v in values.items() if v is not None}


def _put_call(
    path: str,
    content: Content,
    content_type: str | None,
    if_match: str | None,
    if_none_match: str | None,
    idempotency_key: str | None,
) -> _Call:
    if isinstance(content, bytes):
        body: dict[str, str] = {"content": base64.b64encode(content).decode("ascii"), "contentEncoding": "base64"}
    elif isinstance(content, str):
        body = {"content": content}
    else:
        raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
    if content_type is not None:
        body["contentType"] = content_type
    return _Call(
        "PUT",
        f"/v1/host/workspace/files/{path_segment(path)}",
        headers=_headers(if_match=if_match, if_none_match=if_none_match, idempotency_key=idempotency_key),
        json=body,
    )


def _error_of(response: httpx.Response) -> WspError:
    try:
        envelope = response.json()
    except ValueError:
        envelope = None
    if is_envelope(envelope):
        return api_error(response.status_code, envelope)
    return APIResponseError(
        response.status_code,
        f"{response.request.method} {response.request.url.path} answered {response.status_code} "
        f"without an error envelope: {response.text[:200]}",
    )


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as err:
        raise APIResponseError(response.status_code, f"the answer is not JSON: {response.text[:200]}") from err


def _file(response: httpx.Response) -> File:
    return File.from_wire(_json(response), response.headers.get("etag"))


def _infos(response: httpx.Response, key: str) -> list[FileInfo]:
    return [FileInfo.from_wire(entry) for entry in _json(response)[key]]


def _memory(response: httpx.Response) -> MemoryAppended:
    data = _json(response)
    return MemoryAppended(
        path=str(data["path"]), line=int(data["line"]), version=int(data["version"]), etag=str(data["etag"])
    )


def _published(response: httpx.Response) -> PublishResult:
    data = _json(response)
    return PublishResult(target_agent_id=str(data["targetAgentId"]), path=str(data["path"]), version=int(data["version"]))


def _feed_event(message_event: str, data: str, status: int) -> WorkspaceEvent | None:
    """The event of one message of the feed; raises the error an `error` event carries."""
    if message_event not in ("workspace.updated", "error"):
        return None
    try:
        parsed = json.loads(data)
    except ValueError as err:
        raise APIResponseError(status, f"the change feed sent {data[:200]!r}") from err
    if message_event == "workspace.updated":
        return WorkspaceEvent.from_wire(parsed)
    if not is_envelope(parsed):
        raise APIResponseError(status, f"the change feed ended with {data[:200]!r}")
    raise api_error(_STREAM_ERROR_STATUS.get(parsed["error"], status), parsed)


def _retriable(err: WspError) -> bool:
    return isinstance(err, APIConnectionError) or (isinstance(err, APIError) and err.status == 503)


def _feed_headers(position: int | None) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if position is not None:
        headers["Last-Event-ID"] = str(position)
    return headers


def _id_segment(value: str) -> str:
    """An id (run, agent) as one URL path segment."""
    if value in ("", ".", ".."):
        raise ValueError(f"not an id: {value!r}")
    return quote(value, safe="")


def _wait(failures: int, base: float, server: float | None) -> float:
    return server if server is not None else base * 2 ** min(failures - 1, 5)


class _Base:
    def __init__(self, base_url: str, api_key: str | None, headers: Mapping[str, str] | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._default_headers = {"Accept": "application/json", "User-Agent": f"wsp-client-python/{__version__}"}
        if headers:
            self._default_headers.update(headers)
        if api_key is not None:
            self._default_headers["Authorization"] = f"Bearer {api_key}"


class Client(_Base):
    """A client of one wsp server, acting with one API key (so on one owner's workspace).

    >>> with Client("http://127.0.0.1:8787", api_key) as wsp:          # doctest: +SKIP
    ...     wsp.put_file("notes/plan.md", "# Plan\\n", if_none_match="*")
    ...     wsp.update_file("notes/plan.md", lambda f: (f.text if f else "") + "- ship\\n")
    ...     for event in wsp.events(since=0):
    ...         print(event.path, event.version)
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        """`transport` or `http_client` replace httpx's defaults (proxies, tests)."""
        super().__init__(base_url, api_key, headers)
        self._http = http_client or httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)
        self._owns_http = http_client is None

    def close(self) -> None:
        """Closes the connections (only those of an `httpx.Client` this client made)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: _Call) -> httpx.Response:
        url = self.base_url + call.path
        try:
            response = self._http.request(
                call.method,
                url,
                params=call.params,
                headers={**self._default_headers, **call.headers},
                json=call.json,
            )
        except httpx.TransportError as err:
            raise APIConnectionError(f"{call.method} {call.path}: {err!r}") from err
        if response.is_error:
            raise _error_of(response)
        return response

    def discovery(self) -> dict[str, Any]:
        """The discovery document (protocol version, limits, capabilities), as parsed JSON."""
        data: dict[str, Any] = _json(self._send(_Call("GET", "/.well-known/openwop")))
        return data

    def list_files(self, prefix: str | None = None) -> list[FileInfo]:
        """The live files whose path starts with `prefix` (all when `None`), sorted by path."""
        call = _Call("GET", "/v1/host/workspace/files", _params(prefix=None if prefix is None else check_prefix(prefix)))
        return _infos(self._send(call), "files")

    def get_file(self, path: str, *, version: int | None = None) -> File:
        """The file at `path` (the live version, or `version`); `NotFoundError` when absent."""
        return _file(self._send(_Call("GET", f"/v1/host/workspace/files/{path_segment(path)}", _params(version=version))))

    def find_file(self, path: str) -> File | None:
        """Like `get_file`, but `None` when there is no file at `path`."""
        try:
            return self.get_file(path)
        except NotFoundError:
            return None

    def put_file(
        self,
        path: str,
        content: Content,
        *,
        content_type: str | None = None,
        if_match: str | None = None,
        if_none_match: str | None = None,
        idempotency_key: str | None = None,
    ) -> File:
        """Writes `content` at `path` (text for `str`, bytes for `bytes`) and answers the stored
        version. With `if_match` (an etag) or `if_none_match="*"` the write is conditional, and a
        failed condition raises `ConflictError`, changing nothing."""
        return _file(self._send(_put_call(path, content, content_type, if_match, if_none_match, idempotency_key)))

    def delete_file(self, path: str, *, if_match: str | None = None, idempotency_key: str | None = None) -> None:
        """Deletes the file at `path` (`NotFoundError` when there is none)."""
        headers = _headers(if_match=if_match, idempotency_key=idempotency_key)
        self._send(_Call("DELETE", f"/v1/host/workspace/files/{path_segment(path)}", headers=headers))

    def history(self, path: str) -> list[FileInfo]:
        """The retained versions of the file's current life, newest first."""
        return _infos(self._send(_Call("GET", f"/v1/host/workspace/history/{path_segment(path)}")), "versions")

    def update_file(
        self, path: str, change: Change, *, content_type: str | None = None, max_attempts: int = 10
    ) -> File | None:
        """Read-modify-write that loses no concurrent write.

        Reads the file (`None` when there is none), asks `change` for the new body, and writes it
        on the condition that the file is still the one read (`If-Match`, or `If-None-Match: *`
        for a new file). When another writer got there first it reads and asks again, up to
        `max_attempts` times, then raises the last `ConflictError`. `change` answers `None` to
        leave the file as it is; it may be called more than once, so it should only compute.
        Answers the version written (or read, when left), `None` when there was no file and
        none was written.
        """
        check_path(path)
        conflict: ConflictError | None = None
        for _ in range(max(1, max_attempts)):
            current = self.find_file(path)
            new = change(current)
            if new is None:
                return current
            kind = content_type or (current.content_type if current else None)
            try:
                return self.put_file(
                    path,
                    new,
                    content_type=kind,
                    if_match=current.etag if current else None,
                    if_none_match=None if current else "*",
                )
            except ConflictError as err:
                conflict = err
        assert conflict is not None
        raise conflict

    def events(
        self,
        since: int | None = None,
        *,
        reconnect: bool = True,
        reconnect_delay: float = 0.5,
        max_reconnects: int = 10,
    ) -> Generator[WorkspaceEvent, None, None]:
        """The change feed: every committed write and delete of this key's workspace, in order,
        each as soon as it arrives (the body is read as it streams). `since` starts after that
        sequence number (0: from the oldest retained change; `None`: from now on). When the
        connection ends or breaks the iterator reconnects with `Last-Event-ID` set to the last
        sequence number it yielded, so nothing is lost or repeated; an `error` event other than
        `service_unavailable` (`feed_position_expired`, a revoked key) is raised. Closing the
        generator (leaving a `for` loop, `close()`) closes the connection."""
        position = since
        failures = 0
        server_delay: float | None = None
        while True:
            failure: WspError | None = None
            try:
                url = self.base_url + "/v1/host/workspace/events"
                headers = {**self._default_headers, **_feed_headers(position)}
                with self._http.stream("GET", url, headers=headers, timeout=FEED_TIMEOUT) as response:
                    if response.is_error:
                        response.read()
                        raise _error_of(response)
                    decoder = SSEDecoder()
                    for line in response.iter_lines():
                        message = decoder.feed(line)
                        if message is None:
                            continue
                        if message.retry is not None:
                            server_delay = message.retry / 1000
                        event = _feed_event(message.event, message.data, response.status_code)
                        if event is not None:
                            position = event.sequence
                            failures = 0
                            yield event
            except httpx.TransportError as err:
                failure = APIConnectionError(f"the change feed broke: {err!r}")
            except WspError as err:
                if not _retriable(err):
                    raise
                failure = err
            if not reconnect:
                if failure is not None:
                    raise failure
                return
            failures += 1
            if failures > max_reconnects:
                raise failure or APIConnectionError(f"the change feed closed {failures} times in a row")
            time.sleep(_wait(failures, reconnect_delay, server_delay))

    def create_run(self, workflow_id: str, **extra: Any) -> RunCreated:
        """Starts a run: a pinned, immutable snapshot of the workspace labelled `workflow_id`
        (other keyword arguments, such as `inputs`, are sent along and ignored by wsp)."""
        return RunCreated.from_wire(_json(self._send(_Call("POST", "/v1/runs", json={**extra, "workflowId": workflow_id}))))

    def get_run(self, run_id: str) -> Run:
        """A run and the files (paths and versions) of its snapshot."""
        return Run.from_wire(_json(self._send(_Call("GET", f"/v1/runs/{_id_segment(run_id)}"))))

    def cancel_run(self, run_id: str) -> Run:
        """Ends a run and releases its snapshot."""
        return Run.from_wire(_json(self._send(_Call("POST", f"/v1/runs/{_id_segment(run_id)}/cancel"))))

    def list_runs(self, *, limit: int | None = None, cursor: str | None = None) -> RunList:
        """One page of runs, newest first; pass `next_cursor` back as `cursor` for the next."""
        return RunList.from_wire(_json(self._send(_Call("GET", "/v1/runs", _params(limit=limit, cursor=cursor)))))

    def list_run_files(self, run_id: str, prefix: str | None = None) -> list[FileInfo]:
        """The files of a run's snapshot whose path starts with `prefix`."""
        params = _params(prefix=None if prefix is None else check_prefix(prefix))
        return _infos(self._send(_Call("GET", f"/v1/runs/{_id_segment(run_id)}/workspace/files", params)), "files")

    def get_run_file(self, run_id: str, path: str) -> File:
        """A file as the run's snapshot sees it, whatever was written since."""
        return _file(self._send(_Call("GET", f"/v1/runs/{_id_segment(run_id)}/workspace/files/{path_segment(path)}")))

    def context(
        self, *, budget: int | None = None, strict: bool | None = None, session: str | None = None
    ) -> WorkspaceContext:
        """The run-start context of the live workspace, with its report."""
        call = _Call("GET", "/v1/host/workspace/context", _params(budget=budget, strict=strict, session=session))
        return WorkspaceContext.from_wire(_json(self._send(call)))

    def context_text(self, *, budget: int | None = None, strict: bool | None = None, session: str | None = None) -> str:
        """The run-start context of the live workspace as text, ready for a system prompt."""
        call = _Call(
            "GET",
            "/v1/host/workspace/context",
            _params(budget=budget, strict=strict, session=session),
            headers={"Accept": "text/plain"},
        )
        return self._send(call).text

    def run_context(
        self, run_id: str, *, budget: int | None = None, strict: bool | None = None, session: str | None = None
    ) -> WorkspaceContext:
        """The run-start context as a run's snapshot sees it."""
        call = _Call("GET", f"/v1/runs/{_id_segment(run_id)}/context", _params(budget=budget, strict=strict, session=session))
        return WorkspaceContext.from_wire(_json(self._send(call)))

    def append_memory(self, text: str) -> MemoryAppended:
        """Appends one line to today's daily memory log (`memory/YYYY-MM-DD.md`)."""
        return _memory(self._send(_Call("POST", "/v1/host/workspace/memory", json={"text": text})))

    def search(self, q: str, *, prefix: str | None = None, limit: int | None = None) -> SearchResults:
        """The lines of the live text files that hold the words of `q`, best first."""
        params = _params(q=q, prefix=None if prefix is None else check_prefix(prefix), limit=limit)
        return SearchResults.from_wire(_json(self._send(_Call("GET", "/v1/host/workspace/search", params))))

    def agents(self) -> dict[str, Any]:
        """The agent inventory this key may see, as parsed JSON (`{"agents": [...]}`)."""
        data: dict[str, Any] = _json(self._send(_Call("GET", "/v1/agents")))
        return data

    def agent(self, agent_id: str) -> dict[str, Any]:
        """One agent of the inventory, as parsed JSON (`NotFoundError` when not visible)."""
        data: dict[str, Any] = _json(self._send(_Call("GET", f"/v1/agents/{_id_segment(agent_id)}")))
        return data

    def publish(
        self, path: str, target_agent_id: str, *, target_path: str | None = None, idempotency_key: str | None = None
    ) -> PublishResult:
        """Copies a file of this workspace into a shared agent's workspace (one way)."""
        body = {"path": check_path(path), "targetAgentId": target_agent_id}
        if target_path is not None:
            body["targetPath"] = check_path(target_path)
        call = _Call("POST", "/v1/host/workspace/publish", headers=_headers(idempotency_key=idempotency_key), json=body)
        return _published(self._send(call))


class AsyncClient(_Base):
    """The asynchronous `Client`: the same methods, as coroutines; `events` is an async
    iterator (close it with `aclose()`, or `contextlib.aclosing`, when leaving a loop early).

    >>> async with AsyncClient("http://127.0.0.1:8787", api_key) as wsp:     # doctest: +SKIP
    ...     await wsp.put_file("notes/plan.md", "# Plan\\n")
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        """`transport` or `http_client` replace httpx's defaults (proxies, tests)."""
        super().__init__(base_url, api_key, headers)
        self._http = http_client or httpx.AsyncClient(base_url=self.base_url, timeout=timeout, transport=transport)
        self._owns_http = http_client is None

    async def aclose(self) -> None:
        """Closes the connections (only those of an `httpx.AsyncClient` this client made)."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: _Call) -> httpx.Response:
        url = self.base_url + call.path
        try:
            response = await self._http.request(
                call.method, url, params=call.params, headers={**self._default_headers, **call.headers}, json=call.json
            )
        except httpx.TransportError as err:
            raise APIConnectionError(f"{call.method} {call.path}: {err!r}") from err
        if response.is_error:
            raise _error_of(response)
        return response

    async def discovery(self) -> dict[str, Any]:
        """See `Client.discovery`."""
        data: dict[str, Any] = _json(await self._send(_Call("GET", "/.well-known/openwop")))
        return data

    async def list_files(self, prefix: str | None = None) -> list[FileInfo]:
        """See `Client.list_files`."""
        call = _Call("GET", "/v1/host/workspace/files", _params(prefix=None if prefix is None else check_prefix(prefix)))
        return _infos(await self._send(call), "files")

    async def get_file(self, path: str, *, version: int | None = None) -> File:
        """See `Client.get_file`."""
        call = _Call("GET", f"/v1/host/workspace/files/{path_segment(path)}", _params(version=version))
        return _file(await self._send(call))

    async def find_file(self, path: str) -> File | None:
        """See `Client.find_file`."""
        try:
            return await self.get_file(path)
        except NotFoundError:
            return None

    async def put_file(
        self,
        path: str,
        content: Content,
        *,
        content_type: str | None = None,
        if_match: str | None = None,
        if_none_match: str | None = None,
        idempotency_key: str | None = None,
    ) -> File:
        """See `Client.put_file`."""
        return _file(await self._send(_put_call(path, content, content_type, if_match, if_none_match, idempotency_key)))

    async def delete_file(self, path: str, *, if_match: str | None = None, idempotency_key: str | None = None) -> None:
        """See `Client.delete_file`."""
        headers = _headers(if_match=if_match, idempotency_key=idempotency_key)
        await self._send(_Call("DELETE", f"/v1/host/workspace/files/{path_segment(path)}", headers=headers))

    async def history(self, path: str) -> list[FileInfo]:
        """See `Client.history`."""
        return _infos(await self._send(_Call("GET", f"/v1/host/workspace/history/{path_segment(path)}")), "versions")

    async def update_file(
        self, path: str, change: AsyncChange, *, content_type: str | None = None, max_attempts: int = 10
    ) -> File | None:
        """See `Client.update_file`; `change` may also be a coroutine function."""
        check_path(path)
        conflict: ConflictError | None = None
        for _ in range(max(1, max_attempts)):
            current = await self.find_file(path)
            answer = change(current)
            new = await answer if inspect.isawaitable(answer) else answer
            if new is None:
                return current
            kind = content_type or (current.content_type if current else None)
            try:
                return await self.put_file(
                    path,
                    new,
                    content_type=kind,
                    if_match=current.etag if current else None,
                    if_none_match=None if current else "*",
                )
            except ConflictError as err:
                conflict = err
        assert conflict is not None
        raise conflict

    async def events(
        self,
        since: int | None = None,
        *,
        reconnect: bool = True,
        reconnect_delay: float = 0.5,
        max_reconnects: int = 10,
    ) -> AsyncGenerator[WorkspaceEvent, None]:
        """See `Client.events`."""
        position = since
        failures = 0
        server_delay: float | None = None
        while True:
            failure: WspError | None = None
            try:
                url = self.base_url + "/v1/host/workspace/events"
                headers = {**self._default_headers, **_feed_headers(position)}
                async with self._http.stream("GET", url, headers=headers, timeout=FEED_TIMEOUT) as response:
                    if response.is_error:
                        await response.aread()
                        raise _error_of(response)
                    decoder = SSEDecoder()
                    async for line in response.aiter_lines():
                        message = decoder.feed(line)
                        if message is None:
                            continue
                        if message.retry is not None:
                            server_delay = message.retry / 1000
                        event = _feed_event(message.event, message.data, response.status_code)
                        if event is not None:
                            position = event.sequence
                            failures = 0
                            yield event
            except httpx.TransportError as err:
                failure = APIConnectionError(f"the change feed broke: {err!r}")
            except WspError as err:
                if not _retriable(err):
                    raise
                failure = err
            if not reconnect:
                if failure is not None:
                    raise failure
                return
            failures += 1
            if failures > max_reconnects:
                raise failure or APIConnectionError(f"the change feed closed {failures} times in a row")
            await asyncio.sleep(_wait(failures, reconnect_delay, server_delay))

    async def create_run(self, workflow_id: str, **extra: Any) -> RunCreated:
        """See `Client.create_run`."""
        call = _Call("POST", "/v1/runs", json={**extra, "workflowId": workflow_id})
        return RunCreated.from_wire(_json(await self._send(call)))

    async def get_run(self, run_id: str) -> Run:
        """See `Client.get_run`."""
        return Run.from_wire(_json(await self._send(_Call("GET", f"/v1/runs/{_id_segment(run_id)}"))))

    async def cancel_run(self, run_id: str) -> Run:
        """See `Client.cancel_run`."""
        return Run.from_wire(_json(await self._send(_Call("POST", f"/v1/runs/{_id_segment(run_id)}/cancel"))))

    async def list_runs(self, *, limit: int | None = None, cursor: str | None = None) -> RunList:
        """See `Client.list_runs`."""
        return RunList.from_wire(_json(await self._send(_Call("GET", "/v1/runs", _params(limit=limit, cursor=cursor)))))

    async def list_run_files(self, run_id: str, prefix: str | None = None) -> list[FileInfo]:
        """See `Client.list_run_files`."""
        params = _params(prefix=None if prefix is None else check_prefix(prefix))
        call = _Call("GET", f"/v1/runs/{_id_segment(run_id)}/workspace/files", params)
        return _infos(await self._send(call), "files")

    async def get_run_file(self, run_id: str, path: str) -> File:
        """See `Client.get_run_file`."""
        call = _Call("GET", f"/v1/runs/{_id_segment(run_id)}/workspace/files/{path_segment(path)}")
        return _file(await self._send(call))

    async def context(
        self, *, budget: int | None = None, strict: bool | None = None, session: str | None = None
    ) -> WorkspaceContext:
        """See `Client.context`."""
        call = _Call("GET", "/v1/host/workspace/context", _params(budget=budget, strict=strict, session=session))
        return WorkspaceContext.from_wire(_json(await self._send(call)))

    async def context_text(
        self, *, budget: int | None = None, strict: bool | None = None, session: str | None = None
    ) -> str:
        """See `Client.context_text`."""
        call = _Call(
            "GET",
            "/v1/host/workspace/context",
            _params(budget=budget, strict=strict, session=session),
            headers={"Accept": "text/plain"},
        )
        return (await self._send(call)).text

    async def run_context(
        self, run_id: str, *, budget: int | None = None, strict: bool | None = None, session: str | None = None
    ) -> WorkspaceContext:
        """See `Client.run_context`."""
        call = _Call("GET", f"/v1/runs/{_id_segment(run_id)}/context", _params(budget=budget, strict=strict, session=session))
        return WorkspaceContext.from_wire(_json(await self._send(call)))

    async def append_memory(self, text: str) -> MemoryAppended:
        """See `Client.append_memory`."""
        return _memory(await self._send(_Call("POST", "/v1/host/workspace/memory", json={"text": text})))

    async def search(self, q: str, *, prefix: str | None = None, limit: int | None = None) -> SearchResults:
        """See `Client.search`."""
        params = _params(q=q, prefix=None if prefix is None else check_prefix(prefix), limit=limit)
        return SearchResults.from_wire(_json(await self._send(_Call("GET", "/v1/host/workspace/search", params))))

    async def agents(self) -> dict[str, Any]:
        """See `Client.agents`."""
        data: dict[str, Any] = _json(await self._send(_Call("GET", "/v1/agents")))
        return data

    async def agent(self, agent_id: str) -> dict[str, Any]:
        """See `Client.agent`."""
        data: dict[str, Any] = _json(await self._send(_Call("GET", f"/v1/agents/{_id_segment(agent_id)}")))
        return data

    async def publish(
        self, path: str, target_agent_id: str, *, target_path: str | None = None, idempotency_key: str | None = None
    ) -> PublishResult:
        """See `Client.publish`."""
        body = {"path": check_path(path), "targetAgentId": target_agent_id}
        if target_path is not None:
            body["targetPath"] = check_path(target_path)
        call = _Call("POST", "/v1/host/workspace/publish", headers=_headers(idempotency_key=idempotency_key), json=body)
        return _published(await self._send(call))

