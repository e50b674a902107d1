"""`WspBackend`: Deep Agents' `BackendProtocol` over a wsp workspace."""

from __future__ import annotations

import asyncio
import base64
import mimetypes
from typing import Any, Awaitable, Callable, TypeVar

from deepagents.backends.protocol import (
    BackendProtocol,
    DeleteResult,
    EditResult,
    FileData,
    FileDownloadResponse,
    FileInfo,
    FileUploadResponse,
    GlobResult,
    GrepResult,
    LsResult,
    ReadResult,
    WriteResult,
)
from deepagents.backends.utils import (
    InvalidGlobPatternError,
    compile_grep_include_glob,
    grep_matches_from_files,
    perform_string_replacement,
    slice_read_response,
)
from wsp_client import (
    APIError,
    AsyncClient,
    Client,
    ConflictError,
    File,
    NotFoundError,
    WspError,
    check_prefix,
    is_path,
)
from wsp_client import FileInfo as WspFileInfo

T = TypeVar("T")

_MEDIA_TYPES = {".md": "text/markdown", ".markdown": "text/markdown", ".json": "application/json", ".py": "text/x-python"}


def media_type_of(path: str) -> str:
    """The media type of a text file at `path`, by its extension (`text/plain` when unknown)."""
    name = path.rsplit("/", 1)[-1]
    suffix = name[name.rfind(".") :].lower() if "." in name[1:] else ""
    if suffix in _MEDIA_TYPES:
        return _MEDIA_TYPES[suffix]
    guessed, _ = mimetypes.guess_type(name)
    return guessed if guessed and guessed.startswith("text/") else "text/plain"


def _invalid(path: str) -> str:
    return f"Error: invalid path '{path}': a workspace path holds only A-Z a-z 0-9 . _ / - and no empty, '.' or '..' part"


def _failure(err: Exception) -> str:
    return f"Error: {err}"


def _file_data(file: File) -> FileData:
    stamp = file.updated_at.isoformat()
    if file.binary:
        return {"content": base64.b64encode(file.data).decode("ascii"), "encoding": "base64", "created_at": stamp, "modified_at": stamp}
    return {"content": file.text, "encoding": "utf-8", "created_at": stamp, "modified_at": stamp}


def _not_seen(path: str) -> str:
    return (
        f"Error: '{path}' already exists and you have not read it. Read it first, then write or edit it, "
        "so that no one's changes are lost."
    )


def _changed(path: str, err: ConflictError) -> str:
    version = err.current_version if err.current_version is not None else "?"
    return (
        f"Error: '{path}' was changed by someone else since you last read it (it is now at version {version}). "
        "Read it again, then write or edit it."
    )


class WspBackend(BackendProtocol):
    """A Deep Agents backend whose files are the versioned files of a wsp workspace: the agent's
    `/notes/plan.md` is the workspace path `<root>notes/plan.md` of the API key's owner.

    Nothing a concurrent writer wrote is lost:

    - `edit` reads the file, replaces the string and writes it back with `If-Match`. When another
      agent wrote the file in between, it reads the new version and replaces the string there,
      the same edit as long as the old string is still in the file (and still unique, unless
      `replace_all`); when it no longer is, the edit fails with an error the agent reads.
    - `write` replaces a file only if it is still the version this backend last read or wrote
      (`If-Match`); a file it has never seen is only created (`If-None-Match: *`). Otherwise the
      write fails with an error telling the agent to read the file first. So: one backend per
      agent, since the versions it remembers are what its agent has seen.

    The sync methods use a `wsp_client.Client`, the async ones (what `ainvoke` calls) an
    `AsyncClient`; both are made from `base_url` and `api_key` unless given. `ls` and `glob`
    list the workspace (one request), `read` reads one file, `grep` reads the text files under
    its path (one request each). Binary files (written as bytes through the API) read as
    base64 `FileData`, as Deep Agents expects; `write` always stores text.

    >>> backend = WspBackend(base_url="http://127.0.0.1:8787", api_key=key, root="agents/a/")  # doctest: +SKIP
    >>> agent = create_deep_agent(model=model, backend=backend)                                 # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
        root: str = "",
        max_edit_attempts: int = 10,
        concurrency: int = 8,
    ) -> None:
        if (client is None or async_client is None) and base_url is None:
            raise TypeError("WspBackend needs base_url (and api_key), or both client and async_client")
        self.client = client or Client(str(base_url), api_key)
        self.async_client = async_client or AsyncClient(str(base_url), api_key)
        if root and not root.endswith("/"):
            raise ValueError(f"root {root!r} must end in /")
        self.root = check_prefix(root)
        self._max_edit_attempts = max(1, max_edit_attempts)
        self._concurrency = max(1, concurrency)
        self._seen: dict[str, str] = {}

    # Paths.

    def workspace_path(self, path: str) -> str | None:
        """The workspace path of the agent's `path`, or `None` when it is not a valid one."""
        relative = path.lstrip("/")
        full = self.root + relative
        return full if relative and is_path(full) else None

    def agent_path(self, workspace_path: str) -> str:
        """The agent's path of a workspace path under the root."""
        return "/" + workspace_path[len(self.root) :]

    def _dir_prefix(self, path: str | None) -> str | None:
        relative = (path or "/").strip("/")
        prefix = self.root if not relative else f"{self.root}{relative}/"
        try:
            return check_prefix(prefix)
        except WspError:
            return None

    # What both flavours compute from what they fetched.

    def _ls_result(self, prefix: str, files: list[WspFileInfo]) -> LsResult:
        entries: list[FileInfo] = []
        dirs: set[str] = set()
        for f in files:
            rest = f.path[len(prefix) :]
            if "/" in rest:
                dirs.add(rest.split("/", 1)[0])
                continue
            entries.append(self._info(f))
        base = self.agent_path(prefix)
        entries.extend({"path": f"{base}{d}/", "is_dir": True, "size": 0, "modified_at": ""} for d in dirs)
        entries.sort(key=lambda e: e["path"])
        return LsResult(entries=entries)

    def _info(self, f: WspFileInfo) -> FileInfo:
        info: FileInfo = {"path": self.agent_path(f.path), "is_dir": False, "modified_at": f.updated_at.isoformat()}
        if f.size is not None:
            info["size"] = f.size
        return info

    def _read_result(self, file: File, offset: int, limit: int) -> ReadResult:
        data = _file_data(file)
        if file.binary:
            return ReadResult(file_data=data)
        return slice_read_response(data, offset, limit)

    def _glob_result(self, pattern: str, base: str, files: list[WspFileInfo]) -> GlobResult:
        try:
            matcher = compile_grep_include_glob(pattern)
        except InvalidGlobPatternError as err:
            return GlobResult(error=str(err))
        found = [f for f in files if matcher(f.path[len(base) :] or f.path.rsplit("/", 1)[-1])]
        found.sort(key=lambda f: f.updated_at, reverse=True)
        return GlobResult(matches=[self._info(f) for f in found])

    def _remember(self, file: File) -> File:
        self._seen[file.path] = file.etag
        return file

    def _upload_body(self, path: str, data: bytes) -> str | bytes:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data

    # Sync.

    def _under(self, path: str | None) -> tuple[str, list[WspFileInfo]] | str:
        prefix = self._dir_prefix(path)
        if prefix is None:
            return _invalid(path or "/")
        exact = self.workspace_path(path) if path else None
        try:
            if exact is not None:
                listed = self.client.list_files(exact)
                if listed and listed[0].path == exact:
                    return exact, listed[:1]
            return prefix, self.client.list_files(prefix)
        except WspError as err:
            return _failure(err)

    def _get(self, file_path: str) -> File | str:
        path = self.workspace_path(file_path)
        if path is None:
            return _invalid(file_path)
        try:
            return self._remember(self.client.get_file(path))
        except NotFoundError:
            return f"File '{file_path}' not found"
        except WspError as err:
            return _failure(err)

    def ls(self, path: str) -> LsResult:
        """Lists the files and folders directly in `path`."""
        prefix = self._dir_prefix(path)
        if prefix is None:
            return LsResult(error=_invalid(path))
        try:
            return self._ls_result(prefix, self.client.list_files(prefix))
        except WspError as err:
            return LsResult(error=_failure(err))

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """Reads a window of lines of a text file (a binary file whole, as base64)."""
        file = self._get(file_path)
        return ReadResult(error=file) if isinstance(file, str) else self._read_result(file, offset, limit)

    def write(self, file_path: str, content: str) -> WriteResult:
        """Creates a file, or replaces the version this backend last saw (see the class)."""
        path = self.workspace_path(file_path)
        if path is None:
            return WriteResult(error=_invalid(file_path))
        seen = self._seen.get(path)
        try:
            self._remember(
                self.client.put_file(
                    path,
                    content,
                    content_type=media_type_of(path),
                    if_match=seen,
                    if_none_match=None if seen else "*",
                )
            )
        except ConflictError as err:
            return WriteResult(error=_not_seen(file_path) if seen is None else _changed(file_path, err))
        except WspError as err:
            return WriteResult(error=_failure(err))
        return WriteResult(path=file_path)

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        """Replaces a string; re-applied on the fresh version when another writer got there first."""
        path = self.workspace_path(file_path)
        if path is None:
            return EditResult(error=_invalid(file_path))
        for attempt in range(self._max_edit_attempts):
            file = self._get(file_path)
            if isinstance(file, str):
                return EditResult(error=f"Error: {file}" if not file.startswith("Error") else file)
            outcome = self._replace(file, old_string, new_string, replace_all, attempt)
            if isinstance(outcome, EditResult):
                return outcome
            try:
                self._remember(self.client.put_file(path, outcome[0], content_type=file.content_type, if_match=file.etag))
            except ConflictError:
                continue
            except WspError as err:
                return EditResult(error=_failure(err))
            return EditResult(path=file_path, occurrences=outcome[1])
        return EditResult(error=f"Error: '{file_path}' kept changing while it was edited; read it again and retry")

    @staticmethod
    def _replace(file: File, old: str, new: str, replace_all: bool, attempt: int) -> tuple[str, int] | EditResult:
        if file.binary:
            return EditResult(error="Error: Cannot edit binary files with text replacements.")
        result = perform_string_replacement(file.text, old, new, replace_all)
        if isinstance(result, str):
            return EditResult(error=result if attempt == 0 else f"{result} (the file was changed by someone else while you edited it)")
        return result[0], int(result[1])

    def grep(self, pattern: str, path: str | None = None, glob: str | None = None, *, max_count: int | None = None) -> GrepResult:
        """Finds the lines of the text files under `path` that hold `pattern` (literally)."""
        under = self._under(path)
        if isinstance(under, str):
            return GrepResult(error=under)
        _, infos = under
        files: dict[str, Any] = {}
        try:
            for info in infos:
                if info.binary:
                    continue
                file = self.client.find_file(info.path)
                if file is not None and not file.binary:
                    files[self.agent_path(file.path)] = _file_data(file)
        except WspError as err:
            return GrepResult(error=_failure(err))
        return grep_matches_from_files(files, pattern, path, glob, max_count=max_count)

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        """Finds the files under `path` that match `pattern` (Deep Agents' glob contract)."""
        under = self._under(path)
        if isinstance(under, str):
            return GlobResult(error=under)
        base, files = under
        return self._glob_result(pattern, base, files)

    def delete(self, file_path: str) -> DeleteResult:
        """Deletes a file, or a folder and everything under it."""
        exact = self.workspace_path(file_path.rstrip("/"))
        prefix = self._dir_prefix(file_path)
        if exact is None and prefix is None:
            return DeleteResult(error=_invalid(file_path))
        try:
            targets = {f.path for f in self.client.list_files(prefix)} if prefix else set()
            if exact is not None and self.client.find_file(exact) is not None:
                targets.add(exact)
            if not targets:
                return DeleteResult(error=f"Error: File '{file_path}' not found")
            for target in sorted(targets):
                try:
                    self.client.delete_file(target, if_match=self._seen.get(target))
                except NotFoundError:
                    pass
                self._seen.pop(target, None)
        except ConflictError:
            return DeleteResult(error=f"Error: '{file_path}' was changed by someone else since you last read it; read it again first")
        except WspError as err:
            return DeleteResult(error=_failure(err))
        return DeleteResult(path=file_path)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Writes each file (text when it is UTF-8, else bytes), unconditionally."""
        responses = []
        for file_path, data in files:
            path = self.workspace_path(file_path)
            if path is None:
                responses.append(FileUploadResponse(path=file_path, error="invalid_path"))
                continue
            try:
                self._remember(self.client.put_file(path, self._upload_body(path, data)))
                responses.append(FileUploadResponse(path=file_path))
            except APIError as err:
                responses.append(FileUploadResponse(path=file_path, error="permission_denied" if err.status == 403 else str(err)))
        return responses

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """Reads each file's bytes."""
        responses = []
        for file_path in paths:
            path = self.workspace_path(file_path)
            if path is None:
                responses.append(FileDownloadResponse(path=file_path, error="invalid_path"))
                continue
            try:
                file = self.client.find_file(path)
            except APIError as err:
                responses.append(FileDownloadResponse(path=file_path, error="permission_denied" if err.status == 403 else str(err)))
                continue
            if file is None:
                responses.append(FileDownloadResponse(path=file_path, error="file_not_found"))
            else:
                responses.append(FileDownloadResponse(path=file_path, content=file.data))
        return responses

    # Async: the same, through the AsyncClient.

    async def _aunder(self, path: str | None) -> tuple[str, list[WspFileInfo]] | str:
        prefix = self._dir_prefix(path)
        if prefix is None:
            return _invalid(path or "/")
        exact = self.workspace_path(path) if path else None
        try:
            if exact is not None:
                listed = await self.async_client.list_files(exact)
                if listed and listed[0].path == exact:
                    return exact, listed[:1]
            return prefix, await self.async_client.list_files(prefix)
        except WspError as err:
            return _failure(err)

    async def _aget(self, file_path: str) -> File | str:
        path = self.workspace_path(file_path)
        if path is None:
            return _invalid(file_path)
        try:
            return self._remember(await self.async_client.get_file(path))
        except NotFoundError:
            return f"File '{file_path}' not found"
        except WspError as err:
            return _failure(err)

    async def _gather(self, tasks: list[Callable[[], Awaitable[T]]]) -> list[T]:
        limit = asyncio.Semaphore(self._concurrency)

        async def run(task: Callable[[], Awaitable[T]]) -> T:
            async with limit:
                return await task()

        return list(await asyncio.gather(*(run(t) for t in tasks)))

    async def als(self, path: str) -> LsResult:
        """See `ls`."""
        prefix = self._dir_prefix(path)
        if prefix is None:
            return LsResult(error=_invalid(path))
        try:
            return self._ls_result(prefix, await self.async_client.list_files(prefix))
        except WspError as err:
            return LsResult(error=_failure(err))

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """See `read`."""
        file = await self._aget(file_path)
        return ReadResult(error=file) if isinstance(file, str) else self._read_result(file, offset, limit)

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        """See `write`."""
        path = self.workspace_path(file_path)
        if path is None:
            return WriteResult(error=_invalid(file_path))
        seen = self._seen.get(path)
        try:
            self._remember(
                await self.async_client.put_file(
                    path,
                    content,
                    content_type=media_type_of(path),
                    if_match=seen,
                    if_none_match=None if seen else "*",
                )
            )
        except ConflictError as err:
            return WriteResult(error=_not_seen(file_path) if seen is None else _changed(file_path, err))
        except WspError as err:
            return WriteResult(error=_failure(err))
        return WriteResult(path=file_path)

    async def aedit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        """See `edit`."""
        path = self.workspace_path(file_path)
        if path is None:
            return EditResult(error=_invalid(file_path))
        for attempt in range(self._max_edit_attempts):
            file = await self._aget(file_path)
            if isinstance(file, str):
                return EditResult(error=f"Error: {file}" if not file.startswith("Error") else file)
            outcome = self._replace(file, old_string, new_string, replace_all, attempt)
            if isinstance(outcome, EditResult):
                return outcome
            try:
                written = await self.async_client.put_file(path, outcome[0], content_type=file.content_type, if_match=file.etag)
            except ConflictError:
                continue
            except WspError as err:
                return EditResult(error=_failure(err))
            self._remember(written)
            return EditResult(path=file_path, occurrences=outcome[1])
        return EditResult(error=f"Error: '{file_path}' kept changing while it was edited; read it again and retry")

    async def agrep(self, pattern: str, path: str | None = None, glob: str | None = None, *, max_count: int | None = None) -> GrepResult:
        """See `grep`."""
        under = await self._aunder(path)
        if isinstance(under, str):
            return GrepResult(error=under)
        _, infos = under
        client = self.async_client

        def fetch(p: str) -> Callable[[], Awaitable[File | None]]:
            return lambda: client.find_file(p)

        try:
            found = await self._gather([fetch(i.path) for i in infos if not i.binary])
        except WspError as err:
            return GrepResult(error=_failure(err))
        files: dict[str, Any] = {self.agent_path(f.path): _file_data(f) for f in found if f is not None and not f.binary}
        return grep_matches_from_files(files, pattern, path, glob, max_count=max_count)

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        """See `glob`."""
        under = await self._aunder(path)
        if isinstance(under, str):
            return GlobResult(error=under)
        base, files = under
        return self._glob_result(pattern, base, files)

    async def adelete(self, file_path: str) -> DeleteResult:
        """See `delete`."""
        exact = self.workspace_path(file_path.rstrip("/"))
        prefix = self._dir_prefix(file_path)
        if exact is None and prefix is None:
            return DeleteResult(error=_invalid(file_path))
        try:
            targets = {f.path for f in await self.async_client.list_files(prefix)} if prefix else set()
            if exact is not None and await self.async_client.find_file(exact) is not None:
                targets.add(exact)
            if not targets:
                return DeleteResult(error=f"Error: File '{file_path}' not found")
            for target in sorted(targets):
                try:
                    await self.async_client.delete_file(target, if_match=self._seen.get(target))
                except NotFoundError:
                    pass
                self._seen.pop(target, None)
        except ConflictError:
            return DeleteResult(error=f"Error: '{file_path}' was changed by someone else since you last read it; read it again first")
        except WspError as err:
            return DeleteResult(error=_failure(err))
        return DeleteResult(path=file_path)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """See `upload_files`."""
        return await asyncio.to_thread(self.upload_files, files)

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """See `download_files`."""
        return await asyncio.to_thread(self.download_files, paths)
