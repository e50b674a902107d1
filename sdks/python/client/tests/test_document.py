"""The models read every property of the API document's schemas: a property added to the API
fails this test until the client handles it."""

from __future__ import annotations

import json

from conftest import Server
from wsp_client import (
    ContextEntry,
    ContextReport,
    File,
    FileInfo,
    MemoryAppended,
    PublishResult,
    Run,
    RunCreated,
    RunEntry,
    RunList,
    RunSummary,
    SearchMatch,
    SearchResults,
    WorkspaceContext,
    WorkspaceEvent,
)

MODELS = [
    (File, "WorkspaceFile"),
    (FileInfo, "WorkspaceFileMeta"),
    (WorkspaceEvent, "WorkspaceEvent"),
    (RunCreated, "RunCreated"),
    (Run, "Run"),
    (RunEntry, "RunWorkspaceEntry"),
    (RunSummary, "RunSummary"),
    (RunList, "RunList"),
    (WorkspaceContext, "WorkspaceContext"),
    (ContextReport, "WorkspaceContextReport"),
    (ContextEntry, "WorkspaceContextEntry"),
    (SearchResults, "WorkspaceSearchResults"),
    (SearchMatch, "WorkspaceSearchMatch"),
    (MemoryAppended, "MemoryAppended"),
    (PublishResult, "PublishResponse"),
]


def test_models_read_every_property(server: Server) -> None:
    """each model reads exactly the properties of its schema in api/openapi.json."""
    with open(server.openapi, encoding="utf-8") as f:
        schemas = json.load(f)["components"]["schemas"]
    for model, schema in MODELS:
        fields: frozenset[str] = getattr(model, "WIRE_FIELDS")
        assert set(schemas[schema]["properties"]) == set(fields), schema
    assert set(schemas["WorkspaceUpdated"]["properties"]) == set(WorkspaceEvent.PAYLOAD_FIELDS)
