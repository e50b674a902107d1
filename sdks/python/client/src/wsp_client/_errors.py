"""Errors of the wsp client, as values a caller tells apart by class.

- `APIError` (and one subclass per status a caller reacts to): the server answered with an
  error envelope (`error`, `message`, `details`);
- `APIConnectionError`: no answer (the connection failed, timed out or was reset);
- `APIResponseError`: an answer that is not what the API document promises;
- `PathError`: a path the client refuses to send, because the server would refuse it too.
"""

from __future__ import annotations

from typing import Any, Mapping


class WspError(Exception):
    """Every error this package raises."""


class APIError(WspError):
    """The server answered with an error envelope."""

    status: int
    """The HTTP status."""
    code: str
    """The machine-readable code (`error`), such as `not_found` or `workspace_conflict`."""
    message: str
    """The human-readable explanation (`message`)."""
    details: Mapping[str, Any]
    """Code-specific facts (`details`), such as `currentVersion`; empty when absent."""

    def __init__(self, status: int, envelope: Mapping[str, Any]) -> None:
        self.status = status
        self.code = str(envelope["error"])
        self.message = str(envelope["message"])
        details = envelope.get("details")
        self.details = details if isinstance(details, dict) else {}
        super().__init__(f"{self.code}: {self.message}")


class BadRequestError(APIError):
    """400: the request was malformed (`validation_error`)."""


class AuthenticationError(APIError):
    """401: no credential, or an unknown one (`unauthenticated`)."""


class PermissionDeniedError(APIError):
    """403: the key lacks a scope (`forbidden`, `details["requiredScope"]`)."""


class NotFoundError(APIError):
    """404: no such file, version, run or agent (`not_found`)."""


class ConflictError(APIError):
    """409: a precondition failed (`workspace_conflict`), or an idempotency key was reused."""

    @property
    def current_version(self) -> int | None:
        """`details["currentVersion"]`: the version the server holds, when it said."""
        value = self.details.get("currentVersion")
        return value if isinstance(value, int) else None


class PayloadTooLargeError(APIError):
    """413: the body or the file is over a limit (`details["limit"]` names which)."""


class RateLimitError(APIError):
    """429: too many open change-feed streams for this key (`rate_limited`)."""


class InternalServerError(APIError):
    """5xx: the server or its store is unavailable; retrying later may succeed."""


class APIConnectionError(WspError):
    """The request got no answer: the connection failed, timed out or was reset."""


class APIResponseError(WspError):
    """The server answered, but not as its document says it does."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class PathError(WspError, ValueError):
    """A workspace path the client refuses to send."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__(f"invalid workspace path {path!r}: {reason}")


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: RateLimitError,
}


def is_envelope(value: object) -> bool:
    """Whether `value` has the error envelope's shape."""
    return isinstance(value, dict) and isinstance(value.get("error"), str) and isinstance(value.get("message"), str)


def api_error(status: int, envelope: Mapping[str, Any]) -> APIError:
    """The error for an answer with `status` and `envelope`: the subclass for its status."""
    cls = _BY_STATUS.get(status, InternalServerError if status >= 500 else APIError)
    return cls(status, envelope)
