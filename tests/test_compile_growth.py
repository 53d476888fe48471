"""Compiling a library is linear in the steps of a scenario (issue 12: a posted library of 1,600 steps
froze the server for 46 s, because each step's template scope walked its whole chain of predecessors).

Measured without a clock: the number of lines of mockllm's own code the checker and compiler execute
(counted by a trace function), for a scenario of N and of 2N steps. Linear work doubles; the old
cubic walk grew about eightfold. The margin is generous (2.5x for a doubling; the count is exact, not timed)."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mockllm.dsl.machines.compiler import compile_library
from mockllm.dsl.parse.loader import load_text

ROOT = Path(__file__).resolve().parent.parent
OWN = tuple(str(ROOT / part) for part in ("dsl", "runtime", "server", "src"))


def long_scenario(steps: int, *, backwards: bool = False) -> str:
    """One scenario of ``steps`` steps: every fifth captures, every seventh repeats, and (``backwards``)
    each step names the one before it in an `after` line, written from last to first."""
    blocks = []
    for i in range(steps):
        lines = [f"    step s{i}:", "        when:", f'            last user message contains "m{i}"']
        if i % 5 == 0:
            lines.append(f"        capture c{i} from last user message /m(\\d+)/")
        if i % 7 == 3:
            lines.append("        repeat 2")
        if backwards and i > 0:
            lines.append(f"        after s{i - 1}")
        ref = f" {{{{c{i - i % 5}}}}}"
        lines += ["        reply:", f'            text "r{i}{ref}"']
        blocks.append("\n".join(lines))
    if backwards:
        blocks = [blocks[0], *reversed(blocks[1:])]
    return 'scenario "long":\n' + "\n".join(blocks) + "\n"


def executed_lines(fn: Callable[[], Any]) -> int:
    """How many lines of mockllm's code run during ``fn()``."""
    count = 0

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def trace(frame: types.FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(OWN) else None

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def compile_cost(steps: int, backwards: bool) -> int:
    library = load_text(long_scenario(steps, backwards=backwards), file="long.mockllm")

    def run() -> None:
        compiled, diagnostics = compile_library(library)
        assert compiled is not None, [d.message for d in diagnostics if d.is_error]

    return executed_lines(run)


@pytest.mark.parametrize("backwards", [False, True], ids=["in-order", "after-lines-backwards"])
def test_compile_work_grows_linearly_with_steps(backwards: bool) -> None:
    small, large = compile_cost(200, backwards), compile_cost(400, backwards)
    assert large < 2.5 * small, f"200 steps ran {small} lines, 400 steps ran {large}"


def test_long_scenario_scopes_are_still_checked() -> None:
    """The faster scope walk still reports a capture used before the step that takes it."""
    text = long_scenario(12).replace('text "r3 {{c0}}"', 'text "r3 {{c5}}"')
    compiled, diagnostics = compile_library(load_text(text, file="long.mockllm"))
    assert compiled is None
    messages = [d.message for d in diagnostics if d.is_error]
    assert messages == ["`{{c5}}` is captured by step `s5`, which cannot run before this step"]
