"""The protocol-neutral realtime core (runtime/realtime/): a session's items as the engine request of a
response, and the engine's plan as beats (text, audio with its transcript, tool calls, faults)."""

from __future__ import annotations

from mockllm.runtime.media import inband
from mockllm.runtime.media.audio import PCM_RATE, speak
from mockllm.runtime.realtime import beats as b
from mockllm.runtime.realtime.session import Ask, Item, Session, Settings, heard
from mockllm.runtime.reply.plan import ErrorPlan, HangPlan, MessagePlan, PlannedToolCall, RawPlan
from mockllm.runtime.request import Tool


def session() -> Session:
    return Session("sess_0123456789abcdef", "conv-1", "openai", "/v1/realtime", "gpt-realtime", {"a": "b"})


def test_items_read_as_the_messages_of_a_chat_turn() -> None:
    s = session()
    s.settings = Settings("Be brief.", (Tool("get_weather"),), "text")
    s.add(Item("i1", "message", role="user", text="weather?"))
    s.add(Item("i2", "function_call", call_id="c1", name="get_weather", arguments='{"city": "Paris"}'))
    s.add(Item("i3", "function_call_output", call_id="c1", output="sunny"))
    chat = s.request(Ask({"type": "response.create"}))
    assert chat.operation == "realtime" and chat.stream and chat.model == "gpt-realtime"
    assert chat.header("x-mockllm-conversation") == "conv-1" and chat.header("a") == "b"
    assert chat.system == "Be brief." and [t.name for t in chat.tools] == ["get_weather"]
    assert [m.role for m in chat.messages] == ["system", "user", "assistant", "tool"]
    assert chat.messages[2].tool_calls[0].arguments == {"city": "Paris"}
    result = chat.messages[3].tool_result
    assert result is not None and (result.name, result.content) == ("get_weather", "sunny")
    assert chat.body["items"][0] == {"type": "message", "role": "user", "text": "weather?"}


def test_an_item_inserted_after_another_keeps_the_order_and_a_deleted_one_leaves() -> None:
    s = session()
    s.add(Item("a", "message", role="user", text="one"))
    s.add(Item("c", "message", role="user", text="three"))
    s.add(Item("b", "message", role="user", text="two"), after="a")
    assert [m.text for m in s.messages] == ["one", "two", "three"]
    assert [m.index for m in s.messages] == [0, 1, 2]
    assert s.delete("a") and not s.delete("a")
    assert [(m.text, m.index) for m in s.messages] == [("two", 0), ("three", 1)]


def test_an_out_of_band_response_reads_only_its_own_input() -> None:
    s = session()
    s.add(Item("a", "message", role="user", text="in the conversation"))
    chat = s.request(Ask(conversation=False, items=(Item("x", "message", role="user", text="aside"),)))
    assert [m.text for m in chat.messages] == ["aside"]


def test_audio_mockllm_made_is_heard_as_its_text_and_other_audio_as_its_length() -> None:
    assert heard(speak("book a table", "pcm")) == "book a table"
    assert heard(bytes(4800) + speak("after a pause", "pcm")) == "after a pause"
    assert heard(bytes(PCM_RATE * 2)) == "[1.0 seconds of audio]"


def plan(text: str = "one two three", **fields: object) -> MessagePlan:
    words = text.split(" ")
    chunks = (*(piece + " " for piece in words[:-1]), words[-1])
    return MessagePlan(model="m", text=text, text_chunks=chunks, input_tokens=5, output_tokens=3, **fields)  # type: ignore[arg-type]


def test_a_text_plan_is_begin_message_deltas_and_done_with_usage() -> None:
    response = b.plan_response(plan(), "text")
    assert response.beats == (
        b.Begin(),
        b.MessageStart("text"),
        b.TextDelta("one "),
        b.TextDelta("two "),
        b.TextDelta("three"),
        b.MessageEnd("text", "one two three"),
        b.Done("completed", None, 5, 3, 0),
    )


def test_an_audio_plan_says_its_text_in_pieces_that_join_to_audio_carrying_it() -> None:
    response = b.plan_response(plan(), "audio")
    deltas = [beat for beat in response.beats if isinstance(beat, b.AudioDelta)]
    assert [d.transcript for d in deltas] == ["one ", "two ", "three"]
    pcm = b"".join(d.pcm for d in deltas)
    assert all(len(d.pcm) % 2 == 0 for d in deltas)
    assert inband.read(pcm) == "one two three" and len(pcm) == len(speak("one two three", "pcm"))
    longer = b"".join(
        d.pcm
        for d in b.plan_response(plan("one two three four five six seven eight nine ten eleven twelve"), "audio").beats
        if isinstance(d, b.AudioDelta)
    )
    assert len(longer) > len(pcm)
    (done,) = [beat for beat in response.beats if isinstance(beat, b.Done)]
    assert done.audio_tokens > 0 and done.output_tokens == 3 + done.audio_tokens


def test_audio_seconds_and_a_scripted_wav_set_the_audio() -> None:
    two = b.plan_response(plan(audio_seconds=2.0), "audio")
    assert sum(len(d.pcm) for d in two.beats if isinstance(d, b.AudioDelta)) == 2 * PCM_RATE * 2
    wav = speak("hi", "wav")
    scripted = b.plan_response(plan(audio=wav), "audio")
    pcm = b"".join(d.pcm for d in scripted.beats if isinstance(d, b.AudioDelta))
    assert inband.read(pcm) == "hi" and not pcm.startswith(b"RIFF")


def test_tool_calls_follow_the_message_with_their_argument_fragments() -> None:
    call = PlannedToolCall("get_weather", {"city": "Paris"}, '{"city": "Paris"}', ('{"city": ', '"Paris"}'), "k" * 24)
    response = b.plan_response(MessagePlan(model="m", tool_calls=(call,), finish="tool_calls"), "audio")
    assert response.beats[1:-1] == (
        b.CallStart(0, call),
        b.CallDelta(0, call, '{"city": '),
        b.CallDelta(0, call, '"Paris"}'),
        b.CallEnd(0, call),
    )


def test_faults_stand_where_the_script_puts_them() -> None:
    cut = b.plan_response(plan(disconnect_after=2), "text")
    assert cut.beats[-1] == b.Cut() and [type(x) for x in cut.beats].count(b.TextDelta) == 2
    broken = b.plan_response(plan(stream_error="boom", stream_error_after=1), "text")
    assert broken.beats[-2:] == (b.StreamError("boom"), b.Done("failed", "error", 5, 3, 0, "boom"))
    slow = b.plan_response(plan(latency_s=0.5, chunk_interval_s=0.04), "text")
    assert slow.beats[:2] == (b.Begin(), b.Wait(0.5)) and slow.spacing_s == 0.04
    assert b.plan_response(ErrorPlan("m", 429, "Slow down.", latency_s=0.1), "text").beats == (
        b.Wait(0.1),
        b.Failed(429, "Slow down.", None),
    )
    assert b.plan_response(RawPlan("m", body={"x": 1}, has_body=True), "text").beats == (b.Raw({"x": 1}),)
    assert b.plan_response(HangPlan("m"), "text").beats == (b.Begin(), b.Hang())
    assert b.plan_response(None, "text", "no step matched").beats == (b.Failed(404, "no step matched", "no_match"),)
    assert b.plan_response(plan(finish="length"), "text").beats[-1].status == "incomplete"  # type: ignore[union-attr]
