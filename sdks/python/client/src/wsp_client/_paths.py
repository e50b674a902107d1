"""Workspace paths as the wire defines them: checked before a request is sent, never repaired."""

from __future__ import annotations

import re
from urllib.parse import quote

from ._errors import PathError

MAX_PATH_LENGTH = 256
"""The longest path the wire accepts, in bytes (all its characters are ASCII)."""

_PATH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_PREFIX = re.compile(r"([A-Za-z0-9][A-Za-z0-9._/-]*)?")


def check_path(path: str) -> str:
    """Return `path` when it is a valid workspace path, else raise `PathError`.

    >>> check_path("notes/plan.md")
    'notes/plan.md'
    """
    if not path:
        raise PathError(path, "it is empty")
    if len(path) > MAX_PATH_LENGTH:
        raise PathError(path, f"it is longer than {MAX_PATH_LENGTH} bytes")
    if not _PATH.fullmatch(path):
        raise PathError(path, "it must start with a letter or digit and hold only A-Z a-z 0-9 . _ / -")
    if any(c in ("", ".", "..") for c in path.split("/")):
        raise PathError(path, "it has an empty, '.' or '..' component")
    return path


def is_path(path: str) -> bool:
    """Whether `path` is a valid workspace path."""
    try:
        check_path(path)
    except PathError:
        return False
    return True


def check_prefix(prefix: str) -> str:
    """Return `prefix` when it is a valid list prefix (possibly empty or partial), else raise."""
    if len(prefix) > MAX_PATH_LENGTH:
        raise PathError(prefix, f"it is longer than {MAX_PATH_LENGTH} bytes")
    if not _PREFIX.fullmatch(prefix):
        raise PathError(prefix, "a prefix starts with a letter or digit and holds only A-Z a-z 0-9 . _ / -")
    if any(c in ("", ".", "..") for c in prefix.split("/")[:-1]):
        raise PathError(prefix, "it has an empty, '.' or '..' component")
    return prefix


def path_segment(path: str) -> str:
    """The path as one URL path segment (`/` sent as `%2F`, which the server decodes once)."""
    return quote(check_path(path), safe="")
