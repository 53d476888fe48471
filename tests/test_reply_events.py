"""The provider-neutral reply events: their order, fragments and `interleave calls` are decided once,
for every adapter (runtime/providers/events.py)."""

from __future__ import annotations

from mockllm.runtime.providers import events
from mockllm.runtime.providers.base import Frame
from mockllm.runtime.providers.events import reply_events, stream_frames
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall


def _call(name: str, chunks: tuple[str, ...]) -> PlannedToolCall:
    text = "".join(chunks)
    return PlannedToolCall(name, None, text, chunks, key="k" * 24)


def _names(found: list[events.Event]) -> list[str]:
    return [type(e).__name__ for e in found]


def test_a_plain_answer() -> None:
    plan = MessagePlan(model="m", text="hi there", text_chunks=("hi ", "there"), input_tokens=3, output_tokens=2)
    found = list(reply_events(plan))
    assert found == [
        events.Start(),
        events.TextStart(),
        events.TextDelta("hi "),
        events.TextDelta("there"),
        events.TextEnd("hi there"),
        events.Finish("stop"),
        events.Usage(3, 2),
        events.End(),
    ]


def test_thinking_comes_first_and_an_empty_thinking_still_opens_and_closes() -> None:
    found = list(reply_events(MessagePlan(model="m", thinking="", refusal="no")))
    assert _names(found)[:5] == ["Start", "ThinkingStart", "ThinkingEnd", "TextStart", "TextEnd"]
    assert events.Refusal("no") in found
    thought = list(reply_events(MessagePlan(model="m", thinking="a b", thinking_chunks=("a ", "b"))))
    assert [e.text for e in thought if isinstance(e, events.ThinkingDelta)] == ["a ", "b"]
    assert events.ThinkingStart() in thought and events.ThinkingEnd("a b") in thought


def test_calls_one_after_another_or_interleaved() -> None:
    one, two = _call("a", ('{"x":', "1}")), _call("b", ('{"y":', "2", "}"))
    plain = [e for e in reply_events(MessagePlan(model="m", tool_calls=(one, two))) if "Tool" in type(e).__name__]
    assert [(type(e).__name__, e.index) for e in plain] == [
        ("ToolCallStart", 0),
        ("ToolArgsDelta", 0),
        ("ToolArgsDelta", 0),
        ("ToolCallEnd", 0),
        ("ToolCallStart", 1),
        ("ToolArgsDelta", 1),
        ("ToolArgsDelta", 1),
        ("ToolArgsDelta", 1),
        ("ToolCallEnd", 1),
    ]
    plan = MessagePlan(model="m", tool_calls=(one, two), interleave_calls=True)
    mixed = [
        e for e in reply_events(plan) if isinstance(e, events.ToolCallStart | events.ToolArgsDelta | events.ToolCallEnd)
    ]
    assert [e.text for e in mixed if isinstance(e, events.ToolArgsDelta)] == ['{"x":', '{"y":', "1}", "2", "}"]
    assert _names(mixed)[:2] == ["ToolCallStart", "ToolCallStart"]
    assert _names(mixed)[-2:] == ["ToolCallEnd", "ToolCallEnd"]
    sequential = [e for e in reply_events(plan, interleave=False) if isinstance(e, events.ToolArgsDelta)]
    assert [e.index for e in sequential] == [0, 0, 1, 1, 1]


class _Counting:
    """A framer that frames each delta as one content frame and everything else as nothing."""

    def frame(self, event: events.Event) -> list[Frame]:
        if isinstance(event, events.TextDelta | events.ThinkingDelta | events.ToolArgsDelta):
            return [Frame(event.text.encode(), content=True)]
        return []


def test_stream_frames_joins_what_the_framer_makes() -> None:
    plan = MessagePlan(model="m", text="ab", text_chunks=("a", "b"), tool_calls=(_call("t", ("{", "}")),))
    frames = stream_frames(plan, _Counting())
    assert [f.data for f in frames] == [b"a", b"b", b"{", b"}"]
    assert all(f.content for f in frames)
