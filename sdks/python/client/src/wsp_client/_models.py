"""The answers of the wsp API as typed, immutable values.

Each model names, in `WIRE_FIELDS`, the properties of the document's schema it reads; a test
compares them with `api/openapi.json`, so a property added to the API cannot go unnoticed.
Timestamps are `datetime` (timezone-aware), file bodies `str` for text and `bytes` for binary
files.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal, Mapping

from ._errors import APIResponseError

DEFAULT_CONTENT_TYPE = "text/markdown"
"""The media type of a file whose writer named none (the wire's default)."""

RunStatus = Literal["running", "cancelled", "completed"]
"""Where a run is in its life."""


def _time(value: object) -> datetime:
    if not isinstance(value, str):
        raise APIResponseError(200, f"expected an RFC 3339 time, got {value!r}")
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _opt_time(value: object) -> datetime | None:
    return None if value is None else _time(value)


@dataclass(frozen=True, kw_only=True)
class FileInfo:
    """A file's metadata. `etag` and `content_type` are always present: wsp always sends them,
    and the client raises `APIResponseError` rather than hand out a file that cannot be written
    back conditionally."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"path", "version", "etag", "contentType", "contentEncoding", "updatedAt", "updatedBy", "size"}
    )

    path: str
    """The workspace path."""
    version: int
    """Version within the file's current life (1 for its first write)."""
    etag: str
    """The version's etag, to send back as `if_match`."""
    content_type: str
    """The media type."""
    updated_at: datetime
    """When this version was written."""
    updated_by: str | None = None
    """Who wrote it (the key's principal), when recorded."""
    size: int | None = None
    """Size of the body in bytes (lists and histories only)."""
    binary: bool = False
    """Whether the file holds bytes (`contentEncoding: base64`) rather than text."""

    @classmethod
    def from_wire(cls, data: Mapping[str, Any], etag_header: str | None = None) -> FileInfo:
        """The metadata of a `WorkspaceFileMeta` (or `WorkspaceFile`) object."""
        return cls(**_info_fields(data, etag_header))


def _info_fields(data: Mapping[str, Any], etag_header: str | None) -> dict[str, Any]:
    etag = data.get("etag") or etag_header
    if not isinstance(etag, str):
        raise APIResponseError(200, f"the server sent {data.get('path')!r} without an etag")
    size = data.get("size")
    return {
        "path": str(data["path"]),
        "version": int(data["version"]),
        "etag": etag,
        "content_type": str(data.get("contentType") or DEFAULT_CONTENT_TYPE),
        "updated_at": _time(data["updatedAt"]),
        "updated_by": data.get("updatedBy"),
        "size": int(size) if size is not None else None,
        "binary": data.get("contentEncoding") == "base64",
    }


@dataclass(frozen=True, kw_only=True)
class File(FileInfo):
    """A file with its body: `str` for a text file, `bytes` for a binary one."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset(FileInfo.WIRE_FIELDS - {"size"} | {"content"})

    content: str | bytes
    """The body."""

    @property
    def text(self) -> str:
        """The body of a text file; `TypeError` for a binary file."""
        if isinstance(self.content, bytes):
            raise TypeError(f"{self.path} is a binary file; read .data")
        return self.content

    @property
    def data(self) -> bytes:
        """The body as bytes (UTF-8 for a text file)."""
        return self.content if isinstance(self.content, bytes) else self.content.encode("utf-8")

    @classmethod
    def from_wire(cls, data: Mapping[str, Any], etag_header: str | None = None) -> File:
        """The file of a `WorkspaceFile` object (and the `ETag` header of its answer)."""
        fields = _info_fields(data, etag_header)
        content = data["content"]
        if not isinstance(content, str):
            raise APIResponseError(200, f"{fields['path']}: content is not a string")
        body: str | bytes = content
        if fields["binary"]:
            try:
                body = base64.b64decode(content, validate=True)
            except binascii.Error as err:
                raise APIResponseError(200, f"{fields['path']}: content is not base64") from err
        return cls(content=body, **fields)


@dataclass(frozen=True, kw_only=True)
class WorkspaceEvent:
    """One change of the change feed: a write, or a delete (`deleted`)."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"sequence", "type", "timestamp", "payload"})
    PAYLOAD_FIELDS: ClassVar[frozenset[str]] = frozenset({"path", "version", "deleted"})

    sequence: int
    """The owner's change sequence number (the event's `id`): monotonic and gap-free."""
    type: str
    """Always `workspace.updated`."""
    timestamp: datetime
    """When the change committed."""
    path: str
    """The file that changed."""
    version: int
    """The version written; for a delete, the tombstone's."""
    deleted: bool = False
    """Whether the change is a delete."""

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> WorkspaceEvent:
        """The event of a `WorkspaceEvent` object."""
        payload = data["payload"]
        return cls(
            sequence=int(data["sequence"]),
            type=str(data["type"]),
            timestamp=_time(data["timestamp"]),
            path=str(payload["path"]),
            version=int(payload["version"]),
            deleted=payload.get("deleted") is True,
        )


@dataclass(frozen=True, kw_only=True)
class RunCreated:
    """A new run and where to follow it."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"runId", "status", "eventsUrl", "statusUrl"})

    run_id: str
    """The run id."""
    status: RunStatus
    """Always `running`."""
    events_url: str
    """The change feed positioned at the snapshot (`/v1/host/workspace/events?since=N`)."""
    status_url: str | None = None
    """Where the run's status is read."""

    @property
    def since(self) -> int | None:
        """The feed position of the snapshot (the `since` of `events_url`)."""
        _, _, query = self.events_url.partition("?")
        for pair in query.split("&"):
            name, _, value = pair.partition("=")
            if name == "since" and value.isdigit():
                return int(value)
        return None

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> RunCreated:
        """The value of a `RunCreated` object."""
        return cls(
            run_id=str(data["runId"]),
            status=data["status"],
            events_url=str(data["eventsUrl"]),
            status_url=data.get("statusUrl"),
        )


@dataclass(frozen=True, kw_only=True)
class RunEntry:
    """One file of a run's snapshot."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"path", "version"})

    path: str
    """The path."""
    version: int
    """The version the run sees."""


@dataclass(frozen=True, kw_only=True)
class Run:
    """A run and the files of its snapshot."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"runId", "workflowId", "status", "owner", "startedAt", "endedAt", "workspace"}
    )

    run_id: str
    """The run id."""
    workflow_id: str
    """The workflow the run was created for."""
    status: RunStatus
    """Where the run is in its life."""
    tenant: str
    """The tenant whose files the run sees."""
    workspace_name: str
    """The workspace (within the tenant) whose files the run sees."""
    started_at: datetime
    """When the run started and its snapshot was taken."""
    ended_at: datetime | None = None
    """When the run ended; `None` while it runs."""
    workspace: tuple[RunEntry, ...] = ()
    """Every file of the snapshot with its version, sorted by path; empty once ended."""

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Run:
        """The value of a `Run` object."""
        owner = data["owner"]
        return cls(
            run_id=str(data["runId"]),
            workflow_id=str(data["workflowId"]),
            status=data["status"],
            tenant=str(owner["tenant"]),
            workspace_name=str(owner["workspace"]),
            started_at=_time(data["startedAt"]),
            ended_at=_opt_time(data.get("endedAt")),
            workspace=tuple(RunEntry(path=str(e["path"]), version=int(e["version"])) for e in data["workspace"]),
        )


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """A run in a list of runs."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"runId", "status", "workflowId", "startedAt", "endedAt"})

    run_id: str
    """The run id."""
    status: RunStatus
    """Where the run is in its life."""
    workflow_id: str
    """The workflow the run was created for."""
    started_at: datetime
    """When the run started."""
    ended_at: datetime | None = None
    """When the run ended; `None` while it runs."""


@dataclass(frozen=True, kw_only=True)
class RunList:
    """A page of runs, newest first."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"runs", "nextCursor"})

    runs: tuple[RunSummary, ...]
    """The runs of this page."""
    next_cursor: str | None = None
    """Pass as `cursor` for the next page; `None` on the last."""

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> RunList:
        """The value of a `RunList` object."""
        return cls(
            runs=tuple(
                RunSummary(
                    run_id=str(r["runId"]),
                    status=r["status"],
                    workflow_id=str(r["workflowId"]),
                    started_at=_time(r["startedAt"]),
                    ended_at=_opt_time(r.get("endedAt")),
                )
                for r in data["runs"]
            ),
            next_cursor=data.get("nextCursor"),
        )


@dataclass(frozen=True, kw_only=True)
class ContextEntry:
    """What happened to one section of the run-start context."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            "section",
            "path",
            "outcome",
            "fullTokens",
            "includedTokens",
            "omittedTokens",
            "floorTokens",
            "reason",
            "escapedTags",
        }
    )

    section: str
    """The section (`agents`, `memory`, ...)."""
    path: str
    """The file it came from (empty for generated sections)."""
    outcome: str
    """`included`, `truncated`, `omitted`, `missing` or `skipped`."""
    full_tokens: int
    """Tokens of the whole file."""
    included_tokens: int
    """Tokens included."""
    omitted_tokens: int
    """Tokens left out."""
    floor_tokens: int
    """Tokens the section is guaranteed."""
    reason: str | None = None
    """Why it was cut or left out."""
    escaped_tags: int | None = None
    """How many tags of the file were escaped."""


@dataclass(frozen=True, kw_only=True)
class ContextReport:
    """What the run-start context included, truncated, omitted, missed or skipped."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"source", "tokenizer", "budgetTokens", "usedTokens", "collapsed", "entries", "overBudget"}
    )

    source: str
    """What was read (the live workspace, or a run's snapshot)."""
    tokenizer: str
    """How tokens were counted."""
    budget_tokens: int
    """The budget."""
    used_tokens: int
    """Tokens used."""
    collapsed: bool
    """Whether sections were collapsed to fit."""
    entries: tuple[ContextEntry, ...]
    """One entry per section."""
    over_budget: bool = False
    """Whether `AGENTS.md` alone exceeded the budget and was loaded in full."""


@dataclass(frozen=True, kw_only=True)
class WorkspaceContext:
    """The run-start context: the text for a system prompt, and its report."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"text", "report"})

    text: str
    """The context block."""
    report: ContextReport
    """What went into it."""

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> WorkspaceContext:
        """The value of a `WorkspaceContext` object."""
        r = data["report"]
        return cls(
            text=str(data["text"]),
            report=ContextReport(
                source=str(r["source"]),
                tokenizer=str(r["tokenizer"]),
                budget_tokens=int(r["budgetTokens"]),
                used_tokens=int(r["usedTokens"]),
                collapsed=bool(r["collapsed"]),
                over_budget=bool(r.get("overBudget", False)),
                entries=tuple(
                    ContextEntry(
                        section=str(e["section"]),
                        path=str(e["path"]),
                        outcome=str(e["outcome"]),
                        full_tokens=int(e["fullTokens"]),
                        included_tokens=int(e["includedTokens"]),
                        omitted_tokens=int(e["omittedTokens"]),
                        floor_tokens=int(e["floorTokens"]),
                        reason=e.get("reason"),
                        escaped_tags=e.get("escapedTags"),
                    )
                    for e in r["entries"]
                ),
            ),
        )


@dataclass(frozen=True, kw_only=True)
class SearchMatch:
    """One matching line."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"path", "line", "snippet", "score"})

    path: str
    """The file."""
    line: int
    """The line's number, from 1."""
    snippet: str
    """The line, trimmed and cut at 240 characters."""
    score: int
    """How well it matches (higher is better)."""


@dataclass(frozen=True, kw_only=True)
class SearchResults:
    """The lines of the live text files that hold a query's words, best first."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"query", "matches", "total", "filesSearched", "truncated"})

    query: str
    """The query as sent."""
    matches: tuple[SearchMatch, ...]
    """The best matching lines."""
    total: int
    """Matching lines found in all."""
    files_searched: int
    """Files whose lines were read."""
    truncated: bool
    """More files held the words than a search reads."""

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> SearchResults:
        """The value of a `WorkspaceSearchResults` object."""
        return cls(
            query=str(data["query"]),
            matches=tuple(
                SearchMatch(path=str(m["path"]), line=int(m["line"]), snippet=str(m["snippet"]), score=int(m["score"]))
                for m in data["matches"]
            ),
            total=int(data["total"]),
            files_searched=int(data["filesSearched"]),
            truncated=bool(data["truncated"]),
        )


@dataclass(frozen=True, kw_only=True)
class MemoryAppended:
    """Where an appended memory line landed."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"path", "line", "version", "etag"})

    path: str
    """Today's log, `memory/YYYY-MM-DD.md`."""
    line: int
    """The line's number in the log."""
    version: int
    """The log's version that holds the line."""
    etag: str
    """That version's etag."""


@dataclass(frozen=True, kw_only=True)
class PublishResult:
    """Where a published copy landed."""

    WIRE_FIELDS: ClassVar[frozenset[str]] = frozenset({"targetAgentId", "path", "version"})

    target_agent_id: str
    """The shared agent whose workspace received the copy."""
    path: str
    """The path of the copy in the target workspace."""
    version: int
    """The version the copy created there."""

