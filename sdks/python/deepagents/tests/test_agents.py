"""Real Deep Agents (create_deep_agent) with scripted fake chat models, their framework's own
file tools running on WspBackend against a real `wsp serve`: two agents edit one file at the
same moment and both edits land; an agent that writes a file it has not read is told so, reads
it, and then writes."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

import httpx
from deepagents import create_deep_agent
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from conftest import Server
from wsp_client import AsyncClient, Client
from wsp_deepagents import WspBackend

PLAN = "# Plan\n\n- [ ] design\n- [ ] tests\n- [ ] docs\n"


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering its script whatever tools are bound."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{name}-{len(args)}"}])


def tool_messages(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


class RacingTransport(httpx.AsyncBaseTransport):
    """Holds the first two PUTs of `path` until both have arrived: the two edits race."""

    def __init__(self, path: str) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.target = "/" + path.replace("/", "%2F")
        self.arrived = 0
        self.both = asyncio.Event()
        self.statuses: list[int] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        is_put = request.method == "PUT" and request.url.raw_path.decode().endswith(self.target)
        if is_put and self.arrived < 2:
            self.arrived += 1
            if self.arrived == 2:
                self.both.set()
            await self.both.wait()
        response = await self.inner.handle_async_request(request)
        if is_put:
            self.statuses.append(response.status_code)
        return response


async def test_two_agents_edit_one_file(server: Server) -> None:
    """two agents edit one file at the same moment; both edits land."""
    root = server.root("two-agents")
    path = f"{root}/shared/plan.md"
    with Client(server.url, server.key) as client:
        client.put_file(path, PLAN)
    transport = RacingTransport(path)
    racing = AsyncClient(server.url, server.key, transport=transport)

    def agent(item: str) -> Any:
        script = iter(
            [
                call("ls", path="/shared"),
                call("read_file", file_path="/shared/plan.md"),
                call("edit_file", file_path="/shared/plan.md", old_string=f"- [ ] {item}", new_string=f"- [x] {item}"),
                AIMessage(content=f"{item} is done"),
            ]
        )
        backend = WspBackend(
            client=Client(server.url, server.key), async_client=racing, root=f"{root}/"
        )
        return create_deep_agent(model=ScriptedModel(messages=script), backend=backend)

    design, tests = await asyncio.gather(
        agent("design").ainvoke({"messages": [HumanMessage("Tick off design.")]}),
        agent("tests").ainvoke({"messages": [HumanMessage("Tick off tests.")]}),
    )
    await racing.aclose()
    for result in (design, tests):
        ls, read, edit = tool_messages(result["messages"])
        assert "/shared/plan.md" in str(ls.content)
        assert "- [ ] docs" in str(read.content)
        assert "Successfully replaced 1" in str(edit.content), edit.content
    assert sorted(transport.statuses) == [200, 200, 409], "the two edits did not race"
    with Client(server.url, server.key) as client:
        final = client.get_file(path)
    assert final.text == "# Plan\n\n- [x] design\n- [x] tests\n- [ ] docs\n"
    assert final.version == 3


def test_blind_write_is_refused_then_recovers(server: Server) -> None:
    """an agent that writes a file it has not read is told to read it, and then writes."""
    root = server.root("blind-write")
    with Client(server.url, server.key) as client:
        client.put_file(f"{root}/notes.md", "someone else's notes\n")
        script = iter(
            [
                call("glob", pattern="*.md"),
                call("write_file", file_path="/notes.md", content="mine\n"),
                call("read_file", file_path="/notes.md"),
                call("grep", pattern="someone"),
                call("write_file", file_path="/notes.md", content="someone else's notes\nmine\n"),
                AIMessage(content="kept both"),
            ]
        )
        agent = create_deep_agent(
            model=ScriptedModel(messages=script),
            backend=WspBackend(base_url=server.url, api_key=server.key, root=f"{root}/"),
        )
        result = agent.invoke({"messages": [HumanMessage("Add my line to the notes.")]})
        glob, refused, read, grep, written = tool_messages(result["messages"])
        assert "/notes.md" in str(glob.content)
        assert "have not read it" in str(refused.content) and refused.status == "error"
        assert "someone else's notes" in str(read.content)
        assert "/notes.md" in str(grep.content)
        assert written.status == "success", written.content
        final = client.get_file(f"{root}/notes.md")
    assert final.text == "someone else's notes\nmine\n"
    assert final.version == 2
