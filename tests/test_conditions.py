from __future__ import annotations

from typing import Any

import pytest

from mockllm.dsl.tree.nodes import Capture, Condition, Predicate, Regex, Subject
from mockllm.runtime.engine.conditions import capture, compile_regex, evaluate, holds
from mockllm.runtime.request import ChatRequest, Message, Tool, ToolCall, ToolResult


def chat(**kw: Any) -> ChatRequest:
    base: dict[str, Any] = {
        "provider": "openai",
        "endpoint": "/v1/chat/completions",
        "model": "gpt-4o-mini",
        "stream": False,
        "messages": (
            Message("system", "You are terse."),
            Message("user", "What is the weather in Paris?"),
            Message("assistant", "", tool_calls=(ToolCall("call_1", "get_weather", {"city": "Paris"}),)),
            Message("tool", tool_result=ToolResult("call_1", "get_weather", '{"temp": 18}')),
            Message("assistant", "It is 18 degrees."),
            Message("user", "Thanks, bye"),
        ),
        "system": "You are terse.",
        "tools": (Tool("get_weather"), Tool("get_time")),
        "headers": {"x-trace": "abc-123", "x-count": "7"},
        "body": {"model": "gpt-4o-mini", "metadata": {"tags": ["a", {"k": 3}]}, "n": 2, "flag": True, "nothing": None},
    }
    base.update(kw)
    return ChatRequest(**base)


def cond(kind: str, op: str, value: Any = None, arg: str | None = None, ignore_case: bool = False) -> Condition:
    return Condition(Subject(kind, arg), Predicate(op, value), ignore_case)  # type: ignore[arg-type]


CASES = [
    # subject, arg, op, value, ignore_case, expected holds, expected seen
    ("provider", None, "is", "openai", False, True, '"openai"'),
    ("provider", None, "is_not", "anthropic", False, True, '"openai"'),
    ("endpoint", None, "is", "/v1/chat/completions", False, True, '"/v1/chat/completions"'),
    ("endpoint", None, "glob", "/v1/*", False, True, '"/v1/chat/completions"'),
    ("model", None, "glob", "gpt-4o*", False, True, '"gpt-4o-mini"'),
    ("model", None, "glob", "GPT-4O*", False, False, '"gpt-4o-mini"'),
    ("model", None, "glob", "GPT-4O*", True, True, '"gpt-4o-mini"'),
    ("model", None, "glob", "gpt-4o", False, False, '"gpt-4o-mini"'),  # whole value
    ("stream", None, "is", False, False, True, "false"),
    ("stream", None, "is", True, False, False, "false"),
    ("stream", None, "is", 0, False, False, "false"),  # typed: 0 is not false
    ("last_user_message", None, "contains", "bye", False, True, '"Thanks, bye"'),
    ("last_user_message", None, "contains", "BYE", False, False, '"Thanks, bye"'),
    ("last_user_message", None, "contains", "BYE", True, True, '"Thanks, bye"'),
    ("last_user_message", None, "not_contains", "weather", False, True, '"Thanks, bye"'),
    ("last_user_message", None, "matches", Regex(r"^thanks", "i"), False, True, '"Thanks, bye"'),
    ("last_user_message", None, "matches", Regex(r"^thanks"), False, False, '"Thanks, bye"'),
    ("last_user_message", None, "matches", Regex(r"^thanks"), True, True, '"Thanks, bye"'),
    ("last_user_message", None, "not_matches", Regex(r"\d"), False, True, '"Thanks, bye"'),
    ("last_user_message", None, "is", "thanks, bye", True, True, '"Thanks, bye"'),
    ("last_user_message", None, "is", "thanks, bye", False, False, '"Thanks, bye"'),
    ("last_message", None, "is", "Thanks, bye", False, True, '"Thanks, bye"'),
    ("any_message", "user", "contains", "Paris", False, True, '["What is the weather in Paris?", "Thanks, bye"]'),
    ("any_message", "assistant", "contains", "18 degrees", False, True, '["", "It is 18 degrees."]'),
    ("any_message", "system", "is", "You are terse.", False, True, '["You are terse."]'),
    ("any_message", "tool", "contains", "temp", False, True, '["{\\"temp\\": 18}"]'),
    ("any_message", "user", "contains", "nowhere", False, False, '["What is the weather in Paris?", "Thanks, bye"]'),
    ("system_prompt", None, "contains", "terse", False, True, '"You are terse."'),
    ("tools", None, "include", "get_time", False, True, '["get_weather", "get_time"]'),
    ("tools", None, "include", "GET_TIME", True, True, '["get_weather", "get_time"]'),
    ("tools", None, "include", "send_email", False, False, '["get_weather", "get_time"]'),
    ("tools", None, "exclude", "send_email", False, True, '["get_weather", "get_time"]'),
    ("tools", None, "present", None, False, True, '["get_weather", "get_time"]'),
    ("tools", None, "absent", None, False, False, '["get_weather", "get_time"]'),
    ("tool_result", "get_weather", "present", None, False, True, '"{\\"temp\\": 18}"'),
    ("tool_result", "get_weather", "contains", "18", False, True, '"{\\"temp\\": 18}"'),
    ("tool_result", "get_weather", "error", None, False, False, '"{\\"temp\\": 18}"'),
    ("tool_result", "get_time", "absent", None, False, True, "absent"),
    ("tool_result", "get_time", "present", None, False, False, "absent"),
    ("header", "X-Trace", "is", "abc-123", False, True, '"abc-123"'),
    ("header", "x-trace", "matches", Regex(r"abc-\d+"), False, True, '"abc-123"'),
    ("header", "x-missing", "present", None, False, False, "absent"),
    ("header", "x-missing", "absent", None, False, True, "absent"),
    ("header", "x-missing", "contains", "a", False, False, "absent"),
    ("header", "x-count", "at_least", 7, False, True, '"7"'),
    ("header", "x-count", "is", 7, False, False, '"7"'),  # typed: the string "7" is not 7
    ("field", "metadata.tags.1.k", "is", 3, False, True, "3"),
    ("field", "metadata.tags.1.k", "at_least", 3, False, True, "3"),
    ("field", "metadata.tags.1.k", "at_most", 2, False, False, "3"),
    ("field", "metadata.tags.0", "is", "a", False, True, '"a"'),
    ("field", "metadata.tags", "include", "a", False, True, '["a", {"k": 3}]'),
    ("field", "metadata.tags.5", "absent", None, False, True, "absent"),
    ("field", "metadata.nope", "present", None, False, False, "absent"),
    ("field", "n", "is", 2.0, False, True, "2"),
    ("field", "flag", "is", True, False, True, "true"),
    ("field", "flag", "is", 1, False, False, "true"),
    ("field", "nothing", "is", None, False, True, "null"),
    ("field", "nothing", "present", None, False, True, "null"),
    ("field", "metadata", "is", {"tags": ["a", {"k": 3}]}, False, True, '{"tags": ["a", {"k": 3}]}'),
    ("turn", None, "is", 2, False, True, "2"),
    ("turn", None, "at_least", 2, False, True, "2"),
    ("turn", None, "at_most", 1, False, False, "2"),
]


@pytest.mark.parametrize(("kind", "arg", "op", "value", "ic", "expected", "seen"), CASES)
def test_subject_and_predicate(
    kind: str, arg: str | None, op: str, value: Any, ic: bool, expected: bool, seen: str
) -> None:
    c = cond(kind, op, value, arg, ic)
    assert evaluate(c, chat()) == (expected, seen)
    assert holds(c, chat()) is expected


def test_missing_values_fail_positive_string_predicates_and_show_absent() -> None:
    """No user message at all: positive predicates fail, their negations hold, the value seen is `absent`."""
    empty = chat(messages=(), system="", tools=(), body=None, headers={})
    for op, value, expected in [
        ("contains", "x", False),
        ("is", "x", False),
        ("matches", Regex("x"), False),
        ("glob", "*", False),
        ("not_contains", "x", True),
        ("is_not", "x", True),
        ("absent", None, True),
        ("present", None, False),
    ]:
        assert evaluate(cond("last_user_message", op, value), empty) == (expected, "absent")
    assert evaluate(cond("system_prompt", "contains", "x"), empty) == (False, "absent")
    assert evaluate(cond("tools", "include", "x"), empty) == (False, "absent")
    assert evaluate(cond("tools", "absent"), empty) == (True, "absent")
    assert evaluate(cond("any_message", "contains", "x", arg="user"), empty) == (False, "absent")
    assert evaluate(cond("any_message", "absent", arg="user"), empty) == (True, "absent")
    assert evaluate(cond("field", "present", arg="a.b"), empty) == (False, "absent")
    assert evaluate(cond("turn", "is", 0), empty) == (True, "0")


def test_last_message_reads_a_tool_result() -> None:
    c = chat(messages=(Message("user", "hi"), Message("tool", tool_result=ToolResult("c", "f", "done"))))
    assert evaluate(cond("last_message", "is", "done"), c) == (True, '"done"')


def test_tool_result_is_error_from_flag_or_json_error_key() -> None:
    flagged = chat(messages=(Message("tool", tool_result=ToolResult("c", "f", "boom", is_error=True)),))
    keyed = chat(messages=(Message("tool", tool_result=ToolResult("c", "f", '{"error": "nope"}')),))
    plain = chat(messages=(Message("tool", tool_result=ToolResult("c", "f", '["error"]')),))
    assert evaluate(cond("tool_result", "error", arg="f"), flagged) == (True, '"boom" (marked as an error)')
    assert holds(cond("tool_result", "error", arg="f"), keyed)
    assert not holds(cond("tool_result", "error", arg="f"), plain)
    assert not holds(cond("tool_result", "error", arg="g"), keyed)


def test_tool_result_reads_the_latest_result_for_that_tool() -> None:
    c = chat(
        messages=(
            Message("tool", tool_result=ToolResult("1", "f", "first")),
            Message("tool", tool_result=ToolResult("2", "g", "other")),
            Message("tool", tool_result=ToolResult("3", "f", "second")),
        )
    )
    assert evaluate(cond("tool_result", "is", "second", arg="f"), c) == (True, '"second"')


def test_any_message_negation_holds_when_some_message_lacks_it() -> None:
    c = chat()
    assert holds(cond("any_message", "not_contains", "Paris", arg="user"), c)
    assert not holds(cond("any_message", "not_contains", "terse", arg="system"), c)


def test_system_prompt_falls_back_to_system_messages() -> None:
    c = chat(system="", messages=(Message("system", "Be nice."), Message("user", "hi")))
    assert evaluate(cond("system_prompt", "is", "Be nice."), c) == (True, '"Be nice."')


def test_regex_flags_and_cache() -> None:
    assert compile_regex("a.b", "s") is compile_regex("a.b", "s")
    assert compile_regex("a.b", "s").search("a\nb")  # type: ignore[union-attr]
    assert compile_regex("^b", "m").search("a\nb")  # type: ignore[union-attr]
    assert compile_regex("a b  # comment", "x").search("ab")  # type: ignore[union-attr]
    assert compile_regex("(", "") is None
    c = chat(messages=(Message("user", "line one\nLINE two"),))
    assert holds(cond("last_user_message", "matches", Regex("^line two$", "im")), c)
    assert not holds(cond("last_user_message", "matches", Regex("^line two$", "m")), c)
    # a regex that does not compile never holds (the compiler rejects it first)
    assert not holds(cond("last_user_message", "matches", Regex("(")), c)


def test_long_values_are_shortened_in_seen() -> None:
    c = chat(messages=(Message("user", "x" * 1000),))
    ok, seen = evaluate(cond("last_user_message", "contains", "y"), c)
    assert not ok
    assert seen.endswith("(1000 characters)")
    assert len(seen) < 300


def test_capture_first_group_or_whole_match() -> None:
    c = chat()
    grouped = Capture("city", Subject("any_message", "user"), Regex(r"weather in (\w+)"))
    whole = Capture("word", Subject("last_user_message"), Regex(r"b\w+"))
    missing = Capture("n", Subject("header", "x-nope"), Regex(r".*"))
    assert capture(grouped, c) == "Paris"
    assert capture(whole, c) == "bye"
    assert capture(missing, c) is None
    assert capture(Capture("n", Subject("turn"), Regex(r"\d+")), c) == "2"
