"""Syntax diagnostics: positions, wording in the language's terms, did-you-mean hints, the synonym
table, the example table, and golden files (tests/diagnostics/syntax_*.mockllm → .expected.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockllm.dsl.diagnostics import Diagnostic, render
from mockllm.dsl.parse.parser import build_parser, parse_text
from mockllm.dsl.parse.syntax_errors import EXAMPLES, SYNONYMS, _table, example_signatures

FILE = "t.mockllm"
DIAGNOSTICS_DIR = Path(__file__).parent / "diagnostics"
GOLDEN = sorted(p.name for p in DIAGNOSTICS_DIR.glob("syntax_*.mockllm"))

STEP = 'scenario "s":\n    step a:\n'


def diagnose(text: str) -> list[Diagnostic]:
    _tree, diagnostics = parse_text(text, FILE)
    assert diagnostics, "expected a syntax error"
    return diagnostics


def one(text: str) -> Diagnostic:
    diagnostics = diagnose(text)
    assert len(diagnostics) == 1, diagnostics
    return diagnostics[0]


def in_condition(line: str) -> Diagnostic:
    return one(STEP + f"        when:\n            {line}\n        reply echo\n")


def in_reply(line: str) -> Diagnostic:
    return one(STEP + f"        reply:\n            {line}\n")


# ---------------------------------------------------------------------------------------------------------
# Golden files


def test_there_are_golden_files() -> None:
    assert len(GOLDEN) >= 12


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_diagnostics(name: str) -> None:
    text = (DIAGNOSTICS_DIR / name).read_text(encoding="utf-8")
    expected = (DIAGNOSTICS_DIR / name.replace(".mockllm", ".expected.txt")).read_text(encoding="utf-8")
    _tree, diagnostics = parse_text(text, name)
    assert diagnostics
    assert render(diagnostics, {name: text}) + "\n" == expected


def test_two_broken_scenarios_are_reported_in_one_run() -> None:
    text = (DIAGNOSTICS_DIR / "syntax_two_broken_scenarios.mockllm").read_text(encoding="utf-8")
    tree, diagnostics = parse_text(text, "two.mockllm")
    assert [(d.span.line, d.hint) for d in diagnostics] == [(5, "did you mean `is`?"), (15, "did you mean `text`?")]
    # the broken scenarios keep the parts that parse: "First" without its broken condition, "Second"
    # with `echo` standing in for its broken reply block
    assert tree is not None and [s.name for s in tree.scenarios] == ["First", "Fine", "Second"]
    first, _fine, second = tree.scenarios
    assert [s.name for s in first.steps] == ["ask"] and first.steps[0].conditions == ()
    assert second.steps[0].reply is not None and [type(e).__name__ for e in second.steps[0].reply.elements] == ["Echo"]


# ---------------------------------------------------------------------------------------------------------
# Wording and hints


def test_unknown_subject_reads_like_the_spec() -> None:
    d = in_condition('modle is "gpt-4o"')
    assert d.message == "unknown subject `modle`; did you mean `model`?"
    assert (d.span.line, d.span.column, d.span.end_column) == (4, 13, 18)
    assert d.code == "syntax"


def test_unknown_subject_without_a_near_miss() -> None:
    d = in_condition('colour is "red"')
    assert d.message == 'unknown subject `colour`; expected a condition such as `model is "gpt-4o"`'


def test_expected_a_condition() -> None:
    d = in_condition('"model" is "x"')
    assert d.message.startswith('expected a condition such as `model is "gpt-4o"`')


def test_expected_a_reply_element() -> None:
    d = in_reply('say "hi"')
    assert d.message == 'expected a reply element such as `text "…"`, found `say`'


@pytest.mark.parametrize(
    ("line", "suggestion"),
    [
        ('model equals "x"', "is"),
        ('model == "x"', "is"),
        ('model != "x"', "is not"),
        ("model regex /x/", "matches"),
        ('tools includes "x"', "include"),
        ('model startsWith "x"', "matches /^…/"),
        ('model contain "x"', "contains"),
        ('model containz "x"', "contains"),
        ('model is "x" ignorng case', "ignoring"),
        ('last usr message contains "x"', "user"),
        ('Model is "x"', "model"),
    ],
)
def test_condition_hints(line: str, suggestion: str) -> None:
    d = in_condition(line)
    expected = f"did you mean `{suggestion}`?"
    assert d.hint == expected or d.message.endswith(expected)


@pytest.mark.parametrize(
    ("line", "suggestion"),
    [
        ('txt "x"', "text"),
        ("lattency 2s", "latency"),
        ("delay 2s", "latency"),
        ("tool_call f {}", "tool call"),
        ("finnish stop", "finish"),
        ("finish stpo", "stop"),
        ("stream by wrd", "word"),
        ("retry-after 2s", "retry after"),
    ],
)
def test_reply_hints(line: str, suggestion: str) -> None:
    assert in_reply(line).hint == f"did you mean `{suggestion}`?"


def test_synonyms_only_apply_where_their_keyword_is_acceptable() -> None:
    """`txt` is a synonym of `text`, but in a condition `text` is no keyword: no bogus suggestion."""
    assert all(word == word.lower() for word in SYNONYMS)
    d = in_condition('txt is "x"')
    assert "text" not in (d.hint or "") and "text" not in d.message


def test_keyword_in_the_wrong_place_suggests_checking_indentation() -> None:
    d = one(STEP + "        when:\n            reply echo\n")
    assert "`reply`" in d.message
    assert d.hint == "`reply` does not belong here; check the line's indentation and spelling"


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        (STEP + '        when\n            model is "x"\n', 3, 13),
        ('scenario "s"\n    step a:\n        reply echo\n', 1, 13),
        ("defaults   \n    latency 2s\n", 1, 9),
        (STEP + '        reply:\n            chunks\n                "a"\n', 4, 19),
    ],
)
def test_missing_colon(text: str, line: int, column: int) -> None:
    d = one(text)
    assert d.message == "a block header must end with ':'"
    assert (d.span.line, d.span.column) == (line, column)


def test_empty_block_points_at_its_header() -> None:
    d = one('scenario "s":\n    step a:\n    step b:\n        reply echo\n')
    assert d.message == "empty block: add at least one line, indented under it"
    assert (d.span.line, d.span.column, d.span.end_column) == (2, 5, 12)
    d = one("reply canned:\n")
    assert d.message == "empty block: add at least one line, indented under it"


def test_tab_indentation() -> None:
    d = one(STEP + "\t\treply echo\n")
    assert (d.code, d.message, d.hint) == ("tab", "tab used for indentation", "indent with spaces only")
    assert (d.span.line, d.span.column) == (3, 1)
    d = one(STEP + "    \treply echo\n")
    assert (d.code, d.span.column) == ("tab", 5)


def test_dedent_to_no_enclosing_block() -> None:
    d = one(STEP + "        reply:\n            hang\n      echo\n")
    assert d.code == "indent"
    assert d.message == "this line is indented to column 7, which matches no enclosing block"
    assert d.hint == "indent it to column 1, 5, 9 or 13 to line it up with a block above"
    assert (d.span.line, d.span.column) == (5, 7)


def test_unexpected_indent() -> None:
    d = one(STEP + "        reply echo\n            hang\n")
    assert d.code == "indent"
    assert d.message.startswith("unexpected indentation")
    assert (d.span.line, d.span.column) == (4, 13)
    assert one("   mockllm 1\n").code == "indent"


def test_unterminated_strings_and_regexes() -> None:
    d = in_reply('text "no end')
    assert d.message == "unterminated string: add the closing '\"'"
    assert (d.span.line, d.span.column) == (4, 18)
    d = in_reply('text """never closed')
    assert d.message == 'unterminated string: add the closing \'"""\''
    d = in_condition("model matches /abc")
    assert d.message == "unterminated regex: add the closing '/'"


@pytest.mark.parametrize(
    ("literal", "column", "message"),
    [
        (r'"a\qb"', 20, "unknown escape `\\q` in a string"),
        (r'"\u12"', 19, "a \\u escape needs four hex digits"),
        (r'"\ud800"', 19, "a \\u escape names half of a surrogate pair"),
        ('"ok \\', 18, "unterminated string: add the closing '\"'"),
    ],
)
def test_bad_escapes_are_reported_at_the_escape(literal: str, column: int, message: str) -> None:
    d = in_reply(f"text {literal}")
    assert d.message == message
    assert (d.span.line, d.span.column) == (4, column)


def test_bad_escape_in_a_triple_quoted_string_points_at_its_line() -> None:
    d = one(
        STEP
        + '        reply:\n            text """\n'
        + '                fine\n                bad \\z here\n                """\n'
    )
    assert d.message == "unknown escape `\\z` in a string"
    assert (d.span.line, d.span.column, d.span.end_column) == (6, 21, 23)


@pytest.mark.parametrize(
    ("json", "message", "hint"),
    [
        ('{"a": 1,}', "invalid JSON: expected a key in double quotes", "no comma after the last item"),
        ("{a: 1}", "invalid JSON: expected a key in double quotes", 'double quotes: `"a"`'),
        ('{"a": True}', "invalid JSON: expected a JSON value, found `True`", "lower case"),
        ('{"a" 1}', "invalid JSON: expected `:` after the key", None),
        ('{"a": 1 "b": 2}', "invalid JSON: expected `,` or `}`", None),
        ("{\"a\": 'x'}", "invalid JSON: strings are written in double quotes", None),
        ('{"a": "\\x"}', "invalid JSON: unknown escape `\\x` in a string", None),
        ('{"a": [1, 2}', "invalid JSON: expected `,` or `]`", None),
        ('{"a": 01}', "invalid JSON", None),
        ('{"a": 1e999}', "the number `1e999` is too large", None),
    ],
)
def test_invalid_json_is_a_syntax_error(json: str, message: str, hint: str | None) -> None:
    d = in_reply(f"tool call f {json}")
    assert d.code == "syntax"
    assert d.message.startswith(message)
    if hint is not None:
        assert d.hint is not None and hint in d.hint


def test_unclosed_json_points_at_the_bracket() -> None:
    d = one(STEP + '        reply:\n            body {"a": [1,\n                2\n')
    assert d.message == "invalid JSON: this `[` is never closed"
    assert (d.span.line, d.span.column) == (4, 24)


def test_unknown_regex_flag() -> None:
    d = in_condition("model matches /x/ig")
    assert d.message == "unknown regex flag `g`"
    assert (d.span.line, d.span.column) == (4, 31)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            STEP
            + '        when:\n            model is "a"\n        when:\n            model is "b"\n        reply echo\n',
            "`when:` is given twice in this step",
        ),
        (STEP + "        repeat 2\n        always\n", "a step is either `repeat N` or `always`, once"),
        (STEP + "        reply echo\n        reply like x\n", "`reply` is given twice in this step"),
        (STEP + "        reply echo\n    priority 3\n", "`priority` must come before the scenario's first step"),
        ('scenario "s":\n    priority 1\n    priority 2\n', "`priority` is given twice in this scenario"),
        ("defaults:\n    fallback echo\n    fallback like x\n", "`defaults:` holds at most one fallback"),
        (
            "defaults:\n    latency 1s\ndefaults:\n    latency 2s\n",
            "a file has one `defaults:` block; this is a second one",
        ),
        ("mockllm 1\nmockllm 1\n", "the version line is given twice"),
        ("mockllm 3\n", "unsupported language version 3"),
        ('use "x" as x\nmockllm 1\n', "`mockllm N` must be the first statement of the file"),
        (
            'defaults:\n    text "x"\n',
            "expected `latency`, `stream`, `header` or `fallback` in `defaults:`, found `text`",
        ),
    ],
)
def test_structure_errors(text: str, message: str) -> None:
    assert one(text).message == message


def test_every_broken_block_reports_once() -> None:
    text = "".join(
        f'scenario "s{i}":\n    step a:\n        reply:\n            {bad}\n\n'
        for i, bad in enumerate(['txt "x"', "latency 2", "usage 1, 2", 'text "x'])
    )
    diagnostics = diagnose(text)
    assert [d.span.line for d in diagnostics] == [4, 9, 14, 19]


def test_column0_typo_of_a_top_level_keyword() -> None:
    d = one('scenaro "x":\n    step a:\n        reply echo\n')
    assert d.hint == "did you mean `scenario`?"
    assert (d.span.line, d.span.column) == (1, 1)


# ---------------------------------------------------------------------------------------------------------
# The example table


def test_every_example_fails_in_a_state_of_its_own() -> None:
    """Each snippet of the table fails to parse, and its parser state maps back to its own message."""
    parser = build_parser()
    table = _table(parser)
    for message, signatures in example_signatures(parser).items():
        assert signatures, message
        for sig in signatures:
            assert sig is not None, message
            assert table[sig] == message


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("usage 10 in 20 out", "expected `usage N in, M out`, found `20`"),
        ("stream 4 chunks, 40ms", "expected a gap between chunks such as `, 40ms apart`, found the end of the line"),
        ('error "boom"', 'expected `error STATUS "message"`, such as `error 429 "Rate limit reached"`, found `"boom"`'),
        ("finish done", "expected a finish reason: `stop`, `length`, `tool_calls` or `content_filter`, found `done`"),
    ],
)
def test_examples_name_the_construct(line: str, message: str) -> None:
    assert in_reply(line).message == message


def test_examples_match_at_any_depth() -> None:
    """The usage example is written inside a step; the same mistake in a named reply gets its message."""
    d = one("reply canned:\n    usage 10, 20\n")
    assert d.message == "expected `usage N in, M out`, found `,`"


def test_examples_table_is_not_empty() -> None:
    assert len(EXAMPLES) >= 20
