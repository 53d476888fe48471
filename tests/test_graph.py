from __future__ import annotations

import re

from mockllm.dsl.machines.compiled import Machine
from mockllm.dsl.machines.compiler import compile_library
from mockllm.dsl.machines.graph import diagram, to_dot, to_mermaid
from mockllm.dsl.parse.loader import Library
from mockllm.dsl.tree import nodes as n


def _cond(subject: str, op: str, value: object = None, arg: str | None = None) -> n.Condition:
    return n.Condition(n.Subject(subject, arg), n.Predicate(op, value))  # type: ignore[arg-type]


def _machines(*scenarios: n.Scenario) -> dict[str, Machine]:
    library = Library(files=(n.ScriptFile("g.mockllm", scenarios=scenarios),))
    compiled, diagnostics = compile_library(library)
    assert compiled is not None, diagnostics
    return {m.name: m for m in compiled.machines}


TEXT = n.ReplyBlock((n.Text("ok"),))

BRANCHES = n.Scenario(
    "Branches",
    priority=5,
    conditions=(_cond("provider", "is", "openai"),),
    steps=(
        n.Step("ask", conditions=(_cond("last_user_message", "contains", "weather"),), reply=TEXT),
        n.Step(
            "sunny",
            conditions=(_cond("tool_result", "contains", "sun", "get_weather"),),
            after=n.After("ask"),
            reply=TEXT,
        ),
        n.Step(
            "rainy",
            conditions=(_cond("tool_result", "contains", "rain", "get_weather"),),
            after=n.After("ask"),
            reply=TEXT,
        ),
    ),
)

LOOPS = n.Scenario(
    "Loops",
    steps=(
        n.Step("fail", consumption=n.Consumption("repeat", 2), reply=n.ReplyBlock((n.Error(429, "slow down"),))),
        n.Step("answer", consumption=n.Consumption("always"), reply=TEXT),
    ),
)

ANY = n.Scenario(
    "Any order",
    order_any=True,
    steps=(
        n.Step("a", conditions=(_cond("last_user_message", "contains", "a"),), reply=TEXT),
        n.Step("b", conditions=(_cond("last_user_message", "contains", "b"),), reply=TEXT),
        n.Step("c", conditions=(_cond("last_user_message", "contains", "c"),), reply=TEXT),
    ),
)


def _mermaid_edges(text: str) -> set[tuple[str, str, str]]:
    return {(m[1], m[3], m[2]) for m in re.finditer(r"^\s+(\w+) -\.?->\|\"(.*)\"\| (\w+)$", text, flags=re.MULTILINE)}


def _dot_edges(text: str) -> set[tuple[str, str]]:
    return {(m[1], m[2]) for m in re.finditer(r"^\s+(\w+) -> (\w+) \[", text, flags=re.MULTILINE)}


def test_after_branches_hang_off_the_same_step() -> None:
    m = _machines(BRANCHES)["Branches"]
    mermaid = to_mermaid(m)
    edges = _mermaid_edges(mermaid)
    assert ("start", "s0", "last user message contains #quot;weather#quot;") in edges
    assert ("s0", "s1", "tool result for #quot;get_weather#quot; contains #quot;sun#quot;") in edges
    assert ("s0", "s2", "tool result for #quot;get_weather#quot; contains #quot;rain#quot;") in edges
    assert len(edges) == 3  # no self-loops: every step is used once
    assert 's0["ask<br/>once"]' in mermaid
    # the scenario's shared condition sits on the start node, not on every edge
    assert 'start(("start<br/>when provider is openai"))' in mermaid
    assert "title: 'scenario \"Branches\" (priority 5)'" in mermaid


def test_repeat_and_always_get_self_loops() -> None:
    m = _machines(LOOPS)["Loops"]
    mermaid = to_mermaid(m)
    edges = _mermaid_edges(mermaid)
    assert ("start", "s0", "any request") in edges
    assert ("s0", "s0", "up to 2 times") in edges
    assert ("s0", "s1", "any request") in edges
    assert ("s1", "s1", "always") in edges
    assert 's0["fail<br/>repeat 2"]' in mermaid
    assert 's1["answer<br/>always"]' in mermaid
    dot = to_dot(m)
    assert _dot_edges(dot) == {("start", "s0"), ("s0", "s0"), ("s0", "s1"), ("s1", "s1")}
    assert 's0 [label="fail\\nrepeat 2"];' in dot
    assert 's1 -> s1 [label="always", style=dashed];' in dot


def test_order_any_makes_every_step_reachable_from_start() -> None:
    m = _machines(ANY)["Any order"]
    assert {(e.source, e.target) for e in diagram(m).edges} == {("start", "s0"), ("start", "s1"), ("start", "s2")}
    assert "order any" in to_mermaid(m)
    assert _dot_edges(to_dot(m)) == {("start", "s0"), ("start", "s1"), ("start", "s2")}


def test_dot_escapes_quotes_and_is_one_digraph() -> None:
    m = _machines(BRANCHES)["Branches"]
    dot = to_dot(m)
    assert dot.startswith('digraph "Branches" {')
    assert dot.rstrip().endswith("}")
    assert 'start -> s0 [label="last user message contains \\"weather\\""];' in dot
    assert dot.count("{") == dot.count("}")


def test_long_condition_lists_are_shortened_and_wrapped_between_words() -> None:
    many = tuple(_cond("last_user_message", "contains", f"a long value {i} " * 6) for i in range(5))
    m = _machines(n.Scenario("Long", steps=(n.Step("only", conditions=many, reply=TEXT),)))["Long"]
    [edge] = [e for e in diagram(m).edges if e.target == "s0"]
    assert edge.lines[-1] == "+2 more"
    assert all(len(line) <= 48 for line in edge.lines)
    shown = " ".join(edge.lines[:-1])
    for i in range(3):  # each of the first three conditions whole, its words uncut
        assert f'last user message contains "{"a long value " + str(i) + " "}' in shown
    assert "…" not in shown
