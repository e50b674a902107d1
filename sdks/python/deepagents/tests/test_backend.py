"""WspBackend's operations, sync and async, against a real `wsp serve`."""

from __future__ import annotations

from conftest import Server
from wsp_client import Client
from wsp_deepagents import WspBackend


def backend(server: Server, root: str) -> WspBackend:
    return WspBackend(base_url=server.url, api_key=server.key, root=f"{root}/")


def test_write_read_ls(server: Server) -> None:
    """write creates, read pages by lines, ls shows files and folders."""
    b = backend(server, server.root("basics"))
    assert b.write("/notes/plan.md", "one\ntwo\nthree\n").error is None
    b.write("/notes/deep/x.txt", "x")
    b.write("/top.md", "top")
    page = b.read("/notes/plan.md", offset=1, limit=1)
    assert page.file_data is not None and page.file_data["content"] == "two\n"
    assert (page.start_line, page.end_line, page.total_lines, page.next_offset) == (2, 2, 3, 2)
    listing = b.ls("/")
    assert listing.entries is not None
    assert [(e["path"], e.get("is_dir")) for e in listing.entries] == [("/notes/", True), ("/top.md", False)]
    inner = b.ls("/notes")
    assert inner.entries is not None and [e["path"] for e in inner.entries] == ["/notes/deep/", "/notes/plan.md"]
    assert "not found" in (b.read("/missing.md").error or "")
    assert "invalid path" in (b.read("/../etc/passwd").error or "")


def test_write_never_overwrites_unseen_changes(server: Server) -> None:
    """write replaces only the version this backend has seen; another agent's change is never overwritten."""
    root = server.root("write")
    mine, theirs = backend(server, root), backend(server, root)
    mine.write("/shared.md", "v1")
    assert "have not read it" in (theirs.write("/shared.md", "blind").error or "")
    theirs.read("/shared.md")
    assert theirs.write("/shared.md", "v2 by theirs").error is None
    assert "changed by someone else" in (mine.write("/shared.md", "v2 by mine").error or "")
    mine.read("/shared.md")
    assert mine.write("/shared.md", "v3 by mine").error is None
    with Client(server.url, server.key) as client:
        assert [h.version for h in client.history(f"{root}/shared.md")] == [3, 2, 1]
        assert client.get_file(f"{root}/shared.md").text == "v3 by mine"


def test_edit(server: Server) -> None:
    """edit replaces a unique string, refuses ambiguity, and reports what it did."""
    b = backend(server, server.root("edit"))
    b.write("/f.md", "a b a")
    assert "appears 2 times" in (b.edit("/f.md", "a", "z").error or "")
    assert "not found" in (b.edit("/f.md", "q", "z").error or "")
    assert b.edit("/f.md", "b", "B").occurrences == 1
    assert b.edit("/f.md", "a", "A", replace_all=True).occurrences == 2
    data = b.read("/f.md").file_data
    assert data is not None and data["content"] == "A B A"


def test_glob_grep_delete(server: Server) -> None:
    """glob and grep over the workspace; delete removes a folder and everything under it."""
    b = backend(server, server.root("search"))
    b.write("/src/a.py", "import os\nprint('TODO one')\n")
    b.write("/src/lib/b.py", "# TODO two\n")
    b.write("/docs/c.md", "TODO three\n")
    found = b.glob("**/*.py").matches
    assert found is not None and sorted(f["path"] for f in found) == ["/src/a.py", "/src/lib/b.py"]
    grep = b.grep("TODO").matches
    assert grep is not None and sorted((m["path"], m["line"]) for m in grep) == [("/docs/c.md", 1), ("/src/a.py", 2), ("/src/lib/b.py", 1)]
    only_py = b.grep("TODO", "/src", "*.py").matches
    assert only_py is not None and len(only_py) == 2
    capped = b.grep("TODO", "/", max_count=1)
    assert capped.matches is not None and len(capped.matches) == 1 and capped.truncated
    assert b.delete("/src").error is None
    listing = b.ls("/")
    assert listing.entries is not None and [e["path"] for e in listing.entries] == ["/docs/"]


def test_binary_files_read_as_base64(server: Server) -> None:
    """a binary file written through the API reads as base64 FileData; upload and download."""
    root = server.root("binary")
    data = bytes([137, 80, 78, 71, 0, 255])
    with Client(server.url, server.key) as client:
        client.put_file(f"{root}/img/logo.png", data, content_type="image/png")
    b = backend(server, root)
    read = b.read("/img/logo.png")
    assert read.file_data is not None and read.file_data["encoding"] == "base64"
    assert b.download_files(["/img/logo.png"])[0].content == data
    assert b.upload_files([("/up.txt", b"uploaded")])[0].error is None
    up = b.read("/up.txt").file_data
    assert up is not None and up["content"] == "uploaded"


async def test_async_flavour(server: Server) -> None:
    """the async methods do the same through the AsyncClient."""
    b = backend(server, server.root("async"))
    assert (await b.awrite("/a.md", "hello world")).error is None
    assert (await b.aedit("/a.md", "world", "wsp")).occurrences == 1
    read = await b.aread("/a.md")
    assert read.file_data is not None and read.file_data["content"] == "hello wsp"
    listing = await b.als("/")
    assert listing.entries is not None and [e["path"] for e in listing.entries] == ["/a.md"]
    found = (await b.aglob("*.md")).matches
    assert found is not None and [f["path"] for f in found] == ["/a.md"]
    grep = (await b.agrep("wsp")).matches
    assert grep is not None and [(m["path"], m["line"]) for m in grep] == [("/a.md", 1)]
    assert (await b.adelete("/a.md")).error is None
