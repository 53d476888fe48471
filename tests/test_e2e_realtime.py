"""OpenAI Realtime sessions at `/v1/realtime`, judged by the official `openai` SDK's realtime client
(`client.realtime.connect`) and, for what a well-behaved client never sends, a raw `websockets` client:
the lifecycle and its event order, text and audio out, audio in, tool calls mid-session, scripted
errors, latency, spacing and `disconnect`, cancelling, two sessions at once, the journal and
`verify`, and bad input (garbage, huge frames, clients that vanish or never read)."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest
from conftest import SleepLog, compile_text
from openai import AsyncOpenAI
from reliability import serve_process, servers

from mockllm.runtime.media import inband
from mockllm.runtime.media.audio import speak
from mockllm.server.background import BackgroundServer
from mockllm.server.options import ServerOptions

T = TypeVar("T")
WAIT = 20.0

LIBRARY = """\
scenario "Weather agent":
    step asks:
        when:
            endpoint is "realtime"
            last user message contains "weather"
        reply:
            tool call get_weather {"city": "Paris"}
    step answers:
        when:
            tool result for "get_weather" contains "sunny"
        reply:
            text "It is sunny in Paris today."

scenario "Chat steps answer realtime too":
    step hello:
        when:
            last user message contains "good morning"
        reply:
            text "Good morning to you!"

scenario "Faults":
    order any
    step busy:
        when:
            last user message contains "busy please"
        always
        reply:
            error 429 "Slow down."
    step cut:
        when:
            last user message contains "cut me off"
        always
        reply:
            text "one two three four five six"
            disconnect after 2 chunks
    step slow:
        when:
            last user message contains "take your time"
        always
        reply:
            text "alpha beta gamma"
            latency 250ms
            stream by word, 10ms apart
    step broken:
        when:
            last user message contains "break midway"
        always
        reply:
            text "one two three four"
            stream error "The model crashed." after 2 chunks
    step stuck:
        when:
            last user message contains "never answer"
        always
        reply:
            hang
    step endless:
        when:
            last user message contains "talk forever"
        always
        reply:
            text "LONG"
            stream by word, 5ms apart
""".replace("LONG", "la " * 3000)


@pytest.fixture(scope="module")
def sleeps() -> SleepLog:
    return SleepLog()


@pytest.fixture(scope="module")
def server(sleeps: SleepLog) -> Iterator[BackgroundServer]:
    with BackgroundServer(compile_text(LIBRARY), options=ServerOptions(sleep=sleeps)) as running:
        yield running


@pytest.fixture(scope="module")
def echo() -> Iterator[BackgroundServer]:
    """No script: the echo double."""
    with BackgroundServer(None) as running:
        yield running


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), WAIT))


def client(server: BackgroundServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.url + "/v1", api_key="test")


def conversation() -> dict[str, str]:
    """A conversation of the test's own: steps used up elsewhere are fresh here."""
    return {"x-mockllm-conversation": "rt-" + uuid.uuid4().hex}


async def until(conn: Any, last: str = "rate_limits.updated") -> list[Any]:
    """Every event up to and including the first of type ``last``."""
    out = []
    async for event in conn:
        out.append(event)
        if event.type == last:
            return out
    raise AssertionError(f"the session ended before {last}: {[e.type for e in out]}")


def journal(server: BackgroundServer) -> list[dict[str, Any]]:
    return [e for e in httpx.get(server.url + "/_mockllm/requests").json() if e["endpoint"] == "/v1/realtime"]


def say(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


TEXT = {"type": "realtime", "output_modalities": ["text"]}


def test_a_text_response_has_the_real_apis_events_in_order(echo: BackgroundServer) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with client(echo).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            opened = [await conn.recv()]
            await conn.session.update(session=TEXT)
            opened.append(await conn.recv())
            await conn.conversation.item.create(item=say("hello there"))
            await conn.response.create()
            return opened, await until(conn)

    opened, events = run(go)
    assert [e.type for e in opened] == ["session.created", "session.updated"]
    assert opened[0].session.type == "realtime" and opened[0].session.model == "gpt-realtime"
    assert opened[1].session.output_modalities == ["text"]
    assert [e.type for e in events] == [
        "conversation.item.added",
        "conversation.item.done",
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done",
        "rate_limits.updated",
    ]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "hello there"
    created, done = events[2].response, events[-2].response
    assert created.status == "in_progress" and created.output == []
    assert done.id == created.id and done.status == "completed"
    assert done.output[0].content[0].text == "hello there"
    assert done.usage.input_tokens > 0 and done.usage.output_tokens > 0
    assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens
    ids = {e.item_id for e in events if hasattr(e, "item_id")}
    assert ids == {events[3].item.id}
    assert all(e.event_id.startswith("event_") for e in events)
    assert len({e.event_id for e in events}) == len(events)


def test_a_chat_step_answers_a_realtime_response(server: BackgroundServer) -> None:
    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("good morning"))
            await conn.response.create()
            return await until(conn)

    events = run(go)
    assert [e.text for e in events if e.type == "response.output_text.done"] == ["Good morning to you!"]
    (entry,) = [e for e in journal(server) if e["matched"] and e["matched"]["step"] == "hello"]
    assert entry["provider"] == "openai" and entry["status"] == 200 and entry["model"] == "gpt-realtime"
    assert entry["body"]["items"][-1] == {"type": "message", "role": "user", "text": "good morning"}


async def _audio_response(server: BackgroundServer, text: str) -> list[Any]:
    async with client(server).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
        await conn.conversation.item.create(item=say(text))
        await conn.response.create()
        return await until(conn)


def test_audio_out_is_base64_pcm16_with_transcript_deltas_and_grows_with_the_text(echo: BackgroundServer) -> None:
    short = run(lambda: _audio_response(echo, "hi there"))
    long = run(lambda: _audio_response(echo, "hi there, this answer has a good many more words in it"))
    kinds = [e.type for e in short]
    assert kinds.index("response.content_part.added") < kinds.index("response.output_audio_transcript.delta")
    assert kinds.index("response.output_audio.delta") < kinds.index("response.output_audio.done")
    assert kinds[-7:] == [
        "response.output_audio.done",
        "response.output_audio_transcript.done",
        "response.content_part.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done",
        "rate_limits.updated",
    ]

    def pcm(events: list[Any]) -> bytes:
        return b"".join(base64.b64decode(e.delta) for e in events if e.type == "response.output_audio.delta")

    said = "".join(e.delta for e in short if e.type == "response.output_audio_transcript.delta")
    (done,) = [e for e in short if e.type == "response.output_audio_transcript.done"]
    assert said == done.transcript == "hi there"
    assert inband.read(pcm(short)) == "hi there"  # the audio carries what it says
    assert len(pcm(long)) > len(pcm(short)) and len(pcm(short)) % 2 == 0
    assert len(pcm(short)) == len(speak("hi there", "pcm"))  # 24 kHz pcm16, as long as the speech route's
    response = next(e for e in short if e.type == "response.done").response
    assert response.output_modalities == ["audio"] and response.output[0].content[0].transcript == "hi there"
    assert response.usage.output_token_details.audio_tokens > 0
    assert "response.done" in kinds and "response.output_text.delta" not in kinds


def test_audio_in_is_appended_committed_transcribed_and_answered(echo: BackgroundServer) -> None:
    pcm = speak("what time is it", "pcm")

    async def go() -> tuple[list[Any], list[Any]]:
        async with client(echo).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.recv()
            audio = {"input": {"transcription": {"model": "whisper-1"}, "turn_detection": None}}
            await conn.session.update(session={"type": "realtime", "audio": audio})
            await conn.recv()
            for at in range(0, len(pcm), 9600):
                await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[at : at + 9600]).decode())
            await conn.input_audio_buffer.commit()
            committed = await until(conn, "conversation.item.input_audio_transcription.completed")
            await conn.response.create()
            return committed, await until(conn)

    committed, answer = run(go)
    assert [e.type for e in committed] == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.completed",
    ]
    assert committed[1].item.role == "user" and committed[1].item.content[0].type == "input_audio"
    assert committed[-1].transcript == "what time is it" and committed[-1].item_id == committed[0].item_id
    said = next(e for e in answer if e.type == "response.output_audio_transcript.done").transcript
    assert said == "what time is it"


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_a_tool_call_mid_session_then_its_output_then_the_scripted_answer(server: BackgroundServer) -> None:
    headers = conversation()

    async def go() -> tuple[list[Any], list[Any]]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            await conn.session.update(session={**TEXT, "tools": [WEATHER_TOOL]})
            await conn.conversation.item.create(item=say("what is the weather like?"))
            await conn.response.create()
            called = await until(conn)
            done = next(e for e in called if e.type == "response.function_call_arguments.done")
            output = {"type": "function_call_output", "call_id": done.call_id, "output": '{"sky": "sunny"}'}
            await conn.conversation.item.create(item=output)
            await conn.response.create()
            return called, await until(conn)

    called, answered = run(go)
    kinds = [e.type for e in called]
    deltas_seen = kinds.count("response.function_call_arguments.delta")
    assert deltas_seen >= 1
    assert kinds == [
        "session.created",
        "session.updated",
        "conversation.item.added",  # the user's item
        "conversation.item.done",
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        *["response.function_call_arguments.delta"] * deltas_seen,
        "response.function_call_arguments.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done",
        "rate_limits.updated",
    ]
    added = next(e for e in called if e.type == "response.output_item.added")
    assert added.item.type == "function_call" and added.item.name == "get_weather" and added.item.arguments == ""
    done = next(e for e in called if e.type == "response.function_call_arguments.done")
    deltas = "".join(e.delta for e in called if e.type == "response.function_call_arguments.delta")
    assert json.loads(done.arguments) == json.loads(deltas) == {"city": "Paris"}
    assert done.call_id.startswith("call_") and done.name == "get_weather"
    final = next(e for e in called if e.type == "response.done").response
    assert final.output[0].type == "function_call" and final.output[0].call_id == done.call_id
    assert [e.text for e in answered if e.type == "response.output_text.done"] == ["It is sunny in Paris today."]
    steps = [e["matched"]["step"] for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert steps == ["asks", "answers"]


def test_a_scripted_error_is_an_error_event_and_the_session_goes_on(server: BackgroundServer) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("busy please"))
            await conn.response.create()
            failed = await until(conn, "error")
            await conn.conversation.item.create(item=say("good morning"))
            await conn.response.create()
            return failed, await until(conn)

    failed, after = run(go)
    error = failed[-1].error
    assert (error.type, error.code, error.message) == ("requests", "rate_limit_exceeded", "Slow down.")
    assert "response.created" not in [e.type for e in failed]
    assert [e.text for e in after if e.type == "response.output_text.done"] == ["Good morning to you!"]


def test_disconnect_closes_the_socket_after_the_scripted_chunks(server: BackgroundServer) -> None:
    from websockets.exceptions import ConnectionClosedError

    headers = conversation()

    async def go() -> tuple[list[Any], Any]:
        seen: list[Any] = []
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("cut me off"))
            await conn.response.create()
            try:
                async for event in conn:
                    seen.append(event)
            except ConnectionClosedError as exc:
                return seen, exc
        raise AssertionError("the session ended cleanly")

    seen, closed = run(go)
    assert [e.delta for e in seen if e.type == "response.output_text.delta"] == ["one", " two"]
    assert "response.done" not in [e.type for e in seen]
    assert closed.rcvd is not None and closed.rcvd.code == 1011
    (entry,) = [e for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert entry["note"] == "disconnect after 2 chunks"


def test_latency_and_spacing_go_through_the_servers_clock(server: BackgroundServer, sleeps: SleepLog) -> None:
    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("take your time"))
            await conn.response.create()
            return await until(conn)

    sleeps.delays.clear()
    events = run(go)
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["alpha", " beta", " gamma"]
    assert sleeps.delays == [0.25, 0.01, 0.01]  # the latency, then between each piece


def test_two_sessions_at_once_keep_their_own_state(server: BackgroundServer) -> None:
    first, second = conversation(), conversation()

    async def one(headers: dict[str, str], weather: bool) -> list[str]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            await conn.session.update(session={**TEXT, "tools": [WEATHER_TOOL]})
            await conn.conversation.item.create(item=say("weather?" if weather else "good morning"))
            await conn.response.create()
            events = await until(conn)
            ends = ("response.function_call_arguments.done", "response.output_text.done")
            return [e.type for e in events if e.type in ends]

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(one(first, True), one(second, False)))

    calls, hello = run(both)
    assert calls == ["response.function_call_arguments.done"]
    assert hello == ["response.output_text.done"]
    by_conversation = {e["conversation"]: e["matched"]["step"] for e in journal(server)}
    assert by_conversation[first["x-mockllm-conversation"]] == "asks"
    assert by_conversation[second["x-mockllm-conversation"]] == "hello"


def test_cancel_ends_the_running_response_as_cancelled(server: BackgroundServer) -> None:
    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("talk forever"))
            await conn.response.create()
            seen = []
            async for event in conn:
                seen.append(event)
                if event.type == "response.output_text.delta":
                    await conn.response.cancel()
                    break
            return seen + await until(conn)

    events = run(go)
    done = next(e for e in events if e.type == "response.done").response
    assert done.status == "cancelled" and done.status_details.reason == "client_cancelled"
    item_done = next(e for e in events if e.type == "response.output_item.done")
    assert item_done.item.status == "incomplete"
    assert len([e for e in events if e.type == "response.output_text.delta"]) < 3000


def test_the_journal_and_verify_list_session_responses_like_requests(server: BackgroundServer) -> None:
    headers = conversation()

    async def go() -> None:
        async with client(server).realtime.connect(model="gpt-realtime-mini", extra_headers=headers) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("nobody scripted this"))
            await conn.response.create()
            await until(conn, "error")

    run(go)
    (entry,) = [e for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert (entry["provider"], entry["endpoint"], entry["model"], entry["status"]) == (
        "openai",
        "/v1/realtime",
        "gpt-realtime-mini",
        404,
    )
    assert entry["no_match"] is not None
    verify = httpx.get(server.url + "/_mockllm/verify").json()
    assert verify["ok"] is False
    assert headers["x-mockllm-conversation"] in json.dumps(verify)


def ws_url(server: BackgroundServer) -> str:
    return server.url.replace("http://", "ws://") + "/v1/realtime?model=gpt-realtime"


async def raw(server: BackgroundServer, **options: Any) -> Any:
    """A raw WebSocket client (no SDK between the test and the wire), past ``session.created``."""
    from websockets.asyncio.client import connect

    headers = {"Authorization": "Bearer test", **conversation()}
    conn = await connect(ws_url(server), additional_headers=headers, **options)
    first = json.loads(await conn.recv())
    assert first["type"] == "session.created"
    return conn


async def next_event(conn: Any) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(await conn.recv())
    return event


def test_bad_client_events_get_error_events_and_the_session_stays_open(echo: BackgroundServer) -> None:
    sent: list[str | bytes] = [
        "this is not json",
        b"\xff\xfe binary garbage",
        "[1, 2, 3]",
        json.dumps({"event_id": "evt_1"}),
        json.dumps({"type": "no.such.event", "event_id": "evt_2"}),
        json.dumps({"type": "conversation.item.create"}),
        json.dumps({"type": "conversation.item.create", "item": {"type": "message", "role": "robot", "content": []}}),
        json.dumps({"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "c"}}),
        json.dumps({"type": "input_audio_buffer.append", "audio": "%%% not base64 %%%"}),
        json.dumps({"type": "input_audio_buffer.commit"}),
        json.dumps({"type": "session.update", "session": {"instructions": "no type"}}),
        json.dumps({"type": "session.update", "session": {"type": "realtime", "output_modalities": ["video"]}}),
        json.dumps({"type": "response.cancel"}),
        json.dumps({"type": "conversation.item.delete", "item_id": "nope"}),
    ]

    async def go() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        conn = await raw(echo)
        try:
            errors = []
            for frame in sent:
                await conn.send(frame)
                errors.append(await next_event(conn))
            await conn.send(json.dumps({"type": "conversation.item.create", "item": say("still here")}))
            return errors, await next_event(conn)
        finally:
            await conn.close()

    errors, alive = run(go)
    assert [e["type"] for e in errors] == ["error"] * len(sent)
    assert all(set(e["error"]) == {"type", "code", "message", "param", "event_id"} for e in errors)
    assert all(e["error"]["type"] == "invalid_request_error" and e["event_id"] for e in errors)
    codes = [e["error"]["code"] for e in errors]
    assert codes == [
        "invalid_json",
        "invalid_json",
        "invalid_json",
        "missing_required_parameter",
        "invalid_value",
        "missing_required_parameter",
        "invalid_value",
        "missing_required_parameter",
        "invalid_value",
        "input_audio_buffer_commit_empty",
        "missing_required_parameter",
        "invalid_value",
        "response_cancel_not_active",
        "item_not_found",
    ]
    assert errors[4]["error"]["event_id"] == "evt_2" and errors[4]["error"]["param"] == "type"
    assert "'no.such.event'" in errors[4]["error"]["message"]
    assert errors[6]["error"]["param"] == "item.role"
    assert errors[7]["error"]["param"] == "item.output"
    assert errors[9]["error"]["message"].startswith("Error committing input audio buffer: buffer too small.")
    assert alive["type"] == "conversation.item.added"


def test_a_second_response_while_one_runs_is_refused(server: BackgroundServer) -> None:
    async def go() -> list[dict[str, Any]]:
        conn = await raw(server)
        try:
            await conn.send(json.dumps({"type": "session.update", "session": TEXT}))
            await conn.send(json.dumps({"type": "conversation.item.create", "item": say("talk forever")}))
            await conn.send(json.dumps({"type": "response.create"}))
            events = []
            while not events or events[-1]["type"] != "response.output_text.delta":
                events.append(await next_event(conn))
            await conn.send(json.dumps({"type": "response.create"}))
            while events[-1]["type"] != "error":
                events.append(await next_event(conn))
            return events
        finally:
            await conn.close()

    events = run(go)
    error = events[-1]["error"]
    assert error["code"] == "conversation_already_has_active_response"
    response_id = next(e for e in events if e["type"] == "response.created")["response"]["id"]
    assert response_id in error["message"]


def test_a_frame_past_the_hosts_limit_closes_that_session_only(echo: BackgroundServer) -> None:
    from websockets.exceptions import ConnectionClosed

    async def go() -> tuple[int | None, dict[str, Any]]:
        big = await raw(echo, max_size=None)
        other = await raw(echo)
        code = None
        try:
            payload = base64.b64encode(bytes(17 * 1024 * 1024)).decode()
            await big.send(json.dumps({"type": "input_audio_buffer.append", "audio": payload}))
            await big.recv()
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else None
        await other.send(json.dumps({"type": "conversation.item.create", "item": say("fine")}))
        try:
            return code, await next_event(other)
        finally:
            await other.close()

    code, event = run(go)
    assert code == 1009  # message too big
    assert event["type"] == "conversation.item.added"


def test_a_client_that_vanishes_mid_response_is_journalled_as_gone(server: BackgroundServer) -> None:
    headers = conversation()

    async def go() -> None:
        from websockets.asyncio.client import connect

        conn = await connect(ws_url(server), additional_headers={"Authorization": "Bearer test", **headers})
        await conn.send(json.dumps({"type": "session.update", "session": TEXT}))
        await conn.send(json.dumps({"type": "conversation.item.create", "item": say("talk forever")}))
        await conn.send(json.dumps({"type": "response.create"}))
        while json.loads(await conn.recv())["type"] != "response.output_text.delta":
            pass
        conn.transport.abort()  # no close frame: the network went away
        for _ in range(200):
            await asyncio.sleep(0.02)
            entries = [e for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
            if entries and entries[0]["client_gone"]:
                return
        raise AssertionError(f"the response was not journalled as gone: {entries}")

    run(go)
    assert [e["model"] for e in journal(server)]  # the server still answers


def test_a_client_that_never_reads_stalls_only_its_own_session(echo: BackgroundServer) -> None:
    async def go() -> list[str]:
        from websockets.asyncio.client import connect

        stalled = await connect(ws_url(echo), additional_headers={"Authorization": "Bearer test", **conversation()})
        stalled.transport.pause_reading()  # it never reads again: the server's writes back up
        long = " ".join(["words"] * 2000)  # about 13 minutes of audio: megabytes of base64 deltas
        await stalled.send(json.dumps({"type": "conversation.item.create", "item": say(long)}))
        await stalled.send(json.dumps({"type": "response.create"}))
        await asyncio.sleep(0.5)
        async with client(echo).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("good morning"))
            await conn.response.create()
            healthy = [e.text for e in await until(conn) if e.type == "response.output_text.done"]
        stalled.transport.abort()
        return healthy

    assert run(go) == ["good morning"]


def test_the_agents_sdk_realtime_agent_calls_its_tool_and_says_the_scripted_answer(server: BackgroundServer) -> None:
    from agents import function_tool
    from agents.realtime import RealtimeAgent, RealtimeRunner

    called: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        called.append(city)
        return f"sunny in {city}"

    headers = {"Authorization": "Bearer test", **conversation()}

    async def go() -> list[Any]:
        agent = RealtimeAgent(name="Assistant", instructions="Be brief.", tools=[get_weather])
        runner = RealtimeRunner(agent, config={"model_settings": {"modalities": ["text"]}})
        url = ws_url(server)
        session = await runner.run(model_config={"url": url, "headers": headers})
        kinds: list[str] = []
        history: list[Any] = []
        async with session:
            await session.send_message("what is the weather in Paris?")
            async for event in session:
                kinds.append(event.type)
                if event.type == "error":
                    raise AssertionError(f"the agent saw an error: {event}")
                if event.type == "history_updated":
                    history = list(event.history)
                    last = history[-1] if history else None
                    said = last is not None and last.type == "message" and last.role == "assistant"
                    if said and "tool_end" in kinds and any(getattr(part, "text", None) for part in last.content):
                        break
            return history

    history = run(go)
    assert called == ["Paris"]
    assert [item.type for item in history] == ["message", "function_call", "message"]
    assert history[-1].content[0].text == "It is sunny in Paris today."
    steps = [e["matched"]["step"] for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert steps == ["asks", "answers"]


@pytest.mark.parametrize("host", servers())
def test_every_host_serves_the_websocket(host: str, tmp_path: Any) -> None:
    """Hypercorn (the default), Uvicorn and Granian each serve a session: text, audio and an error event."""
    script = tmp_path / "hello.mockllm"
    script.write_text(
        'scenario "Hi":\n    step hi:\n        always\n        reply:\n            text "Hello from every host."\n'
    )

    async def go(url: str) -> tuple[list[Any], list[Any], Any]:
        openai = AsyncOpenAI(base_url=url + "/v1", api_key="test")
        async with openai.realtime.connect(model="gpt-realtime") as conn:
            await conn.conversation.item.create(item=say("hi"))
            await conn.response.create()
            spoken = await until(conn)
            await conn.response.create(response={"output_modalities": ["text"]})
            written = await until(conn)
            await conn.send({"type": "no.such.event"})  # type: ignore[arg-type]
            return spoken, written, await conn.recv()

    with serve_process(str(script), "--server", host) as (_proc, url, _port):
        spoken, written, error = run(lambda: go(url))
    pcm = b"".join(base64.b64decode(e.delta) for e in spoken if e.type == "response.output_audio.delta")
    assert inband.read(pcm) == "Hello from every host."
    assert [e.text for e in written if e.type == "response.output_text.done"] == ["Hello from every host."]
    assert error.type == "error" and error.error.code == "invalid_value"


def test_the_beta_client_gets_the_beta_event_names(echo: BackgroundServer) -> None:
    ws_base = echo.url.replace("http://", "ws://") + "/v1"

    async def go() -> list[Any]:
        beta = AsyncOpenAI(base_url=echo.url + "/v1", websocket_base_url=ws_base, api_key="test")
        async with beta.beta.realtime.connect(model="gpt-4o-realtime-preview") as conn:
            opened = [await conn.recv(), await conn.recv()]
            await conn.session.update(session={"modalities": ["text"]})
            opened.append(await conn.recv())
            await conn.conversation.item.create(item=say("hello beta"))  # type: ignore[arg-type]
            await conn.response.create()
            async for event in conn:
                opened.append(event)
                if event.type == "rate_limits.updated":
                    return opened
        raise AssertionError("the session ended early")

    events = run(go)
    kinds = [e.type for e in events]
    assert kinds[:3] == ["session.created", "conversation.created", "session.updated"]
    assert events[2].session.modalities == ["text"]
    assert "conversation.item.created" in kinds and "conversation.item.added" not in kinds
    assert "conversation.item.done" not in kinds
    assert "".join(e.delta for e in events if e.type == "response.text.delta") == "hello beta"
    assert [e.text for e in events if e.type == "response.text.done"] == ["hello beta"]


def test_an_upgrade_without_credentials_is_refused_with_the_apis_401(echo: BackgroundServer) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def go() -> Any:
        try:
            await connect(ws_url(echo))
        except InvalidStatus as exc:
            return exc.response
        raise AssertionError("the upgrade was accepted")

    response = run(go)
    assert response.status_code == 401
    assert json.loads(response.body)["error"]["code"] == "invalid_api_key"
    refused = [e for e in journal(echo) if e["rejected"]]
    assert refused and refused[-1]["status"] == 401  # journalled: verify reports an error nobody scripted


def test_a_stopping_server_closes_open_sessions_with_going_away() -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    server = BackgroundServer(None, options=ServerOptions(shutdown_grace_s=0.2)).start()

    async def go() -> Any:
        conn = await connect(ws_url(server), additional_headers={"Authorization": "Bearer test"})
        await conn.recv()
        stopping = asyncio.get_running_loop().run_in_executor(None, server.stop)
        try:
            while True:
                await conn.recv()
        except ConnectionClosed as exc:
            await stopping
            return exc.rcvd

    closed = run(go)
    assert closed is not None and (closed.code, closed.reason) == (1001, "mockllm: the server is stopping")


def test_server_vad_hears_a_whole_utterance_of_mockllm_speech_and_answers_by_itself(echo: BackgroundServer) -> None:
    """Under the default turn detection (server_vad, create_response), speech mockllm made is detected once
    all of it is in the buffer, after any leading silence: speech_started, speech_stopped, the commit,
    and the response, with no commit or response.create from the client. Other audio is never detected."""
    silence = bytes(24000)  # half a second
    voice = speak("is anybody there", "pcm")

    async def go() -> tuple[list[Any], list[Any]]:
        async with client(echo).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.recv()
            await conn.recv()
            noise = bytes(range(256)) * 400  # not mockllm's: never detected, never answered
            await conn.input_audio_buffer.append(audio=base64.b64encode(noise).decode())
            await conn.input_audio_buffer.clear()
            cleared = [await conn.recv()]
            audio = silence + voice + silence
            for at in range(0, len(audio), 4800):
                await conn.input_audio_buffer.append(audio=base64.b64encode(audio[at : at + 4800]).decode())
            return cleared, await until(conn)

    cleared, events = run(go)
    assert [e.type for e in cleared] == ["input_audio_buffer.cleared"]
    kinds = [e.type for e in events]
    assert kinds[:6] == [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
        "response.created",
    ]
    started, stopped = events[0], events[1]
    assert started.audio_start_ms == 500 and stopped.audio_end_ms == 500 + len(voice) // 48
    assert started.item_id == stopped.item_id == events[2].item_id
    assert [e.text for e in events if e.type == "response.output_text.done"] == ["is anybody there"]


def test_the_agents_sdk_realtime_agent_listens_and_speaks(server: BackgroundServer) -> None:
    """The agent's default session: audio in (detected by the server's turn detection), its tool called,
    and the scripted answer spoken back as audio that carries its words."""
    from agents import function_tool
    from agents.realtime import RealtimeAgent, RealtimeRunner

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    headers = {"Authorization": "Bearer test", **conversation()}

    async def go() -> tuple[bytes, list[Any]]:
        agent = RealtimeAgent(name="Assistant", instructions="Be brief.", tools=[get_weather])
        session = await RealtimeRunner(agent).run(model_config={"url": ws_url(server), "headers": headers})
        audio = b""
        history: list[Any] = []
        async with session:
            await session.send_audio(speak("what is the weather like?", "pcm"))
            async for event in session:
                if event.type == "error":
                    raise AssertionError(f"the agent saw an error: {event}")
                if event.type == "audio":
                    audio += event.audio.data
                if event.type == "history_updated":
                    history = list(event.history)
                if event.type == "audio_end" and any(item.type == "function_call" for item in history):
                    return audio, history
        raise AssertionError("the session ended early")

    audio, history = run(go)
    assert history[0].content[0].transcript == "what is the weather like?"
    assert inband.read(audio) == "It is sunny in Paris today."
    steps = [e["matched"]["step"] for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert steps == ["asks", "answers"]


def test_a_mid_response_error_is_an_error_event_then_a_failed_response(server: BackgroundServer) -> None:
    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("break midway"))
            await conn.response.create()
            return await until(conn)

    events = run(go)
    kinds = [e.type for e in events]
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["one", " two"]
    error = events[kinds.index("error")].error
    assert (error.type, error.message) == ("server_error", "The model crashed.")
    done = events[kinds.index("response.done")].response
    assert done.status == "failed" and done.status_details.error.message == "The model crashed."
    assert kinds.index("error") < kinds.index("response.output_item.done") < kinds.index("response.done")


def test_a_hung_response_ends_when_the_client_cancels_it(server: BackgroundServer) -> None:
    headers = conversation()

    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("never answer"))
            await conn.response.create()
            events = await until(conn, "response.created")
            await conn.response.cancel()
            return events + await until(conn)

    events = run(go)
    done = next(e for e in events if e.type == "response.done").response
    assert done.status == "cancelled" and done.output == []
    (entry,) = [e for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert entry["note"] == "cancelled by the client"


def test_items_are_placed_retrieved_truncated_and_deleted_and_a_response_can_be_out_of_band(
    echo: BackgroundServer,
) -> None:
    async def go() -> list[dict[str, Any]]:
        conn = await raw(echo)
        out = []
        try:
            for event in (
                {"type": "conversation.item.create", "item": {**say("first"), "id": "item_a"}},
                {"type": "conversation.item.create", "item": {**say("last"), "id": "item_c"}},
                {
                    "type": "conversation.item.create",
                    "item": {**say("middle"), "id": "item_b"},
                    "previous_item_id": "item_a",
                },
                {"type": "conversation.item.retrieve", "item_id": "item_b"},
                {"type": "conversation.item.truncate", "item_id": "item_b", "content_index": 0, "audio_end_ms": 10},
                {"type": "conversation.item.delete", "item_id": "item_c"},
                {"type": "conversation.item.create", "item": {**say("again"), "id": "item_a"}},
            ):
                await conn.send(json.dumps(event))
            for _ in range(10):
                out.append(await next_event(conn))
            aside = {"conversation": "none", "output_modalities": ["text"], "input": [say("just this")]}
            await conn.send(json.dumps({"type": "response.create", "response": aside}))
            while not out or out[-1]["type"] != "response.done":
                out.append(await next_event(conn))
            return out
        finally:
            await conn.close()

    events = run(go)
    added = [e for e in events if e["type"] == "conversation.item.added"]
    assert [(e["item"]["id"], e["previous_item_id"]) for e in added[:3]] == [
        ("item_a", None),
        ("item_c", "item_a"),
        ("item_b", "item_a"),
    ]
    retrieved = next(e for e in events if e["type"] == "conversation.item.retrieved")
    assert retrieved["item"]["content"] == [{"type": "input_text", "text": "middle"}]
    truncated = next(e for e in events if e["type"] == "conversation.item.truncated")
    assert (truncated["item_id"], truncated["audio_end_ms"]) == ("item_b", 10)
    assert next(e for e in events if e["type"] == "conversation.item.deleted")["item_id"] == "item_c"
    duplicate = next(e for e in events if e["type"] == "error")
    assert duplicate["error"]["code"] == "item_already_exists"
    done = events[-1]["response"]
    assert done["conversation_id"] is None and done["output"][0]["content"][0]["text"] == "just this"
    assert not [e for e in events[-8:] if e["type"] == "conversation.item.added" and e["item"]["role"] != "assistant"]


def test_a_session_over_a_shared_redis_state(redis_url: str) -> None:
    library = compile_text('scenario "Shared":\n    step hi:\n        reply:\n            text "Stored in Redis."\n')
    with BackgroundServer(library, options=ServerOptions(state=redis_url)) as shared:

        async def go() -> list[Any]:
            async with client(shared).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
                await conn.session.update(session=TEXT)
                await conn.conversation.item.create(item=say("hello"))
                await conn.response.create()
                return await until(conn)

        events = run(go)
        entries = journal(shared)
    assert [e.text for e in events if e.type == "response.output_text.done"] == ["Stored in Redis."]
    assert [(e["matched"]["step"], e["status"]) for e in entries] == [("hi", 200)]


def test_speech_over_a_running_response_interrupts_it_and_is_answered(server: BackgroundServer) -> None:
    """Barge-in: under server_vad with interrupt_response (the defaults), the caller's speech cancels the
    answer under way (`turn_detected`) and, once the caller is done, gets its own response."""
    headers = conversation()

    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("talk forever"))
            await conn.response.create()
            events = await until(conn, "response.output_text.delta")
            await conn.input_audio_buffer.append(audio=base64.b64encode(speak("good morning", "pcm")).decode())
            events += await until(conn, "response.done")
            return events + await until(conn, "response.done")

    events = run(go)
    kinds = [e.type for e in events]
    first, second = [e.response for e in events if e.type == "response.done"]
    assert first.status == "cancelled" and first.status_details.reason == "turn_detected"
    assert second.status == "completed" and second.output[0].content[0].text == "Good morning to you!"
    assert kinds.index("input_audio_buffer.speech_started") < kinds.index("response.done")
    assert kinds.index("response.done") < kinds.index("input_audio_buffer.committed")
    notes = [e["note"] for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert notes == ["cancelled: turn_detected", None]


def test_audio_inside_an_item_is_heard_and_journalled_by_kind_and_size(server: BackgroundServer) -> None:
    """A `conversation.item.create` message with an `input_audio` part (mockllm's speech): heard as its
    words, so the chat step answers; the journal shows the audio as kind, type and size, never the audio."""
    headers = conversation()
    voice = speak("good morning", "pcm")

    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            await conn.session.update(session=TEXT)
            part = {"type": "input_audio", "audio": base64.b64encode(voice).decode()}
            await conn.conversation.item.create(item={"type": "message", "role": "user", "content": [part]})
            await conn.response.create()
            return await until(conn)

    events = run(go)
    assert [e.text for e in events if e.type == "response.output_text.done"] == ["Good morning to you!"]
    (entry,) = [e for e in journal(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert entry["attachments"] == [{"kind": "audio", "media_type": "audio/pcm", "size": len(voice)}]
    assert entry["body"]["items"][0] == {
        "type": "message",
        "role": "user",
        "text": "good morning",
        "audio_bytes": len(voice),
    }


def test_a_chat_continues_the_conversation_a_session_began(server: BackgroundServer) -> None:
    """One conversation key, two transports: the realtime session takes the scenario's first step (a tool
    call), a chat request with the same key and the tool's result takes the next: one state machine."""
    import openai

    headers = conversation()

    async def go() -> Any:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            await conn.session.update(session={**TEXT, "tools": [WEATHER_TOOL]})
            await conn.conversation.item.create(item=say("weather?"))
            await conn.response.create()
            return next(e for e in await until(conn) if e.type == "response.function_call_arguments.done")

    call = run(go)
    chat = openai.OpenAI(base_url=server.url + "/v1", api_key="test", default_headers=headers)
    tool_call = {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    messages: list[Any] = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": call.call_id, "content": "sunny"},
    ]
    try:
        answer = chat.chat.completions.create(model="gpt-4o", messages=messages)
    finally:
        chat.close()
    assert answer.choices[0].message.content == "It is sunny in Paris today."
    entries = [e for e in journal_all(server) if e["conversation"] == headers["x-mockllm-conversation"]]
    assert [(e["endpoint"], e["matched"]["step"]) for e in entries] == [
        ("/v1/realtime", "asks"),
        ("/v1/chat/completions", "answers"),
    ]


def journal_all(server: BackgroundServer) -> list[dict[str, Any]]:
    return list(httpx.get(server.url + "/_mockllm/requests").json())
