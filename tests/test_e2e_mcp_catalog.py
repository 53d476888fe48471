"""Resources and prompts of scripted MCP servers (`resource` and `prompt` in an `mcp server` block),
judged by the official `mcp` SDK client over Streamable HTTP and over stdio: the capabilities
`initialize` advertises, `resources/list`/`read` and `prompts/list`/`get`, and the official server's
errors for an unknown resource or prompt and a missing required argument."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from conftest import compile_text
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from test_e2e_mcp import session

from mockllm.server.background import BackgroundServer

T = TypeVar("T")
WAIT = 30.0

LIBRARY = '''\
mcp server "weather":
    tool get_forecast "Forecast for a city":
        input {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    resource "weather://cities" "The cities it knows":
        text """
            Paris
            Rome
            """
    resource "weather://stations.json":
        mime "application/json"
        text "{\\"stations\\": 3}"
    prompt ask_forecast "Ask for a city's forecast":
        argument city "the city"
        argument days "how many days" optional
        user "What's the forecast for {{city}} over {{days}} days?"
        assistant "Checking {{city}}."

mcp server "plain":
    tool ping "Say hello":
        input {"type": "object"}
'''


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), WAIT))


async def everything(c: ClientSession) -> dict[str, Any]:
    """Every resource and prompt request, and the errors of the wrong ones, through one client."""
    out: dict[str, Any] = {
        "resources": (await c.list_resources()).resources,
        "templates": (await c.list_resource_templates()).resource_templates,
        "cities": await c.read_resource("weather://cities"),
        "stations": await c.read_resource("weather://stations.json"),
        "prompts": (await c.list_prompts()).prompts,
        "filled": await c.get_prompt("ask_forecast", {"city": "Paris", "days": "3"}),
        "optional_left_out": await c.get_prompt("ask_forecast", {"city": "Rome"}),
        "tools": [t.name for t in (await c.list_tools()).tools],
    }
    for key, call in (
        ("unknown_resource", c.read_resource("weather://nowhere")),
        ("unknown_prompt", c.get_prompt("nope", {})),
        ("missing_argument", c.get_prompt("ask_forecast", {"days": "2"})),
    ):
        try:
            await call
        except MCPError as exc:
            out[key] = exc
    return out


def check_everything(got: dict[str, Any]) -> None:
    assert got["templates"] == []  # none declared (as the official server lists none)
    listed = {str(r.uri): r for r in got["resources"]}
    assert list(listed) == ["weather://cities", "weather://stations.json"]
    assert listed["weather://cities"].name == "weather://cities"
    assert listed["weather://cities"].description == "The cities it knows"
    assert listed["weather://cities"].mime_type == "text/plain"
    assert listed["weather://stations.json"].mime_type == "application/json"
    (cities,) = got["cities"].contents
    assert cities.text == "Paris\nRome" and str(cities.uri) == "weather://cities"
    (stations,) = got["stations"].contents
    assert stations.text == '{"stations": 3}' and stations.mime_type == "application/json"
    (prompt,) = got["prompts"]
    assert prompt.name == "ask_forecast" and prompt.description == "Ask for a city's forecast"
    assert [(a.name, a.description, a.required) for a in prompt.arguments] == [
        ("city", "the city", True),
        ("days", "how many days", False),
    ]
    filled = got["filled"]
    assert filled.description == "Ask for a city's forecast"
    assert [(m.role, m.content.text) for m in filled.messages] == [
        ("user", "What's the forecast for Paris over 3 days?"),
        ("assistant", "Checking Paris."),
    ]
    assert got["optional_left_out"].messages[0].content.text == "What's the forecast for Rome over  days?"
    assert got["tools"] == ["get_forecast"]
    unknown = got["unknown_resource"]
    assert (unknown.code, unknown.message) == (-32602, "Unknown resource: weather://nowhere")
    assert unknown.data == {"uri": "weather://nowhere"}
    assert (got["unknown_prompt"].code, got["unknown_prompt"].message) == (0, "Unknown prompt: nope")
    missing = got["missing_argument"]
    assert (missing.code, missing.message) == (0, "Missing required arguments: {'city'}")


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(compile_text(LIBRARY)) as running:
        yield running


def test_resources_and_prompts_over_http(server: BackgroundServer) -> None:
    async def go() -> tuple[Any, dict[str, Any]]:
        async with session(server.url + "/mcp/weather") as (s, init):
            return init, await everything(s)

    init, got = run(go)
    assert init.capabilities.resources is not None and init.capabilities.resources.subscribe is False
    assert init.capabilities.prompts is not None and init.capabilities.tools is not None
    check_everything(got)


def test_a_server_without_resources_or_prompts_advertises_and_serves_none(server: BackgroundServer) -> None:
    async def go() -> tuple[Any, list[MCPError]]:
        async with session(server.url + "/mcp/plain") as (s, init):
            errors = []
            calls = (s.list_resources(), s.list_prompts(), s.read_resource("x://y"), s.get_prompt("p", {}))
            for call in (*calls, s.list_resource_templates()):
                try:
                    await call
                except MCPError as exc:
                    errors.append(exc)
            return init, errors

    init, errors = run(go)
    assert init.capabilities.resources is None and init.capabilities.prompts is None
    assert [(e.code, e.message) for e in errors] == [(-32601, "Method not found")] * 5


@pytest.mark.parametrize("source", ["script", "relay"])
def test_resources_and_prompts_over_stdio(source: str, tmp_path: Path, server: BackgroundServer) -> None:
    # the process serving the script itself, and relaying to a running server (`--url`)
    script = tmp_path / "weather.mockllm"
    script.write_text(LIBRARY, encoding="utf-8")
    where = [str(script)] if source == "script" else ["--url", server.url]
    params = StdioServerParameters(command=sys.executable, args=["-m", "mockllm", "mcp", "weather", *where])

    async def go() -> tuple[Any, dict[str, Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            return await s.initialize(), await everything(s)

    init, got = run(go)
    assert init.capabilities.resources is not None and init.capabilities.prompts is not None
    check_everything(got)


def test_malformed_params_get_the_sdks_invalid_params_error(server: BackgroundServer) -> None:
    head = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    url = server.url + "/mcp/weather"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    sid = httpx.post(url, json=init, headers=head).headers["mcp-session-id"]
    bad = [
        ("resources/read", {}),
        ("resources/read", {"uri": 7}),
        ("prompts/get", {}),
        ("prompts/get", {"name": "ask_forecast", "arguments": {"city": 3}}),
        ("prompts/get", {"name": "ask_forecast", "arguments": ["Paris"]}),
    ]
    for i, (method, params) in enumerate(bad, 2):
        reply = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": i, "method": method, "params": params},
            headers={**head, "mcp-session-id": sid},
        )
        assert reply.status_code == 200, (method, params)
        body = reply.json()
        assert body["id"] == i and body["error"] == {
            "code": -32602,
            "message": "Invalid request parameters",
            "data": "",
        }
