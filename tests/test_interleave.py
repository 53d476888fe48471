"""`interleave calls`: the reply element that makes several tool calls' argument fragments alternate in
one stream. Parser (tree-less and tree-building), formatter, JSON form, builder, checks and planner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mockllm
from mockllm.dsl.check.checks import check
from mockllm.dsl.diagnostics import Diagnostic
from mockllm.dsl.format.formatter import canonical_elements, format_file, format_reply_element
from mockllm.dsl.machines.compiler import compile_library
from mockllm.dsl.parse.loader import Library, load_text
from mockllm.dsl.parse.parser import build_parser, parse_text
from mockllm.dsl.span import Span
from mockllm.dsl.tree import nodes as n
from mockllm.dsl.tree.jsonform import from_json, from_json_text, to_json, to_json_text
from mockllm.runtime.reply.planner import plan_reply
from mockllm.runtime.request import ChatRequest, Message

FILE = "t.mockllm"
EXAMPLE = Path(__file__).resolve().parent.parent / "scenarios" / "examples" / "interleaved_calls.mockllm"

STEP = """\
scenario "s":
    step a:
        reply:
            tool call f {"a": 1}
            tool call g {"b": 2}
            stream by 3 characters
            interleave calls
"""

CALL_F = n.ToolCall("f", {"a": 1})
CALL_G = n.ToolCall("g", {"b": 2})
STREAM3 = n.Stream("characters", 3)


def parse_ok(text: str) -> n.ScriptFile:
    tree, diagnostics = parse_text(text, FILE)
    assert diagnostics == []
    assert tree is not None
    return tree


def step_elements(text: str) -> tuple[n.ReplyElement, ...]:
    reply = parse_ok(text).scenarios[0].steps[0].reply
    assert isinstance(reply, n.ReplyBlock)
    return reply.elements


def block(*lines: str) -> str:
    return 'scenario "s":\n    step a:\n        reply:\n' + "".join(f"            {line}\n" for line in lines)


def diagnostics_of(text: str) -> list[Diagnostic]:
    library = load_text(text, file=FILE)
    _, diagnostics = compile_library(library)
    return diagnostics


# ---------------------------------------------------------------------------------------------------------
# Parsing


def test_step_reply_parses_to_the_node_with_its_span() -> None:
    elements = step_elements(STEP)
    assert elements == (CALL_F, CALL_G, STREAM3, n.InterleaveCalls())
    assert elements[3].span == Span(FILE, 7, 13, 7, 29)


def test_named_reply_and_fallback_block_take_it() -> None:
    tree = parse_ok(
        "defaults:\n"
        "    fallback:\n"
        '        tool call f {"a": 1}\n'
        "        interleave calls\n"
        '        tool call g {"b": 2}\n'
        "\n"
        "reply two:\n"
        "    interleave calls\n"
        '    tool call f {"a": 1}\n'
        '    tool call g {"b": 2}\n'
    )
    assert tree.replies[0].elements == (n.InterleaveCalls(), CALL_F, CALL_G)
    assert tree.defaults is not None
    assert tree.defaults.fallback == n.ReplyBlock((CALL_F, n.InterleaveCalls(), CALL_G))


def test_the_tree_building_parser_sees_the_same_rule() -> None:
    """The error path re-parses with the tree-building parser: it must know the rule too."""
    tree = build_parser().parse(STEP)
    assert len(list(tree.find_data("interleave_calls"))) == 1


def test_the_grammar_has_no_conflicts() -> None:
    build_parser(strict=True)


def test_the_words_stay_usable_as_names() -> None:
    tree = parse_ok(
        "reply interleave:\n"
        "    tool call calls {}\n"
        "\n"
        'scenario "s":\n'
        "    tags interleave, calls\n"
        "    step calls:\n"
        "        reply like interleave\n"
    )
    assert tree.replies[0].name == "interleave"
    assert tree.replies[0].elements == (n.ToolCall("calls", {}),)
    assert tree.scenarios[0].tags == ("interleave", "calls")
    assert tree.scenarios[0].steps[0].name == "calls"


@pytest.mark.parametrize(
    ("line", "message", "hint"),
    [
        ("interleave call", "expected `calls` after `interleave`, found `call`", "did you mean `calls`?"),
        ("interleave", "expected `calls` after `interleave`, found the end of the line", None),
        ("interleaved calls", 'expected a reply element such as `text "…"`, found `interleaved`', None),
        ("interleave calls now", "found `now`", None),
    ],
)
def test_mistakes_are_reported_in_the_users_words(line: str, message: str, hint: str | None) -> None:
    tree, diagnostics = parse_text(
        block('tool call f {"a": 1}', line) + 'scenario "t":\n    step b:\n        reply echo\n'
    )
    [d] = diagnostics
    assert d.is_error and d.code == "syntax"
    assert message in d.message
    assert d.span.line == 5
    if hint is not None:
        assert d.hint == hint
    assert tree is not None and [s.name for s in tree.scenarios] == ["s", "t"]  # the good block still parses


def test_defaults_cannot_hold_it() -> None:
    _, diagnostics = parse_text("defaults:\n    interleave calls\n", FILE)
    [d] = diagnostics
    assert d.is_error and d.span.line == 2
    assert "defaults" in d.message


# ---------------------------------------------------------------------------------------------------------
# Formatting


def test_element_text() -> None:
    assert format_reply_element(n.InterleaveCalls(), "    ") == "    interleave calls"


def test_canonical_position_is_after_the_stream_line() -> None:
    text = block(
        "interleave calls", 'tool call f {"a": 1}', "stream by 3 characters", 'tool call g {"b": 2}', 'text "x"'
    )
    expected = block(
        'tool call f {"a": 1}', "stream by 3 characters", "interleave calls", 'tool call g {"b": 2}', 'text "x"'
    )
    tree = parse_ok(text)
    assert format_file(tree) == expected
    assert format_file(parse_ok(expected)) == expected


def test_canonical_position_without_stream_is_after_the_last_tool_call() -> None:
    text = block("interleave calls", 'tool call f {"a": 1}', 'tool call g {"b": 2}', 'text "x"')
    expected = block('tool call f {"a": 1}', 'tool call g {"b": 2}', "interleave calls", 'text "x"')
    assert format_file(parse_ok(text)) == expected


def test_without_calls_or_stream_it_stays_where_it_is() -> None:
    elements = (n.Text("a"), n.InterleaveCalls(), n.Finish("stop"))
    assert canonical_elements(elements) == elements
    assert canonical_elements((n.Text("a"),)) == (n.Text("a"),)


def test_moving_it_keeps_its_comments() -> None:
    source = block(
        "# interleave the calls",
        "interleave calls  # trailing",
        'tool call f {"a": 1}',
        'tool call g {"b": 2}',
    )
    formatted = format_file(parse_ok(source), source)
    assert formatted == block(
        'tool call f {"a": 1}',
        'tool call g {"b": 2}',
        "# interleave the calls",
        "interleave calls  # trailing",
    )
    assert format_file(parse_ok(formatted), formatted) == formatted


def test_format_round_trip() -> None:
    tree = parse_ok(STEP)
    text = format_file(tree)
    assert text == STEP
    assert parse_ok(text) == tree


# ---------------------------------------------------------------------------------------------------------
# JSON form


def test_json_shape_and_round_trip() -> None:
    tree = parse_ok(STEP)
    data = to_json(tree)
    assert data["scenarios"][0]["steps"][0]["reply"]["elements"][-1] == {"type": "interleave_calls"}
    back, diagnostics = from_json(data, FILE)
    assert diagnostics == [] and back == tree
    again, diagnostics = from_json_text(to_json_text(tree), FILE)
    assert diagnostics == [] and again == tree


def test_json_refuses_extra_keys_and_defaults_use() -> None:
    data: dict[str, Any] = {
        "mockllm": 1,
        "scenarios": [
            {
                "name": "s",
                "steps": [
                    {"name": "a", "reply": {"type": "block", "elements": [{"type": "interleave_calls", "x": 1}]}}
                ],
            }
        ],
    }
    tree, diagnostics = from_json(data, "t.json")
    assert tree is None and diagnostics and all(d.is_error for d in diagnostics)
    assert "x" in diagnostics[0].message
    data = {"mockllm": 1, "defaults": {"elements": [{"type": "interleave_calls"}]}}
    tree, diagnostics = from_json(data, "t.json")
    assert tree is None and '"interleave_calls" cannot be a default' in diagnostics[0].message


# ---------------------------------------------------------------------------------------------------------
# Builder


def test_builder_equals_parsed() -> None:
    built = (
        mockllm.scenario("s")
        .step("a")
        .reply(
            mockllm.tool_call("f", {"a": 1}),
            mockllm.tool_call("g", {"b": 2}),
            mockllm.stream(characters=3),
            mockllm.interleave_calls(),
        )
    )
    assert built.build() == parse_ok(STEP).scenarios[0]
    assert built.to_text() == STEP
    assert "interleave_calls" in mockllm.__all__
    assert mockllm.interleave_calls() == n.InterleaveCalls()


# ---------------------------------------------------------------------------------------------------------
# Checks

WARNING = "`interleave calls` has no effect with fewer than two tool calls"


@pytest.mark.parametrize(
    "lines",
    [
        ('text "hi"', "interleave calls"),
        ('tool call f {"a": 1}', "interleave calls"),
        ("interleave calls",),
    ],
)
def test_fewer_than_two_calls_is_a_warning(lines: tuple[str, ...]) -> None:
    diagnostics = diagnostics_of(block(*lines))
    [d] = diagnostics
    assert (d.severity, d.code, d.message) == ("warning", "interleave-no-effect", WARNING)
    assert d.span.line == 3 + lines.index("interleave calls") + 1
    assert d.hint is not None


def test_the_warning_in_a_named_reply_and_a_fallback() -> None:
    text = (
        "defaults:\n"
        "    fallback:\n"
        '        text "sorry"\n'
        "        interleave calls\n"
        "\n"
        "reply one:\n"
        '    tool call f {"a": 1}\n'
        "    interleave calls\n"
        "\n"
        'scenario "s":\n'
        "    step a:\n"
        "        reply like one\n"
    )
    diagnostics = diagnostics_of(text)
    assert [(d.severity, d.message, d.span.line) for d in diagnostics] == [
        ("warning", WARNING, 4),
        ("warning", WARNING, 8),
    ]


def test_two_calls_check_cleanly() -> None:
    assert diagnostics_of(STEP) == []
    assert diagnostics_of(block('tool call f {"a": 1}', "interleave calls", 'tool call f {"a": 2}')) == []


def test_twice_is_the_duplicate_element_error() -> None:
    diagnostics = diagnostics_of(
        block('tool call f {"a": 1}', 'tool call g {"b": 2}', "interleave calls", "interleave calls")
    )
    [d] = diagnostics
    assert d.is_error and d.code == "conflicting-reply"
    assert d.message == "second `interleave calls` line in one reply (the first is on line 6)"
    assert d.span.line == 7


@pytest.mark.parametrize(
    ("line", "word"),
    [
        ('error 500 "boom"', "error"),
        ("status 200", "status"),
        ('body {"a": 1}', "body"),
        ("hang", "hang"),
    ],
)
def test_conflicts_with_error_status_body_and_hang(line: str, word: str) -> None:
    diagnostics = diagnostics_of(block(line, "interleave calls"))
    [d] = diagnostics  # the conflict only: no "no effect" warning on top of it
    assert d.is_error and d.code == "conflicting-reply"
    assert d.message == f"`interleave calls` conflicts with `{word}` on line 4"
    assert d.span.line == 5


def test_goes_with_latency_headers_stream_and_text() -> None:
    text = block(
        'text "checking"',
        'tool call f {"a": 1}',
        'tool call g {"b": 2}',
        "stream by word, 10ms apart",
        "interleave calls",
        "latency 20ms",
        'header "x-a" "1"',
        "usage 3 in, 4 out",
    )
    assert diagnostics_of(text) == []


def test_checks_on_a_tree_built_in_code() -> None:
    step = n.Step("a", reply=n.ReplyBlock((CALL_F, n.InterleaveCalls())))
    f = n.ScriptFile("a.mockllm", scenarios=(n.Scenario("s", steps=(step,)),))
    diagnostics = check(Library(files=(f,)))
    assert [(d.severity, d.message) for d in diagnostics] == [("warning", WARNING)]


# ---------------------------------------------------------------------------------------------------------
# Planner


def chat() -> ChatRequest:
    return ChatRequest(
        provider="openai",
        endpoint="/v1/chat/completions",
        model="gpt-4o",
        stream=True,
        messages=(Message("user", "check all three services"),),
    )


def test_planner_sets_the_flag() -> None:
    plan = plan_reply(n.ReplyBlock((CALL_F, CALL_G, STREAM3, n.InterleaveCalls())), chat(), {}, call_offset=0)
    assert plan.interleave_calls is True
    assert [c.name for c in plan.tool_calls] == ["f", "g"]
    assert [c.argument_chunks for c in plan.tool_calls] == [('{"a', '":1', "}"), ('{"b', '":2', "}")]
    assert plan.finish == "tool_calls"


def test_planner_leaves_it_off_by_default() -> None:
    plan = plan_reply(n.ReplyBlock((CALL_F, CALL_G, STREAM3)), chat(), {}, call_offset=0)
    assert plan.interleave_calls is False


# ---------------------------------------------------------------------------------------------------------
# The example


def test_the_example_uses_it_and_checks_cleanly() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    elements = step_elements(text)
    assert sum(isinstance(e, n.ToolCall) for e in elements) == 3
    assert elements[-1] == n.InterleaveCalls()
    assert diagnostics_of(text) == []
    assert format_file(parse_ok(text), text) == text
