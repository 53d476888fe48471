"""State-machine diagrams of compiled scenarios, as Mermaid flowcharts or Graphviz DOT.

One diagram per scenario: a ``start`` node, one node per step (its name and consumption: once,
repeat N, always), an edge from each step's predecessor labelled with the step's own conditions
(the scenario's shared ``when:`` conditions go on the start node), and a self-loop on steps that
can match more than once. With ``order any`` every step hangs off ``start``."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import attrs

from mockllm.dsl.machines.compiled import START, CompiledStep, Machine
from mockllm.dsl.tree.describe import condition, quote
from mockllm.dsl.tree.nodes import Condition

__all__ = ["Diagram", "Edge", "diagram", "to_dot", "to_mermaid", "to_mermaid_document"]

MAX_CONDITION_CHARS = 48
MAX_CONDITIONS = 3


@attrs.frozen
class Edge:
    source: str
    target: str
    lines: tuple[str, ...]
    dashed: bool = False


@attrs.frozen
class Diagram:
    title: str
    start_lines: tuple[str, ...]  # "start", then the scenario's shared conditions
    nodes: tuple[tuple[str, tuple[str, ...]], ...]  # (id, label lines)
    edges: tuple[Edge, ...]


def _wrap(text: str) -> list[str]:
    """A condition in lines of at most ``MAX_CONDITION_CHARS``, broken between words (a word longer
    than a line keeps a line of its own): a label never cuts a word or drops part of a condition."""
    return textwrap.wrap(text, MAX_CONDITION_CHARS, break_long_words=False, break_on_hyphens=False) or [text]


def _condition_lines(conditions: Sequence[Condition], empty: str) -> tuple[str, ...]:
    if not conditions:
        return (empty,) if empty else ()
    lines = [line for c in conditions[:MAX_CONDITIONS] for line in _wrap(condition(c))]
    if len(conditions) > MAX_CONDITIONS:
        lines.append(f"+{len(conditions) - MAX_CONDITIONS} more")
    return tuple(lines)


def _shared_prefix(steps: Sequence[CompiledStep]) -> int:
    """How many leading conditions every step shares: the scenario's ``when:`` block (with a single
    step the split is unknown, so its conditions all stay on its edge)."""
    if len(steps) < 2:
        return 0
    first = steps[0].conditions
    count = 0
    while count < len(first) and all(
        len(s.conditions) > count and s.conditions[count] == first[count] for s in steps[1:]
    ):
        count += 1
    return count


def _consumption(step: CompiledStep) -> str:
    if step.max_uses is None:
        return "always"
    return "once" if step.max_uses == 1 else f"repeat {step.max_uses}"


def _node_id(index: int) -> str:
    return "start" if index == START else f"s{index}"


def diagram(machine: Machine) -> Diagram:
    """The format-neutral picture of one machine (what both renderers draw)."""
    shared = _shared_prefix(machine.steps)
    start_lines: list[str] = ["start"]
    if shared:
        shared_lines = _condition_lines(machine.steps[0].conditions[:shared], "")
        start_lines.extend(("when " if i == 0 else "") + line for i, line in enumerate(shared_lines))
    if machine.order_any:
        start_lines.append("order any")
    nodes = tuple((_node_id(s.index), (s.name, _consumption(s))) for s in machine.steps)
    edges: list[Edge] = []
    for s in machine.steps:
        source = START if machine.order_any else s.predecessor
        own = _condition_lines(s.conditions[shared:], "any request")
        edges.append(Edge(_node_id(source), _node_id(s.index), own, dashed=s.max_uses is None))
        if s.max_uses is None or s.max_uses > 1:
            again = "always" if s.max_uses is None else f"up to {s.max_uses} times"
            edges.append(Edge(_node_id(s.index), _node_id(s.index), (again,), dashed=True))
    title = f"scenario {quote(machine.name)}"
    if machine.priority:
        title += f" (priority {machine.priority})"
    return Diagram(title, tuple(start_lines), nodes, tuple(edges))


# ---------------------------------------------------------------------------------------------------------
# Mermaid


def _mermaid_text(lines: Sequence[str]) -> str:
    escaped = (
        line.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;") for line in lines
    )
    return '"' + "<br/>".join(escaped) + '"'


def _mermaid_body(d: Diagram, prefix: str, indent: str) -> list[str]:
    out = [f"{indent}{prefix}start(({_mermaid_text(d.start_lines)}))"]
    for node_id, label in d.nodes:
        out.append(f"{indent}{prefix}{node_id}[{_mermaid_text(label)}]")
    for e in d.edges:
        arrow = "-.->" if e.dashed else "-->"
        out.append(f"{indent}{prefix}{e.source} {arrow}|{_mermaid_text(e.lines)}| {prefix}{e.target}")
    return out


def to_mermaid(machine: Machine) -> str:
    """A Mermaid ``flowchart`` of one scenario's machine."""
    d = diagram(machine)
    title = "'" + d.title.replace("'", "''") + "'"  # a YAML single-quoted scalar
    out = ["---", f"title: {title}", "---", "flowchart TD", *_mermaid_body(d, "", "    ")]
    return "\n".join(out) + "\n"


def to_mermaid_document(machines: Sequence[Machine]) -> str:
    """One Mermaid document for any number of scenarios: one scenario is :func:`to_mermaid`; several
    are one ``flowchart`` with a subgraph per scenario (node ids prefixed ``m0_``, ``m1_`` … so they
    never collide), which every Mermaid renderer draws as a whole."""
    if len(machines) == 1:
        return to_mermaid(machines[0])
    out = ["flowchart TD"]
    for i, machine in enumerate(machines):
        d = diagram(machine)
        prefix = f"m{i}_"
        out.append(f"    subgraph {prefix}scenario[{_mermaid_text([d.title])}]")
        out.append("        direction TB")
        out.extend(_mermaid_body(d, prefix, "        "))
        out.append("    end")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Graphviz DOT


def _dot_text(lines: Sequence[str]) -> str:
    return '"' + "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines) + '"'


def to_dot(machine: Machine) -> str:
    """A Graphviz ``digraph`` of one scenario's machine."""
    d = diagram(machine)
    out = [
        f"digraph {_dot_text([machine.name])} {{",
        f"    label={_dot_text([d.title])};",
        "    labelloc=t;",
        '    node [shape=box, style=rounded, fontname="Helvetica"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        f"    start [shape=ellipse, label={_dot_text(d.start_lines)}];",
    ]
    for node_id, label in d.nodes:
        out.append(f"    {node_id} [label={_dot_text(label)}];")
    for e in d.edges:
        style = ", style=dashed" if e.dashed else ""
        out.append(f"    {e.source} -> {e.target} [label={_dot_text(e.lines)}{style}];")
    out.append("}")
    return "\n".join(out) + "\n"
