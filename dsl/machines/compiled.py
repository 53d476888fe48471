"""Compiled state-machine tables: what the compiler produces and the runtime executes.

A :class:`Machine` is one scenario. Its state, kept per conversation by the runtime, is a
*position* (``START`` or a step index), a use count per step, and the captures taken so far.
Eligibility is a pure function of that state (:meth:`Machine.eligible`)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mockllm.dsl.check.reachability import START as START  # the position before any step
from mockllm.dsl.span import NO_SPAN, Span
from mockllm.dsl.tree.nodes import Capture, Condition, Let, McpServer, ReplyBlock


@attrs.frozen
class CompiledStep:
    index: int
    name: str
    predecessor: int  # START or a step index: the position that makes this step eligible
    max_uses: int | None  # None: `always`
    conditions: tuple[Condition, ...]  # the scenario's `when:` first, then the step's own
    captures: tuple[Capture, ...]
    expects: tuple[Condition, ...]
    reply: ReplyBlock  # `reply like` resolved, the file's defaults applied
    span: Span = attrs.field(default=NO_SPAN, eq=False)

    @property
    def moves_position(self) -> bool:
        return self.max_uses is not None


@attrs.frozen
class Machine:
    name: str
    priority: int
    load_order: int
    order_any: bool
    steps: tuple[CompiledStep, ...]
    lets: tuple[Let, ...] = ()
    tags: tuple[str, ...] = ()
    file: str = ""
    span: Span = attrs.field(default=NO_SPAN, eq=False)

    def eligible(self, position: int, uses: Sequence[int]) -> list[int]:
        """Indexes of the steps eligible in this state, in file order."""
        out: list[int] = []
        for s in self.steps:
            if s.max_uses is not None and uses[s.index] >= s.max_uses:
                continue
            if self.order_any or s.predecessor == position:
                out.append(s.index)
        return out

    def advance(self, position: int, uses: Sequence[int], index: int) -> tuple[int, tuple[int, ...]]:
        """The state after step ``index`` matched: its use count grows; once used up, the position
        moves to it (`always` steps never move the position)."""
        new_uses = list(uses)
        new_uses[index] += 1
        step = self.steps[index]
        if step.max_uses is not None and new_uses[index] >= step.max_uses:
            position = index
        return position, tuple(new_uses)


@attrs.frozen
class CompiledLibrary:
    machines: tuple[Machine, ...]  # selection order: priority (higher first), then load order
    fallback: ReplyBlock | None = None
    fallback_span: Span = attrs.field(default=NO_SPAN, eq=False)
    files: tuple[str, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()  # the `mcp server` blocks; a later file's wins by name

    def step_count(self) -> int:
        return sum(len(m.steps) for m in self.machines)
