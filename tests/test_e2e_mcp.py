"""Scripted MCP tool servers, judged by the official `mcp` SDK client over Streamable HTTP at
`/mcp/NAME` (stdio is in tests/test_e2e_mcp_stdio.py), and by a whole agent loop through the OpenAI
Agents SDK's MCP integration with mockllm as both the model and the tool server."""

from __future__ import annotations

import asyncio
import codecs
import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from conftest import SleepLog, compile_text
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mockllm.server.background import BackgroundServer
from mockllm.server.options import ServerOptions

T = TypeVar("T")
WAIT = 20.0

LIBRARY = """\
mcp server "weather":
    tool get_forecast "Forecast for a city":
        input {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

mcp server "shop":
    tool lookup "Find an order":
        input {"type": "object", "properties": {"id": {"type": "string"}, "count": {"type": "integer"}},
               "required": ["id"]}
        output {"type": "object", "properties": {"status": {"type": "string"}, "eta_days": {"type": "integer"}},
                "required": ["status"]}
    tool note "Write a note":
        input {"type": "object", "properties": {"text": {"type": "string"}}}
    tool queue "Take a ticket":
        input {"type": "object"}
    tool slow "Slow, broken and hanging":
        input {"type": "object", "properties": {"mode": {"type": "string"}}}

scenario "Forecast tool":
    step paris:
        when:
            endpoint is "mcp"
            tool is "get_forecast"
            argument "city" is "Paris"
        always
        reply:
            result {"city": "Paris", "sky": "clear", "high_c": 21}

scenario "Agent checks the forecast":
    step model_calls_tool:
        when:
            last user message contains "forecast"
        reply:
            tool call get_forecast {"city": "Paris"}

    step model_answers:
        when:
            tool result for "get_forecast" contains "clear"
        reply:
            text "Clear skies in Paris, 21°C."

scenario "Shop":
    order any

    step shipped:
        when:
            tool is "lookup"
            argument "id" is "A1"
        always
        reply:
            result {"status": "shipped", "eta_days": 2}

    step noted:
        when:
            tool is "note"
        capture what from argument "text" /^(\\w+)/
        always
        reply:
            result "noted: {{what}}"

    step refused:
        when:
            tool is "lookup"
            argument "id" is "X9"
        always
        reply:
            result error "order X9 is not yours"

scenario "Tickets in order":
    step first:
        when:
            tool is "queue"
        reply:
            result "ticket 1"

    step second:
        when:
            tool is "queue"
        reply:
            result "ticket 2"

scenario "Faults":
    order any

    step late:
        when:
            tool is "slow"
            argument "mode" is "late"
        always
        reply:
            latency 300ms
            result "finally"

    step broken:
        when:
            tool is "slow"
            argument "mode" is "broken"
        always
        reply:
            error 503 "the tool backend is down"

    step stuck:
        when:
            tool is "slow"
            argument "mode" is "stuck"
        always
        reply:
            hang

    step cut:
        when:
            tool is "slow"
            argument "mode" is "cut"
        always
        reply:
            disconnect after 0 chunks
"""

sleeps = SleepLog()


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(compile_text(LIBRARY), options=ServerOptions(sleep=sleeps)) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server: BackgroundServer) -> None:
    httpx.post(server.url + "/_mockllm/reset")


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), WAIT))


@asynccontextmanager
async def session(url: str, headers: dict[str, str] | None = None) -> Any:
    """The SDK's own handshake (`ClientSession.initialize`, as agent frameworks call it)."""
    async with httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(WAIT, read=WAIT)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as s:
                yield s, await s.initialize()


def journal(server: BackgroundServer) -> list[dict[str, Any]]:
    return list(httpx.get(server.url + "/_mockllm/requests").json())


def test_initialize_negotiates_the_clients_version_and_lists_the_declared_tools(server: BackgroundServer) -> None:
    async def go() -> tuple[Any, Any]:
        async with session(server.url + "/mcp/shop") as (s, init):
            return init, await s.list_tools()

    init, listed = run(go)
    assert init.protocol_version == "2025-11-25"
    assert init.server_info.name == "shop"
    assert init.capabilities.tools is not None
    tools = {t.name: t for t in listed.tools}
    assert list(tools) == ["lookup", "note", "queue", "slow"]
    assert tools["lookup"].description == "Find an order"
    assert tools["lookup"].input_schema == {
        "type": "object",
        "properties": {"id": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["id"],
    }
    assert tools["lookup"].output_schema == {
        "type": "object",
        "properties": {"status": {"type": "string"}, "eta_days": {"type": "integer"}},
        "required": ["status"],
    }
    assert tools["note"].output_schema is None


def test_the_auto_client_falls_back_from_discovery_to_the_handshake(server: BackgroundServer) -> None:
    async def go() -> Any:
        async with Client(server.url + "/mcp/weather") as c:
            return await c.call_tool("get_forecast", {"city": "Paris"})

    result = run(go)
    assert result.structured_content == {"city": "Paris", "sky": "clear", "high_c": 21}
    assert json.loads(result.content[0].text) == {"city": "Paris", "sky": "clear", "high_c": 21}
    assert result.is_error is False


def test_text_structured_error_results_and_captures(server: BackgroundServer) -> None:
    async def go() -> list[Any]:
        async with Client(server.url + "/mcp/shop", mode="legacy") as c:
            return [
                await c.call_tool("lookup", {"id": "A1"}),
                await c.call_tool("note", {"text": "pack carefully"}),
                await c.call_tool("note", {"text": "gift wrap"}),
                await c.call_tool("lookup", {"id": "X9"}),
            ]

    shipped, note1, note2, refused = run(go)
    assert shipped.structured_content == {"status": "shipped", "eta_days": 2}
    assert [note1.content[0].text, note2.content[0].text] == ["noted: pack", "noted: gift"]
    assert note1.structured_content is None
    assert refused.is_error is True and refused.content[0].text == "order X9 is not yours"


def test_a_call_no_step_answers_gets_a_default_that_fits_the_output_schema(server: BackgroundServer) -> None:
    async def go() -> list[Any]:
        async with Client(server.url + "/mcp/shop", mode="legacy") as c:
            # the client validates structured content against the output schema: a misfit would raise
            return [await c.call_tool("lookup", {"id": "Z1", "count": 3}), await c.call_tool("note", {"text": "x"})]

    unscripted, _ = run(go)
    assert isinstance(unscripted.structured_content["status"], str)
    assert unscripted.is_error is False

    async def weather() -> Any:
        async with Client(server.url + "/mcp/weather", mode="legacy") as c:
            return await c.call_tool("get_forecast", {"city": "Rome"})

    assert run(weather).content[0].text == 'get_forecast called with {"city": "Rome"}'


def test_arguments_that_miss_the_schema_and_unknown_tools_get_the_official_servers_results(
    server: BackgroundServer,
) -> None:
    async def go() -> list[Any]:
        async with Client(server.url + "/mcp/shop", mode="legacy") as c:
            return [await c.call_tool("lookup", {"count": "two"}), await c.call_tool("nope", {})]

    invalid, unknown = run(go)
    assert invalid.is_error is True
    text = invalid.content[0].text
    assert text.startswith("Error executing tool lookup: 2 validation errors for lookupArguments\n")
    assert "id\n  Field required [type=missing" in text
    assert "count\n  Input should be a valid integer [type=int_type, input_value='two', input_type=str]" in text
    assert unknown.is_error is True and unknown.content[0].text == "Unknown tool: nope"
    verify = httpx.get(server.url + "/_mockllm/verify").json()
    assert [r["rejected"] for r in verify["rejected"]] == [text, "Unknown tool: nope"]
    assert len({r["conversation"] for r in verify["rejected"]}) == 1  # the session's own conversation
    assert verify["rejected"][0]["conversation"].startswith("mcp-")


def test_steps_run_in_order_per_session_and_sessions_do_not_share_state(server: BackgroundServer) -> None:
    async def tickets() -> list[str]:
        async with Client(server.url + "/mcp/shop", mode="legacy") as c:
            return [(await c.call_tool("queue", {})).content[0].text for _ in range(3)]

    async def go() -> list[list[str]]:
        return list(await asyncio.gather(*(tickets() for _ in range(4))))

    for got in run(go):  # each session is its own conversation: ticket 1, ticket 2, then the default
        assert got == ["ticket 1", "ticket 2", "queue called with {}"]


def test_latency_errors_hangs_and_cut_connections(server: BackgroundServer) -> None:
    async def go() -> tuple[Any, BaseException | None, BaseException | None]:
        async with Client(server.url + "/mcp/shop", mode="legacy", read_timeout_seconds=WAIT) as c:
            late = await c.call_tool("slow", {"mode": "late"})
            failures: list[BaseException | None] = []
            for mode in ("broken", "stuck"):
                try:  # the client gives a call that never answers one second
                    await c.call_tool("slow", {"mode": mode}, read_timeout_seconds=1.0)
                    failures.append(None)
                except Exception as exc:
                    failures.append(exc)
            return late, failures[0], failures[1]

    sleeps.delays.clear()
    late, broken, stuck = run(go)
    assert late.content[0].text == "finally" and 0.3 in sleeps.delays
    assert isinstance(broken, MCPError) and broken.message == "the tool backend is down"
    assert broken.code == -32603 and broken.data == {"status": 503}
    assert isinstance(stuck, MCPError) and stuck.code == -32001  # REQUEST_TIMEOUT: the step never answers

    async def cut() -> None:  # the connection drops mid-answer: the client's session ends with it
        async with Client(server.url + "/mcp/shop", mode="legacy") as c:
            await c.call_tool("slow", {"mode": "cut"})

    with pytest.raises(BaseException) as dropped:
        run(cut)
    assert "peer closed connection without sending complete message body" in _all_messages(dropped.value)
    entries = {e["matched"]["step"]: e for e in journal(server) if e["provider"] == "mcp"}
    assert entries["late"]["status"] == 200
    assert entries["broken"]["status"] == 503
    assert entries["cut"]["note"] == "disconnect mid-body"


def _all_messages(exc: BaseException) -> str:
    """The messages of an exception and of every exception grouped in it."""
    inner = getattr(exc, "exceptions", ())
    return " | ".join([str(exc), *(_all_messages(e) for e in inner)])


def test_the_chats_conversation_header_ties_tool_calls_to_the_chat(
    server: BackgroundServer, request: pytest.FixtureRequest
) -> None:
    from openai import OpenAI

    headers = {"x-mockllm-conversation": "trip-7"}
    chat = OpenAI(base_url=server.url + "/v1", api_key="k", default_headers=headers)
    request.addfinalizer(chat.close)
    first = chat.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "What's the forecast in Paris?"}]
    )
    call = first.choices[0].message.tool_calls[0]

    async def tool() -> Any:
        async with session(server.url + "/mcp/weather", headers) as (s, _):
            return await s.call_tool(call.function.name, json.loads(call.function.arguments))

    result = run(tool)
    second = chat.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "user", "content": "What's the forecast in Paris?"},
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": result.content[0].text},
        ],
    )
    assert second.choices[0].message.content == "Clear skies in Paris, 21°C."
    mcp_entries = [e for e in journal(server) if e["provider"] == "mcp"]
    assert [(e["conversation"], e["matched"]["scenario"], e["matched"]["step"]) for e in mcp_entries] == [
        ("trip-7", "Forecast tool", "paris")
    ]
    conversations = httpx.get(server.url + "/_mockllm/conversations").json()
    (trip,) = [c for c in conversations if c["conversation"] == "trip-7"]
    assert {m["scenario"] for m in trip["machines"]} == {"Forecast tool", "Agent checks the forecast"}


def post(server: BackgroundServer, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    head = {"accept": "application/json, text/event-stream", "content-type": "application/json", **(headers or {})}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(server.url + "/mcp/shop", content=content, headers=head, timeout=WAIT)


def initialized(server: BackgroundServer) -> str:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    reply = post(server, init)
    assert reply.json()["result"]["protocolVersion"] == "2025-06-18"  # a known version is echoed
    return reply.headers["mcp-session-id"]


def test_bad_input_gets_protocol_errors_and_never_stalls(server: BackgroundServer) -> None:
    parse = post(server, b"{not json")
    assert parse.status_code == 400 and parse.json()["error"]["code"] == -32700
    deep = post(server, b"[" * 100_000)
    assert deep.status_code == 400 and deep.json()["error"]["code"] == -32700
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "queue", "arguments": {}}}
    missing = post(server, call)
    assert missing.status_code == 400
    assert missing.json()["error"] == {"code": -32600, "message": "Bad Request: Missing session ID"}
    sid = initialized(server)
    batch = post(server, [dict(call, id=i) for i in range(10_000)], {"mcp-session-id": sid})
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    unknown = post(server, {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, {"mcp-session-id": sid})
    assert unknown.json()["error"] == {"code": -32601, "message": "Method not found", "data": "resources/list"}
    bad_params = post(
        server, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}}, {"mcp-session-id": sid}
    )
    assert bad_params.json()["error"]["code"] == -32602
    notified = post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"mcp-session-id": sid})
    assert notified.status_code == 202 and notified.content == b""
    refused = httpx.post(server.url + "/mcp/shop", json=call, headers={"accept": "application/json"})
    assert refused.status_code == 406
    ended = httpx.delete(server.url + "/mcp/shop", headers={"mcp-session-id": sid})
    assert ended.status_code == 200
    dropped = post(server, call, {"mcp-session-id": sid})
    assert dropped.status_code == 404 and dropped.json()["error"]["message"] == "Session not found"
    assert httpx.put(server.url + "/mcp/shop", json=call).status_code == 405
    nowhere = httpx.post(server.url + "/mcp/nowhere", json=call)
    assert nowhere.status_code == 404 and '"shop"' in nowhere.json()["error"]["message"]
    assert post(server, {"jsonrpc": "2.0", "id": 5, "method": "ping"}).status_code == 400  # no session: refused
    fresh_sid = initialized(server)
    ping = post(server, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, {"mcp-session-id": fresh_sid})
    assert ping.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}


def test_a_body_is_read_as_json_loads_reads_it(server: BackgroundServer) -> None:
    """The endpoint reads a body that opens with ``{`` itself (server/mcp/http.py ``_loads``): every body
    gets what ``json.loads`` makes of it, its value or its error, word for word."""
    sid = initialized(server)
    ping = {"jsonrpc": "2.0", "id": 6, "method": "ping"}
    text = json.dumps(ping)
    for body in [
        text.encode() + b"\n",
        b" " + text.encode(),
        codecs.BOM_UTF8 + text.encode(),
        text.encode("utf-16-le"),
        json.dumps({**ping, "id": "\u00e9"}, ensure_ascii=False).encode(),
    ]:
        answer = post(server, body, {"mcp-session-id": sid}).json()
        assert answer["result"] == {} and answer["id"] in (6, "\u00e9"), body
    for bad in [b"{", b'{"jsonrpc": "2.0"} x', b'{"a": "\xff"}', b"{\x00}", b'{"a": [' + b"1," * 10 + b"}", b"{}{}"]:
        try:
            json.loads(bad)
        except ValueError as exc:
            expected = f"Parse error: {exc}"
        answer = post(server, bad, {"mcp-session-id": sid})
        assert answer.status_code == 400 and answer.json()["error"] == {"code": -32700, "message": expected}, bad


def test_a_whole_agent_loop_through_the_openai_agents_sdk(server: BackgroundServer) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStreamableHttp
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    headers = {"x-mockllm-conversation": "agent-run-1"}

    async def go() -> Any:
        model_client = AsyncOpenAI(base_url=server.url + "/v1", api_key="k", default_headers=headers)
        tools = MCPServerStreamableHttp(params={"url": server.url + "/mcp/weather", "headers": headers})
        async with tools:
            agent = Agent(
                name="Forecaster",
                instructions="Answer with the forecast tool.",
                model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=model_client),
                mcp_servers=[tools],
            )
            try:
                return await Runner.run(agent, "What's the forecast for Paris?")
            finally:
                await model_client.close()

    result = run(go)
    assert result.final_output == "Clear skies in Paris, 21°C."
    steps = [(e["provider"], e["matched"]["step"]) for e in journal(server)]
    assert steps == [("openai", "model_calls_tool"), ("mcp", "paris"), ("openai", "model_answers")]
    assert httpx.get(server.url + "/_mockllm/verify").json()["ok"] is True


def test_a_hang_ends_at_the_servers_hang_limit_with_an_error(serve: Any) -> None:
    with serve(LIBRARY, hang_limit_s=0.2) as running:

        async def go() -> BaseException | None:
            async with Client(running.url + "/mcp/shop", mode="legacy", read_timeout_seconds=WAIT) as c:
                try:
                    await c.call_tool("slow", {"mode": "stuck"})
                except MCPError as exc:
                    return exc
            return None

        ended = run(go)
        assert isinstance(ended, MCPError)
        assert ended.message == "mockllm: hang: held for the server's hang limit of 0.2s"
        (entry,) = [e for e in journal(running) if e["provider"] == "mcp"]
        assert entry["status"] == 504 and entry["note"] == "hang: held for the server's hang limit of 0.2s"
