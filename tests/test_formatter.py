"""The canonical formatter: fixed layout, idempotent, and parse(format(tree)) == tree for any tree."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockllm.dsl.format.comments import comment_fragments, scan
from mockllm.dsl.format.formatter import format_file, format_reply_element, format_step, string_literal
from mockllm.dsl.parse.parser import parse_text
from mockllm.dsl.tree import nodes as n

sys.path.insert(0, str(Path(__file__).parent))
from strategies import FILE, script_files

MESSY = """\
# without the source, the formatter writes no comments
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


def test_durations_print_exactly() -> None:
    assert [str(n.Duration(ms)) for ms in (250, 250.0, 2000.0, 1500.0, 0.0)] == [
        "250ms",
        "250ms",
        "2s",
        "1500ms",
        "0ms",
    ]
    assert str(n.Duration(10000.25)) == "10000.25ms"  # `:g` printed 10000.2ms
    assert str(n.Duration(1234567.5)) == "1234567.5ms"
    assert str(n.Duration(0.1 + 0.2)) == "0.30000000000000004ms"
    assert str(n.Duration(1e-05)) == "0.00001ms"  # never an exponent: the grammar has none
    for ms in (10000.25, 1234567.5, 0.1 + 0.2, 1e-05, 5e-324, 86399999.999):
        tree = n.ScriptFile(FILE, replies=(n.NamedReply("r", (n.Latency(n.Duration(ms)),)),))
        parsed, diagnostics = parse_text(format_file(tree), FILE)
        assert diagnostics == []
        assert parsed == tree


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


# ---------------------------------------------------------------------------------------------------------
# Comments

COMMENTED = """\
# Opening comment of the file.

# about the scenario (moves with it)
scenario "S":  # on the header
  when:
      model glob "gpt-4o*"  # on a condition
      # end of the when block
  tags a, "b c"  # on tags
  priority 0  # on a line fmt leaves out
  order any
  step ask:
      reply:
          # before a tool call
          tool call f {"q": "# not a comment",  # first line of the JSON
                       # inside the JSON
                       "n": 1}  # last line of the JSON
          text \"\"\"
              # not a comment either
              \"\"\"  # after a triple-quoted string
          # end of the reply block
      # before `when:` (it moves to the top of the step, and this comment with it)
      when:
          last user message matches /a#b/  # a regex holding '#'
  step done:
      after ask
      reply:
          echo  # reply: + echo is written `reply echo`
      # end of the last step
reply canned:
  chunks:
      "Hel"  # on a chunk
      # between chunks
      "lo"
  # end of a named reply

# the end of the file
"""

COMMENTED_FORMATTED = """\
# Opening comment of the file.

reply canned:
    chunks:
        "Hel"  # on a chunk
        # between chunks
        "lo"
    # end of a named reply

# about the scenario (moves with it)
scenario "S":  # on the header
    tags a, "b c"  # on tags
    # on a line fmt leaves out
    order any
    when:
        model glob "gpt-4o*"  # on a condition
        # end of the when block

    step ask:
        # before `when:` (it moves to the top of the step, and this comment with it)
        when:
            last user message matches /a#b/  # a regex holding '#'
        reply:
            # before a tool call
            # inside the JSON
            tool call f {"q": "# not a comment", "n": 1}  # first line of the JSON  # last line of the JSON
            text "# not a comment either"  # after a triple-quoted string
            # end of the reply block

    step done:
        after ask
        reply echo  # reply: + echo is written `reply echo`
        # end of the last step

# the end of the file
"""


def _format(source: str) -> str:
    tree, diagnostics = parse_text(source, FILE)
    assert diagnostics == []
    assert tree is not None
    return format_file(tree, source)


def test_comments_in_every_position_are_kept() -> None:
    """Own-line comments go with the statement below (and move with it), end-of-line comments stay at
    the end of their statement's line, comments closing a block or the file stay there; `#` inside
    strings, triple-quoted strings, JSON strings and regexes is no comment."""
    formatted = _format(COMMENTED)
    assert formatted == COMMENTED_FORMATTED
    assert comment_fragments(formatted) == comment_fragments(COMMENTED)
    assert _format(formatted) == formatted
    assert parse_text(formatted, FILE)[0] == parse_text(COMMENTED, FILE)[0]


def test_header_comments_stay_under_the_version_line() -> None:
    source = 'mockllm 1\n# What this file tests.\n# Second line.\nuse "lib.mockllm" as lib\n'
    assert _format(source) == 'mockllm 1\n# What this file tests.\n# Second line.\n\nuse "lib.mockllm" as lib\n'
    formatted = _format("mockllm 1\n# What this file tests.\n\nreply r:\n  hang\n")
    assert formatted == "mockllm 1\n# What this file tests.\n\nreply r:\n    hang\n"
    assert _format(formatted) == formatted


def test_blank_lines_around_a_comment_run_are_kept() -> None:
    source = "reply r:\n    hang\n\n# one\n\n# two\n\nreply s:\n    echo\n"
    assert _format(source) == source
    inside = "reply r:\n    # one\n\n    # two\n\n    hang\n"
    assert _format(inside) == inside
    assert _format("reply r:\n    hang\n\n\n\n# end\n") == "reply r:\n    hang\n\n# end\n"


def test_a_file_of_comments_only_and_windows_newlines() -> None:
    assert _format("# just\n\n# comments\n") == "# just\n\n# comments\n"
    assert _format("reply r:  # a reply\r\n    hang\r\n# end\r\n") == "reply r:  # a reply\n    hang\n# end\n"


def test_without_the_source_no_comments_are_written() -> None:
    tree, _ = parse_text(COMMENTED, FILE)
    assert tree is not None
    assert "#" not in format_file(tree).replace("# not a comment", "").replace("/a#b/", "")


def test_scan_finds_comments_outside_strings_and_regexes() -> None:
    layout = scan(COMMENTED)
    texts = [c.text for c in layout.comments]
    assert "# on a chunk" in texts
    assert not any("not a comment" in t for t in texts)
    assert all(c.line > 0 and c.column > 0 for c in layout.comments)
    on_header = next(c for c in layout.comments if c.text == "# on the header")
    assert (on_header.line, on_header.column, on_header.own_line) == (4, 16, False)
    tool_call = next(x for x in layout.lines if x.word == "tool")
    assert (tool_call.line, tool_call.end_line) == (14, 16)


def test_example_scenarios_format_stably_with_their_comments() -> None:
    root = Path(__file__).parent.parent / "scenarios"
    files = sorted(root.rglob("*.mockllm"))
    assert files
    for path in files:
        source = path.read_text(encoding="utf-8")
        tree, diagnostics = parse_text(source, path.name)
        assert tree is not None and not [d for d in diagnostics if d.is_error], path
        formatted = format_file(tree, source)
        assert comment_fragments(formatted) == comment_fragments(source), path
        assert source.startswith("mockllm 1\n#") == formatted.startswith("mockllm 1\n#"), path
        assert parse_text(formatted, path.name)[0] == tree, path
        assert format_file(tree, formatted) == formatted, path


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(script_files, st.data())
def test_comments_anywhere_survive_and_fmt_is_idempotent(tree: n.ScriptFile, data: st.DataObject) -> None:
    """Comments at any indentation above any statement, at the end of any statement, at the end of the
    file: the tree is the same, every comment is kept, and a second format changes nothing."""
    text = format_file(tree)
    layout = scan(text)
    starts = {x.line for x in layout.lines}
    ends = {x.end_line for x in layout.lines}
    rows: list[str] = []
    count = 0
    for i, line in enumerate(text.split("\n")[:-1], start=1):
        if i in starts:
            for _ in range(data.draw(st.integers(0, 2))):
                rows.append(" " * data.draw(st.sampled_from([0, 2, 4, 8, 12, 16])) + f"# c{count}")
                count += 1
                if data.draw(st.booleans()):
                    rows.append("")
        if i in ends and data.draw(st.booleans()):
            line += f"  # t{count}"
            count += 1
        rows.append(line)
    for _ in range(data.draw(st.integers(0, 2))):
        rows.append(" " * data.draw(st.sampled_from([0, 4, 8])) + f"# e{count}")
        count += 1
    source = "\n".join(rows) + "\n"
    parsed, diagnostics = parse_text(source, FILE)
    assert diagnostics == []
    assert parsed == tree
    formatted = format_file(parsed, source)
    assert comment_fragments(formatted) == comment_fragments(source)
    assert len(comment_fragments(source)) == count
    again, diagnostics = parse_text(formatted, FILE)
    assert diagnostics == []
    assert again == tree
    assert format_file(again, formatted) == formatted
