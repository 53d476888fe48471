"""The canonical formatter: fixed layout, idempotent, and parse(format(tree)) == tree for any tree."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from mockllm.dsl import nodes as n
from mockllm.dsl.formatter import format_file, format_reply_element, format_step, string_literal
from mockllm.dsl.parser import parse_text

sys.path.insert(0, str(Path(__file__).parent))
from strategies import FILE, script_files

MESSY = """\
# comments are not kept by the formatter
scenario "Weather tool round trip":
  when:
      model glob "gpt-4o*"
  tags smoke, "needs review"
  priority 0
  step ask_for_weather:
      reply:
          tool call get_weather {"city":"{{city}}",
                                 "unit":"celsius"}
      capture city from last user message /weather in (\\w+)/
      when:
          tools include "get_weather"
  step final_answer:
      reply:
          text "It is sunny"
          stream 4 chunks, 40ms apart
defaults:
  fallback echo
  latency 1000ms
reply rate_limited:
  error 429 "Rate limit"
use "lib/errors.v2.mockllm" as errors
mockllm 1
"""

CANONICAL = """\
mockllm 1

use "lib/errors.v2.mockllm" as errors

defaults:
    latency 1s
    fallback echo

reply rate_limited:
    error 429 "Rate limit"

scenario "Weather tool round trip":
    tags smoke, "needs review"
    when:
        model glob "gpt-4o*"

    step ask_for_weather:
        when:
            tools include "get_weather"
        capture city from last user message /weather in (\\w+)/
        reply:
            tool call get_weather {"city": "{{city}}", "unit": "celsius"}

    step final_answer:
        reply:
            text "It is sunny"
            stream 4 chunks, 40ms apart
"""


def test_canonical_layout() -> None:
    """Sections in canonical order, 4-space indents, priority 0 left out, compact JSON."""
    tree, diagnostics = parse_text(MESSY, FILE)
    # `mockllm 1` must come first: the messy file says so, and the formatter puts it there
    assert [d.message for d in diagnostics] == ["`mockllm N` must be the first statement of the file"]
    assert tree is not None
    assert format_file(tree) == CANONICAL
    assert parse_text(CANONICAL, FILE) == (tree, [])


def test_step_lines_in_canonical_order() -> None:
    step = n.Step(
        "s",
        conditions=(n.Condition(n.Subject("turn"), n.Predicate("at_least", 2)),),
        after=n.After("first"),
        captures=(n.Capture("x", n.Subject("header", "x-id"), n.Regex("a/b", "i")),),
        expects=(n.Condition(n.Subject("provider"), n.Predicate("is", "openai"), ignore_case=True),),
        consumption=n.Consumption("repeat", 2),
        reply=n.ReplyRef("canned", "lib"),
    )
    assert format_step(step) == (
        "step s:\n"
        "    when:\n"
        "        turn is at least 2\n"
        "    after first\n"
        '    capture x from header "x-id" /a\\/b/i\n'
        "    expect:\n"
        "        provider is openai ignoring case\n"
        "    repeat 2\n"
        "    reply like lib.canned"
    )
    always = n.Step("t", consumption=n.Consumption("always"), reply=n.ReplyBlock((n.Echo(),)))
    assert format_step(always, "    ") == "    step t:\n        always\n        reply echo"


def test_reply_elements_text() -> None:
    assert format_reply_element(n.Stream("word", None, n.Duration(40.0))) == "stream by word, 40ms apart"
    assert format_reply_element(n.Stream("characters", 3)) == "stream by 3 characters"
    assert format_reply_element(n.ToolCall("f", {"a": [1, 2]}, "call_1")) == 'tool call f {"a": [1, 2]} id "call_1"'
    assert format_reply_element(n.Usage(1, 2)) == "usage 1 in, 2 out"
    assert format_reply_element(n.StreamError("x", 2)) == 'stream error "x" after 2 chunks'
    assert format_reply_element(n.Body({"k": "v"})) == 'body {"k": "v"}'
    assert format_reply_element(n.Chunks(("a", "b")), "  ") == '  chunks:\n      "a"\n      "b"'


def test_multi_line_text_prints_triple_quoted() -> None:
    text = format_reply_element(n.Text("first line\n  indented\n\nlast"), "        ")
    assert (
        text == '        text """\n            first line\n              indented\n\n            last\n            """'
    )
    tree = n.ScriptFile(FILE, replies=(n.NamedReply("r", (n.Text('a\\b\n"q"\tc\n'),)),))
    assert parse_text(format_file(tree), FILE) == (tree, [])


def test_strings_that_cannot_be_triple_quoted_use_escapes() -> None:
    assert string_literal("  all\n  indented") == '"  all\\n  indented"'
    assert string_literal("line\n   \nblank line of spaces") == '"line\\n   \\nblank line of spaces"'
    assert string_literal("last line of spaces\n   ") == '"last line of spaces\\n   "'
    assert string_literal('three """ quotes\nx') == '"three \\"\\"\\" quotes\\nx"'
    assert string_literal("one line") == '"one line"'


def test_fallbacks() -> None:
    for fallback, line in [
        (n.ReplyBlock((n.Echo(),)), "    fallback echo"),
        (n.ReplyRef("canned"), "    fallback like canned"),
        (n.ReplyBlock((n.Hang(),)), "    fallback:\n        hang"),
    ]:
        text = format_file(n.ScriptFile(FILE, defaults=n.Defaults((), fallback)))
        assert text == f"defaults:\n{line}\n"


def test_empty_file_formats_to_nothing() -> None:
    assert format_file(n.ScriptFile(FILE)) == ""


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(script_files)
def test_round_trip(tree: n.ScriptFile) -> None:
    """parse(format(t)) == t for every tree, and format is idempotent."""
    text = format_file(tree)
    parsed, diagnostics = parse_text(text, FILE)
    assert diagnostics == []
    assert parsed == tree
    assert parsed is not None
    assert format_file(parsed) == text
