"""`wsp_client`: the Python client of the wsp workspace API.

`Client` (sync) and `AsyncClient` (asyncio) have the same methods: files (list, get, put with
`If-Match`/`If-None-Match`, delete, history), `update_file` (read-modify-write that retries on
a conflict), binary files as `bytes`, the change feed as an iterator that resumes with
`Last-Event-ID`, runs and reads of their snapshots, the run-start context, memory and search.
Errors are typed: `APIError` and its subclasses carry the envelope's `code`, `message` and
`details`.
"""

from ._client import DEFAULT_TIMEOUT, FEED_TIMEOUT, AsyncChange, AsyncClient, Change, Client, Content
from ._errors import (
    APIConnectionError,
    APIError,
    APIResponseError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PathError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    WspError,
)
from ._models import (
    DEFAULT_CONTENT_TYPE,
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
    RunStatus,
    RunSummary,
    SearchMatch,
    SearchResults,
    WorkspaceContext,
    WorkspaceEvent,
)
from ._paths import MAX_PATH_LENGTH, check_path, check_prefix, is_path
from ._sse import ServerSentEvent, SSEDecoder
from ._version import __version__

__all__ = [
    "DEFAULT_CONTENT_TYPE",
    "DEFAULT_TIMEOUT",
    "FEED_TIMEOUT",
    "MAX_PATH_LENGTH",
    "APIConnectionError",
    "APIError",
    "APIResponseError",
    "AsyncChange",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "Change",
    "Client",
    "ConflictError",
    "Content",
    "ContextEntry",
    "ContextReport",
    "File",
    "FileInfo",
    "InternalServerError",
    "MemoryAppended",
    "NotFoundError",
    "PathError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PublishResult",
    "RateLimitError",
    "Run",
    "RunCreated",
    "RunEntry",
    "RunList",
    "RunStatus",
    "RunSummary",
    "SSEDecoder",
    "SearchMatch",
    "SearchResults",
    "ServerSentEvent",
    "WorkspaceContext",
    "WorkspaceEvent",
    "WspError",
    "__version__",
    "check_path",
    "check_prefix",
    "is_path",
]
