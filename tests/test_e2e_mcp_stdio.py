"""`mockllm mcp NAME` over stdio, judged by the official `mcp` SDK client (which spawns it, as agent
hosts do): serving the scripts itself, and relaying to a running server (`--url`, what the pytest
fixture's `mcp_command` gives) with a whole OpenAI Agents SDK loop through `MCPServerStdio`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from test_e2e_mcp import LIBRARY, _all_messages

from mockllm.api import MockServer, load
from mockllm.pytest_plugin import MockLLM

T = TypeVar("T")
WAIT = 30.0


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), WAIT))


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "tools.mockllm"
    path.write_text(LIBRARY, encoding="utf-8")
    return path


def spawn(script: Path, name: str = "shop") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mockllm", "mcp", name, str(script)])


def test_the_scripts_own_server_answers_every_kind_of_call(script: Path) -> None:
    async def go() -> dict[str, Any]:
        async with Client(spawn(script), mode="legacy", read_timeout_seconds=WAIT) as c:
            out: dict[str, Any] = {"tools": (await c.list_tools()).tools}
            out["shipped"] = await c.call_tool("lookup", {"id": "A1"})
            out["default"] = await c.call_tool("lookup", {"id": "B2"})
            out["notes"] = [await c.call_tool("note", {"text": t}) for t in ("fragile box", "rush")]
            out["refused"] = await c.call_tool("lookup", {"id": "X9"})
            out["invalid"] = await c.call_tool("lookup", {"id": 7})
            out["unknown"] = await c.call_tool("nope", {})
            out["tickets"] = [(await c.call_tool("queue", {})).content[0].text for _ in range(3)]
            out["late"] = await c.call_tool("slow", {"mode": "late"})
            for mode in ("broken", "stuck"):
                try:  # the client gives a call that never answers one second
                    await c.call_tool("slow", {"mode": mode}, read_timeout_seconds=1.0)
                except MCPError as exc:
                    out[mode] = exc
            out["after"] = await c.list_tools()  # a hanging call holds only itself
            return out

    got = run(go)
    assert [t.name for t in got["tools"]] == ["lookup", "note", "queue", "slow"]
    assert got["tools"][0].output_schema["required"] == ["status"]
    assert got["shipped"].structured_content == {"status": "shipped", "eta_days": 2}
    assert isinstance(got["default"].structured_content["status"], str)
    assert [n.content[0].text for n in got["notes"]] == ["noted: fragile", "noted: rush"]
    assert got["refused"].is_error and got["refused"].content[0].text == "order X9 is not yours"
    assert got["invalid"].is_error
    assert "id\n  Input should be a valid string [type=string_type, input_value=7" in got["invalid"].content[0].text
    assert got["unknown"].content[0].text == "Unknown tool: nope"
    assert got["tickets"] == ["ticket 1", "ticket 2", "queue called with {}"]
    assert got["late"].content[0].text == "finally"
    assert got["broken"].message == "the tool backend is down" and got["broken"].data == {"status": 503}
    assert got["stuck"].code == -32001  # the client's timeout: the step never answers


def test_a_disconnect_step_ends_the_process(script: Path) -> None:
    async def go() -> None:
        async with Client(spawn(script), read_timeout_seconds=5) as c:
            await c.call_tool("slow", {"mode": "cut"})

    with pytest.raises(BaseException) as ended:
        run(go)
    assert "Connection closed" in _all_messages(ended.value)


def test_bad_lines_get_protocol_errors_and_the_process_goes_on(script: Path) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "queue", "arguments": {}}}
    lines = [
        b"[" * 100_000,
        b"{not json",
        json.dumps([dict(call, id=i) for i in range(10_000)]).encode(),
        json.dumps(call).encode(),  # before initialize
        json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}
        ).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        json.dumps(dict(call, id=3)).encode(),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "mockllm", "mcp", "shop", str(script)],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a.get("id") for a in answers] == [None, None, None, 1, 2, 3]
    assert answers[0]["error"]["code"] == answers[1]["error"]["code"] == -32700
    assert answers[2]["error"]["code"] == -32600
    assert answers[3]["error"] == {"code": -32600, "message": "Invalid request: initialize the session first"}
    assert answers[4]["result"]["protocolVersion"] == "2025-11-25"  # an unknown version: the latest
    assert answers[5]["result"]["content"][0]["text"] == "ticket 1"


def test_an_unknown_server_name_is_refused_on_stderr(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mockllm", "mcp", "shp", str(script)], capture_output=True, timeout=WAIT, check=False
    )
    assert done.returncode == 2 and done.stdout == b""
    assert 'no `mcp server "shp"`' in done.stderr.decode() and '"shop"' in done.stderr.decode()


@pytest.fixture(scope="module")
def served(script: Path) -> Iterator[MockServer]:
    with MockServer(load(script).raise_for_errors()) as server:
        yield server


def test_relayed_calls_share_the_servers_conversations_and_journal(served: MockServer) -> None:
    served.reset()
    command = served.mcp_command("shop", conversation="chat-42")
    assert command[-4:] == ["--url", served.url, "--conversation", "chat-42"]

    async def tickets(cmd: list[str]) -> list[str]:
        async with Client(StdioServerParameters(command=cmd[0], args=cmd[1:])) as c:
            return [(await c.call_tool("queue", {})).content[0].text for _ in range(2)]

    async def go() -> tuple[list[str], list[str]]:
        first = await tickets(command)
        second = await tickets(command)  # the same conversation: its steps are used up
        return first, second

    first, second = run(go)
    assert first == ["ticket 1", "ticket 2"]
    assert second == ["queue called with {}", "queue called with {}"]
    entries = [e for e in served.requests() if e.provider == "mcp"]
    assert {e.conversation for e in entries} == {"chat-42"}
    assert [e.step for e in entries] == ["first", "second", None, None]


def test_a_whole_agent_loop_with_a_spawned_tool_server(served: MockServer) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    served.reset()
    command = served.mcp_command("weather", conversation="agent-2")

    async def go() -> Any:
        model_client = AsyncOpenAI(
            base_url=served.openai_base_url, api_key="k", default_headers={"x-mockllm-conversation": "agent-2"}
        )
        tools = MCPServerStdio(params={"command": command[0], "args": command[1:]})
        try:
            async with tools:
                agent = Agent(
                    name="Forecaster",
                    instructions="Answer with the forecast tool.",
                    model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=model_client),
                    mcp_servers=[tools],
                )
                return await Runner.run(agent, "Give me the forecast for Paris")
        finally:
            await model_client.close()

    assert run(go).final_output == "Clear skies in Paris, 21°C."
    steps = [(e.provider, e.conversation, e.step) for e in served.requests()]
    assert steps == [
        ("openai", "agent-2", "model_calls_tool"),
        ("mcp", "agent-2", "paris"),
        ("openai", "agent-2", "model_answers"),
    ]
    assert served.verify().ok


def test_the_pytest_fixture_gives_the_mcp_url_and_the_stdio_command(served: MockServer) -> None:
    # the fixture's handle on a server of this module's own (the session's `mockllm` fixture would
    # filter the server's log for every later test of the session)
    mockllm = MockLLM(served, None, Path.cwd(), "test")
    mockllm.reset()
    url = mockllm.mcp_url("weather")
    command = mockllm.mcp_command("weather")
    assert url == mockllm.url + "/mcp/weather"

    async def go() -> list[Any]:
        out = []
        for server in (url, StdioServerParameters(command=command[0], args=command[1:])):
            async with Client(server) as c:
                out.append((await c.call_tool("get_forecast", {"city": "Paris"})).structured_content)
        return out

    assert run(go) == [{"city": "Paris", "sky": "clear", "high_c": 21}] * 2
    assert [e.step for e in mockllm.requests()] == ["paris", "paris"]
