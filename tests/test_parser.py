"""The `.mockllm` parser: every construct of the syntax reaches the right node, spans point at the
source, broken blocks do not hide good ones, and nothing raises on any input."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark import Lark

from mockllm.dsl.diagnostics import Diagnostic
from mockllm.dsl.format.formatter import format_file
from mockllm.dsl.parse.parser import _cache_file, build_parser, grammar_text, parse_text
from mockllm.dsl.span import Span
from mockllm.dsl.tree import nodes as n

FILE = "t.mockllm"

# The example of language.md §1, verbatim.
LANGUAGE_EXAMPLE = """\
mockllm 1                                    # optional version line; must be first
use "lib/errors.v2.mockllm" as errors        # import a library file

reply rate_limited:                          # a named, reusable reply
    error 429 "Rate limit reached for requests"
    retry after 2s

defaults:                                    # applies to every scenario in this file
    latency 20ms
    fallback echo                            # what to do when no step matches

scenario "Weather tool round trip":
    priority 10
    tags smoke, tools
    when:                                    # conditions shared by every step
        provider is openai
        model glob "gpt-4o*"

    step ask_for_weather:
        when:
            last user message contains "weather"
            tools include "get_weather"
        capture city from last user message /weather in (\\w+)/
        reply:
            tool call get_weather {"city": "{{city}}", "unit": "celsius"}

    step final_answer:
        when:
            tool result for "get_weather" is present
        reply:
            text "It is 18°C and sunny in {{city}}."
            stream 4 chunks, 40ms apart
"""


def parse_ok(text: str) -> n.ScriptFile:
    tree, diagnostics = parse_text(text, FILE)
    assert diagnostics == []
    assert tree is not None
    return tree


def only_step(body: str) -> n.Step:
    """Parse one step whose body lines are given at 8 spaces."""
    tree = parse_ok('scenario "s":\n    step a:\n' + body)
    return tree.scenarios[0].steps[0]


def reply_elements(*lines: str) -> tuple[n.ReplyElement, ...]:
    step = only_step("        reply:\n" + "".join(f"            {line}\n" for line in lines))
    assert isinstance(step.reply, n.ReplyBlock)
    return step.reply.elements


def condition(line: str) -> n.Condition:
    step = only_step(f"        when:\n            {line}\n        reply echo\n")
    assert len(step.conditions) == 1
    return step.conditions[0]


def C(kind: Any, op: Any, value: Any = None, arg: str | None = None, ignore_case: bool = False) -> n.Condition:
    return n.Condition(n.Subject(kind, arg), n.Predicate(op, value), ignore_case)


# ---------------------------------------------------------------------------------------------------------
# The language example


def test_language_example_parses_to_the_expected_tree() -> None:
    """The §1 example of the language page parses, verbatim, to exactly this tree."""
    tree = parse_ok(LANGUAGE_EXAMPLE)
    expected = n.ScriptFile(
        FILE,
        version=1,
        uses=(n.Use("lib/errors.v2.mockllm", "errors"),),
        replies=(
            n.NamedReply(
                "rate_limited",
                (n.Error(429, "Rate limit reached for requests"), n.RetryAfter(n.Duration(2000.0))),
            ),
        ),
        defaults=n.Defaults((n.Latency(n.Duration(20.0)),), n.ReplyBlock((n.Echo(),))),
        scenarios=(
            n.Scenario(
                "Weather tool round trip",
                priority=10,
                tags=("smoke", "tools"),
                conditions=(C("provider", "is", "openai"), C("model", "glob", "gpt-4o*")),
                steps=(
                    n.Step(
                        "ask_for_weather",
                        conditions=(
                            C("last_user_message", "contains", "weather"),
                            C("tools", "include", "get_weather"),
                        ),
                        captures=(n.Capture("city", n.Subject("last_user_message"), n.Regex(r"weather in (\w+)")),),
                        reply=n.ReplyBlock((n.ToolCall("get_weather", {"city": "{{city}}", "unit": "celsius"}),)),
                    ),
                    n.Step(
                        "final_answer",
                        conditions=(C("tool_result", "present", arg="get_weather"),),
                        reply=n.ReplyBlock(
                            (
                                n.Text("It is 18°C and sunny in {{city}}."),
                                n.Stream("chunks", 4, n.Duration(40.0)),
                            )
                        ),
                    ),
                ),
            ),
        ),
    )
    assert tree == expected


def test_spans_point_at_the_source() -> None:
    """Nodes start at their first token and end at their last real token (not at the next line)."""
    tree = parse_ok(LANGUAGE_EXAMPLE)
    scenario = tree.scenarios[0]
    assert scenario.span == Span(FILE, 12, 1, 32, 40)
    first, second = scenario.steps
    assert first.span == Span(FILE, 19, 5, 25, 74)
    assert second.span.line == 27
    cond = first.conditions[0]
    assert cond.span == Span(FILE, 21, 13, 21, 49)
    assert cond.subject.span == Span(FILE, 21, 13, 21, 30)
    assert cond.predicate.span == Span(FILE, 21, 31, 21, 49)
    assert tree.replies[0].elements[1].span == Span(FILE, 6, 5, 6, 19)
    assert tree.uses[0].span.location() == "t.mockllm:2:1"
    assert tree.path == FILE


# ---------------------------------------------------------------------------------------------------------
# Conditions


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("provider is openai", C("provider", "is", "openai")),
        ('provider is "anthropic"', C("provider", "is", "anthropic")),
        ("provider is not responses", C("provider", "is_not", "responses")),
        ('endpoint is "/v1/chat/completions"', C("endpoint", "is", "/v1/chat/completions")),
        ('model glob "gpt-4o*"', C("model", "glob", "gpt-4o*")),
        ("stream is true", C("stream", "is", True)),
        ("stream is false", C("stream", "is", False)),
        ('last user message contains "weather"', C("last_user_message", "contains", "weather")),
        ('last message not contains "x"', C("last_message", "not_contains", "x")),
        ("any user message matches /hi/i", C("any_message", "matches", n.Regex("hi", "i"), arg="user")),
        (r"any assistant message not matches /a\/b/", C("any_message", "not_matches", n.Regex("a/b"), arg="assistant")),
        ("any system message is present", C("any_message", "present", arg="system")),
        ('any tool message contains "42"', C("any_message", "contains", "42", arg="tool")),
        (
            'system prompt contains "be brief" ignoring case',
            C("system_prompt", "contains", "be brief", ignore_case=True),
        ),
        ('tools include "get_weather"', C("tools", "include", "get_weather")),
        ('tools exclude "delete_all"', C("tools", "exclude", "delete_all")),
        ("tools is absent", C("tools", "absent")),
        ('tool result for "get_weather" is error', C("tool_result", "error", arg="get_weather")),
        ('header "x-test" is "1"', C("header", "is", "1", arg="x-test")),
        ('field "a.b.0.c" is 3', C("field", "is", 3, arg="a.b.0.c")),
        ('field "t" is 1.5', C("field", "is", 1.5, arg="t")),
        ('field "t" is -2', C("field", "is", -2, arg="t")),
        ('field "t" is 1e3', C("field", "is", 1000.0, arg="t")),
        ('field "t" is null', C("field", "is", None, arg="t")),
        ('field "t" is {"a": [1, 2], "b": {"c": null}}', C("field", "is", {"a": [1, 2], "b": {"c": None}}, arg="t")),
        ('field "t" is [1, "x", true]', C("field", "is", [1, "x", True], arg="t")),
        ('field "t" is """multi"""', C("field", "is", "multi", arg="t")),
        ("turn is at least 2", C("turn", "at_least", 2)),
        ("turn is at most 2.5", C("turn", "at_most", 2.5)),
        ('model is not "gpt-4o"', C("model", "is_not", "gpt-4o")),
        ("model matches /^gpt-(4|5)/ims", C("model", "matches", n.Regex("^gpt-(4|5)", "ims"))),
        (r"model matches /\d+\.\d/", C("model", "matches", n.Regex(r"\d+\.\d"))),
    ],
)
def test_conditions(line: str, expected: n.Condition) -> None:
    assert condition(line) == expected


def test_several_conditions_and_expectations() -> None:
    step = only_step(
        "        when:\n"
        '            model is "a"\n'
        "            turn is at least 2\n"
        "        expect:\n"
        '            system prompt contains "x"\n'
        "        reply echo\n"
    )
    assert step.conditions == (C("model", "is", "a"), C("turn", "at_least", 2))
    assert step.expects == (C("system_prompt", "contains", "x"),)


# ---------------------------------------------------------------------------------------------------------
# Reply elements


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('text "hello"', n.Text("hello")),
        ('tool call get_weather {"city": "Paris"}', n.ToolCall("get_weather", {"city": "Paris"})),
        ('tool call f {} id "call_x"', n.ToolCall("f", {}, "call_x")),
        ("tool call get_current_date null", n.ToolCall("get_current_date", None)),
        ('thinking "hmm"', n.Thinking("hmm")),
        ('refusal "no"', n.Refusal("no")),
        ("finish stop", n.Finish("stop")),
        ("finish length", n.Finish("length")),
        ("finish tool_calls", n.Finish("tool_calls")),
        ("finish content_filter", n.Finish("content_filter")),
        ("usage 10 in, 20 out", n.Usage(10, 20)),
        ("stream by word", n.Stream("word")),
        ("stream by word, 40ms apart", n.Stream("word", None, n.Duration(40.0))),
        ("stream 4 chunks", n.Stream("chunks", 4)),
        ("stream by 3 characters, 1.5s apart", n.Stream("characters", 3, n.Duration(1500.0))),
        ("latency 250ms", n.Latency(n.Duration(250.0))),
        ("latency 2s", n.Latency(n.Duration(2000.0))),
        ("latency 0.5ms", n.Latency(n.Duration(0.5))),
        ('error 429 "Rate limit reached"', n.Error(429, "Rate limit reached")),
        ("retry after 2s", n.RetryAfter(n.Duration(2000.0))),
        ('header "x-request-id" "abc"', n.Header("x-request-id", "abc")),
        ('echo header "x-trace"', n.EchoHeader("x-trace")),
        ("status 503", n.Status(503)),
        ('body {"error": {"message": "boom"}}', n.Body({"error": {"message": "boom"}})),
        ("body [1, 2]", n.Body([1, 2])),
        ('body "plain"', n.Body("plain")),
        ("body 42", n.Body(42)),
        ("body null", n.Body(None)),
        ("body false", n.Body(False)),
        ("disconnect after 3 chunks", n.Disconnect(3)),
        ('stream error "overloaded" after 2 chunks', n.StreamError("overloaded", 2)),
        ("hang", n.Hang()),
        ("echo", n.Echo()),
    ],
)
def test_reply_elements(line: str, expected: n.ReplyElement) -> None:
    assert reply_elements(line) == (expected,)


def test_chunks_block() -> None:
    elements = reply_elements("chunks:", '    "Hel"', '    "lo"', 'text "x"')
    assert elements == (n.Chunks(("Hel", "lo")), n.Text("x"))


def test_json_may_span_lines_while_a_bracket_is_open() -> None:
    elements = reply_elements(
        "tool call get_weather {",
        '    "city": "Paris",   # a comment inside JSON',
        '    "days": [1,',
        "2, 3]",
        "}",
        "hang",
    )
    assert elements == (n.ToolCall("get_weather", {"city": "Paris", "days": [1, 2, 3]}), n.Hang())


def test_json_strings_use_json_escapes() -> None:
    (call,) = reply_elements(r'tool call f {"a": "x\/y\b\u00e9\ud83d\ude00", "b\"": 1}')
    assert isinstance(call, n.ToolCall)
    assert call.arguments == {"a": "x/y\bé😀", 'b"': 1}


# ---------------------------------------------------------------------------------------------------------
# Steps, scenarios, top level


def test_step_lines() -> None:
    tree = parse_ok(
        'scenario "s":\n'
        "    step first:\n"
        "        always\n"
        "        reply like errors.rate_limited\n"
        "    step second:\n"
        "        after first\n"
        '        capture id from header "x-id" /(\\d+)/\n'
        "        capture who from any user message /I am (\\w+)/i\n"
        "        repeat 3\n"
        "        reply like canned\n"
        "    step third:\n"
        "        reply echo\n"
    )
    first, second, third = tree.scenarios[0].steps
    assert first.consumption == n.Consumption("always")
    assert first.reply == n.ReplyRef("rate_limited", "errors")
    assert second.after == n.After("first")
    assert second.captures == (
        n.Capture("id", n.Subject("header", "x-id"), n.Regex(r"(\d+)")),
        n.Capture("who", n.Subject("any_message", "user"), n.Regex(r"I am (\w+)", "i")),
    )
    assert second.consumption == n.Consumption("repeat", 3)
    assert second.reply == n.ReplyRef("canned")
    assert third.reply == n.ReplyBlock((n.Echo(),))
    assert third.consumption == n.Consumption()


def test_step_lines_in_any_order() -> None:
    step = only_step('        reply echo\n        repeat 2\n        when:\n            model is "m"\n        after x\n')
    assert step == n.Step(
        "a",
        conditions=(C("model", "is", "m"),),
        after=n.After("x"),
        consumption=n.Consumption("repeat", 2),
        reply=n.ReplyBlock((n.Echo(),)),
    )


def test_scenario_settings() -> None:
    tree = parse_ok(
        'scenario "Settings":\n'
        '    let greeting = "hello"\n'
        "    priority -5\n"
        '    tags smoke, "needs review", tools\n'
        "    order any\n"
        '    let who = """\n'
        "        world\n"
        '        """\n'
        "    when:\n"
        "        provider is gemini\n"
        "    step a:\n"
        "        reply echo\n"
    )
    s = tree.scenarios[0]
    assert s.name == "Settings"
    assert s.priority == -5
    assert s.tags == ("smoke", "needs review", "tools")
    assert s.order_any is True
    assert s.lets == (n.Let("greeting", "hello"), n.Let("who", "world"))
    assert s.conditions == (C("provider", "is", "gemini"),)
    assert [step.name for step in s.steps] == ["a"]


def test_defaults_and_fallbacks() -> None:
    tree = parse_ok(
        "defaults:\n"
        "    latency 20ms\n"
        "    stream by word, 10ms apart\n"
        '    header "x-mock" "1"\n'
        "    fallback:\n"
        '        error 404 "nothing matched"\n'
    )
    assert tree.defaults == n.Defaults(
        (n.Latency(n.Duration(20.0)), n.Stream("word", None, n.Duration(10.0)), n.Header("x-mock", "1")),
        n.ReplyBlock((n.Error(404, "nothing matched"),)),
    )
    like = parse_ok("defaults:\n    fallback like lib.canned\n")
    assert like.defaults == n.Defaults((), n.ReplyRef("canned", "lib"))
    local = parse_ok("defaults:\n    fallback like canned\n")
    assert local.defaults == n.Defaults((), n.ReplyRef("canned"))


def test_top_level_in_any_order_after_the_version() -> None:
    tree = parse_ok(
        "# a header comment\n"
        "\n"
        "mockllm 1\n"
        'scenario "one":\n'
        "    step a:\n"
        "        reply like canned\n"
        "reply canned:\n"
        '    text "canned"\n'
        'use "a.mockllm" as a\n'
        'use "b.mockllm" as b\n'
        'scenario "two":\n'
        "    step a:\n"
        "        reply echo\n"
    )
    assert tree.version == 1
    assert [u.alias for u in tree.uses] == ["a", "b"]
    assert tree.replies == (n.NamedReply("canned", (n.Text("canned"),)),)
    assert [s.name for s in tree.scenarios] == ["one", "two"]


def test_keywords_may_be_used_as_names() -> None:
    """Where only a name can stand, a keyword is a name (`step reply:`, `tool call text {}`)."""
    tree = parse_ok(
        "reply when:\n"
        "    tool call text {}\n"
        'scenario "s":\n'
        "    tags step, reply\n"
        '    let is = "x"\n'
        "    step reply:\n"
        "        after step\n"
        "        capture from from model /x/\n"
        "        reply like when\n"
    )
    assert tree.replies[0].name == "when"
    assert tree.replies[0].elements == (n.ToolCall("text", {}),)
    s = tree.scenarios[0]
    assert s.tags == ("step", "reply")
    assert s.lets == (n.Let("is", "x"),)
    step = s.steps[0]
    assert (step.name, step.after, step.reply) == ("reply", n.After("step"), n.ReplyRef("when"))
    assert step.captures[0].name == "from"


def test_empty_and_comment_only_files() -> None:
    assert parse_ok("") == n.ScriptFile(FILE)
    assert parse_ok("# nothing here\n\n   \n# still nothing") == n.ScriptFile(FILE)


# ---------------------------------------------------------------------------------------------------------
# Literals and layout


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        (r'"a \"quoted\" word"', 'a "quoted" word'),
        (r'"back\\slash"', "back\\slash"),
        (r'"two\nlines\ttab"', "two\nlines\ttab"),
        (r'"caf\u00e9 \ud83d\ude00"', "café 😀"),
        ('"# not a comment"', "# not a comment"),
        ('"{{city}}"', "{{city}}"),
        ('""', ""),
        ('"""one line"""', "one line"),
        ('"""has "quotes" inside"""', 'has "quotes" inside'),
        ('"""\n                line one\n                  line two\n                """', "line one\n  line two"),
        ('"""\n                first\n\n                third\n"""', "first\n\nthird"),
        ('"""keep\n                this"""', "keep\n                this"),
        ('"""\n                escaped\\tand \\"quoted\\"\n                """', 'escaped\tand "quoted"'),
    ],
)
def test_string_literals(literal: str, value: str) -> None:
    assert reply_elements(f"text {literal}") == (n.Text(value),)


def test_comments_blank_lines_and_crlf() -> None:
    text = (
        'scenario "s":   # trailing comment\r\n'
        "\r\n"
        "    # a comment line at block depth\r\n"
        "        # and one deeper\r\n"
        "    step a:\r\n"
        "\r\n"
        "        reply:  # here too\r\n"
        '            text "x"  # and here\r\n'
        "# a comment at column 0 inside the block\r\n"
        '            text "y"\r\n'
    )
    step = parse_ok(text).scenarios[0].steps[0]
    assert step.reply == n.ReplyBlock((n.Text("x"), n.Text("y")))


def test_a_byte_order_mark_is_ignored() -> None:
    assert parse_ok("\ufeffmockllm 1\n").version == 1


def test_any_consistent_indentation_depth() -> None:
    tree = parse_ok('scenario "s":\n  step a:\n         reply:\n          text "x"\n')
    assert tree.scenarios[0].steps[0].reply == n.ReplyBlock((n.Text("x"),))


def test_tabs_between_words_are_spaces() -> None:
    assert reply_elements('text\t"x"') == (n.Text("x"),)


# ---------------------------------------------------------------------------------------------------------
# Broken files


def test_each_broken_block_reports_and_good_blocks_still_parse() -> None:
    text = (
        'scenario "broken one":\n'
        "    step a:\n"
        "        when:\n"
        '            model equals "x"\n'
        "        reply echo\n"
        "\n"
        'scenario "good":\n'
        "    step a:\n"
        "        reply echo\n"
        "\n"
        "reply canned:\n"
        '    text "fine"\n'
        "\n"
        'scenario "broken two":\n'
        "    step b:\n"
        "        reply:\n"
        '            txt "x"\n'
    )
    tree, diagnostics = parse_text(text, FILE)
    assert tree is not None
    # the broken scenarios keep what parses (their real names and spans), the broken lines left out
    assert [s.name for s in tree.scenarios] == ["broken one", "good", "broken two"]
    assert [s.span.line for s in tree.scenarios] == [1, 7, 14]
    assert tree.scenarios[0].steps[0].conditions == ()
    assert [r.name for r in tree.replies] == ["canned"]
    assert [(d.code, d.span.line, d.span.column) for d in diagnostics] == [("syntax", 4, 19), ("syntax", 17, 13)]


def test_lark_parser_is_built_once_and_lalr() -> None:
    parser = build_parser()
    assert parser is build_parser()
    assert isinstance(parser, Lark)
    assert parser.options.parser == "lalr"


def test_grammar_builds_in_strict_mode() -> None:
    """Strict mode fails on any shift/reduce conflict or terminal collision (interegular)."""
    strict = build_parser(strict=True)
    assert strict.options.strict is True
    assert strict.parse('scenario "s":\n    step a:\n        reply echo\n').data == "start"


def test_grammar_ships_as_package_data() -> None:
    assert "scenario" in grammar_text()


def test_cache_falls_back_when_the_cache_directory_cannot_be_made(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = _cache_file("grammar text")
    assert not path.startswith(str(blocker))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cache_file("grammar text").startswith(str(tmp_path / "mockllm"))


def _assert_only_diagnostics(tree: n.ScriptFile | None, diagnostics: list[Diagnostic]) -> None:
    assert tree is None or isinstance(tree, n.ScriptFile)
    assert all(isinstance(d, Diagnostic) for d in diagnostics)
    for d in diagnostics:
        assert d.span.line >= 1 and d.span.column >= 1
        assert d.message


_TOKENS = ["scenario", "step", "when", ":", '"', "{", "}", "[", "]", "\n", "    ", "\t", "#", "/", "\\", "reply", "is"]


@st.composite
def mutated_scripts(draw: st.DrawFn) -> str:
    text = LANGUAGE_EXAMPLE
    rnd = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 4))):
        i = rnd.randrange(len(text))
        j = min(len(text), i + rnd.randrange(1, 12))
        kind = rnd.randrange(5)
        if kind == 0:
            text = text[:i] + text[j:]  # delete
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]  # duplicate
        elif kind == 2 and j + 1 < len(text):
            text = text[:i] + text[i + 1] + text[i] + text[i + 2 :]  # swap two characters
        elif kind == 3:
            text = text[:i] + rnd.choice(_TOKENS) + text[i:]  # insert a token
        else:
            lines = text.split("\n")
            a, b = rnd.randrange(len(lines)), rnd.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]  # swap two lines
            text = "\n".join(lines)
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_scripts())
def test_mutated_scripts_only_produce_diagnostics(text: str) -> None:
    """Random edits of a valid script never raise; what still parses formats and reparses the same."""
    tree, diagnostics = parse_text(text, FILE)
    _assert_only_diagnostics(tree, diagnostics)
    if not diagnostics:
        assert tree is not None
        assert parse_text(format_file(tree), FILE) == (tree, [])


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_random_text_only_produces_diagnostics(text: str) -> None:
    _assert_only_diagnostics(*parse_text(text, FILE))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_as_text_only_produce_diagnostics(data: bytes) -> None:
    _assert_only_diagnostics(*parse_text(data.decode("latin-1"), FILE))


def test_deep_json_nesting_is_a_diagnostic_or_a_tree() -> None:
    depth = 5000
    text = "reply r:\n    body " + "[" * depth + "]" * depth + "\n"
    tree, diagnostics = parse_text(text, FILE)
    _assert_only_diagnostics(tree, diagnostics)
