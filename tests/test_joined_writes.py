"""`--server uvicorn` sends each response's head and body in one write (server/joined_writes.py).

Uvicorn writes a response's status line and headers as soon as the app starts the response and the
body in a second write. The transport mockllm gives Uvicorn's protocol holds a write until the next
one or the end of the event loop's turn. These tests run the real Uvicorn protocol on a real socket
and count what reaches the socket: the transport under the joined one is wrapped to record its
writes, and passes each on."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from mockllm.server.joined_writes import JoinedWrites

uvicorn = pytest.importorskip("uvicorn", reason="the `fast` extra (uvicorn) is part of the dev install")


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


async def _serve_and_ask(requests: list[bytes], half_close: bool = False) -> tuple[list[bytes], bytes]:
    """Serve a mockllm app on Uvicorn with the joined protocol, send ``requests`` on one keep-alive
    connection one after another, and return the socket writes and everything the client read. With
    ``half_close``: send the one request, shut the client's side for writing, read until the server
    closes."""
    from mockllm.dsl.machines.compiler import compile_library
    from mockllm.dsl.parse.loader import load_text
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.app import create_app
    from mockllm.server.joined_writes import joined_writes_protocol

    script = (
        'scenario "s":\n    step a:\n        reply:\n            text "joined"\n            stream 3 chunks\n'
        "        always\n"
    )
    library, diagnostics = compile_library(load_text(script, file="joined.mockllm"))
    assert library is not None, diagnostics
    writes: list[bytes] = []
    base = joined_writes_protocol()

    class Recording(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(Recorded(transport, writes))

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
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
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
