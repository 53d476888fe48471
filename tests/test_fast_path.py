"""The fast serving paths (`mockllm serve --server uvicorn`, the `fast` extra; `--server granian`, the
`granian` extra) and the performance work behind them: every shortcut must send the same bytes as the
plain path it replaces.

Which branch of the serving test runs depends on this machine: with a server's extra installed it
must serve; without it it must refuse with one clear line. The refusal is also checked on every
machine by hiding the server's module from a child process."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reliability import serve_process

from mockllm.runtime.providers import registry
from mockllm.runtime.providers.base import RenderContext, Rendered
from mockllm.runtime.providers.common import json_bytes
from mockllm.runtime.providers.openai_chat import ChunkFramer, _completion_bytes, completion_payload
from mockllm.runtime.reply import ids
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.server.http.responder import header_bytes, response_head
from mockllm.server.runner import server_missing

SCRIPT = """
scenario "fast":
    step hello:
        reply:
            text "hello from the fast path"
            stream 4 chunks
        always
"""
BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
AUTH = {"authorization": "Bearer sk-test"}
# Run `mockllm serve` with a module (argv[1]) made unimportable, whatever this machine has installed.
HIDE_MODULE = """
import sys
hidden = sys.argv.pop(1)
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name == hidden or name.startswith(hidden + "."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Hide())
from mockllm.cli import main
sys.exit(main(sys.argv[1:]))
"""

# what `mockllm serve --server NAME` says without the host's extra (server/hosts/table.py), word for word
UVICORN_MISSING = "mockllm: --server uvicorn needs the 'fast' extra: pip install 'mockllm[fast]'"
GRANIAN_MISSING = "mockllm: --server granian needs the 'granian' extra: pip install 'mockllm[granian]'"


def compile_text(text: str) -> Any:
    from mockllm.dsl.machines.compiler import compile_library
    from mockllm.dsl.parse.loader import load_text

    compiled, diagnostics = compile_library(load_text(text, file="fast.mockllm"))
    assert compiled is not None, diagnostics
    return compiled


def sse_events(body: bytes) -> list[str]:
    return [e for e in body.decode().split("\n\n") if e]


@pytest.mark.parametrize(("server", "missing"), [("uvicorn", UVICORN_MISSING), ("granian", GRANIAN_MISSING)])
def test_fast_servers_serve_when_installed_and_refuse_clearly_when_not(
    tmp_path: Path, server: str, missing: str
) -> None:
    script = tmp_path / "fast.mockllm"
    script.write_text(SCRIPT)
    if server_missing(server) is not None:
        done = subprocess.run(
            [sys.executable, "-m", "mockllm", "serve", str(script), "--server", server, "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert done.stdout == ""  # no listening line: nothing was served
        assert done.stderr.strip() == missing
        return
    with serve_process(str(script), "--server", server) as (proc, url, _port):
        whole = httpx.post(url + "/v1/chat/completions", json=BODY, headers=AUTH, timeout=10)
        assert whole.status_code == 200
        assert whole.headers["server"] == server
        assert whole.headers["x-mockllm-step"] == "fast/hello"
        assert whole.json()["choices"][0]["message"]["content"] == "hello from the fast path"
        streamed = httpx.post(url + "/v1/chat/completions", json={**BODY, "stream": True}, headers=AUTH, timeout=10)
        events = sse_events(streamed.content)
        pieces = [json.loads(e[6:])["choices"][0]["delta"].get("content") for e in events[1:-2]]
        assert pieces and "".join(pieces) == "hello from the fast path" and len(pieces) == 4
        assert events[-1] == "data: [DONE]"
        journal = httpx.get(url + "/_mockllm/requests", timeout=10).json()
        assert [e["status"] for e in journal] == [200, 200]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0  # a clean exit, not death by the re-raised signal
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read()


@pytest.mark.parametrize(
    ("server", "module", "missing", "extra"),
    [("uvicorn", "uvicorn", UVICORN_MISSING, "fast"), ("granian", "granian", GRANIAN_MISSING, "granian")],
)
def test_a_fast_server_without_its_extra_says_what_to_install(
    tmp_path: Path, server: str, module: str, missing: str, extra: str
) -> None:
    script = tmp_path / "fast.mockllm"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "-c", HIDE_MODULE, module, "serve", str(script), "--server", server, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "listening" not in done.stdout
    assert done.stderr.strip() == missing
    assert f"pip install 'mockllm[{extra}]'" in missing


# ------------------------------------------------------------------------------------------------
# The shortcuts send the same bytes


def _old_response_headers(
    rendered: Rendered, extra: list[tuple[str, str]], length: int | None
) -> list[tuple[bytes, bytes]]:
    """How the headers were built before the one-pass `response_head` (the reference)."""
    headers = [*rendered.headers, *extra]
    names = {n.lower() for n, _ in headers}
    if "content-type" not in names:
        headers.insert(0, ("content-type", rendered.media_type))
    if length is not None:
        headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
        headers.append(("content-length", str(length)))
    return header_bytes(headers)


NAMES = st.sampled_from(["content-type", "Content-Length", "x-request-id", "X-Mockllm-Step", "bad name", "retry-after"])
VALUES = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(NAMES, VALUES), max_size=4),
    st.lists(st.tuples(NAMES, VALUES), max_size=4),
    st.one_of(st.none(), st.integers(0, 10_000)),
)
def test_response_head_matches_the_reference(
    rendered_headers: list[tuple[str, str]], extra: list[tuple[str, str]], length: int | None
) -> None:
    rendered = Rendered(200, "application/json", headers=tuple(rendered_headers), body=b"{}")
    assert response_head(rendered, extra, length) == _old_response_headers(rendered, extra, length)


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
CALLS = st.lists(
    st.builds(
        PlannedToolCall,
        name=TEXT,
        arguments=st.just({}),
        arguments_json=TEXT,
        argument_chunks=st.just(()),
        key=st.text("abc123_", min_size=1, max_size=8),
        explicit_id=st.one_of(st.none(), TEXT),
    ),
    max_size=2,
)


@settings(max_examples=200, deadline=None)
@given(
    model=TEXT,
    text=TEXT,
    refusal=st.one_of(st.none(), TEXT),
    calls=CALLS,
    finish=st.sampled_from(["stop", "length", "tool_calls", "content_filter"]),
    tokens=st.tuples(st.integers(0, 10**9), st.integers(0, 10**9)),
    response_id=TEXT,
    created=st.integers(0, 2**40),
)
def test_assembled_completion_is_byte_identical_to_the_encoded_payload(
    model: str,
    text: str,
    refusal: str | None,
    calls: list[PlannedToolCall],
    finish: Any,
    tokens: tuple[int, int],
    response_id: str,
    created: int,
) -> None:
    plan = MessagePlan(
        model=model,
        text=text,
        refusal=refusal,
        tool_calls=tuple(calls),
        finish=finish,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
    )
    ctx = RenderContext(response_id=response_id, created=created, request_id="req_1")
    assert _completion_bytes(plan, ctx) == json_bytes(completion_payload(plan, ctx))
    # the plan's part after `created` written once, then reused with another response's id and time
    later = RenderContext(response_id=response_id + "-next", created=created + 1, request_id="req_2")
    assert _completion_bytes(plan, later) == json_bytes(completion_payload(plan, later))


@settings(max_examples=300, deadline=None)
@given(seed=st.text(max_size=80), length=st.integers(0, 150), url_safe=st.booleans())
def test_ids_are_the_alphabet_at_the_length_asked_the_same_for_the_same_seed(
    seed: str, length: int, url_safe: bool
) -> None:
    alphabet = ids._B64URL if url_safe else ids._B62
    table = ids._B64URL_TABLE if url_safe else ids._B62_TABLE
    made = ids._chars(seed, table, length)
    assert len(made) == length and set(made) <= set(alphabet)
    assert ids._chars(seed, table, length) == made


def test_ids_of_different_seeds_differ_and_use_the_whole_alphabet() -> None:
    made = {ids.base62(f"{n:050x}", 29) for n in range(2000)}  # response ids differ in their last digits
    assert len(made) == 2000
    assert set("".join(made)) == set(ids._B62)
    assert ids.chat_completion_id("r1") != ids.chat_completion_id("r2")


def test_static_replies_are_resolved_once_and_still_keyed_per_request() -> None:
    """A reply without templates is planned once; the model, the prompt estimate and the tool-call
    keys still follow each request (a template reply is planned afresh every time)."""
    from mockllm.runtime.engine.engine import Engine

    library = compile_text(
        """
scenario "calls":
    step weather:
        reply:
            tool call get_weather {"city": "Paris"}
        always
"""
    )
    engine = Engine(library)
    from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter
    from mockllm.runtime.request import HttpRequest

    def chat(body: dict[str, Any]) -> Any:
        raw = json.dumps(body).encode()
        return OpenAIChatAdapter().parse(HttpRequest("POST", "/v1/chat/completions", {}, {}, raw))

    from mockllm.runtime.reply.ids import call_key

    first_outcome = engine.handle(chat({"model": "a", "messages": [{"role": "user", "content": "x"}]}))
    first = first_outcome.plan
    again = engine.handle(chat({"model": "a", "messages": [{"role": "user", "content": "x"}]})).plan
    other_outcome = engine.handle(chat({"model": "b", "messages": [{"role": "user", "content": "a longer prompt"}]}))
    other = other_outcome.plan
    history = {
        "model": "a",
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    }
    later = engine.handle(chat(history)).plan
    assert first is not None and again is not None and other is not None and later is not None
    assert first == again
    conversation = first_outcome.conversation
    assert [c.key for c in first.tool_calls] == [call_key(conversation, "mock", 1)]
    assert (other.model, other.input_tokens) == ("b", 3)
    assert other.tool_calls[0].arguments == {"city": "Paris"}
    # another conversation: other ids, though the plan is the same static reply
    assert other.tool_calls[0].key == call_key(other_outcome.conversation, "mock", 1) != first.tool_calls[0].key
    assert [c.key for c in later.tool_calls] == [call_key(conversation, "mock", 2)]  # one call already in history


# ------------------------------------------------------------------------------------------------
# In-process ASGI: what the server is handed


def run_app(app: Any, body: bytes, chunks: int = 1, path: str = "/v1/chat/completions") -> list[dict[str, Any]]:
    """POST ``body`` (split into ``chunks`` body messages) to ``app``; the messages it sends, and
    a final ``{"type": "received", "count": N}`` with how many body messages it read."""
    sent: list[dict[str, Any]] = []
    size = max(1, -(-len(body) // chunks))
    parts = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    queue = [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]
    read = [0]

    async def receive() -> dict[str, Any]:
        if queue:
            read[0] += 1
            return queue.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"authorization", b"Bearer t")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    asyncio.run(app(scope, receive, send))
    return [*sent, {"type": "received", "count": read[0]}]


def make_app(script: str, **options: Any) -> Any:
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.http.app import create_app
    from mockllm.server.options import ServerOptions

    async def no_sleep(_: float) -> None:
        return None

    return create_app(Engine(compile_text(script)), ServerOptions(sleep=no_sleep, **options))


def test_a_stream_without_spacing_is_one_body_message_with_the_same_bytes() -> None:
    spaced = SCRIPT.replace("stream 4 chunks", "stream 4 chunks, 20ms apart")
    stream = json.dumps({**BODY, "stream": True}).encode()
    at_once = run_app(make_app(SCRIPT), stream)
    one_by_one = run_app(make_app(spaced), stream)
    bodies = [m for m in at_once if m["type"] == "http.response.body"]
    assert len(bodies) == 1 and bodies[0]["more_body"] is False
    frames = [m["body"] for m in one_by_one if m["type"] == "http.response.body" and m["body"]]
    # spaced: one message per instant -- role + chunk 1, chunk 2, chunk 3, chunk 4 + finish + [DONE]
    assert len(frames) == 4 and frames[-1].endswith(b"data: [DONE]\n\n")

    def strip_ids(data: bytes) -> bytes:
        return re.sub(rb'"(id|created)":("[^"]*"|\d+)', b"", data)

    assert strip_ids(bodies[0]["body"]) == strip_ids(b"".join(frames))
    head = next(m for m in at_once if m["type"] == "http.response.start")
    assert (b"content-type", b"text/event-stream; charset=utf-8") in head["headers"]
    assert not any(name == b"content-length" for name, _ in head["headers"])  # still a stream


def test_the_chat_fast_route_reads_the_whole_body_and_drains_a_refused_one() -> None:
    app = make_app(SCRIPT, max_body_bytes=64)
    small = json.dumps(BODY).encode()
    sent = run_app(make_app(SCRIPT), small, chunks=3)
    assert sent[0]["status"] == 200 and sent[-1]["count"] == 3
    big = json.dumps({**BODY, "pad": "x" * 500}).encode()
    refused = run_app(app, big, chunks=5)
    assert refused[0]["status"] == 413
    assert refused[-1]["count"] == 5  # every body message was read before the answer started
    assert (b"connection", b"close") not in refused[0]["headers"]


def test_other_methods_and_paths_still_go_through_starlette() -> None:
    from mockllm.server.http.app import MockllmApp

    app = make_app(SCRIPT)
    assert isinstance(app, MockllmApp)
    # every POST chat, embedding and moderation path of the registry without a path parameter
    fast = {s.path for s in registry.ROUTES if s.handler in ("chat", "inputs") and "{" not in s.path}
    assert {"/v1/chat/completions", "/v1/messages", "/api/chat", "/v1/embeddings", "/v1/moderations"} <= fast
    assert set(app.fast_routes) == fast
    missing = run_app(app, b"{}", path="/v1/chat/completion")
    assert missing[0]["status"] == 404
    assert json.loads(missing[1]["body"])["error"]["message"].startswith("mockllm: unknown route")


FRAMES = st.lists(st.tuples(st.binary(min_size=1, max_size=3), st.booleans()), max_size=12)


@settings(max_examples=200, deadline=None)
@given(FRAMES, st.sampled_from([0.0, 0.02]))
def test_coalesced_frames_arrive_as_the_same_bytes_at_the_same_times(raw: list[tuple[bytes, bool]], gap: float) -> None:
    """Joining what goes out at the same instant changes neither the bytes nor when each byte is sent."""
    from mockllm.runtime.clock import FakeClock
    from mockllm.runtime.providers.base import Frame
    from mockllm.server.http.streaming import Faults, coalesce, write_frames

    frames = [Frame(data, content=content) for data, content in raw]

    def arrivals(frame_list: Sequence[Frame]) -> tuple[list[tuple[float, int]], int]:
        clock = FakeClock()
        sent: list[tuple[float, int]] = []

        class Sink:
            gone = False

            async def write(self, data: bytes) -> None:
                sent.extend((round(clock.monotonic(), 6), b) for b in data)

        async def sleep(seconds: float) -> None:
            clock.advance(seconds)

        result = asyncio.run(
            write_frames(frame_list, Sink(), interval_s=gap, faults=Faults(), sleep=sleep, clock=clock)
        )
        return sent, result.content_sent

    joined = coalesce(frames)
    assert b"".join(f.data for f in joined) == b"".join(f.data for f in frames)
    n_content = sum(1 for _, content in raw if content)
    assert sum(f.content for f in joined) == n_content  # one content frame per write
    assert len(joined) == (max(1, n_content) if frames else 0)
    assert arrivals(joined) == arrivals(frames)


class OwnPayloadFramer(ChunkFramer):
    """A framer building its own payloads (overriding ``data``): its chunks are encoded, never assembled."""

    def data(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {**super().data(choices), "extra": True}


def chunk_framers() -> list[type[ChunkFramer]]:
    """``ChunkFramer`` and every subclass of it any provider module (Azure's) or this file defines, found,
    not listed."""
    import importlib
    import pkgutil

    from mockllm.runtime import providers

    for module in pkgutil.iter_modules(providers.__path__):
        importlib.import_module(f"{providers.__name__}.{module.name}")
    found, todo = [], [ChunkFramer]
    while todo:
        framer = todo.pop()
        found.append(framer)
        todo.extend(framer.__subclasses__())
    # (not the framers a test defines for itself, inside its function)
    return sorted((f for f in found if "<locals>" not in f.__qualname__), key=lambda f: f.__qualname__)


# Text the string encoder must escape, and characters it keeps (the lone surrogate is written as its escape).
ESCAPED = ['"', "\\", "\n", "\x00", "\x7f", "é", "\u2028", "😀", "\ud800", "a", " "]
STREAM_TEXT = st.text(st.sampled_from(ESCAPED), max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    model=TEXT,
    pieces=st.lists(st.one_of(TEXT, STREAM_TEXT), max_size=4),
    refusal=st.one_of(st.none(), TEXT, STREAM_TEXT),
    calls=CALLS,
    argument_chunks=st.lists(st.one_of(TEXT, STREAM_TEXT), max_size=3),
    interleave=st.booleans(),
    finish=st.sampled_from(["stop", "length", "tool_calls", "content_filter"]),
    include_usage=st.booleans(),
    obfuscate=st.one_of(st.none(), st.booleans()),
    response_id=TEXT,
    created=st.integers(0, 2**40),
)
def test_assembled_stream_chunks_are_byte_identical_to_the_encoded_payloads(
    model: str,
    pieces: list[str],
    refusal: str | None,
    calls: list[PlannedToolCall],
    argument_chunks: list[str],
    interleave: bool,
    finish: Any,
    include_usage: bool,
    obfuscate: bool | None,
    response_id: str,
    created: int,
) -> None:
    """Every chat-chunk framer (OpenAI's, Azure's with its content filters on each choice) assembles
    exactly the bytes of encoding each chunk's payload whole; one overriding ``data`` encodes them."""
    from mockllm.runtime.providers import events
    from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter
    from mockllm.runtime.request import HttpRequest

    if calls and argument_chunks:  # the first call's arguments streamed in pieces
        joined = "".join(argument_chunks)
        calls[0] = attrs.evolve(calls[0], arguments_json=joined, argument_chunks=tuple(argument_chunks))
    plan = MessagePlan(
        model=model,
        text="".join(pieces),
        text_chunks=tuple(pieces),
        refusal=refusal,
        tool_calls=tuple(calls),
        interleave_calls=interleave,
        finish=finish,
        input_tokens=3,
        output_tokens=5,
    )
    options: dict[str, Any] = {"include_usage": include_usage}
    if obfuscate is not None:
        options["include_obfuscation"] = obfuscate
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "x"}], "stream_options": options}
    chat = OpenAIChatAdapter().parse(HttpRequest("POST", "/v1/chat/completions", {}, {}, json.dumps(body).encode()))
    ctx = RenderContext(response_id=response_id, created=created, request_id="req_1")
    framers = chunk_framers()
    assert {"AzureFramer", "OwnPayloadFramer"} < {framer.__name__ for framer in framers}
    for framer in framers:
        fast = framer(plan, chat, ctx)
        assert (fast.head is not None) == (framer.data is ChunkFramer.data)  # the fast path runs where it can
        encoded = events.stream_frames(plan, framer(plan, chat, ctx, encoded=True))
        assert events.stream_frames(plan, fast) == encoded, framer
        assert all(frame.data.startswith(b"data: ") for frame in encoded)
        # frames(): the plan's tails written once (the first call), then reused with another response's head
        assert framer(plan, chat, ctx).frames() == encoded, framer
        later = RenderContext(response_id=response_id + "-next", created=created + 1, request_id="req_2")
        again = framer(plan, chat, later).frames()
        assert again == events.stream_frames(plan, framer(plan, chat, later, encoded=True)), framer
        assert again != encoded


def test_a_large_reply_is_written_afresh_and_not_kept() -> None:
    """The tails of a plan are kept for reuse only while they are small: an echo of a long prompt is
    a new plan every time, and keeping 256 of them would hold their whole text."""
    from mockllm.runtime.providers import events, openai_chat
    from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter
    from mockllm.runtime.request import HttpRequest

    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    chat = OpenAIChatAdapter().parse(HttpRequest("POST", "/v1/chat/completions", {}, {}, json.dumps(body).encode()))
    ctx = RenderContext(response_id="r1", created=1, request_id="req_1")
    # (Only the absence is asserted: another thread of this process -- a server a fixture runs -- may
    # fill and clear the caches at any moment, so a presence check would be a race.)
    for size in (100, 40_000):
        text = "é" * size
        plan = MessagePlan(model="m", text=text, text_chunks=(text[: size // 2], text[size // 2 :]))
        for _ in range(2):  # written, then (when kept) reused
            framed = ChunkFramer(plan, chat, ctx).frames()
            assert framed == events.stream_frames(plan, ChunkFramer(plan, chat, ctx, encoded=True))
            assert _completion_bytes(plan, ctx) == json_bytes(completion_payload(plan, ctx))
        if size > openai_chat._TAIL_BYTES:
            assert plan not in openai_chat._TAILS  # (by the plan: a freed plan's entry may sit at its id)
            assert plan not in openai_chat._COMPLETION_TAILS


def test_the_kept_tails_never_keep_a_plan_alive() -> None:
    """A plan's tails are kept with a weak reference to it: a plan nothing else holds (an echo, a
    templated reply, its thinking as large as the prompt) is freed with its text after its response."""
    import gc
    import weakref

    from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter
    from mockllm.runtime.request import HttpRequest

    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    chat = OpenAIChatAdapter().parse(HttpRequest("POST", "/v1/chat/completions", {}, {}, json.dumps(body).encode()))
    ctx = RenderContext(response_id="r1", created=1, request_id="req_1")
    plan = MessagePlan(model="m", text="ok", thinking="t" * 1_000_000)  # OpenAI chat renders no thinking
    first = ChunkFramer(plan, chat, ctx).frames()
    assert ChunkFramer(plan, chat, ctx).frames() == first  # the kept tails, while the plan lives
    whole = _completion_bytes(plan, ctx)
    assert _completion_bytes(plan, ctx) == whole
    gone = weakref.ref(plan)
    del plan
    gc.collect()
    assert gone() is None


def test_a_framer_that_writes_the_head_inside_a_chunk_is_framed_whole() -> None:
    """Tails are split off chunks that start with the head; a framer writing the head elsewhere in a
    chunk (an `event:` line first, say) gets its stream framed in full, never the stand-in head."""
    from mockllm.runtime.providers import events
    from mockllm.runtime.providers.base import Frame
    from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter
    from mockllm.runtime.request import HttpRequest

    class EventLines(ChunkFramer):
        def frame(self, event: events.Event) -> list[Frame]:
            return [Frame(b"event: chunk\n" + f.data, f.content) for f in super().frame(event)]

    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    chat = OpenAIChatAdapter().parse(HttpRequest("POST", "/v1/chat/completions", {}, {}, json.dumps(body).encode()))
    ctx = RenderContext(response_id="r1", created=1, request_id="req_1")
    plan = MessagePlan(model="m", text="hello there", text_chunks=("hello ", "there"))
    framed = EventLines(plan, chat, ctx).frames()
    assert framed == events.stream_frames(plan, EventLines(plan, chat, ctx))
    assert all(b"mockllm chunk head" not in f.data for f in framed)
    assert framed[1].data.startswith(b'event: chunk\ndata: {"id":"chatcmpl-')


# ------------------------------------------------------------------------------------------------
# Response ids and conversation fingerprints: cheaper, and still what they promise


def test_response_ids_are_fifty_hex_digits_never_repeated_within_or_across_seeds() -> None:
    from mockllm.runtime.engine.engine import response_id

    seen = {response_id(seed, n) for seed in ("", "worker-2", "worker-3") for n in range(1, 50_001)}
    assert len(seen) == 150_000
    assert all(len(rid) == 50 and set(rid) <= set("0123456789abcdef") for rid in seen)
    assert response_id("", 7) == response_id("", 7)  # the same engine turn, the same id
    assert response_id("", 7)[:10] != response_id("", 8)[:10]  # neighbours do not share a visible prefix
    # processes sharing a store (a random seed each): one id tells nothing of the next
    steps = {(int(response_id("a1b2", n + 1), 16) - int(response_id("a1b2", n), 16)) % 2**200 for n in range(50)}
    assert len(steps) == 50


def test_a_fingerprint_is_the_same_computed_or_remembered_and_the_memory_stays_bounded() -> None:
    import hashlib

    from mockllm.runtime.engine import conversations
    from mockllm.runtime.request import ChatRequest, Message

    def chat(system: str, user: str) -> ChatRequest:
        return ChatRequest(
            provider="openai", endpoint="/v1/chat/completions", model="m", stream=False,
            messages=(Message("user", user),), system=system,
        )  # fmt: skip

    def expected(system: str, user: str) -> str:
        return hashlib.sha256(f"{system}\x00{user}".encode()).hexdigest()[:16]

    first = conversations.fingerprint(chat("be brief", "hello"))
    assert first == conversations.fingerprint(chat("be brief", "hello")) == expected("be brief", "hello")
    assert conversations.fingerprint(chat("be brief", "hello!")) != first
    for n in range(conversations._FINGERPRINTS_LIMIT + 10):
        assert conversations.fingerprint(chat("", f"opening {n}")) == expected("", f"opening {n}")
    assert len(conversations._FINGERPRINTS) <= conversations._FINGERPRINTS_LIMIT
    long_opening = "x" * (conversations._FINGERPRINT_CHARS + 1)
    assert conversations.fingerprint(chat("", long_opening)) == expected("", long_opening)
    assert f"\x00{long_opening}" not in conversations._FINGERPRINTS
