"""What the tests of every package of sdks/python share: the `wsp serve` they run against (from
the environment `cargo xtask sdks` sets: WSP_URL, WSP_KEY with every scope, WSP_KEY_READONLY
with `workspace:read` only, WSP_KEY_OTHER of another tenant, WSP_OPENAPI the API document, WSP_PATH_VECTORS the shared path vectors), and
the JSON report `cargo xtask interop-matrix` reads, written to WSP_REPORT when it is set."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Server:
    """The server under test and its keys."""

    url: str
    key: str
    readonly_key: str
    other_key: str
    openapi: str
    path_vectors: str

    def root(self, name: str) -> str:
        """A fresh path prefix, so that tests never see each other's files."""
        return f"sdk-py/{name}-{secrets.token_hex(4)}"


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise pytest.UsageError(
            f"{name} is not set: run these tests through `cargo xtask sdks`, or set WSP_URL, WSP_KEY, "
            "WSP_KEY_READONLY, WSP_KEY_OTHER, WSP_OPENAPI and WSP_PATH_VECTORS for a running wsp serve"
        )
    return value


@pytest.fixture(scope="session")
def server() -> Server:
    """The server under test."""
    return Server(
        url=_required("WSP_URL"),
        key=_required("WSP_KEY"),
        readonly_key=_required("WSP_KEY_READONLY"),
        other_key=_required("WSP_KEY_OTHER"),
        openapi=_required("WSP_OPENAPI"),
        path_vectors=_required("WSP_PATH_VECTORS"),
    )


_checks: list[dict[str, object]] = []
_titles: dict[str, str] = {}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Names each test in the report by the first line of its docstring."""
    doc = getattr(getattr(item, "function", None), "__doc__", None)
    if doc:
        _titles[item.nodeid] = doc.strip().splitlines()[0].rstrip(".")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Records each test's outcome (its call, or the setup that failed or skipped it)."""
    if report.when == "call" or (report.when == "setup" and not report.passed):
        doc = _titles.get(report.nodeid, report.nodeid.split("::")[-1])
        reason = "" if report.passed else (str(report.longrepr).strip().splitlines() or ["failed"])[-1][:300]
        _checks.append({"name": doc, "pass": report.passed, "reason": reason})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Writes the report, when WSP_REPORT names a file."""
    path = os.environ.get("WSP_REPORT")
    if not path:
        return
    report = {
        "client": os.environ.get("WSP_REPORT_CLIENT", "?"),
        "clientVersion": os.environ.get("WSP_REPORT_VERSION", "?"),
        "host": os.environ.get("WSP_REPORT_HOST", "wsp serve"),
        "checks": _checks,
    }
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
        out.write("\n")
