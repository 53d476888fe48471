"""The no-match report tells a QA engineer why a request found no step (issue 13, items 1 to 3).

Each test drives the engine with a real script and the injected clock, and reads the report the 404
and the test failure carry."""

from __future__ import annotations

from typing import Any

from trip_scenario import TRIP

import mockllm
from mockllm.runtime.clock import FakeClock
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.request import ChatRequest, Message, ToolCall, ToolResult

UNRELATED = "".join(
    f"""
scenario "Unrelated {i}":
    step only:
        when:
            last user message contains "topic {i}"
        reply:
            text "ok {i}"
"""
    for i in range(4)
)


def engine(*texts: str) -> Engine:
    return Engine(mockllm.load_or_raise(*texts), clock=FakeClock())


def request(*messages: Message, conversation: str | None = None) -> ChatRequest:
    headers = {"x-mockllm-conversation": conversation} if conversation else {}
    return ChatRequest(
        provider="openai",
        endpoint="/v1/chat/completions",
        model="gpt-4o",
        stream=False,
        messages=messages,
        headers=headers,
    )


def user(text: str) -> Message:
    return Message("user", text)


def tool_turn(city: str, result: str) -> tuple[Message, ...]:
    call = ToolCall("call_1", "search_flights", {"city": city})
    return (
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", tool_result=ToolResult("call_1", "search_flights", result)),
    )


def test_the_report_leads_with_the_step_the_conversation_waits_for() -> None:
    """Before: the three candidates with the fewest failed conditions, ties by load order, so four
    unrelated first steps (one failed condition each) pushed out `flights_found` (two)."""
    eng = engine(TRIP + UNRELATED)
    opening = user("Plan a trip to Lisbon")
    assert eng.handle(request(opening)).step == "ask_city"
    out = eng.handle(request(opening, *tool_turn("Lisbon", "Madrid: sold out")))
    assert out.no_match is not None
    msg = out.no_match.message
    waiting, _, rest = msg.partition("Other near misses:")
    assert "This conversation was waiting for:" in waiting
    assert 'scenario "Trip planner" (at step `ask_city`, 1 of 2 steps used), next:' in waiting
    assert "step `flights_found`" in waiting
    assert (
        '✗ tool result for "search_flights" contains "{{city}}" (city = "Lisbon") — seen "Madrid: sold out"' in waiting
    )
    assert '✗ tool result for "search_flights" not contains "sold out" — seen "Madrid: sold out"' in waiting
    assert "Unrelated 0" in rest and "Unrelated" not in waiting
    assert [c.step for c in out.no_match.candidates if c.waiting] == ["flights_found"]


def test_every_condition_of_a_waited_step_shows_its_verdict() -> None:
    eng = engine(TRIP)
    opening = user("Plan a trip to Lisbon")
    eng.handle(request(opening))
    out = eng.handle(request(opening, *tool_turn("Lisbon", "Lisbon: sold out")))
    assert out.no_match is not None
    msg = out.no_match.message
    assert '✓ tool result for "search_flights" contains "{{city}}" (city = "Lisbon") — seen "Lisbon: sold out"' in msg
    assert '✗ tool result for "search_flights" not contains "sold out"' in msg


def test_a_capture_in_a_condition_is_this_conversations_value() -> None:
    """Before: `contains "{{city}}"` compared with the literal text `{{city}}` and never held."""
    eng = engine(TRIP)
    for city in ("Lisbon", "Oslo"):
        opening = user(f"Plan a trip to {city}")
        assert eng.handle(request(opening, conversation=city)).step == "ask_city"
    lisbon = eng.handle(
        request(user("Plan a trip to Lisbon"), *tool_turn("Lisbon", "3 flights to Lisbon"), conversation="Lisbon")
    )
    assert lisbon.step == "flights_found"
    oslo = eng.handle(
        request(user("Plan a trip to Oslo"), *tool_turn("Oslo", "3 flights to Lisbon"), conversation="Oslo")
    )
    assert oslo.step is None  # Oslo's conversation captured "Oslo": the Lisbon result does not satisfy it


def test_a_capture_in_a_regex_condition_is_matched_literally() -> None:
    script = """
scenario "Lang":
    step ask:
        when:
            last user message contains "about"
        capture lang from last user message /about (\\S+)/
        reply:
            text "Which version of {{lang}}?"

    step version:
        when:
            last user message matches /^{{lang}} \\d+$/
        reply:
            text "ok"
"""
    eng = engine(script)
    eng.handle(request(user("about C++"), conversation="c"))
    assert (
        eng.handle(request(user("about C++"), Message("assistant", "?"), user("C++ 20"), conversation="c")).step
        == "version"
    )
    eng.handle(request(user("about C++"), conversation="d"))
    assert (
        eng.handle(request(user("about C++"), Message("assistant", "?"), user("CCC 20"), conversation="d")).step is None
    )


def test_check_reports_an_unknown_capture_in_a_condition() -> None:
    script = """
scenario "Trip":
    step ask:
        when:
            last user message contains "trip to"
        capture city from last user message /trip to (\\w+)/
        reply:
            text "ok"

    step next:
        when:
            tool result for "search" contains "{{cty}}"
        reply:
            text "done"
"""
    result = mockllm.load(script)
    assert not result.ok
    (diag,) = result.errors
    assert diag.code == "unknown-name" and "{{cty}}" in diag.message
    assert diag.hint is not None and "{{city}}" in diag.hint
    assert (diag.span.line, diag.span.column) == (12, 48)


def test_check_reports_a_condition_reading_its_own_steps_capture() -> None:
    script = """
scenario "Trip":
    step ask:
        when:
            last user message contains "{{city}}"
        capture city from last user message /trip to (\\w+)/
        reply:
            text "ok"
"""
    result = mockllm.load(script)
    assert [d.code for d in result.errors] == ["capture-order"]
    assert "conditions are checked before" in result.errors[0].message


def test_a_second_chat_with_the_same_opening_is_told_why_it_shares_a_conversation() -> None:
    """Before: the second chat got a 404 listing only the steps, with no hint that it had landed in
    the first chat's conversation."""
    eng = engine(TRIP)
    opening = user("Plan a trip to Lisbon")
    eng.handle(request(opening))  # the first chat takes step ask_city
    second = eng.handle(request(opening))  # a second chat, same opening, no header
    assert second.no_match is not None
    note = second.no_match.shared_opening
    assert "opening matched an existing conversation" in note
    assert 'scenario "Trip planner" is at step `ask_city`' in note
    assert "x-mockllm-conversation" in note and "mockllm.conversation_header" in note
    assert note in second.no_match.message
    # with headers the two chats are apart and the second one matches
    eng.reset()
    eng.handle(request(opening, conversation="first"))
    assert eng.handle(request(opening, conversation="second")).step == "ask_city"


def test_no_shared_opening_note_for_a_later_turn_or_an_explicit_conversation() -> None:
    eng = engine(TRIP)
    opening = user("Plan a trip to Lisbon")
    eng.handle(request(opening, conversation="x"))
    out = eng.handle(request(opening, conversation="x"))
    assert out.no_match is not None and out.no_match.shared_opening == ""
    eng.handle(request(opening))
    later = eng.handle(request(opening, *tool_turn("Lisbon", "sold out")))
    assert later.no_match is not None and later.no_match.shared_opening == ""


def test_the_report_round_trips_through_json() -> None:
    eng = engine(TRIP + UNRELATED)
    opening = user("Plan a trip to Lisbon")
    eng.handle(request(opening))
    report = eng.handle(request(opening)).no_match
    assert report is not None
    data: dict[str, Any] = report.to_json()
    assert type(report).from_json(data).to_json() == data
