"""Gemini Live (`BidiGenerateContent`) judged by google-genai's own live client
(`client.aio.live.connect`) over its real `wss://` (it forces TLS whenever it has an API key), against
`mockllm.serve(tls=True)`: setup, a text turn, audio both ways (mockllm's audio understood as its
text), a tool call answered mid-session, a scripted error as the service's close, two sessions at
once with their own state, and the journal. A raw `websockets` client over wss sends what the SDK
never does (bad JSON, an unknown message, a turn before setup): each gets a clear close, never a
crash, and a session open beside it is unaffected."""

from __future__ import annotations

import asyncio
import json
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from google import genai
from google.genai import errors, types
from test_tls import TRUST, serving

import mockllm
from mockllm.api import MockServer
from mockllm.server.runner import server_missing

MODEL = "gemini-live-2.5-flash-preview"
LIBRARY = """\
defaults:
    fallback echo

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

scenario "Counter":
    step first:
        when:
            last user message contains "count"
        reply:
            text "one"
    step second:
        after first
        when:
            last user message contains "count"
        reply:
            text "two"

scenario "Faults":
    order any
    step busy:
        when:
            last user message contains "busy please"
        always
        reply:
            error 429 "Resource has been exhausted (e.g. check quota)."
    step ramble:
        when:
            last user message contains "tell me everything"
        always
        reply:
            text "LONG"
            stream by word, 20ms apart
    step cut:
        when:
            last user message contains "cut me off"
        always
        reply:
            text "one two three four"
            stream by word
            disconnect after 2 chunks
""".replace("LONG", "and " * 300)
WEATHER_TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="The weather in a city",
            parameters=types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")}),
        )
    ]
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        with mockllm.serve(LIBRARY, tls=True, no_auth=False) as running:
            yield running


@pytest.fixture
def live(server: MockServer) -> MockServer:
    server.reset()
    return server


def client(server: MockServer, conversation: str | None = None) -> genai.Client:
    trusted = server.ssl_context()
    headers = {"x-mockllm-conversation": conversation} if conversation else None
    options = types.HttpOptions(base_url=server.url, async_client_args={"ssl": trusted}, headers=headers)
    return genai.Client(api_key="test-key", http_options=options)


def text_config(**extra: Any) -> types.LiveConnectConfig:
    return types.LiveConnectConfig(response_modalities=[types.Modality.TEXT], **extra)


async def say(session: Any, text: str) -> list[types.LiveServerMessage]:
    await session.send_client_content(turns=types.Content(role="user", parts=[types.Part(text=text)]))
    return [message async for message in session.receive()]


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def test_setup_and_a_text_turn_with_usage(live: MockServer) -> None:
    async def go() -> tuple[Any, list[types.LiveServerMessage]]:
        async with client(live).aio.live.connect(model=MODEL, config=text_config()) as session:
            return session.session_id, await say(session, "good day to you")

    _, messages = run(go())
    assert "".join(m.text or "" for m in messages) == "good day to you"  # the echo double
    assert messages[-2].server_content is not None and messages[-2].server_content.generation_complete
    last = messages[-1]
    assert last.server_content is not None and last.server_content.turn_complete
    assert last.usage_metadata is not None and last.usage_metadata.total_token_count
    [entry] = live.requests()
    assert entry.provider == "gemini" and entry.model == MODEL and entry.fallback and entry.step is None
    assert entry.endpoint == "/ws/google.ai.generativelanguage.v1.GenerativeService.BidiGenerateContent"


def test_audio_out_then_that_audio_in_is_understood_as_its_text(live: MockServer) -> None:
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        input_audio_transcription=types.AudioTranscriptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
    )

    async def go() -> tuple[bytes, list[str], list[types.LiveServerMessage]]:
        async with client(live).aio.live.connect(model=MODEL, config=config) as session:
            first = await say(session, "count to three")
            spoken = b"".join(m.data or b"" for m in first)
            said = [
                m.server_content.output_transcription.text
                for m in first
                if m.server_content and m.server_content.output_transcription
            ]
            await session.send_realtime_input(audio=types.Blob(data=spoken, mime_type="audio/pcm;rate=24000"))
            await session.send_realtime_input(audio_stream_end=True)
            return spoken, said, [m async for m in session.receive()]

    spoken, said, second = run(go())
    assert len(spoken) > 1000 and len(spoken) % 2 == 0  # pcm16
    assert said == ["one"]
    heard = [
        m.server_content.input_transcription
        for m in second
        if m.server_content and m.server_content.input_transcription
    ]
    assert [(h.text, h.finished) for h in heard] == [("one", True)]
    assert b"".join(m.data or b"" for m in second)  # the echo answers audio with audio
    steps = [e.step for e in live.requests()]
    assert steps == ["first", None]  # "one" does not say "count": the fallback echoes it
    assert live.requests()[1].fallback


def test_a_tool_call_mid_session_and_its_answer(live: MockServer) -> None:
    async def go() -> tuple[list[types.FunctionCall], list[types.LiveServerMessage]]:
        config = text_config(tools=[WEATHER_TOOL])
        async with client(live).aio.live.connect(model=MODEL, config=config) as session:
            await session.send_client_content(turns=types.Content(role="user", parts=[types.Part(text="weather?")]))
            calls: list[types.FunctionCall] = []
            after: list[types.LiveServerMessage] = []
            async for message in session.receive():  # the turn goes on after the tool response
                if message.tool_call is not None:
                    calls += message.tool_call.function_calls or []
                    answers = [
                        types.FunctionResponse(id=c.id, name=c.name, response={"result": "sunny, 21C"}) for c in calls
                    ]
                    await session.send_tool_response(function_responses=answers)
                else:
                    after.append(message)
            return calls, after

    calls, after = run(go())
    assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert calls[0].id
    assert "".join(m.text or "" for m in after) == "It is sunny in Paris today."
    journal = live.requests()
    assert [(e.scenario, e.step) for e in journal] == [("Weather agent", "asks"), ("Weather agent", "answers")]
    assert journal[0].conversation == journal[1].conversation  # one session, one conversation
    assert live.verify().ok


def test_a_scripted_error_closes_the_session_as_the_service_does(live: MockServer) -> None:
    async def go() -> None:
        async with client(live).aio.live.connect(model=MODEL, config=text_config()) as session:
            await say(session, "busy please")

    with pytest.raises(errors.APIError) as raised:
        run(go())
    assert raised.value.code == 1011
    assert "Resource has been exhausted" in str(raised.value)
    [entry] = live.requests()
    assert entry.step == "busy" and entry.status == 429


def test_disconnect_closes_the_socket_mid_turn(live: MockServer) -> None:
    texts: list[str] = []

    async def go() -> None:
        async with client(live).aio.live.connect(model=MODEL, config=text_config()) as session:
            await session.send_client_content(turns=types.Content(role="user", parts=[types.Part(text="cut me off")]))
            async for message in session.receive():
                texts.append(message.text or "")

    with pytest.raises(errors.APIError) as raised:
        run(go())
    assert raised.value.code == 1011 and "disconnect" in str(raised.value)
    assert texts == ["one", " two"]  # the two chunks before the cut, then no turnComplete
    [entry] = live.requests()
    assert entry.step == "cut"


def test_a_turn_no_step_matches_closes_with_the_reports_first_line(server: MockServer) -> None:
    script = 'scenario "Only":\n    step greet:\n        when:\n            last user message contains "hi"\n'
    script += '        reply:\n            text "hello"\n'

    async def go(strict: MockServer) -> None:
        async with client(strict).aio.live.connect(model=MODEL, config=text_config()) as session:
            await say(session, "an unknown question")

    with mockllm.serve(script, tls=True) as strict:  # no fallback here
        with pytest.raises(errors.APIError) as raised:
            run(go(strict))
        verification = strict.verify()
    assert raised.value.code == 1007
    assert "mockllm: no step matched" in str(raised.value)
    [unmatched] = verification.unmatched
    assert "an unknown question" in str(unmatched)


def test_the_journal_keeps_what_audio_said_not_its_bytes(live: MockServer) -> None:
    async def go() -> None:
        config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
        async with client(live).aio.live.connect(model=MODEL, config=config) as session:
            spoken = b"".join(m.data or b"" for m in await say(session, "count to three"))
            turn = types.Content(
                role="user", parts=[types.Part(inline_data=types.Blob(data=spoken, mime_type="audio/pcm;rate=24000"))]
            )
            await session.send_client_content(turns=turn)
            [m async for m in session.receive()]

    run(go())
    entries = live.requests()
    assert [e.step for e in entries] == ["first", None]
    body = json.dumps(live._get("/requests")[1]["body"])
    assert "bytes>" in body and len(body) < 4000  # the audio named by its size, not kept
    assert '"text": "one"' in body  # what it said, as the turn's items show it


def test_speaking_over_the_model_interrupts_its_turn(live: MockServer) -> None:
    async def go() -> list[types.LiveServerMessage]:
        got: list[types.LiveServerMessage] = []
        async with client(live).aio.live.connect(model=MODEL, config=text_config()) as session:
            await session.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text="tell me everything")])
            )
            async for message in session.receive():
                if not got:  # the model is speaking: the user speaks over it
                    await session.send_realtime_input(activity_start=types.ActivityStart())
                    await session.send_realtime_input(text="are you there")
                got.append(message)
        return got

    messages = run(go())
    marks = [i for i, m in enumerate(messages) if m.server_content and m.server_content.interrupted]
    assert len(marks) == 1
    assert 0 < marks[0] < 300  # the long turn stopped early
    assert "".join(m.text or "" for m in messages[marks[0] :]) == "are you there"
    journal = live.requests()
    assert [e.step for e in journal] == ["ramble", None]
    assert journal[0].conversation == journal[1].conversation


def test_two_sessions_at_once_keep_their_own_state(live: MockServer) -> None:
    async def one(conversation: str, turns: int) -> list[str]:
        answers = []
        async with client(live, conversation).aio.live.connect(model=MODEL, config=text_config()) as session:
            for _ in range(turns):
                answers.append("".join(m.text or "" for m in await say(session, "count please")))
        return answers

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(one("live-a", 2), one("live-b", 1)))

    a, b = run(both())
    assert a == ["one", "two"] and b == ["one"]  # each session moved its own conversation
    keys = {e.conversation for e in live.requests()}
    assert keys == {"live-a", "live-b"}


def test_vertex_ai_live_with_its_oauth_token(live: MockServer) -> None:
    from google.oauth2.credentials import Credentials

    async def go() -> str:
        options = types.HttpOptions(base_url=live.url, async_client_args={"ssl": live.ssl_context()})
        vertex = genai.Client(
            vertexai=True, project="p", location="us-central1", credentials=Credentials(token="t"), http_options=options
        )
        async with vertex.aio.live.connect(model="gemini-live-2.5-flash", config=text_config()) as session:
            return "".join(m.text or "" for m in await say(session, "count on vertex"))

    assert run(go()) == "one"
    [entry] = live.requests()
    assert (entry.provider, entry.model, entry.step) == ("vertex", "gemini-live-2.5-flash", "first")
    assert entry.endpoint == "/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent"


def test_credentials_are_checked_on_the_upgrade(server: MockServer) -> None:
    async def go() -> None:
        url = server.url.replace("https://", "wss://") + (
            "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
        )
        async with websockets.connect(url, ssl=server.ssl_context()) as ws:
            await ws.recv()

    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        run(go())
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize("host", ["hypercorn", "uvicorn", "granian"])
def test_every_host_serves_live_over_tls(tmp_path: Path, host: str) -> None:
    if server_missing(host):
        pytest.skip(f"{host} is not installed here (its extra)")

    async def go(url: str, ca: str) -> str:
        trusted = ssl.create_default_context(cafile=ca)
        options = types.HttpOptions(base_url=url, async_client_args={"ssl": trusted})
        live_client = genai.Client(api_key="k", http_options=options)
        async with live_client.aio.live.connect(model=MODEL, config=text_config()) as session:
            return "".join(m.text or "" for m in await say(session, f"hello from {host}"))

    with serving("--tls", "--server", host, cache=tmp_path) as (url, said):
        ca = TRUST.search(said)
        assert ca is not None
        answer = run(go(url, ca.group(1)))
    assert answer == f"hello from {host}"


# ---- a raw client: what the SDK never sends ------------------------------------------------------------


def raw_url(server: MockServer) -> str:
    path = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
    return server.url.replace("https://", "wss://") + path + "?key=raw-key"


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        (["{not json"], "Invalid JSON payload received"),
        ([json.dumps({"setup": {"model": "models/x"}}), json.dumps({"hello": {}})], 'Unknown name "hello"'),
        ([json.dumps({"clientContent": {"turnComplete": True}})], "the first message must be setup"),
        ([json.dumps({"setup": {}})], "Model name is required"),
        ([json.dumps({"setup": {"model": "m"}}), json.dumps({"setup": {"model": "m"}})], "setup is sent once"),
        (
            [json.dumps({"setup": {"model": "m"}}), json.dumps({"realtimeInput": {"audio": {"data": "%%%"}}})],
            "Base64 decoding failed",
        ),
        ([json.dumps([1, 2])], "expected an object"),
    ],
)
def test_malformed_messages_close_with_a_clear_reason_and_others_go_on(
    live: MockServer, frames: list[str], reason: str
) -> None:
    async def go() -> tuple[int | None, str, str]:
        good = client(live, "bystander-" + uuid.uuid4().hex)
        async with good.aio.live.connect(model=MODEL, config=text_config()) as bystander:
            async with websockets.connect(raw_url(live), ssl=live.ssl_context()) as ws:
                for frame in frames:
                    await ws.send(frame)
                with pytest.raises(websockets.exceptions.ConnectionClosed):
                    while True:
                        await ws.recv()
                code, why = ws.close_code, ws.close_reason or ""
            answer = "".join(m.text or "" for m in await say(bystander, "still here?"))
        return code, why, answer

    code, why, answer = run(go())
    assert code == 1007 and reason in why, why
    assert answer == "still here?"


def test_a_client_that_vanishes_mid_turn_is_journalled_as_gone(live: MockServer) -> None:
    async def go() -> str:
        ws = await websockets.connect(raw_url(live), ssl=live.ssl_context())
        await ws.send(json.dumps({"setup": {"model": MODEL, "generationConfig": {"responseModalities": ["TEXT"]}}}))
        await ws.recv()
        turn = {"turns": [{"role": "user", "parts": [{"text": "tell me everything"}]}], "turnComplete": True}
        await ws.send(json.dumps({"clientContent": turn}))
        await ws.recv()  # the model is speaking
        ws.transport.abort()  # no close frame: the network went away
        for _ in range(200):
            if live.requests()[0].client_gone:
                break
            await asyncio.sleep(0.02)
        async with client(live).aio.live.connect(model=MODEL, config=text_config()) as bystander:
            return "".join(m.text or "" for m in await say(bystander, "anyone home"))

    assert run(go()) == "anyone home"
    first, second = live.requests()
    assert first.step == "ramble" and first.client_gone
    assert second.fallback and not second.client_gone


def test_a_raw_client_in_camel_case_with_function_ids(live: MockServer) -> None:
    """Raw clients spell every key in camelCase; a function call comes with the id the answer names."""

    async def go() -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        async with websockets.connect(raw_url(live), ssl=live.ssl_context()) as ws:
            setup = {"model": "models/" + MODEL, "generationConfig": {"responseModalities": ["TEXT"]}}
            await ws.send(json.dumps({"setup": setup}))
            got.append(json.loads(await ws.recv()))
            turn = {"turns": [{"role": "user", "parts": [{"text": "weather in Paris?"}]}], "turnComplete": True}
            await ws.send(json.dumps({"clientContent": turn}))
            got.append(json.loads(await ws.recv()))
            call = got[-1]["toolCall"]["functionCalls"][0]
            answer = {"functionResponses": [{"id": call["id"], "name": call["name"], "response": {"r": "sunny"}}]}
            await ws.send(json.dumps({"toolResponse": answer}))
            while not got[-1].get("serverContent", {}).get("turnComplete"):
                got.append(json.loads(await ws.recv()))
        return got

    got = run(go())
    assert got[0] == {"setupComplete": {}}
    assert got[1]["toolCall"]["functionCalls"][0]["name"] == "get_weather"
    texts = [p["text"] for m in got[2:] for p in m.get("serverContent", {}).get("modelTurn", {}).get("parts", [])]
    assert "".join(texts) == "It is sunny in Paris today."
    assert set(got[-1]) == {"serverContent", "usageMetadata"}
