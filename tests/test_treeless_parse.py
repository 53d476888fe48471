"""The tree-less parse (nodes built while the LALR parser reduces): spans, mistakes, threads."""

from __future__ import annotations

import threading
from pathlib import Path

import attrs

from mockllm.dsl.parse.parser import parse_text
from mockllm.dsl.span import Span
from mockllm.dsl.tree import nodes as n

SCRIPT = """\
mockllm 1

reply canned:
    text "hi"
    tool call f {"a": [1,
                       2]}

scenario "s":
    when:
        model glob "gpt-4o*" ignoring case
    step a:
        reply:
            text \"\"\"
                two
                lines
                \"\"\"
            stream 2 chunks, 10ms apart
"""


def _spans(node: object) -> list[tuple[str, Span]]:
    out: list[tuple[str, Span]] = []
    if isinstance(node, tuple):
        for item in node:
            out += _spans(item)
    elif attrs.has(type(node)):
        for field in attrs.fields(type(node)):
            if field.name == "span":
                out.append((type(node).__name__, node.span))
            else:
                out += _spans(getattr(node, field.name))
    return out


def test_spans_run_from_the_first_token_to_the_last_real_token() -> None:
    tree, diagnostics = parse_text(SCRIPT, "s.mockllm")
    assert diagnostics == [] and tree is not None
    reply = tree.replies[0]
    assert reply.span == Span("s.mockllm", 3, 1, 6, 27)  # ends at `}`, not at the next line
    text, call = reply.elements
    assert text.span == Span("s.mockllm", 4, 5, 4, 14)
    assert call.span == Span("s.mockllm", 5, 5, 6, 27)  # a JSON object over two lines
    [scenario] = tree.scenarios
    [condition] = scenario.conditions
    assert condition.span == Span("s.mockllm", 10, 9, 10, 43)  # `ignoring case` included
    assert condition.subject.span == Span("s.mockllm", 10, 9, 10, 14)
    [step] = scenario.steps
    assert isinstance(step.reply, n.ReplyBlock)
    long_text, stream = step.reply.elements
    assert long_text.span == Span("s.mockllm", 13, 13, 16, 20)  # the closing quotes
    assert stream.span == Span("s.mockllm", 17, 13, 17, 40)
    assert scenario.span == Span("s.mockllm", 8, 1, 17, 40)
    assert all(span.line > 0 and span.file == "s.mockllm" for _, span in _spans(tree) if span.line)


def test_a_parse_error_after_a_bad_escape_in_the_same_block_is_what_is_reported() -> None:
    """Nodes are built while parsing, but a mistake found by the transformer (a bad escape) must not
    hide a parse error later in the same block, as it would not when parsing came first."""
    source = 'reply r:\n    text "bad \\q escape"\n    txt "x"\n'
    _, diagnostics = parse_text(source, "e.mockllm")
    assert [(d.span.line, d.span.column) for d in diagnostics] == [(2, 15), (3, 5)]
    assert "txt" in diagnostics[1].message or "did you mean" in (diagnostics[1].hint or "")
    _, diagnostics = parse_text('reply r:\n    text "bad \\q escape"\n    text "x"\n', "e.mockllm")
    assert [(d.span.line, d.span.column, d.message) for d in diagnostics] == [
        (2, 15, "unknown escape `\\q` in a string")
    ]


def test_parsing_in_threads_gives_the_same_trees_and_spans() -> None:
    root = Path(__file__).parent.parent / "scenarios"
    sources = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.mockllm"))]
    sources.append(("s.mockllm", SCRIPT))
    expected = {name: parse_text(text, name) for name, text in sources}
    failures: list[str] = []

    def work() -> None:
        for _ in range(5):
            for name, text in sources:
                tree, diagnostics = parse_text(text, name)
                want_tree, want_diagnostics = expected[name]
                if tree != want_tree or diagnostics != want_diagnostics or _spans(tree) != _spans(want_tree):
                    failures.append(name)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
