"""docs/language.md is checked: its examples are what the tool accepts, and its error output is real.

Conventions in the page:
- a ```mockllm block must load and check with no error (warnings allowed);
- a ```mockllm-error block must produce at least one error;
- a ```json block is a script in the JSON form and must check cleanly; a ```json-error block must fail;
- a ```text block right after an error block, or after a ```mockllm block with warnings, is the exact
  output of `mockllm check FILE`;
- a ```mermaid block is the exact `mockllm graph` output for the closest ```mockllm block before it;
- a block whose first line is ``# file: NAME`` is saved under NAME, so later blocks can import it;
  a ```json-error NAME fence names a JSON block (JSON has no comments).
Blocks are written, in page order, into one temporary directory and checked one at a time."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from mockllm.dsl.diagnostics import Diagnostic, render, sort_key, summary
from mockllm.dsl.machines.compiler import load_and_compile
from mockllm.dsl.machines.graph import to_mermaid

DOC = Path(__file__).resolve().parent.parent / "docs" / "language.md"
FENCE = re.compile(r"^```([A-Za-z-]*)(?: +(\S+))?\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
FILE_LINE = re.compile(r"#\s*file:\s*(\S+)")


@attrs.frozen
class Block:
    lang: str
    text: str
    line: int  # where the block starts in the page
    name: str


def _blocks() -> list[Block]:
    source = DOC.read_text(encoding="utf-8")
    out: list[Block] = []
    for i, m in enumerate(FENCE.finditer(source)):
        lang, fence_name, text = m[1], m[2], m[3]
        line = source.count("\n", 0, m.start()) + 1
        first = text.splitlines()[0] if text.strip() else ""
        named = FILE_LINE.fullmatch(first.strip())
        suffix = ".json" if lang.startswith("json") else ".mockllm"
        name = named[1] if named else fence_name or f"block{i:02d}_line{line}{suffix}"
        out.append(Block(lang, text, line, name))
    return out


BLOCKS = _blocks()
SCRIPTS = [b for b in BLOCKS if b.lang in ("mockllm", "mockllm-error", "json", "json-error")]
ERRORS = ("mockllm-error", "json-error")


def _check(block: Block, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Diagnostic], dict[str, str], int]:
    monkeypatch.chdir(tmp)
    for earlier in SCRIPTS:  # named blocks are importable by every block
        if FILE_LINE.fullmatch(earlier.text.splitlines()[0].strip() if earlier.text.strip() else ""):
            (tmp / earlier.name).write_text(earlier.text, encoding="utf-8")
    (tmp / block.name).write_text(block.text, encoding="utf-8")
    _, library, diagnostics = load_and_compile([block.name])
    return diagnostics, dict(library.sources), len(library.sources)


def test_the_page_has_examples_of_every_kind() -> None:
    langs = [b.lang for b in BLOCKS]
    assert langs.count("mockllm") >= 10
    assert "mockllm-error" in langs
    assert "json" in langs
    assert "json-error" in langs


def test_every_example_is_in_the_layout_fmt_writes() -> None:
    """What the page shows is what `mockllm fmt` writes (before: 3 of the 14 examples disagreed: line
    order in a step, aligned end-of-line comments, a JSON argument over several lines)."""
    from mockllm.dsl.format.formatter import format_file
    from mockllm.dsl.parse.parser import parse_text

    checked = 0
    for block in BLOCKS:
        if block.lang != "mockllm":
            continue
        tree, diagnostics = parse_text(block.text, "example.mockllm")
        if tree is None or any(d.is_error for d in diagnostics):
            continue  # the error examples (section 10) show broken scripts on purpose
        assert format_file(tree, block.text) == block.text, f"docs/language.md line {block.line}"
        checked += 1
    assert checked >= 14


@pytest.mark.parametrize("block", [b for b in SCRIPTS if b.lang not in ERRORS], ids=lambda b: f"line{b.line}")
def test_examples_check_cleanly(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    diagnostics, sources, files = _check(block, tmp_path, monkeypatch)
    errors = [d for d in diagnostics if d.is_error]
    assert not errors, f"docs/language.md line {block.line}:\n" + render(errors, sources)
    index = BLOCKS.index(block)
    following = BLOCKS[index + 1] if index + 1 < len(BLOCKS) else None
    if following is not None and following.lang == "text":  # the warnings `mockllm check` prints
        ordered = sorted(diagnostics, key=sort_key)
        expected = render(ordered, sources) + "\n\n" + summary(ordered, files) + "\n"
        assert following.text == expected, f"docs/language.md line {following.line} must show:\n{expected}"


@pytest.mark.parametrize("block", [b for b in SCRIPTS if b.lang in ERRORS], ids=lambda b: f"line{b.line}")
def test_error_examples_fail_and_show_real_output(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    diagnostics, sources, files = _check(block, tmp_path, monkeypatch)
    assert any(d.is_error for d in diagnostics), f"docs/language.md line {block.line} shows no error"
    index = BLOCKS.index(block)
    following = BLOCKS[index + 1] if index + 1 < len(BLOCKS) else None
    if following is not None and following.lang == "text":
        ordered = sorted(diagnostics, key=sort_key)
        expected = render(ordered, sources) + "\n\n" + summary(ordered, files) + "\n"
        assert following.text == expected, f"docs/language.md line {following.line} must show:\n{expected}"


@pytest.mark.parametrize("index", [i for i, b in enumerate(BLOCKS) if b.lang == "mermaid"])
def test_diagrams_are_real_graph_output(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = next(b for b in reversed(BLOCKS[:index]) if b.lang == "mockllm")
    monkeypatch.chdir(tmp_path)
    (tmp_path / script.name).write_text(script.text, encoding="utf-8")
    compiled, _, diagnostics = load_and_compile([script.name])
    assert compiled is not None, diagnostics
    machines = sorted(compiled.machines, key=lambda m: m.load_order)
    expected = "\n".join(to_mermaid(m) for m in machines)
    assert BLOCKS[index].text == expected, f"docs/language.md line {BLOCKS[index].line} must show:\n{expected}"
