from __future__ import annotations

import sys
import threading
import types
from typing import Any

import attrs
import pytest

from mockllm.dsl.machines.compiled import START, CompiledLibrary, CompiledStep, Machine
from mockllm.dsl.span import Span
from mockllm.dsl.tree import nodes as n
from mockllm.runtime.clock import FakeClock
from mockllm.runtime.engine.conversations import fingerprint
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.engine.journal import Delivery
from mockllm.runtime.providers.responses import CONTINUATION
from mockllm.runtime.reply.ids import call_key
from mockllm.runtime.reply.plan import ErrorPlan
from mockllm.runtime.request import ChatRequest, Message, Tool, ToolCall, ToolResult

FILE = "weather.mockllm"


def c(kind: str, op: str, value: Any = None, arg: str | None = None) -> n.Condition:
    return n.Condition(n.Subject(kind, arg), n.Predicate(op, value))  # type: ignore[arg-type]


def user_says(text: str) -> n.Condition:
    return c("last_user_message", "contains", text)


def says(text: str) -> n.ReplyBlock:
    return n.ReplyBlock((n.Text(text),))


def step(
    index: int,
    name: str,
    *conditions: n.Condition,
    predecessor: int | None = None,
    max_uses: int | None = 1,
    reply: n.ReplyBlock | None = None,
    captures: tuple[n.Capture, ...] = (),
    expects: tuple[n.Condition, ...] = (),
) -> CompiledStep:
    return CompiledStep(
        index=index,
        name=name,
        predecessor=(index - 1 if index > 0 else START) if predecessor is None else predecessor,
        max_uses=max_uses,
        conditions=conditions,
        captures=captures,
        expects=expects,
        reply=reply or says(name),
        span=Span(FILE, 10 + 5 * index, 5, 10 + 5 * index, 9),
    )


def machine(
    name: str, *steps: CompiledStep, order_any: bool = False, lets: tuple[n.Let, ...] = (), load_order: int = 0
) -> Machine:
    return Machine(name, 0, load_order, order_any, steps, lets=lets, file=FILE, span=Span(FILE, 1, 1, 1, 2))


def library(*machines: Machine, fallback: n.ReplyBlock | None = None) -> CompiledLibrary:
    return CompiledLibrary(machines, fallback=fallback)


def chat(*texts: str, conversation: str | None = None, provider: str = "openai", **kw: Any) -> ChatRequest:
    """A history alternating user and assistant messages, ending with the user's ``texts[-1]``."""
    messages = tuple(Message("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts))
    headers = {"x-mockllm-conversation": conversation} if conversation else {}
    base: dict[str, Any] = {
        "provider": provider,
        "endpoint": "/v1/chat/completions",
        "model": "gpt-4o",
        "stream": False,
        "messages": messages,
        "headers": headers,
    }
    base.update(kw)
    return ChatRequest(**base)


def text_of(engine: Engine, request: ChatRequest) -> str | None:
    plan = engine.handle(request).plan
    return None if plan is None else plan.text


# ---------------------------------------------------------------------------------------------------------
# Selection


def test_file_order_steps_run_one_after_another() -> None:
    m = machine("Greet", step(0, "hello", user_says("hi")), step(1, "again", user_says("hi")))
    engine = Engine(library(m))
    assert text_of(engine, chat("hi", conversation="a")) == "hello"
    assert text_of(engine, chat("hi", conversation="a")) == "again"
    out = engine.handle(chat("hi", conversation="a"))
    assert out.plan is None and out.no_match is not None


def test_second_step_is_not_eligible_before_the_first() -> None:
    m = machine("Flow", step(0, "first", user_says("one")), step(1, "second", user_says("two")))
    engine = Engine(library(m))
    out = engine.handle(chat("two", conversation="a"))
    assert out.plan is None
    assert out.no_match is not None
    msg = out.no_match.message
    assert msg.startswith("mockllm: no step matched")
    assert "waits for step `first` to be used up; this conversation is at `start`" in msg
    assert "weather.mockllm:15:5" in msg
    assert text_of(engine, chat("one", conversation="a")) == "first"
    assert text_of(engine, chat("two", conversation="a")) == "second"


def test_after_branches_first_matching_alternative_wins() -> None:
    m = machine(
        "Branch",
        step(0, "ask", user_says("ask")),
        step(1, "yes", user_says("yes"), predecessor=0),
        step(2, "either", predecessor=0),
        step(3, "after_yes", predecessor=1),
    )
    engine = Engine(library(m))
    assert text_of(engine, chat("ask", conversation="a")) == "ask"
    assert text_of(engine, chat("yes please", conversation="a")) == "yes"
    assert text_of(engine, chat("anything", conversation="a")) == "after_yes"
    assert text_of(engine, chat("ask", conversation="b")) == "ask"
    assert text_of(engine, chat("no", conversation="b")) == "either"


def test_order_any_first_unconsumed_match_wins() -> None:
    m = machine("Any", step(0, "a", user_says("x")), step(1, "b", user_says("x")), order_any=True)
    engine = Engine(library(m))
    assert text_of(engine, chat("x", conversation="1")) == "a"
    assert text_of(engine, chat("x", conversation="1")) == "b"
    assert engine.handle(chat("x", conversation="1")).plan is None
    engine2 = Engine(
        library(machine("Any", step(0, "a", user_says("a")), step(1, "b", user_says("b")), order_any=True))
    )
    assert text_of(engine2, chat("b", conversation="1")) == "b"
    assert text_of(engine2, chat("a", conversation="1")) == "a"


def test_repeat_and_always() -> None:
    m = machine(
        "Retry",
        step(0, "fail", max_uses=2, reply=n.ReplyBlock((n.Error(429, "slow down"),))),
        step(1, "ok", max_uses=None),
    )
    engine = Engine(library(m))
    outs = [engine.handle(chat("q", conversation="a")) for _ in range(5)]
    assert [o.step for o in outs] == ["fail", "fail", "ok", "ok", "ok"]
    assert isinstance(outs[0].plan, ErrorPlan) and outs[0].plan.status == 429
    state = engine.conversations()[0]["machines"][0]
    assert state["position"] == "fail"  # `always` never moves the position
    assert state["uses"] == {"fail": 2, "ok": 3}


def test_machines_in_library_order_priority_first() -> None:
    high = attrs.evolve(machine("High", step(0, "high", max_uses=None)), priority=10)
    low = machine("Low", step(0, "low", max_uses=None), load_order=1)
    engine = Engine(library(high, low))
    assert text_of(engine, chat("x")) == "high"
    out = engine.handle(chat("x"))
    assert (out.scenario, out.step) == ("High", "high")


def test_exhausted_scenario_lets_the_next_one_answer() -> None:
    engine = Engine(
        library(machine("Once", step(0, "once")), machine("Then", step(0, "then", max_uses=None), load_order=1))
    )
    assert text_of(engine, chat("x", conversation="a")) == "once"
    assert text_of(engine, chat("x", conversation="a")) == "then"


# ---------------------------------------------------------------------------------------------------------
# Captures, templates, expectations


def test_captures_lets_and_request_values_in_templates() -> None:
    cap = n.Capture("city", n.Subject("last_user_message"), n.Regex(r"weather in (\w+)"))
    m = machine(
        "Weather",
        step(
            0,
            "ask",
            user_says("weather"),
            captures=(cap,),
            reply=n.ReplyBlock((n.ToolCall("get_weather", {"city": "{{city}}", "unit": "{{unit}}"}),)),
        ),
        step(
            1,
            "answer",
            c("tool_result", "present", arg="get_weather"),
            reply=says(
                "{{city}}: {{tool_result.get_weather}} ({{request.model}}, {{greeting}}; {{request.last_user_message}})"
            ),
        ),
        lets=(n.Let("unit", "celsius"), n.Let("city", "nowhere"), n.Let("greeting", "hej")),
    )
    engine = Engine(library(m))
    first = engine.handle(chat("weather in Oslo?", conversation="w"))
    assert first.plan is not None
    call = first.plan.tool_calls[0]
    assert call.arguments == {"city": "Oslo", "unit": "celsius"}  # the capture shadows the let
    assert call.key == call_key("w", "mock", 1)
    history = (
        Message("user", "weather in Oslo?"),
        Message("assistant", tool_calls=(ToolCall("call_mock_1", "get_weather", {"city": "Oslo"}),)),
        Message("tool", tool_result=ToolResult("call_mock_1", "get_weather", "12C")),
    )
    second = engine.handle(chat(conversation="w", messages=history))
    assert second.plan is not None
    assert second.plan.text == "Oslo: 12C (gpt-4o, hej; weather in Oslo?)"
    assert engine.conversations()[0]["machines"][0]["captures"] == {"city": "Oslo"}


def test_tool_call_keys_count_calls_already_in_history() -> None:
    m = machine("Calls", step(0, "call", max_uses=None, reply=n.ReplyBlock((n.ToolCall("f", {}), n.ToolCall("g", {})))))
    engine = Engine(library(m))
    history = (
        Message("user", "go"),
        Message("assistant", tool_calls=(ToolCall("call_mock_1", "f", {}), ToolCall("call_mock_2", "g", {}))),
        Message("tool", tool_result=ToolResult("call_mock_1", "f", "1")),
        Message("tool", tool_result=ToolResult("call_mock_2", "g", "2")),
    )
    out = engine.handle(chat(messages=history))
    assert out.plan is not None
    assert [t.key for t in out.plan.tool_calls] == [call_key(out.conversation, "mock", n) for n in (3, 4)]


def test_tool_call_ids_are_unique_across_conversations_and_stable_within_one() -> None:
    m = machine("Calls", step(0, "call", max_uses=None, reply=n.ReplyBlock((n.ToolCall("f", {}),))))
    engine = Engine(library(m))
    keys = [engine.handle(chat(conversation=c)).plan.tool_calls[0].key for c in ("a", "b", "a")]  # type: ignore[union-attr]
    assert keys[0] != keys[1] and keys[0] == keys[2]
    assert len(keys[0]) == 24 and keys[0].isalnum()


def test_failed_capture_means_no_match_and_is_reported() -> None:
    cap = n.Capture("city", n.Subject("last_user_message"), n.Regex(r"weather in (\w+)"))
    engine = Engine(library(machine("Weather", step(0, "ask", user_says("weather"), captures=(cap,)))))
    out = engine.handle(chat("weather please"))
    assert out.plan is None and out.no_match is not None
    cand = out.no_match.candidates[0]
    assert cand.failed[0].condition == r"capture city from last user message /weather in (\w+)/"
    assert cand.failed[0].seen == '"weather please"'


def test_expectation_failure_is_a_400_recorded_in_journal_and_verify() -> None:
    expect = c("model", "is", "gpt-4.1")
    engine = Engine(library(machine("Strict", step(0, "ask", expects=(expect,)))))
    out = engine.handle(chat("x"))
    assert out.step == "ask"
    assert isinstance(out.plan, ErrorPlan) and out.plan.status == 400
    msg = out.plan.message
    assert msg.startswith("mockllm: expectation failed:")
    assert 'model is "gpt-4.1"' in msg and 'seen "gpt-4o"' in msg and "weather.mockllm:10:5" in msg
    assert out.expectation_failed is not None
    entry = engine.journal()[-1]
    assert entry["status"] == 400 and entry["expectation_failed"] == out.expectation_failed
    report = engine.verify()
    assert len(report["expectation_failures"]) == 1 and not report["ok"]
    # the step was still selected: the scenario moved on
    assert engine.conversations()[0]["machines"][0]["position"] == "ask"


def test_a_turn_writes_each_field_of_its_entry_and_outcome_in_its_place() -> None:
    """Engine.turn builds the journal entry and the outcome positionally (for speed): every field,
    each with a value no other field has, lands where it belongs."""
    expect = c("model", "is", "gpt-4.1")
    engine = Engine(library(machine("Strict", step(0, "ask", expects=(expect,)))), clock=FakeClock(1234.5))
    request = chat("x", conversation="conv-1", provider="anthropic", stream=True, body={"k": "v"}, body_size=9)
    out = engine.handle(request)
    entry = engine._journal.entries()[-1]
    assert (entry.id, entry.time, entry.conversation) == (out.entry_id, 1234.5, "conv-1")
    assert (entry.provider, entry.endpoint, entry.model, entry.stream) == (
        "anthropic",
        "/v1/chat/completions",
        "gpt-4o",
        True,
    )
    assert (entry.planned, entry.scenario, entry.step, entry.location) == (400, "Strict", "ask", "weather.mockllm:10:5")
    assert (entry.fallback, entry.echo, entry.no_match) == (False, False, None)
    assert entry.expectation_failed == out.expectation_failed and "gpt-4.1" in (out.expectation_failed or "")
    assert entry.response_id == out.response_id and len(out.response_id) == 50
    assert entry.remark is None and entry.rejected is None and entry.delivery is None
    assert (entry.body_text, entry.body_bound, entry.operation, entry.attachments) == ('{"k":"v"}', 9, "chat", ())
    assert (out.conversation, out.scenario, out.step, out.step_span.line, out.fallback) == (
        "conv-1",
        "Strict",
        "ask",
        10,
        False,
    )
    assert isinstance(out.plan, ErrorPlan) and out.no_match is None


def test_expectation_that_holds_answers_normally() -> None:
    engine = Engine(library(machine("Ok", step(0, "ask", expects=(c("model", "glob", "gpt-*"),)))))
    out = engine.handle(chat("x"))
    assert out.plan is not None and out.plan.text == "ask" and out.expectation_failed is None


# ---------------------------------------------------------------------------------------------------------
# No match, fallback, echo


def test_fallback_answers_when_nothing_matches_and_consumes_nothing() -> None:
    m = machine("Only", step(0, "only", user_says("magic")))
    engine = Engine(library(m, fallback=says("fallback for {{request.last_user_message}}")))
    out = engine.handle(chat("nothing"))
    assert out.fallback and out.plan is not None and out.plan.text == "fallback for nothing"
    assert out.no_match is None
    assert engine.verify()["unmatched"] == []
    assert engine.journal()[-1]["fallback"] is True
    assert text_of(engine, chat("magic")) == "only"


def test_no_match_report_names_nearest_steps_conditions_and_values() -> None:
    weather = machine(
        "Weather",
        step(0, "ask_for_weather", user_says("weather"), c("tools", "include", "get_weather")),
        step(1, "final_answer", c("last_user_message", "contains", "hello")),
    )
    other = machine(
        "Other", step(0, "a", c("model", "is", "claude"), user_says("x"), c("stream", "is", True)), load_order=1
    )
    engine = Engine(library(weather, other))
    out = engine.handle(chat("hello", tools=(Tool("get_time"),)))
    assert out.plan is None and out.no_match is not None
    report = out.no_match
    msg = report.message
    assert msg.startswith("mockllm: no step matched")
    assert 'scenario "Weather", step `ask_for_weather` (weather.mockllm:10:5)' in msg
    assert 'last user message contains "weather" — seen "hello"' in msg
    assert 'tools include "get_weather" — seen ["get_time"]' in msg
    assert 'model is "claude" — seen "gpt-4o"' in msg
    assert "step `final_answer` (weather.mockllm:15:5): waits for step `ask_for_weather`" in msg
    names = [(cand.scenario, cand.step) for cand in report.candidates]
    assert names == [("Weather", "ask_for_weather"), ("Other", "a"), ("Weather", "final_answer")]
    assert [len(cand.failed) for cand in report.candidates] == [2, 3, 0]
    entry = engine.verify()["unmatched"][0]
    assert entry["no_match"]["candidates"][0]["location"] == "weather.mockllm:10:5"
    assert entry["status"] == 404


def test_no_match_keeps_at_most_three_nearest() -> None:
    m = machine("Many", *(step(i, f"s{i}", user_says("z" * (i + 1))) for i in range(6)), order_any=True)
    out = Engine(library(m)).handle(chat("q"))
    assert out.no_match is not None and len(out.no_match.candidates) == 3


def test_used_up_steps_are_explained() -> None:
    engine = Engine(library(machine("Once", step(0, "once"))))
    engine.handle(chat("x", conversation="a"))
    out = engine.handle(chat("x", conversation="a"))
    assert out.no_match is not None
    assert "`once` (weather.mockllm:10:5): is used up in this conversation (it runs once)" in out.no_match.message


def test_empty_library_says_so() -> None:
    out = Engine(library()).handle(chat("x"))
    assert out.no_match is not None and "no scenarios" in out.no_match.message


def _fake_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    @attrs.frozen
    class Answer:
        text: str
        tool_calls: tuple[tuple[str, Any], ...] = ()

    module = types.ModuleType("mockllm.runtime.echo.answer")
    module.echo_answer = lambda request: Answer(request.last_user_message() or "")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mockllm.runtime.echo.answer", module)


def test_no_library_answers_with_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_echo(monkeypatch)
    engine = Engine(None)
    out = engine.handle(chat("repeat me"))
    assert out.plan is not None and out.plan.text == "repeat me"
    assert out.scenario is None and not out.fallback
    assert engine.journal()[-1]["echo"] is True
    assert engine.verify()["ok"]


# ---------------------------------------------------------------------------------------------------------
# Conversations


def test_conversations_advance_independently() -> None:
    m = machine("Flow", step(0, "first"), step(1, "second"))
    engine = Engine(library(m))
    assert text_of(engine, chat("x", conversation="a")) == "first"
    assert text_of(engine, chat("x", conversation="b")) == "first"
    assert text_of(engine, chat("x", conversation="a")) == "second"
    assert engine.handle(chat("x", conversation="a")).plan is None
    assert text_of(engine, chat("x", conversation="b")) == "second"


def test_fingerprint_is_the_opening_whatever_the_provider() -> None:
    opening = chat("Plan a trip", system="be brief")
    later = chat("Plan a trip", "ok", "more", system="be brief", provider="anthropic")
    other = chat("Plan a holiday", system="be brief")
    via_messages = chat(
        "Plan a trip",
        messages=(Message("system", "be brief"), Message("user", "Plan a trip"), Message("assistant", "x")),
    )
    assert fingerprint(opening) == fingerprint(later) == fingerprint(via_messages)
    assert fingerprint(opening) != fingerprint(other)
    assert len(fingerprint(opening)) == 16
    m = machine("Flow", step(0, "first"), step(1, "second"))
    engine = Engine(library(m))
    assert text_of(engine, opening) == "first"
    assert text_of(engine, other) == "first"
    assert text_of(engine, later) == "second"


def test_many_threads_many_conversations_no_cross_talk() -> None:
    m = machine("Count", *(step(i, f"s{i}") for i in range(4)))
    engine = Engine(library(m))
    results: dict[str, list[str | None]] = {}
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for k in range(3):
                conv = f"t{t}-c{k}"
                results[conv] = [engine.handle(chat("x", conversation=conv)).step for _ in range(5)]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(50)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(results) == 150
    assert all(steps == ["s0", "s1", "s2", "s3", None] for steps in results.values())


def test_threads_sharing_one_conversation_each_step_used_once() -> None:
    m = machine("Shared", *(step(i, f"s{i}") for i in range(40)))
    engine = Engine(library(m))
    got: list[str | None] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(5):
            s = engine.handle(chat("x", conversation="same")).step
            with lock:
                got.append(s)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    used = [s for s in got if s is not None]
    assert sorted(used) == sorted(f"s{i}" for i in range(40))
    assert got.count(None) == 10


def test_eviction_by_count_is_least_recently_used() -> None:
    m = machine("Flow", step(0, "first"), step(1, "second"))
    engine = Engine(library(m), max_conversations=2)
    engine.handle(chat("x", conversation="a"))
    engine.handle(chat("x", conversation="b"))
    engine.handle(chat("x", conversation="a"))  # a is now most recent
    engine.handle(chat("x", conversation="c"))  # evicts b
    keys = {row["conversation"] for row in engine.conversations()}
    assert keys == {"a", "c"}
    assert text_of(engine, chat("x", conversation="b")) == "first"  # b starts afresh


def test_eviction_by_idle_time() -> None:
    clock = FakeClock()
    m = machine("Flow", step(0, "first"), step(1, "second"))
    engine = Engine(library(m), clock=clock, idle_seconds=60)
    engine.handle(chat("x", conversation="a"))
    clock.advance(30)
    engine.handle(chat("x", conversation="b"))
    clock.advance(45)  # a idle 75 s, b idle 45 s
    assert {row["conversation"] for row in engine.conversations()} == {"b"}
    assert text_of(engine, chat("x", conversation="a")) == "first"
    assert text_of(engine, chat("x", conversation="b")) == "second"


def test_memory_stays_bounded_under_many_conversations() -> None:
    engine = Engine(library(machine("Flow", step(0, "first", max_uses=None))), max_conversations=500, journal_limit=100)
    for i in range(5000):
        engine.handle(chat("x", conversation=f"c{i}"))
    assert len(engine.conversations()) == 500
    assert len(engine.journal()) == 100


#: how the Responses adapter continues from kept answers (the engine reads it off the request)
KEPT = CONTINUATION


def test_responses_previous_response_id_continues_the_conversation() -> None:
    m = machine(
        "Agent",
        step(0, "call", user_says("weather"), reply=n.ReplyBlock((n.ToolCall("get_weather", {"city": "Rome"}),))),
        step(1, "answer", c("tool_result", "is", "sunny", arg="get_weather"), c("turn", "is", 1)),
    )
    engine = Engine(library(m))
    first = engine.handle(
        ChatRequest(
            "responses", "/v1/responses", "gpt-4o", False, (Message("user", "weather in Rome?"),), continuation=KEPT
        )
    )
    assert first.step == "call" and first.response_id
    # the follow-up carries only the tool output; the history lives on the server
    follow = ChatRequest(
        "responses",
        "/v1/responses",
        "gpt-4o",
        False,
        (Message("tool", tool_result=ToolResult("call_mock_1", "get_weather", "sunny")),),
        previous_response_id="resp_" + first.response_id,
        continuation=KEPT,
    )
    second = engine.handle(follow)
    assert second.step == "answer"
    assert second.conversation == first.conversation
    assert second.response_id != first.response_id
    missing = engine.handle(attrs.evolve(follow, previous_response_id="resp_nope"))
    assert isinstance(missing.plan, ErrorPlan) and missing.plan.status == 400
    assert "resp_nope" in missing.plan.message


def test_previous_response_history_carries_tool_call_ids() -> None:
    engine = Engine(library(machine("A", step(0, "call", reply=n.ReplyBlock((n.ToolCall("f", {}),))), step(1, "next"))))
    first = engine.handle(
        ChatRequest("responses", "/v1/responses", "m", False, (Message("user", "go"),), continuation=KEPT)
    )
    follow = ChatRequest(
        "responses",
        "/v1/responses",
        "m",
        False,
        (Message("tool", tool_result=ToolResult("call_mock_1", "f", "done")),),
        previous_response_id=first.response_id,
        continuation=KEPT,
    )
    out = engine.explain(follow)
    assert out.step == "next"
    assert out.conversation == first.conversation


# ---------------------------------------------------------------------------------------------------------
# Library reload, verify, reset, explain, journal


def test_load_keeps_state_of_unchanged_machines_and_drops_changed_ones() -> None:
    keep = machine("Keep", step(0, "k0", user_says("k")), step(1, "k1", user_says("k")))
    change = machine("Change", step(0, "c0", user_says("c")), step(1, "c1", user_says("c")), load_order=1)
    engine = Engine(library(keep, change))
    engine.handle(chat("k", conversation="a"))
    engine.handle(chat("c", conversation="a"))
    changed = machine("Change", step(0, "c0", user_says("c")), step(1, "c1", user_says("cc")), load_order=1)
    engine.load(library(keep, changed))
    assert engine.library is not None and engine.library.machines[1] == changed
    assert text_of(engine, chat("k", conversation="a")) == "k1"
    assert text_of(engine, chat("c", conversation="a")) == "c0"


def test_verify_lists_unused_steps_until_reset() -> None:
    engine = Engine(library(machine("Flow", step(0, "first"), step(1, "second"))))
    engine.handle(chat("x"))
    report = engine.verify()
    assert report["unused_steps"] == [{"scenario": "Flow", "step": "second", "location": "weather.mockllm:15:5"}]
    assert report["ok"]
    engine.reset()
    assert len(engine.verify()["unused_steps"]) == 2
    assert engine.journal() == [] and engine.conversations() == []


def test_reset_one_conversation() -> None:
    engine = Engine(library(machine("Flow", step(0, "first"), step(1, "second"))))
    engine.handle(chat("x", conversation="a"))
    engine.handle(chat("x", conversation="b"))
    engine.reset("a")
    assert text_of(engine, chat("x", conversation="a")) == "first"
    assert text_of(engine, chat("x", conversation="b")) == "second"
    assert [e["conversation"] for e in engine.journal()] == ["b", "a", "b"]


def test_explain_changes_nothing() -> None:
    engine = Engine(library(machine("Flow", step(0, "first"), step(1, "second"))))
    for _ in range(3):
        out = engine.explain(chat("x", conversation="a"))
        assert out.step == "first"
    assert engine.journal() == [] and engine.conversations() == []
    engine.handle(chat("x", conversation="a"))
    assert engine.explain(chat("x", conversation="a")).step == "second"
    assert len(engine.journal()) == 1


def test_explain_reports_nearest_even_when_a_fallback_answers() -> None:
    engine = Engine(library(machine("Only", step(0, "only", user_says("magic"))), fallback=says("fb")))
    out = engine.explain(chat("nope"))
    assert out.fallback and out.no_match is not None
    assert out.no_match.candidates[0].step == "only"


def test_journal_entries_and_settle() -> None:
    clock = FakeClock(start=1000.0)
    engine = Engine(library(machine("Flow", step(0, "first", max_uses=None))), clock=clock)
    out = engine.handle(chat("x", conversation="a", stream=True))
    engine.settle(out.entry_id, Delivery(200, client_gone=True, note="client closed after 2 chunks"))
    entry = engine.journal()[0]
    assert entry["time"] == 1000.0
    assert entry["conversation"] == "a"
    assert (entry["provider"], entry["endpoint"], entry["model"]) == ("openai", "/v1/chat/completions", "gpt-4o")
    assert entry["matched"] == {"scenario": "Flow", "step": "first", "location": "weather.mockllm:10:5"}
    assert entry["status"] == 200 and entry["client_gone"] is True
    assert entry["note"] == "client closed after 2 chunks"
    engine.settle(9999, Delivery(500))  # an unknown entry is ignored


def test_response_ids_are_unique_and_deterministic() -> None:
    def ids() -> list[str]:
        engine = Engine(library(machine("Flow", step(0, "s", max_uses=None))))
        return [engine.handle(chat("x")).response_id for _ in range(20)]

    first = ids()
    assert len(set(first)) == 20
    assert first == ids()


def test_a_reply_that_cannot_be_built_is_a_500_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("mockllm.runtime.echo.answer")

    def broken(request: ChatRequest) -> Any:
        raise RuntimeError("schema too deep")

    module.echo_answer = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mockllm.runtime.echo.answer", module)
    out = Engine(None).handle(chat("x"))
    assert isinstance(out.plan, ErrorPlan) and out.plan.status == 500
    assert "schema too deep" in out.plan.message


# ---------------------------------------------------------------------------------------------------------
# mockllm explain


def _explain_files(tmp_path: Any, body: dict[str, Any]) -> tuple[str, str]:
    import json

    from mockllm.dsl.tree.jsonform import to_json_text

    script = n.ScriptFile(
        "w.json",
        1,
        scenarios=(
            n.Scenario(
                "Weather",
                steps=(
                    n.Step(
                        "ask_for_weather",
                        conditions=(c("last_user_message", "contains", "weather"),),
                        reply=n.ReplyBlock((n.ToolCall("get_weather", {"city": "Paris"}),)),
                    ),
                ),
            ),
        ),
    )
    lib = tmp_path / "w.json"
    lib.write_text(to_json_text(script), encoding="utf-8")
    req = tmp_path / "req.json"
    req.write_text(json.dumps(body), encoding="utf-8")
    return str(lib), str(req)


def _args(library: str, request: str, **kw: Any) -> Any:
    return types.SimpleNamespace(library=library, request=request, provider=None, endpoint=None, format="text", **kw)


def test_explain_command_matched_and_unmatched(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from mockllm.explain import explain_command

    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "weather in Paris?"}]}
    lib, req = _explain_files(tmp_path, body)
    assert explain_command(_args(lib, req)) == 0
    out = capsys.readouterr().out
    assert 'matches scenario "Weather", step `ask_for_weather`' in out
    assert 'tool call get_weather {"city":"Paris"}' in out

    lib, req = _explain_files(tmp_path, {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]})
    assert explain_command(_args(lib, req)) == 1
    out = capsys.readouterr().out
    assert out.startswith("mockllm: no step matched")
    assert 'last user message contains "weather" — seen "hello"' in out


def test_explain_command_broken_inputs(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from mockllm.explain import explain_command

    lib, req = _explain_files(tmp_path, {"model": "gpt-4o", "messages": []})
    (tmp_path / "broken.json").write_text('{"scenarios": 3}', encoding="utf-8")
    assert explain_command(_args(str(tmp_path / "broken.json"), req)) == 1
    assert "the library has errors" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert explain_command(_args(lib, str(tmp_path / "bad.json"))) == 1
    assert "is not JSON" in capsys.readouterr().err
    assert explain_command(_args(lib, str(tmp_path / "missing.json"))) == 1
    assert "cannot read" in capsys.readouterr().err


def test_guess_provider_from_body_shape() -> None:
    from mockllm.explain import guess_provider

    assert guess_provider({"contents": []}) == "gemini"
    assert guess_provider({"input": "hi", "model": "gpt-4o"}) == "responses"
    blocks = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}]
    assert guess_provider({"max_tokens": 10, "messages": blocks}) == "anthropic"
    assert guess_provider({"system": "x", "messages": []}) == "anthropic"
    assert guess_provider({"messages": [], "options": {"temperature": 0}}) == "ollama"
    text_parts = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert guess_provider({"max_tokens": 10, "messages": text_parts}) == "openai"
    assert guess_provider({"messages": []}) == "openai"


# ---------------------------------------------------------------------------------------------------------
# The prefilter index of long libraries selects exactly what a full scan selects


def _reference_select(
    lib: CompiledLibrary, states: dict[str, tuple[int, tuple[int, ...]]], request: ChatRequest
) -> str | None:
    """The selection docs/language.md §4 describes, written plainly with Machine.eligible/advance."""
    from mockllm.runtime.engine.conditions import capture, holds

    for m in lib.machines:
        position, uses = states.get(m.name, (START, (0,) * len(m.steps)))
        for idx in m.eligible(position, uses):
            st = m.steps[idx]
            if all(holds(cond, request) for cond in st.conditions) and all(
                capture(cap, request) is not None for cap in st.captures
            ):
                states[m.name] = m.advance(position, uses, idx)
                return f"{m.name}/{st.name}"
    return None


@pytest.mark.parametrize("seed", range(20))
def test_indexed_selection_equals_full_scan(seed: int) -> None:
    import random

    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "Alpha", "ALPHA", "zeta", "eta", "ab", "x"]

    def random_condition() -> n.Condition:
        kind = rng.choice(["last_user_message", "model", "header", "last_message"])
        arg = "x-tag" if kind == "header" else None
        op = rng.choice(["contains", "contains", "is", "not_contains", "glob"])
        value = rng.choice(words) if op != "glob" else rng.choice(["*a*", "gpt-*"])
        if kind == "model" and op == "is":
            value = rng.choice(["gpt-4o", "gpt-4.1"])
        return n.Condition(n.Subject(kind, arg), n.Predicate(op, value), rng.random() < 0.3)  # type: ignore[arg-type]

    machines = []
    for mi in range(12):
        count = rng.randint(1, 10)
        order_any = rng.random() < 0.4
        steps = []
        for i in range(count):
            predecessor = START if i == 0 else (i - 1 if rng.random() < 0.7 else rng.randrange(0, i))
            steps.append(
                step(
                    i,
                    f"s{i}",
                    *(random_condition() for _ in range(rng.choice([0, 1, 1, 2, 2, 3]))),
                    predecessor=predecessor,
                    max_uses=rng.choice([1, 1, 1, 2, 2, None]),
                )
            )
        machines.append(machine(f"m{mi}", *steps, order_any=order_any, load_order=mi))
    lib = library(*machines)
    assert lib.step_count() >= 12
    engine = Engine(lib)
    # pad with never-matching steps so the index is used whatever the random sizes
    padding = machine(
        "pad", *(step(i, f"p{i}", user_says(f"never-{i}"), predecessor=START) for i in range(70)), load_order=99
    )
    lib = library(*machines, padding)
    engine.load(lib)
    states: dict[str, tuple[int, tuple[int, ...]]] = {}
    for _ in range(60):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 3)))
        request = chat(
            text,
            conversation="one",
            model=rng.choice(["gpt-4o", "gpt-4.1", "claude"]),
            headers={"x-mockllm-conversation": "one", "x-tag": rng.choice(words)},
        )
        out = engine.handle(request)
        got = f"{out.scenario}/{out.step}" if out.step is not None else None
        assert got == _reference_select(lib, states, request)


def test_an_outcome_with_its_entry_id_keeps_every_other_field() -> None:
    """The shared state store sets the entry id after Redis commits: nothing else may change, whatever
    fields an outcome gains."""
    from mockllm.runtime.engine.outcome import NoMatchReport, Outcome

    values = {
        "conversation": "c1",
        "entry_id": 3,
        "plan": ErrorPlan("m", 400, "bad"),
        "scenario": "s",
        "step": "t",
        "step_span": Span("a.mockllm", 2, 3, 2, 9),
        "fallback": True,
        "no_match": NoMatchReport("mockllm: no step matched", ()),
        "expectation_failed": "expected",
        "response_id": "r1",
    }
    assert set(values) == {f.name for f in attrs.fields(Outcome)}, "a new field: give it a value here"
    outcome = Outcome(**values)
    moved = outcome.with_entry_id(7)
    assert attrs.asdict(moved, recurse=False) == {**values, "entry_id": 7}
    assert moved.step_span == values["step_span"]  # compared apart: not part of equality


def test_states_export_and_import_by_scenario_name_keeping_only_the_definitions_loaded() -> None:
    """What the shared state store writes per request: the states of the scenarios a conversation
    touched, each with its definition's digest; read back, a state written for another definition
    (or a scenario not loaded here) is left out; a used step is named by its scenario's digest."""
    from conftest import compile_text

    from mockllm.runtime.engine.conversations import MachineState

    text = "mockllm 1\n"
    for name in ("one", "two", "three"):
        text += f'\nscenario "{name}":\n    step a:\n        reply:\n            text "{name}"\n'
    engine = Engine(compile_text(text))
    loaded = engine._loaded
    assert loaded is not None
    one, three = loaded.generations[0], loaded.generations[2]
    states = {
        "three": MachineState(three, 0, ((0, 2),), (("city", "Paris"),)),
        "one": MachineState(one, 0, ((0, 1),)),
        "gone": MachineState(one),  # no such scenario here
        "two": MachineState(10_000),  # built for another definition
    }
    exported = engine.export_states(states)
    digests = loaded.digests()
    assert exported == {
        "three": [digests[2], 0, ((0, 2),), (("city", "Paris"),)],
        "one": [digests[0], 0, ((0, 1),), ()],
    }
    assert engine.import_states(exported) == {"three": states["three"], "one": states["one"]}
    assert engine.import_states({"one": ["0" * 16, 0, [], []], "gone": exported["one"]}) == {}
    assert engine.used_member(("two", loaded.generations[1], 0)) == f"{digests[1]}:0"
    assert engine.used_member(("two", 10_000, 0)) is None
    assert engine.used_member(("gone", one, 0)) is None
