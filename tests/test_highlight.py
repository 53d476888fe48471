"""The Pygments lexer: found through its entry point, colours every word of the language, and lexes
every example the project ships (scenarios/, the docs, the README) without an error token."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Error, Keyword, Name, Number, Operator, String, _TokenType

from mockllm.dsl.parse.parser import _keywords
from mockllm.dsl.tree import reference
from mockllm.highlight import MockllmLexer

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^[ \t]*```(mockllm[a-z-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[str, str]]:
    found = [
        (str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(ROOT.glob("scenarios/**/*.mockllm"))
    ]
    for page in sorted([*ROOT.glob("docs/**/*.md"), ROOT / "README.md"]):
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append((f"{page.relative_to(ROOT)}:{line} ({m[1]})", m[2]))
    return found


EXAMPLES = examples()


def tokens(text: str) -> list[tuple[_TokenType, str]]:
    return [(t, v) for t, v in MockllmLexer().get_tokens(text) if v.strip()]


def test_the_entry_point_registers_the_lexer() -> None:
    assert isinstance(get_lexer_by_name("mockllm"), MockllmLexer)
    assert isinstance(get_lexer_for_filename("weather.mockllm"), MockllmLexer)


def test_there_are_examples_of_both_origins() -> None:
    origins = {name.split("/")[0] for name, _ in EXAMPLES}
    assert {"scenarios", "docs"} <= origins
    assert len(EXAMPLES) >= 40


@pytest.mark.parametrize("name,text", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_every_example_lexes_without_error_tokens(name: str, text: str) -> None:
    bad = [v for t, v in MockllmLexer().get_tokens(text) if t in Error]
    assert bad == [], f"{name}: error tokens {bad}"


def test_every_keyword_of_the_grammar_is_coloured() -> None:
    plain = []
    for word in sorted(_keywords()):
        kinds = [t for t, _ in tokens(word)]
        if kinds != [kinds[0]] or kinds[0] is Name or kinds[0] in Error:
            plain.append(word)
    assert plain == []


def test_every_keyword_of_the_grammar_has_reference_text() -> None:
    assert sorted(_keywords() - reference.vocabulary() - reference.CONNECTORS) == []


def test_words_get_the_token_a_reader_expects() -> None:
    text = (ROOT / "scenarios" / "examples" / "weather.mockllm").read_text(encoding="utf-8")
    got = tokens(text)
    kinds = {v: t for t, v in got}
    assert kinds["scenario"] in Keyword and kinds["step"] in Keyword and kinds["capture"] in Keyword
    assert kinds["ask_for_weather"] in Name.Function
    assert kinds["last"] in Name.Builtin and kinds["message"] in Name.Builtin
    assert kinds["contains"] in Operator.Word and kinds["present"] in Operator.Word
    assert kinds["{{city}}"] in String.Interpol
    assert kinds["/weather in ([A-Z][a-z]+)/"] in String.Regex
    assert kinds["40ms"] in Number and kinds["4"] in Number
    refs = tokens('reply like errors.rate_limited\nafter ask\nuse "lib/e.mockllm" as errors\n')
    assert (Name.Namespace, "errors") in refs and (Name.Function, "rate_limited") in refs
    assert (Name.Function, "ask") in refs


def test_a_broken_draft_still_lexes_without_errors() -> None:
    draft = 'scenario "unterminated:\n    step a:\n        when:\n            modle == ?? "x\n        reply:\n'
    assert not [v for t, v in MockllmLexer().get_tokens(draft) if t in Error]
    assert (Keyword, "step") in tokens(draft)
