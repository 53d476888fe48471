"""The compiler: state-machine tables for every ordering feature, defaults, fallback and merge."""

from __future__ import annotations

from collections.abc import Sequence

from mockllm.dsl.machines.compiled import START, CompiledLibrary, Machine
from mockllm.dsl.machines.compiler import compile_library, merge
from mockllm.dsl.parse.loader import Library
from mockllm.dsl.tree.nodes import (
    After,
    Condition,
    Consumption,
    Defaults,
    Duration,
    Echo,
    Error,
    Hang,
    Header,
    Latency,
    NamedReply,
    Predicate,
    ReplyBlock,
    ReplyRef,
    RetryAfter,
    Scenario,
    ScriptFile,
    Step,
    Stream,
    Subject,
    Text,
    Use,
)


def text(s: str) -> ReplyBlock:
    return ReplyBlock((Text(s),))


def step(name: str, reply: str = "ok", **kw: object) -> Step:
    return Step(name, reply=text(reply), **kw)  # type: ignore[arg-type]


def lib(*files: ScriptFile, aliases: dict[str, dict[str, str]] | None = None) -> Library:
    return Library(files=files, aliases=aliases or {})


def compiled(*files: ScriptFile, aliases: dict[str, dict[str, str]] | None = None) -> CompiledLibrary:
    result, diags = compile_library(lib(*files, aliases=aliases))
    assert result is not None, diags
    return result


def one_machine(*steps: Step, order_any: bool = False) -> Machine:
    result = compiled(ScriptFile("a.mockllm", scenarios=(Scenario("s", order_any=order_any, steps=steps),)))
    return result.machines[0]


def walk(machine: Machine, picks: Sequence[str]) -> list[list[str]]:
    """Feed a sequence of chosen step names; return the eligible names before each pick (and at the end)."""
    position, uses = START, tuple(0 for _ in machine.steps)
    names = [s.name for s in machine.steps]
    seen: list[list[str]] = []
    for pick in picks:
        eligible = [names[i] for i in machine.eligible(position, uses)]
        seen.append(eligible)
        assert pick in eligible, (pick, eligible)
        position, uses = machine.advance(position, uses, names.index(pick))
    seen.append([names[i] for i in machine.eligible(position, uses)])
    return seen


def test_file_order_predecessors() -> None:
    m = one_machine(step("a"), step("b"), step("c"))
    assert [s.predecessor for s in m.steps] == [START, 0, 1]
    assert walk(m, ["a", "b", "c"]) == [["a"], ["b"], ["c"], []]


def test_after_branches_are_alternatives() -> None:
    """Two steps `after` the same step are both eligible there; the first used up moves the position."""
    m = one_machine(
        step("ask"),
        step("yes", after=After("ask")),
        step("no", after=After("ask")),
        step("bye", after=After("no")),
    )
    assert [s.predecessor for s in m.steps] == [START, 0, 0, 2]
    assert walk(m, ["ask", "no", "bye"]) == [["ask"], ["yes", "no"], ["bye"], []]
    assert walk(m, ["ask", "yes"]) == [["ask"], ["yes", "no"], []]


def test_fail_twice_with_429_then_answer() -> None:
    m = one_machine(
        Step("limited", consumption=Consumption("repeat", 2), reply=ReplyBlock((Error(429, "slow down"),))),
        step("answer", "Hello"),
    )
    assert [s.max_uses for s in m.steps] == [2, 1]
    assert walk(m, ["limited", "limited", "answer"]) == [["limited"], ["limited"], ["answer"], []]


def test_always_step_never_moves_position() -> None:
    m = one_machine(step("first"), step("forever", consumption=Consumption("always")))
    assert m.steps[1].max_uses is None and not m.steps[1].moves_position
    assert walk(m, ["first", "forever", "forever", "forever"])[-1] == ["forever"]


def test_order_any_every_unused_step_is_eligible() -> None:
    m = one_machine(step("a"), step("b", consumption=Consumption("repeat", 2)), step("c"), order_any=True)
    assert m.order_any
    assert walk(m, ["c", "b", "a", "b"]) == [["a", "b", "c"], ["a", "b"], ["a", "b"], ["b"], []]


def test_conditions_scenario_first_then_step() -> None:
    model = Condition(Subject("model"), Predicate("is", "gpt-4o"))
    weather = Condition(Subject("last_user_message"), Predicate("contains", "weather"))
    sc = Scenario("s", conditions=(model,), steps=(step("a", conditions=(weather,)),))
    m = compiled(ScriptFile("a.mockllm", scenarios=(sc,))).machines[0]
    assert m.steps[0].conditions == (model, weather)


def test_selection_order_priority_then_load_order() -> None:
    f1 = ScriptFile(
        "a.mockllm", scenarios=(Scenario("low", priority=-1, steps=(step("x"),)), Scenario("mid1", steps=(step("x"),)))
    )
    f2 = ScriptFile(
        "b.mockllm", scenarios=(Scenario("high", priority=5, steps=(step("x"),)), Scenario("mid2", steps=(step("x"),)))
    )
    result = compiled(f1, f2)
    assert [m.name for m in result.machines] == ["high", "mid1", "mid2", "low"]
    assert [m.load_order for m in result.machines] == [2, 1, 3, 0]
    assert result.files == ("a.mockllm", "b.mockllm")


def test_later_scenario_replaces_earlier_in_its_place() -> None:
    f1 = ScriptFile(
        "a.mockllm", scenarios=(Scenario("s", steps=(step("x", "old"),)), Scenario("t", steps=(step("x"),)))
    )
    f2 = ScriptFile("b.mockllm", scenarios=(Scenario("s", steps=(step("x", "new"),)),))
    result, diags = compile_library(lib(f1, f2))
    assert result is not None
    assert [(m.name, m.file, m.load_order) for m in result.machines] == [("s", "b.mockllm", 0), ("t", "a.mockllm", 1)]
    assert result.machines[0].steps[0].reply == text("new")
    assert [d.code for d in diags] == ["replaced-scenario"]


def test_reply_like_resolved_locally_and_through_alias() -> None:
    lib_file = ScriptFile("lib/errors.mockllm", replies=(NamedReply("limited", (Error(429, "slow"),)),))
    main = ScriptFile(
        "main.mockllm",
        uses=(Use("lib/errors.mockllm", "errors"),),
        replies=(NamedReply("hello", (Text("hi"),)),),
        scenarios=(
            Scenario(
                "s",
                steps=(
                    Step("a", reply=ReplyRef("limited", alias="errors")),
                    Step("b", reply=ReplyRef("hello")),
                ),
            ),
        ),
    )
    result = compiled(lib_file, main, aliases={"main.mockllm": {"errors": "lib/errors.mockllm"}})
    assert [s.reply.elements for s in result.machines[0].steps] == [(Error(429, "slow"),), (Text("hi"),)]


def test_defaults_applied_when_step_does_not_set_them() -> None:
    defaults = Defaults(
        elements=(Latency(Duration(20)), Stream("chunks", 3), Header("x-a", "1"), Header("x-b", "2")),
    )
    sc = Scenario(
        "s",
        steps=(
            step("plain"),
            Step("own", reply=ReplyBlock((Text("t"), Latency(Duration(500)), Header("X-A", "mine")))),
            Step("hang", reply=ReplyBlock((Hang(),))),
        ),
    )
    m = compiled(ScriptFile("a.mockllm", defaults=defaults, scenarios=(sc,))).machines[0]
    assert m.steps[0].reply.elements == (Text("ok"), *defaults.elements)
    assert m.steps[1].reply.elements == (
        Text("t"),
        Latency(Duration(500)),
        Header("X-A", "mine"),
        Stream("chunks", 3),
        Header("x-b", "2"),
    )
    assert m.steps[2].reply.elements == (Hang(), Latency(Duration(20)))


def test_defaults_apply_only_to_their_own_file() -> None:
    f1 = ScriptFile(
        "a.mockllm",
        defaults=Defaults(elements=(Latency(Duration(20)),)),
        scenarios=(Scenario("s1", steps=(step("x"),)),),
    )
    f2 = ScriptFile("b.mockllm", scenarios=(Scenario("s2", steps=(step("x"),)),))
    result = compiled(f1, f2)
    replies = {m.name: m.steps[0].reply.elements for m in result.machines}
    assert replies == {"s1": (Text("ok"), Latency(Duration(20))), "s2": (Text("ok"),)}


def test_fallback_is_first_in_load_order_with_defaults() -> None:
    f1 = ScriptFile("a.mockllm", scenarios=(Scenario("s", steps=(step("x"),)),))
    f2 = ScriptFile("b.mockllm", defaults=Defaults(elements=(Latency(Duration(5)),), fallback=ReplyBlock((Echo(),))))
    f3 = ScriptFile("c.mockllm", defaults=Defaults(fallback=text("sorry")))
    result, diags = compile_library(lib(f1, f2, f3))
    assert result is not None
    assert result.fallback == ReplyBlock((Echo(), Latency(Duration(5))))
    assert [d.code for d in diags] == ["ignored-fallback"]
    assert "b.mockllm" in diags[0].message and diags[0].span.file == "c.mockllm"


def test_same_fallback_twice_is_quiet() -> None:
    f1 = ScriptFile("a.mockllm", defaults=Defaults(fallback=ReplyBlock((Echo(),))))
    f2 = ScriptFile("b.mockllm", defaults=Defaults(fallback=ReplyBlock((Echo(),))))
    assert compile_library(lib(f1, f2))[1] == []


def test_fallback_like_named_reply() -> None:
    f = ScriptFile(
        "a.mockllm",
        replies=(NamedReply("nope", (Error(404, "no"), RetryAfter(Duration(1000)))),),
        defaults=Defaults(fallback=ReplyRef("nope")),
    )
    assert compiled(f).fallback == ReplyBlock((Error(404, "no"), RetryAfter(Duration(1000))))


def test_no_fallback() -> None:
    assert compiled(ScriptFile("a.mockllm", scenarios=(Scenario("s", steps=(step("x"),)),))).fallback is None


def test_errors_mean_no_tables() -> None:
    f = ScriptFile("a.mockllm", scenarios=(Scenario("s", steps=(Step("x"),)),))
    result, diags = compile_library(lib(f))
    assert result is None
    assert [d.code for d in diags] == ["missing-reply"]


def test_load_diagnostics_are_kept_and_block_compilation() -> None:
    from mockllm.dsl.diagnostics import error
    from mockllm.dsl.span import Span

    bad = error("syntax", "expected a step", Span("a.mockllm", 3, 1, 3, 2))
    library = Library(files=(ScriptFile("a.mockllm"),), diagnostics=(bad,))
    assert compile_library(library) == (None, [bad])


def test_merge_replaces_in_place_and_appends_new() -> None:
    base = compiled(
        ScriptFile(
            "a.mockllm",
            defaults=Defaults(fallback=text("base")),
            scenarios=(
                Scenario("one", steps=(step("x", "1"),)),
                Scenario("two", steps=(step("x", "2"),)),
            ),
        )
    )
    added = compiled(
        ScriptFile(
            "<posted>",
            scenarios=(
                Scenario("three", steps=(step("x", "3"),)),
                Scenario("one", steps=(step("x", "1b"),)),
            ),
        )
    )
    merged = merge(base, added)
    assert [(m.name, m.load_order) for m in merged.machines] == [("one", 0), ("two", 1), ("three", 2)]
    assert merged.machines[0].steps[0].reply == text("1b")
    assert merged.fallback == text("base")
    assert merged.files == ("a.mockllm", "<posted>")


def test_merge_priority_and_fallback_of_added() -> None:
    base = compiled(
        ScriptFile(
            "a.mockllm", defaults=Defaults(fallback=text("base")), scenarios=(Scenario("one", steps=(step("x"),)),)
        )
    )
    added = compiled(
        ScriptFile(
            "b.mockllm",
            defaults=Defaults(fallback=text("added")),
            scenarios=(Scenario("urgent", priority=3, steps=(step("x"),)),),
        )
    )
    merged = merge(base, added)
    assert [m.name for m in merged.machines] == ["urgent", "one"]
    assert merged.fallback == text("added")


def test_fail_twice_then_answer_from_text() -> None:
    from mockllm.dsl.parse.loader import load_text

    script = (
        'scenario "Flaky":\n'
        "    step limited:\n"
        "        repeat 2\n"
        "        reply:\n"
        '            error 429 "Rate limit reached"\n'
        "            retry after 2s\n"
        "    step answer:\n"
        "        reply:\n"
        '            text "Hello"\n'
        "    step faq:\n"
        "        always\n"
        "        reply echo\n"
    )
    result, diags = compile_library(load_text(script))
    assert result is not None and diags == []
    m = result.machines[0]
    assert [(s.name, s.predecessor, s.max_uses) for s in m.steps] == [
        ("limited", START, 2),
        ("answer", 0, 1),
        ("faq", 1, None),
    ]
    assert walk(m, ["limited", "limited", "answer", "faq", "faq"]) == [
        ["limited"],
        ["limited"],
        ["answer"],
        ["faq"],
        ["faq"],
        ["faq"],
    ]
