"""Error recovery inside broken blocks: every mistake of a file is reported in one run, once, at its own
line; the parts that parse still reach the tree, so their semantic errors are reported beside the
syntax errors; nothing a mistake caused is reported; and a file with errors never compiles.

Golden files: tests/diagnostics/recovery_*.mockllm → .expected.txt, rendered after load + check +
compile (the syntax-only goldens of the same feature are tests/diagnostics/syntax_many_*)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mockllm.dsl.parse.parser as parser_module
from mockllm.dsl.diagnostics import Diagnostic, has_errors, render
from mockllm.dsl.machines.compiler import compile_library, load_and_compile
from mockllm.dsl.parse.loader import load_text
from mockllm.dsl.parse.parser import parse_text
from mockllm.dsl.tree import nodes as n

FILE = "t.mockllm"
DIAGNOSTICS_DIR = Path(__file__).parent / "diagnostics"
GOLDEN = sorted(p.name for p in DIAGNOSTICS_DIR.glob("recovery_*.mockllm"))
EXAMPLES = sorted((Path(__file__).parent.parent / "scenarios" / "examples").glob("*.mockllm"))
SYNTAX_CODES = {"syntax", "indent", "tab"}
STEP = 'scenario "s":\n    step a:\n'


def compile_text(text: str) -> tuple[bool, list[Diagnostic]]:
    compiled, diagnostics = compile_library(load_text(text, FILE))
    return compiled is not None, diagnostics


def where(diagnostics: list[Diagnostic]) -> list[tuple[str, int]]:
    return sorted(((d.code, d.span.line) for d in diagnostics), key=lambda x: x[1])


# ---------------------------------------------------------------------------------------------------------
# Golden files


def test_there_are_golden_files() -> None:
    assert len(GOLDEN) >= 3
    assert len(list(DIAGNOSTICS_DIR.glob("syntax_many_*.mockllm"))) >= 4


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_diagnostics(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DIAGNOSTICS_DIR)
    expected = (DIAGNOSTICS_DIR / name.replace(".mockllm", ".expected.txt")).read_text(encoding="utf-8")
    compiled, library, diagnostics = load_and_compile([name])
    assert compiled is None  # a file with errors never half-loads
    assert render(diagnostics, library.sources) + "\n" == expected


def test_syntax_and_semantic_errors_of_one_scenario_come_together() -> None:
    text = (DIAGNOSTICS_DIR / "recovery_syntax_and_semantic.mockllm").read_text(encoding="utf-8")
    compiled, diagnostics = compile_text(text)
    assert not compiled
    assert where(diagnostics) == [
        ("syntax", 9),
        ("bad-regex", 10),
        ("syntax", 13),
        ("unknown-name", 14),
        ("unknown-step", 17),
        ("syntax", 20),
        ("bad-repeat", 23),
    ]


# ---------------------------------------------------------------------------------------------------------
# What reaches the tree


def test_the_good_steps_of_a_broken_scenario_join_the_tree() -> None:
    text = (DIAGNOSTICS_DIR / "syntax_many_steps.mockllm").read_text(encoding="utf-8")
    tree, diagnostics = parse_text(text, FILE)
    assert [(d.span.line, d.span.column) for d in diagnostics] == [(5, 13), (8, 9)]
    assert tree is not None
    (scenario,) = tree.scenarios
    assert (scenario.name, scenario.span.line) == ("Weather", 2)
    ask, answer = scenario.steps
    assert ask.name == "ask" and ask.reply == n.ReplyBlock((n.Echo(span=ask.reply.span),), span=ask.reply.span)
    assert answer.name == "answer" and answer.conditions == ()
    assert isinstance(answer.reply, n.ReplyBlock) and answer.reply.elements[0] == n.Text(
        "Sunny in Paris.", span=answer.reply.elements[0].span
    )


def test_a_step_header_that_cannot_be_read_keeps_its_scenario_out_but_its_steps_are_read() -> None:
    text = (
        'scenario "s":\n'
        "    step ask for weather:\n"
        "        reply:\n"
        '            txt "x"\n'
        "    step answer:\n"
        "        after ask\n"
        "        reply:\n"
        '            txt "x"\n'
    )
    compiled, diagnostics = compile_text(text)
    assert not compiled
    # the header's lines are not read (where they belong is a guess), the next step's are; and no
    # "`after ask`: no step `ask`": the step is there, its header is what is wrong
    assert where(diagnostics) == [("syntax", 2), ("syntax", 8)]
    tree, _ = parse_text(text, FILE)
    assert tree is not None and tree.scenarios == ()
    # a quoted name is read as the name
    tree, diagnostics = parse_text(text.replace("ask for weather", '"ask"'), FILE)
    assert where(diagnostics) == [("syntax", 2), ("syntax", 4), ("syntax", 8)]
    assert tree is not None and [s.name for s in tree.scenarios[0].steps] == ["ask", "answer"]


def test_a_missing_colon_is_mended_so_the_step_still_counts() -> None:
    text = 'scenario "s":\n    step ask\n        reply echo\n    step answer:\n        after ask\n        reply echo\n'
    compiled, diagnostics = compile_text(text)
    assert not compiled
    assert [(d.code, d.span.line, d.message) for d in diagnostics] == [
        ("syntax", 2, "a block header must end with ':'")
    ]
    tree, _ = parse_text(text, FILE)
    assert tree is not None and [s.name for s in tree.scenarios[0].steps] == ["ask", "answer"]


def test_two_mistakes_in_one_reply_block_are_both_reported() -> None:
    text = STEP + '        reply:\n            txt "x"\n            text "ok"\n            finish dne\n'
    _tree, diagnostics = parse_text(text, FILE)
    assert [(d.span.line, d.span.column) for d in diagnostics] == [(4, 13), (6, 20)]


# ---------------------------------------------------------------------------------------------------------
# No cascades


def test_a_missing_reply_header_is_reported_once() -> None:
    text = (DIAGNOSTICS_DIR / "syntax_many_missing_header.mockllm").read_text(encoding="utf-8")
    compiled, diagnostics = compile_text(text)
    assert not compiled
    assert where(diagnostics) == [("syntax", 6), ("syntax", 12)]  # no "step has no reply"


def test_after_a_line_that_matches_no_block_the_rest_of_its_block_is_not_read() -> None:
    text = (
        'scenario "a":\n'
        "    step one:\n"
        "        reply:\n"
        '            text "x"\n'
        '          text "y"\n'  # indented to no enclosing block
        "    step two:\n"
        "        reply:\n"
        '            txt "z"\n'  # could be anything now: not reported
        'scenario "b":\n'
        "    step one:\n"
        "        reply:\n"
        '            txt "w"\n'  # another top-level block: reported
    )
    _tree, diagnostics = parse_text(text, FILE)
    assert where(diagnostics) == [("indent", 5), ("syntax", 12)]


def test_a_reply_slipped_to_column_one_keeps_its_step_out_of_the_checks() -> None:
    text = 'scenario "s":\n    step ask:\n        when:\n            model is "x"\nreply:\n            text "hi"\n'
    compiled, diagnostics = compile_text(text)
    assert not compiled
    assert where(diagnostics) == [("syntax", 5)]  # and no "step `ask` has no reply"


def test_a_broken_use_line_does_not_make_its_alias_unknown() -> None:
    text = 'use "lib.mockllm" errors\n\nscenario "s":\n    step a:\n        reply like errors.busy\n'
    compiled, diagnostics = compile_text(text)
    assert not compiled
    assert where(diagnostics) == [("syntax", 1)]


def test_lines_of_a_triple_quoted_string_are_never_cut_at() -> None:
    text = (
        'scenario "s":\n'
        "    step a:\n"
        "        reply:\n"
        '            text """\n'
        "    step b:\n"
        '            """\n'
        '            txt "x"\n'
    )
    tree, diagnostics = parse_text(text, FILE)
    assert where(diagnostics) == [("syntax", 7)]
    assert tree is not None and [s.name for s in tree.scenarios[0].steps] == ["a"]


def test_lines_of_json_over_several_lines_are_never_cut_at() -> None:
    text = (
        'scenario "s":\n'
        "    step a:\n"
        "        reply:\n"
        "            body [\n"
        "            true,\n"
        "            false]\n"
        '            txt "x"\n'
    )
    _tree, diagnostics = parse_text(text, FILE)
    assert where(diagnostics) == [("syntax", 7)]


# ---------------------------------------------------------------------------------------------------------
# Hints


def test_hint_for_a_status_that_is_not_a_whole_number() -> None:
    _tree, (d,) = parse_text('reply r:\n    error 42x "bad"\n', FILE)
    assert (d.span.line, d.span.column, d.span.end_column) == (2, 11, 14)
    assert d.message.endswith("found `42x`")
    assert d.hint == "the status is a whole number such as `429`"


def test_hint_for_a_quote_inside_a_string() -> None:
    _tree, (d,) = parse_text('reply r:\n    text "{{"{{"}}x}}"\n', FILE)
    assert d.message == "expected the end of the line, found `{`"
    assert d.hint == 'a `"` inside a string is written `\\"`'


def test_hint_for_a_reply_element_written_in_a_step() -> None:
    _tree, (d,) = parse_text('scenario "s":\n    step a:\n        latency 20\n        reply echo\n', FILE)
    assert d.hint == (
        "`latency` is a reply element: it goes inside the step's `reply:` block (and a duration has a unit: `20ms`)"
    )
    _tree, (d,) = parse_text("reply r:\n    latency 20\n", FILE)
    assert d.hint == "a duration has a unit: write `20ms` or `20s`"


# ---------------------------------------------------------------------------------------------------------
# Clean files, and random edits


def test_a_clean_file_is_parsed_once_without_recovery(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = parser_module._parse_block

    def counting(text: str, file: str, first_line: int = 1) -> object:
        calls.append(first_line)
        return original(text, file, first_line)

    def no_recovery(*args: object) -> None:
        raise AssertionError("a clean file needs no recovery")

    monkeypatch.setattr(parser_module, "_parse_block", counting)
    monkeypatch.setattr(parser_module, "Recovery", no_recovery)
    tree, diagnostics = parse_text(EXAMPLES[0].read_text(encoding="utf-8"), FILE)
    assert tree is not None and diagnostics == [] and calls == [1]


@st.composite
def edited_examples(draw: st.DrawFn) -> str:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    text = rnd.choice(EXAMPLES).read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 4))):
        i = rnd.randrange(len(text))
        j = min(len(text), i + rnd.randrange(1, 12))
        kind = rnd.randrange(4)
        if kind == 0:
            text = text[:i] + text[j:]
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif kind == 2:
            text = text[:i] + rnd.choice(['"', ":", "{", "\n", "    ", "x", "#", '"""']) + text[i:]
        else:
            lines = text.split("\n")
            a, b = rnd.randrange(len(lines)), rnd.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(edited_examples())
def test_random_edits_report_each_line_once_and_never_compile_half(text: str) -> None:
    tree, diagnostics = parse_text(text, FILE)
    assert tree is not None
    lines = [d.span.line for d in diagnostics if d.is_error]
    assert len(lines) == len(set(lines))  # one error per line at most
    assert all(d.span.line >= 1 and d.span.column >= 1 for d in diagnostics)
    assert not any("bug in mockllm" in (d.hint or "") for d in diagnostics)
    compiled, all_diagnostics = compile_text(text)
    if any(d.code in SYNTAX_CODES for d in all_diagnostics):
        assert not compiled and has_errors(all_diagnostics)
