"""`--server uvicorn` runs Uvicorn's protocol made cheaper per request (server/hosts/uvicorn_protocol.py):
each response's head and body in one write, mockllm's own leaner request cycle, and the head written
with its headers checked once per response instead of twice per header.

Uvicorn writes a response's status line and headers as soon as the app starts the response and the
body in a second write. The transport mockllm gives Uvicorn's protocol holds a write until the next
one or the end of the event loop's turn. These tests run the real Uvicorn protocol on a real socket
and count what reaches the socket: the transport under the joined one is wrapped to record its
writes, and passes each on. The lean request cycle (server/hosts/uvicorn_cycle.py) is compared with
Uvicorn's own: its head byte for byte and state for state for the same response start, and, over
real sockets, what the app receives and the client reads for the same raw requests."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import pytest

uvicorn = pytest.importorskip("uvicorn", reason="the `fast` extra (uvicorn) is part of the dev install")
pytest.importorskip("httptools", reason="the `fast` extra (httptools) is part of the dev install")

from sdk_clients import opened  # noqa: E402

from mockllm.server.hosts.uvicorn_cycle import LeanCycle  # noqa: E402
from mockllm.server.hosts.uvicorn_protocol import LEAN_CYCLE, JoinedWrites  # noqa: E402


class Recorded:
    """The socket's transport, its writes recorded and passed on."""

    def __init__(self, transport: Any, writes: list[bytes]) -> None:
        self._transport = transport
        self.writes = writes

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


CYCLES: list[type[Any]] = []  # the class of each request's cycle as it started, in _serve_and_ask


async def _serve_and_ask(requests: list[bytes], half_close: bool = False) -> tuple[list[bytes], bytes]:
    """Serve a mockllm app on Uvicorn with the joined protocol, send ``requests`` on one keep-alive
    connection one after another, and return the socket writes and everything the client read. With
    ``half_close``: send the one request, shut the client's side for writing, read until the server
    closes."""
    from mockllm.dsl.machines.compiler import compile_library
    from mockllm.dsl.parse.loader import load_text
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.hosts.uvicorn_protocol import uvicorn_protocol
    from mockllm.server.http.app import create_app

    script = (
        'scenario "s":\n    step a:\n        reply:\n            text "joined"\n            stream 3 chunks\n'
        "        always\n"
    )
    library, diagnostics = compile_library(load_text(script, file="joined.mockllm"))
    assert library is not None, diagnostics
    writes: list[bytes] = []
    base = uvicorn_protocol()

    class Recording(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(Recorded(transport, writes))

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            super()._start_asgi_task(cycle, app)
            CYCLES.append(type(cycle))

    config = uvicorn.Config(create_app(Engine(library)), http=Recording, lifespan="off", log_level="warning")
    config.load()
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    received = b""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if half_close:
            writer.write(b"".join(requests))
            writer.write_eof()
            while chunk := await asyncio.wait_for(reader.read(65536), 10):
                received += chunk
            requests = []
        for request in requests:
            writer.write(request)
            await writer.drain()
            expected = len(writes) + 1  # one write per answer
            while len(writes) < expected or not received.endswith(writes[-1]):
                received += await asyncio.wait_for(reader.read(65536), 10)
        writer.close()
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)
    return writes, received


def _post(body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer sk-test\r\n"
        b"content-type: application/json\r\ncontent-length: " + str(len(data)).encode() + b"\r\n\r\n" + data
    )


def test_each_answer_head_and_body_is_one_socket_write_over_a_real_uvicorn() -> None:
    message = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    writes, received = asyncio.run(_serve_and_ask([_post(message), _post({**message, "stream": True})]))
    assert len(writes) == 2, [w[:40] for w in writes]  # Uvicorn alone writes each head and body apart: 4
    whole, streamed = writes
    assert whole.startswith(b"HTTP/1.1 200 OK\r\n") and b'"content":"joined"' in whole
    assert streamed.startswith(b"HTTP/1.1 200 OK\r\n") and b"data: [DONE]" in streamed
    assert received == whole + streamed


def test_an_answer_to_a_client_that_half_closed_still_goes_out_whole() -> None:
    """A client that sends its request and shuts its side: the loop closes the connection when it reads
    the end of the input -- the held write (here a HEAD answer, all head) must go out before."""
    head = b"HEAD /v1/models HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer sk-test\r\n\r\n"
    writes, received = asyncio.run(_serve_and_ask([head], half_close=True))
    assert received.startswith(b"HTTP/1.1 200 OK\r\n") and received.endswith(b"\r\n\r\n")
    assert writes == [received]


class Transport:
    """What a transport does with writes, for the unit tests below: it keeps them."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def test_a_write_alone_goes_out_at_the_end_of_the_turn_and_close_sends_what_is_held() -> None:
    async def run() -> tuple[list[bytes], list[bytes], list[bytes], bool, str, int]:
        loop = asyncio.get_running_loop()
        inner = Transport()
        joined = JoinedWrites(inner, loop)  # type: ignore[arg-type]
        joined.write(b"head")
        held = list(inner.writes)
        size = joined.get_write_buffer_size()
        await asyncio.sleep(0)  # the end of the turn
        alone = list(inner.writes)
        joined.write(b"last")
        joined.close()  # before the turn ends: what is held goes first
        return held, alone, inner.writes, inner.closed, joined.get_extra_info("peername"), size

    held, alone, writes, closed, info, size = asyncio.run(run())
    assert held == [] and size == 4
    assert alone == [b"head"]
    assert writes == [b"head", b"last"] and closed
    assert info == "info:peername"  # everything else is the transport's


def test_an_abort_drops_what_is_held() -> None:
    async def run() -> list[bytes]:
        inner = Transport()
        joined = JoinedWrites(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
        joined.write(b"head")
        joined.abort()
        await asyncio.sleep(0)
        return inner.writes

    assert asyncio.run(run()) == []


def test_the_openai_sdk_reads_whole_and_streamed_answers_from_mockllm_serve_on_uvicorn(tmp_path: Any) -> None:
    """What a user meets: `mockllm serve --server uvicorn` and the official OpenAI SDK, its stream
    helper included, over a keep-alive connection: every answer arrives whole, twice over (the second
    time from the plan's kept bytes)."""
    import openai
    from reliability import serve_process

    script = tmp_path / "joined.mockllm"
    script.write_text(
        'scenario "s":\n    step a:\n        reply:\n            text "one two three"\n'
        "            stream 3 chunks\n        always\n"
    )
    with serve_process(str(script), "--server", "uvicorn") as (_proc, url, _port):
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0))
        messages: Any = [{"role": "user", "content": "hi"}]
        for _ in range(2):
            whole = client.chat.completions.create(model="gpt-4o", messages=messages)
            assert whole.choices[0].message.content == "one two three"
            assert whole.id.startswith("chatcmpl-") and len(whole.id) == len("chatcmpl-") + 29
            pieces = [
                chunk.choices[0].delta.content or ""
                for chunk in client.chat.completions.create(model="gpt-4o", messages=messages, stream=True)
                if chunk.choices
            ]
            assert "".join(pieces) == "one two three" and len([p for p in pieces if p]) == 3
            with client.chat.completions.stream(model="gpt-4o", messages=messages) as stream:
                final = stream.get_final_completion()
            assert final.choices[0].message.content == "one two three"
        # Uvicorn runs without its proxy-header middleware: the admin API itself refuses a relayed request
        admin = httpx.get(url + "/_mockllm/health")
        relayed = httpx.get(url + "/_mockllm/health", headers={"x-forwarded-for": "203.0.113.5"})
    assert admin.status_code == 200
    assert relayed.status_code == 403
    assert "203.0.113.5, relayed by a proxy on this machine" in relayed.json()["error"]


# ------------------------------------------------------------------------------------------------
# The lean head: the same bytes and the same cycle state as Uvicorn's own code


class _Socketless:
    """A transport that keeps what is written (the cycle under test writes its head here)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


_DEFAULT_HEADERS = [(b"date", b"Fri, 27 Nov 2026 07:00:00 GMT"), (b"server", b"uvicorn")]


def _protocol_for(transport: _Socketless, defaults: list[tuple[bytes, bytes]], access_log: bool = False) -> Any:
    """What a protocol gives the :class:`LeanCycle` it makes, and no more: its transport, flow control,
    loggers and Uvicorn's own headers (``server_state.default_headers``)."""
    import logging
    from types import SimpleNamespace

    from uvicorn.protocols.http.flow_control import FlowControl

    return SimpleNamespace(
        transport=transport,
        flow=FlowControl(transport),
        server_state=SimpleNamespace(default_headers=list(defaults)),
        logger=logging.getLogger("test"),
        access_logger=logging.getLogger("test.access"),
        access_log=access_log,
    )


def _start(
    cycle_class: type[Any],
    headers: list[tuple[Any, Any]],
    status: int,
    method: str,
    keep_alive: bool,
    *,
    defaults: list[tuple[bytes, bytes]] = _DEFAULT_HEADERS,
    access_log: bool = False,
    disconnected: bool = False,
) -> tuple[Any, ...]:
    """The head a cycle of ``cycle_class`` writes for one response start, and its state afterwards
    (or the error it raised). ``defaults``: Uvicorn's own headers (date, server, configured ones)."""
    import logging

    from uvicorn.protocols.http.flow_control import FlowControl

    transport = _Socketless()
    scope = {
        "type": "http",
        "method": method,
        "http_version": "1.1",
        "path": "/v1/chat/completions",
        "query_string": b"",
        "client": ("127.0.0.1", 50000),
    }
    if cycle_class is LeanCycle:  # made by its protocol: what the protocol gives it, and no more
        cycle = LeanCycle(_protocol_for(transport, defaults, access_log), scope, keep_alive, True)
    else:
        cycle = cycle_class(
            scope=scope,
            transport=transport,
            flow=FlowControl(transport),
            logger=logging.getLogger("test"),
            access_logger=logging.getLogger("test.access"),
            access_log=access_log,
            default_headers=list(defaults),
            message_event=asyncio.Event(),
            expect_100_continue=True,
            keep_alive=keep_alive,
            on_response=lambda: None,
        )
    cycle.disconnected = disconnected
    try:
        asyncio.run(cycle.send({"type": "http.response.start", "status": status, "headers": headers}))
    except RuntimeError as exc:
        return ("raised", str(exc))
    state = (cycle.keep_alive, cycle.chunked_encoding, cycle.expected_content_length)
    return (transport.writes, state, cycle.response_started, cycle.waiting_for_100_continue)


_MOCKLLM_HEAD = [
    (b"content-type", b"application/json"),
    (b"x-request-id", b"req_4c81602c699825ea64cc6fa41fa19731"),
    (b"openai-processing-ms", b"0"),
    (b"x-mockllm-step", b"bench chat/answer"),
    (b"content-length", b"685"),
]


@pytest.mark.parametrize(
    ("headers", "status", "method", "keep_alive"),
    [
        (_MOCKLLM_HEAD, 200, "POST", True),  # a whole answer
        (_MOCKLLM_HEAD[:4], 200, "POST", True),  # a stream: no length, so chunked
        (_MOCKLLM_HEAD[:4], 200, "HEAD", True),  # HEAD: no chunked framing
        ([(b"x-a", b"1")], 204, "POST", True),
        ([(b"x-a", b"1")], 304, "GET", True),
        (_MOCKLLM_HEAD, 200, "POST", False),  # HTTP/1.0 or `connection: close` asked: said once
        ([(b"Content-Type", b"text/plain"), (b"X-Mixed-Case", b"Kept As Given")], 404, "GET", True),
        ([(b"Transfer-Encoding", b"Chunked"), (b"content-length", b"5")], 200, "POST", True),
        ([(b"content-length", b"5"), (b"content-length", b"7")], 200, "POST", True),  # the first counts
        ([(b"transfer-encoding", b"gzip")], 200, "POST", True),
        ([(b"connection", b"keep-alive, Close"), (b"content-length", b"0")], 503, "POST", True),
        ([(b"connection", b"close")], 408, "POST", False),
        ([(b"connection", b"upgrade")], 200, "POST", True),
        ([(bytearray(b"x-from-bytearray"), b"v")], 200, "POST", True),
        ([], 500, "POST", True),
        ([(b"bad name", b"v")], 200, "POST", True),  # refused: not a token
        ([(b"x-a", b"fine"), (b"x-b", b"split\r\nx-injected: 1")], 200, "POST", True),  # refused: CR LF
        ([(b"x-a", b"nul\x00")], 200, "POST", True),
        ([(b"x-a", b"tab\tis allowed")], 200, "POST", True),
        ([(b"content-length", b"1\x00")], 200, "POST", True),  # refused as a value, before it is read
        ([(b"x-a", b"nul\x00"), (b"bad name", b"v")], 200, "POST", True),  # the first problem is said
        ([(b"bad name", b"v"), (b"x-a", b"nul\x00")], 200, "POST", True),
        # values checked once each: before a special header's, after the last one, between two
        ([(b"x-a", b"del\x7f"), (b"content-length", b"5")], 200, "POST", True),
        ([(b"content-length", b"5"), (b"x-a", b"soh\x01")], 200, "POST", True),
        ([(b"content-length", b"5"), (b"x-a", b"nul\x00"), (b"connection", b"close")], 200, "POST", True),
        ([(b"content-length", b"5"), (b"x-a", b"fine"), (b"connection", b"close"), (b"x-b", b"ok")], 200, "POST", True),
    ],
)
def test_the_lean_head_is_uvicorns_head(
    headers: list[tuple[Any, Any]], status: int, method: str, keep_alive: bool
) -> None:
    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

    stock = _start(RequestResponseCycle, headers, status, method, keep_alive)
    lean = _start(LeanCycle, headers, status, method, keep_alive)
    assert lean == stock
    assert lean[0] == "raised" or lean[0][0].endswith(b"\r\n\r\n")


def test_the_lean_head_remembers_valid_names_only() -> None:
    from mockllm.server.hosts import uvicorn_cycle

    _start(LeanCycle, [(b"X-Remembered", b"1"), (b"bad name", b"2")], 200, "POST", True)
    assert uvicorn_cycle._NAMES[b"X-Remembered"] == b"x-remembered"
    assert b"bad name" not in uvicorn_cycle._NAMES
    again = _start(LeanCycle, [(b"bad name", b"2")], 200, "POST", True)
    assert again == ("raised", "Invalid HTTP header name.")


@pytest.mark.parametrize(
    ("defaults", "headers"),
    [
        ([*_DEFAULT_HEADERS, (b"X-Configured", b"yes")], [(b"content-length", b"0")]),
        ([(b"connection", b"close")], [(b"content-length", b"0")]),  # `--header connection:close`
        ([(b"content-length", b"3")], []),
        ([(b"bad name", b"v")], []),
    ],
)
def test_the_lean_head_reads_uvicorns_own_headers_as_uvicorn_does(
    defaults: list[tuple[bytes, bytes]], headers: list[tuple[bytes, bytes]]
) -> None:
    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

    stock = _start(RequestResponseCycle, headers, 200, "POST", True, defaults=defaults)
    assert _start(LeanCycle, headers, 200, "POST", True, defaults=defaults) == stock


@pytest.mark.parametrize("case", ["access log", "disconnected"])
def test_the_lean_head_logs_and_skips_as_uvicorn_does(case: str, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

    flags = {"access_log": case == "access log", "disconnected": case == "disconnected"}
    headers = _MOCKLLM_HEAD
    logged: list[list[str]] = []
    results = []
    for cycle_class in (RequestResponseCycle, LeanCycle):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="test.access"):
            results.append(_start(cycle_class, headers, 200, "POST", True, **flags))
        logged.append([r.getMessage() for r in caplog.records if r.name == "test.access"])
    stock, lean = results
    assert lean == stock
    assert stock[0] == ([] if case == "disconnected" else stock[0])
    assert logged[1] == logged[0]  # the access log line, word for word
    assert logged[0] == (['127.0.0.1:50000 - "POST /v1/chat/completions HTTP/1.1" 200'] if case == "access log" else [])


def test_the_lean_head_serves_only_on_the_uvicorn_it_was_checked_against() -> None:
    from mockllm.server.hosts import uvicorn_protocol

    assert LEAN_CYCLE == (uvicorn.__version__ == "0.54.0")  # (another Uvicorn: its own cycle, below)
    assert uvicorn_protocol._digest(uvicorn_protocol.RequestResponseCycle.send) is not None
    CYCLES.clear()
    message = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    asyncio.run(_serve_and_ask([_post(message), _post(message)]))
    assert CYCLES and set(CYCLES) == ({LeanCycle} if LEAN_CYCLE else {uvicorn_protocol.RequestResponseCycle})


def test_a_served_answer_has_uvicorns_head_with_its_date_and_server() -> None:
    message = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    writes, _received = asyncio.run(_serve_and_ask([_post(message)]))
    head = writes[0].split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    names = [line.split(b": ", 1)[0] for line in head[1:]]
    assert head[0] == b"HTTP/1.1 200 OK"
    assert names[:3] == [b"date", b"server", b"content-type"] and b"content-length" in names
    assert all(name == name.lower() for name in names)


def test_the_lean_head_refuses_exactly_the_header_value_bytes_uvicorn_refuses() -> None:
    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

    refused = []
    for byte in range(256):
        headers = [(b"x-a", b"fine"), (b"x-b", b"before" + bytes([byte]) + b"after")]
        stock = _start(RequestResponseCycle, headers, 200, "POST", True)
        assert _start(LeanCycle, headers, 200, "POST", True) == stock, byte
        if stock[0] == "raised":
            refused.append(byte)
    assert refused == [*range(0x09), *range(0x0A, 0x20), 0x7F]  # control characters but tab


# ------------------------------------------------------------------------------------------------
# One keep-alive timer per connection: busy connections stay, idle ones close, as on Uvicorn


async def _keep_alive_session(timeout_s: float, requests: int, gap_s: float) -> tuple[int, int, bool]:
    """Serve mockllm on Uvicorn (this module's protocol) with keep-alive ``timeout_s``; on one
    connection send ``requests`` requests ``gap_s`` apart, then wait for the server to close it.
    Returns the answers read, the timers the server's loop armed meanwhile, and whether it closed."""
    from mockllm.dsl.machines.compiler import compile_library
    from mockllm.dsl.parse.loader import load_text
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.hosts.uvicorn_protocol import uvicorn_protocol
    from mockllm.server.http.app import create_app

    script = 'scenario "s":\n    step a:\n        reply:\n            text "kept"\n        always\n'
    library, diagnostics = compile_library(load_text(script, file="kept.mockllm"))
    assert library is not None, diagnostics
    config = uvicorn.Config(
        create_app(Engine(library)), http=uvicorn_protocol(), lifespan="off", log_level="warning",
        timeout_keep_alive=timeout_s,
    )  # fmt: skip
    config.load()
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    loop = asyncio.get_running_loop()
    armed = 0
    call_later = loop.call_later

    def counting_call_later(delay: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        nonlocal armed
        if getattr(callback, "__name__", "") in ("_idle_check", "timeout_keep_alive_handler"):
            armed += 1
        return call_later(delay, callback, *args)

    loop.call_later = counting_call_later  # type: ignore[method-assign]  # counted, then Uvicorn's own
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    answers = 0
    closed = False
    try:
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        message = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        for _ in range(requests):
            writer.write(_post(message))
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
            body = await asyncio.wait_for(reader.readexactly(length), 10)
            answers += b'"kept"' in body
            await asyncio.sleep(gap_s)
        closed = await asyncio.wait_for(reader.read(1), timeout_s * 10 + 5) == b""
        writer.close()
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)
    return answers, armed, closed


def test_a_busy_keep_alive_connection_stays_open_and_an_idle_one_is_closed() -> None:
    from mockllm.server.hosts.uvicorn_protocol import ONE_IDLE_TIMER

    assert ONE_IDLE_TIMER == (uvicorn.__version__ == "0.54.0")
    # 12 requests 0.25 s apart: 3 s of use on one connection with a 1 s keep-alive timeout
    answers, armed, closed = asyncio.run(_keep_alive_session(1.0, 12, 0.25))
    assert answers == 12  # every answer on the one connection: never closed while in use
    assert closed  # then idle past the timeout: closed by the server
    if ONE_IDLE_TIMER:
        assert armed <= 6, armed  # once, re-armed only when it fired early (Uvicorn's own: once per response)
    else:
        assert armed == 12


# ------------------------------------------------------------------------------------------------
# The lean request cycle: the app sees what it sees on Uvicorn's own protocol, the client reads the same


def _seeing_app(seen: list[Any]) -> Any:
    """An ASGI app that records its scope (all but what differs per connection) and every message it
    receives up to the end of the body, answers with the body it read, then -- for ``/wait`` --
    waits for the next message (the client going away) and records that too."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        kept = {k: v for k, v in scope.items() if k not in ("client", "server", "state")}
        messages = []
        body = b""
        while True:
            message = await receive()
            messages.append(message["type"])
            body += message.get("body", b"")
            if not message.get("more_body", False) or len(messages) > 100:  # (a cycle that never waits)
                break
        seen.append((kept, messages[-1], body))
        if scope["path"] == "/wait":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1")]})
            await send({"type": "http.response.body", "body": b"first", "more_body": True})
            seen.append(await receive())  # the client hangs up after reading the first chunk
            return
        answer = b"read " + body
        headers = [(b"content-length", str(len(answer)).encode()), (b"x-path", scope["raw_path"])]
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    return app


async def _exchange(protocol: Any, pieces: list[bytes], *, until: bytes, hang_up: bool = False) -> tuple[Any, bytes]:
    """Serve :func:`_seeing_app` with ``protocol``, write ``pieces`` on one connection (20 ms apart, so
    a body arrives in parts), read until the answer ends with ``until``; with ``hang_up``, close the
    connection after reading ``until`` and wait for the app to notice. Returns what the app saw and
    what the client read, without its ``date`` line."""
    seen: list[Any] = []
    config = uvicorn.Config(
        _seeing_app(seen), http=protocol, lifespan="off", log_level="warning", timeout_graceful_shutdown=2
    )  # (an app left waiting is cancelled: a broken cycle fails the test instead of hanging it)
    config.load()
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    received = b""
    try:
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.02)
        while not received.endswith(until):
            chunk = await asyncio.wait_for(reader.read(65536), 10)
            if not chunk:
                break
            received += chunk
        writer.close()
        if hang_up:
            for _ in range(500):
                if len(seen) == 2:
                    break
                await asyncio.sleep(0.01)
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)
    lines = [line for line in received.split(b"\r\n") if not line.startswith(b"date: ")]
    return seen, b"\r\n".join(lines)


_BODY = b'{"model": "m"}'
_READ = b"read " + _BODY  # the end of the answer to a request with _BODY
_EXCHANGES: dict[str, tuple[list[bytes], bytes]] = {  # what the client writes, and how its answer ends
    "a query and an escaped path": (
        [b"POST /v1/a%20b?x=1&y=%20 HTTP/1.1\r\nhost: h\r\ncontent-length: 14\r\n\r\n" + _BODY],
        _READ,
    ),
    "a body in three parts": (
        [b"POST /v1/chat HTTP/1.1\r\nhost: h\r\ncontent-length: 14\r\n\r\n", _BODY[:5], _BODY[5:]],
        _READ,
    ),
    "a chunked body": (
        [
            b"POST /v1/chat HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n5\r\n" + _BODY[:5] + b"\r\n",
            b"9\r\n" + _BODY[5:] + b"\r\n0\r\n\r\n",
        ],
        _READ,
    ),
    "HTTP/1.0": ([b"GET /old?q HTTP/1.0\r\nhost: h\r\n\r\n"], b"read "),
    "an absolute target": ([b"GET http://example.com/p/q?r=1 HTTP/1.1\r\nhost: example.com\r\n\r\n"], b"read "),
    "a fragment": ([b"GET /p#frag HTTP/1.1\r\nhost: h\r\n\r\n"], b"read "),
    "two requests pipelined": (
        [
            b"POST /one HTTP/1.1\r\nhost: h\r\ncontent-length: 1\r\n\r\n1"
            b"POST /two HTTP/1.1\r\nhost: h\r\ncontent-length: 1\r\n\r\n2"
        ],
        b"read 2",
    ),
    "a target of 64 KiB": (  # refused by both
        [b"GET /" + b"a" * 65535 + b" HTTP/1.1\r\nhost: h\r\n\r\n"],
        b"Invalid HTTP request received.",
    ),
    "expect 100-continue": (
        [b"POST /v1/chat HTTP/1.1\r\nhost: h\r\nexpect: 100-continue\r\ncontent-length: 14\r\n\r\n", _BODY],
        _READ,
    ),
}


@pytest.mark.parametrize("case", list(_EXCHANGES))
def test_the_lean_cycle_gives_the_app_and_the_client_what_uvicorn_gives(case: str) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from mockllm.server.hosts.uvicorn_protocol import uvicorn_protocol

    pieces, until = _EXCHANGES[case]
    stock = asyncio.run(_exchange(HttpToolsProtocol, pieces, until=until))
    lean = asyncio.run(_exchange(uvicorn_protocol(), pieces, until=until))
    assert lean == stock
    seen, received = lean
    assert received.startswith(b"HTTP/1.1 "), received  # (both answered: not a shared failure)
    assert seen or b"400 Bad Request" in received
    if "100-continue" in case:
        assert received.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created")


def test_the_lean_cycle_tells_the_app_when_the_client_hangs_up_as_uvicorn_does() -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from mockllm.server.hosts.uvicorn_protocol import uvicorn_protocol

    pieces = [b"POST /wait HTTP/1.1\r\nhost: h\r\ncontent-length: 2\r\n\r\nhi"]
    stock = asyncio.run(_exchange(HttpToolsProtocol, pieces, until=b"first\r\n", hang_up=True))
    lean = asyncio.run(_exchange(uvicorn_protocol(), pieces, until=b"first\r\n", hang_up=True))
    assert lean == stock
    assert lean[0][1] == {"type": "http.disconnect"}


def test_a_slow_answer_is_dated_when_its_request_came_as_on_uvicorn() -> None:
    """Uvicorn's own headers (its date, renewed every second) are the ones of the moment the request
    arrived, however long the app takes to start the answer."""
    arrived = [(b"date", b"Fri, 27 Nov 2026 07:00:00 GMT"), (b"server", b"uvicorn")]
    transport = _Socketless()
    protocol = _protocol_for(transport, arrived)
    cycle = LeanCycle(protocol, {"method": "POST"}, True, False)
    protocol.server_state.default_headers = [(b"date", b"Fri, 27 Nov 2026 07:00:03 GMT"), (b"server", b"uvicorn")]
    start = {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]}
    asyncio.run(cycle.send(start))
    assert b"date: Fri, 27 Nov 2026 07:00:00 GMT\r\n" in transport.writes[0]


def test_a_closed_connection_is_freed_without_the_garbage_collector() -> None:
    """A cycle lets go of its protocol when its app returns: nothing of a closed connection waits for
    the collector (Uvicorn's own cycle lets go the same way)."""
    import gc
    import weakref

    from mockllm.server.hosts.uvicorn_protocol import uvicorn_protocol

    made: list[weakref.ref[Any]] = []
    base = uvicorn_protocol()

    class Tracked(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: Any) -> None:
            made.append(weakref.ref(self))
            super().connection_made(transport)

    gc.collect()
    gc.disable()
    try:
        pieces = [b"POST /v1/chat HTTP/1.1\r\nhost: h\r\ncontent-length: 14\r\n\r\n" + _BODY]
        for _ in range(3):
            asyncio.run(_exchange(Tracked, pieces, until=_READ))
        alive = [ref for ref in made if ref() is not None]
    finally:
        gc.enable()
    assert len(made) == 3
    assert alive == []
