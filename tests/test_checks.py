"""Semantic checks over syntax trees built in code (the text-based cases live in tests/diagnostics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockllm.dsl.check.checks import check
from mockllm.dsl.diagnostics import Diagnostic, has_errors, render
from mockllm.dsl.machines.compiler import load_and_compile
from mockllm.dsl.parse.loader import Library
from mockllm.dsl.span import Span
from mockllm.dsl.tree.describe import PROVIDERS
from mockllm.dsl.tree.nodes import (
    After,
    Body,
    Capture,
    Chunks,
    Condition,
    Consumption,
    Defaults,
    Disconnect,
    Duration,
    Echo,
    Error,
    Finish,
    Flag,
    Hang,
    Header,
    Latency,
    Let,
    NamedReply,
    Predicate,
    Regex,
    ReplyBlock,
    ReplyRef,
    Scenario,
    ScriptFile,
    Status,
    Step,
    Stream,
    StreamError,
    Subject,
    Text,
    Thinking,
    ToolCall,
    Usage,
    Use,
    Vector,
)

OK = ReplyBlock((Text("ok"),))
NO_NAME_HINT = (
    "template names are `let` variables, captures, `request.model`, `request.last_user_message` and `tool_result.NAME`"
)

ALL_PROVIDERS = ", ".join(f"`{p}`" for p in PROVIDERS[:-1]) + f" and `{PROVIDERS[-1]}`"


def run(*scenarios: Scenario, **file_kw: object) -> list[Diagnostic]:
    f = ScriptFile("a.mockllm", scenarios=scenarios, **file_kw)  # type: ignore[arg-type]
    return check(Library(files=(f,)))


def cond(kind: str, op: str, value: object = None, arg: str | None = None, ignore_case: bool = False) -> Condition:
    return Condition(Subject(kind, arg), Predicate(op, value), ignore_case)  # type: ignore[arg-type]


def when(*conditions: Condition) -> list[Diagnostic]:
    return run(Scenario("s", steps=(Step("a", conditions=conditions, reply=OK),)))


def codes(diags: list[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


@pytest.mark.parametrize(
    "condition",
    [
        cond("model", "is", "gpt-4o"),
        cond("model", "glob", "gpt-4o*", ignore_case=True),
        cond("endpoint", "not_matches", Regex("^/v1")),
        cond("any_message", "contains", "hi", arg="tool"),
        cond("header", "is_present", None, arg="x") if False else cond("header", "present", arg="x-a"),
        cond("field", "is", 0.5, arg="temperature"),
        cond("field", "at_least", 2, arg="n"),
        cond("field", "absent", arg="tools"),
        cond("tool_result", "error", arg="get_weather"),
        cond("last_user_message", "absent"),
        cond("tools", "include", "get_weather", ignore_case=True),
        cond("tools", "present"),
        cond("stream", "is_not", True),
        cond("turn", "is", 2),
        cond("turn", "at_most", 3),
        cond("provider", "is", "anthropic"),
        cond("provider", "glob", "open*"),
        cond("provider", "is_not", "openai", ignore_case=True),
    ],
)
def test_valid_conditions_pass(condition: Condition) -> None:
    assert when(condition) == []


@pytest.mark.parametrize(
    ("condition", "message", "hint"),
    [
        (
            cond("tools", "matches", Regex("x")),
            "`matches` cannot be used with `tools`",
            "`tools` takes `include`, `exclude`, `is present` or `is absent`",
        ),
        (cond("turn", "contains", "a"), "`contains` cannot be used with `turn`", None),
        (cond("model", "present"), "`is present` cannot be used with `model`", None),
        (cond("header", "error", arg="x"), '`is error` cannot be used with `header "x"`', None),
        (cond("model", "at_least", 3), "`is at least` cannot be used with `model`", None),
        (cond("stream", "contains", "t"), "`contains` cannot be used with `stream`", None),
        (cond("provider", "contains", "open"), "`contains` cannot be used with `provider`", None),
        (
            cond("turn", "is", "a"),
            '`turn` is a number of user messages, so it cannot be "a"',
            "write an integer: `turn is 2`",
        ),
        (
            cond("turn", "at_least", 1.5),
            "`turn` counts user messages, so `is at least` takes an integer, not 1.5",
            None,
        ),
        (cond("stream", "is", "yes"), '`stream` is true or false, so it cannot be "yes"', None),
        (
            cond("model", "is", 4),
            "`model` is text, so compare it with a string, not 4",
            'write the value in quotes: `model is "4"`',
        ),
        (cond("provider", "is", "opnai"), "unknown provider `opnai`", "did you mean `openai`?"),
        (
            cond("provider", "is", "deepseek"),
            "unknown provider `deepseek`",
            f"providers are {ALL_PROVIDERS}",
        ),
        (cond("tools", "include", 3), "`include` takes a string, not 3", None),
        (cond("field", "at_most", "x", arg="n"), '`is at most` takes a number, not "x"', None),
    ],
)
def test_predicate_subject_table(condition: Condition, message: str, hint: str | None) -> None:
    (d,) = when(condition)
    assert d.severity == "error"
    assert d.message == message
    if hint is not None:
        assert d.hint == hint


def test_ignoring_case_only_on_string_predicates() -> None:
    (d,) = when(cond("turn", "is", 2, ignore_case=True))
    assert d.code == "bad-ignore-case"
    assert d.message == "`ignoring case` does not apply to `turn is 2`"
    assert when(cond("model", "is", "GPT", ignore_case=True)) == []


def test_bad_regex_message_from_re() -> None:
    (d,) = when(cond("model", "matches", Regex("gpt-(4")))
    assert d.code == "bad-regex"
    assert d.message == "invalid regex /gpt-(4/: missing ), unterminated subpattern at position 4"


def test_regex_compiled_with_flags() -> None:
    assert when(cond("model", "matches", Regex("gpt # a comment", "x"))) == []
    (d,) = when(cond("model", "matches", Regex("(?-x:a)", "q")))
    assert d.message == "unknown regex flag `q`"


def test_bad_capture_regex_and_subject() -> None:
    caps = (Capture("c", Subject("last_user_message"), Regex("(")), Capture("d", Subject("tools"), Regex("x")))
    diags = run(Scenario("s", steps=(Step("a", captures=caps, reply=OK),)))
    assert codes(diags) == ["bad-regex", "bad-capture"] or codes(diags) == ["bad-capture", "bad-regex"]


def test_unknown_after_with_did_you_mean() -> None:
    (d,) = run(Scenario("s", steps=(Step("ask", reply=OK), Step("answer", after=After("aks"), reply=OK))))
    assert d.code == "unknown-step"
    assert d.message == '`after aks`: scenario "s" has no step `aks`'
    assert d.hint == "did you mean `ask`?"


def test_duplicates() -> None:
    sc = Scenario(
        "s",
        lets=(Let("x", "1"), Let("x", "2")),
        steps=(Step("a", reply=OK), Step("a", reply=OK)),
    )
    diags = run(
        sc,
        Scenario("s", steps=(Step("b", reply=OK),)),
        uses=(Use("b.mockllm", "lib"), Use("c.mockllm", "lib")),
        replies=(NamedReply("r", (Text("1"),)), NamedReply("r", (Text("2"),))),
    )
    messages = sorted(d.message for d in diags if d.code == "duplicate-name")
    assert messages == [
        "`x` is already set by `let`",
        'alias `lib` is already used for "b.mockllm"',
        "reply `r` is already defined",
        'scenario "s" is already defined in this file',
        'step `a` is already defined in scenario "s"',
    ]


def test_missing_reply_and_repeat_zero() -> None:
    diags = run(Scenario("s", steps=(Step("a", consumption=Consumption("repeat", 0)),)))
    assert sorted(codes(diags)) == ["bad-repeat", "missing-reply"]
    assert {d.message for d in diags} == {"step `a` has no reply", "`repeat 0` would never let step `a` run"}


def test_unreachable_steps() -> None:
    diags = run(
        Scenario(
            "s",
            steps=(
                Step("greet", consumption=Consumption("always"), reply=OK),
                Step("next", reply=OK),
                Step("then", reply=OK),
                Step("loop", after=After("loop"), reply=OK),
                Step("branch", after=After("greet"), reply=OK),
            ),
        )
    )
    assert sorted(d.message for d in diags) == [
        "step `branch` can never run: `after greet` names step `greet`, which is `always` and so is never used up",
        "step `loop` comes `after` itself, so it can never run",
        "step `next` can never run: it follows step `greet`, which is `always` and so is never used up",
        "step `then` can never run: it follows step `next`, which can never run",
    ]


def test_always_with_after_gives_reachable_steps() -> None:
    """An `always` step can be the last step; a step attached elsewhere with `after` still runs."""
    assert (
        run(
            Scenario(
                "s",
                steps=(
                    Step("a", reply=OK),
                    Step("faq", consumption=Consumption("always"), reply=OK),
                    Step("b", after=After("a"), reply=OK),
                ),
            )
        )
        == []
    )


def test_order_any_has_no_unreachable_steps_and_warns_on_after() -> None:
    diags = run(
        Scenario(
            "s",
            order_any=True,
            steps=(
                Step("greet", consumption=Consumption("always"), reply=OK),
                Step("next", after=After("greet"), reply=OK),
            ),
        )
    )
    assert [(d.severity, d.code) for d in diags] == [("warning", "after-ignored")]
    assert diags[0].message == '`after greet` has no effect: scenario "s" has `order any`'


def reply_of(*elements: object) -> list[Diagnostic]:
    return run(Scenario("s", steps=(Step("a", reply=ReplyBlock(elements)),)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("elements", "message"),
    [
        ((Text("t"), Error(500, "boom")), "`error` conflicts with `text`"),
        ((Error(500, "boom"), ToolCall("f", {})), "`tool call` conflicts with `error`"),
        ((Text("t"), Status(200)), "`status` conflicts with `text`"),
        ((Body({}), Text("t")), "`text` conflicts with `body`"),
        ((Text("t"), Finish("stop"), Finish("length")), "second `finish` line in one reply"),
        ((Text("t"), Stream("word"), Stream("chunks", 2)), "second `stream` line in one reply"),
        ((Latency(Duration(1)), Latency(Duration(2))), "second `latency` line in one reply"),
        ((Hang(), Text("t")), "`text` conflicts with `hang`"),
        ((Header("a", "b"), Hang()), "`hang` conflicts with `header`"),
        ((Echo(), Text("t")), "`text` conflicts with `echo`"),
        ((Text("t"), Chunks(("a", "b"))), "`chunks:` conflicts with `text`"),
    ],
)
def test_conflicting_reply_elements(elements: tuple[object, ...], message: str) -> None:
    (d,) = reply_of(*elements)
    assert d.code == "conflicting-reply"
    assert d.message == message


def test_compatible_reply_elements() -> None:
    assert reply_of(Error(429, "slow"), Header("x", "y"), Latency(Duration(5))) == []
    assert reply_of(Hang(), Latency(Duration(5))) == []
    assert reply_of(Status(201), Body({"a": 1}), Header("x", "y")) == []
    assert reply_of(Echo(), Stream("word"), Latency(Duration(5))) == []
    assert reply_of(Text("a"), Text("b"), ToolCall("f", {}), Finish("stop"), Stream("word")) == []


def embedding_reply(*elements: object) -> list[Diagnostic]:
    embeddings = Condition(Subject("endpoint"), Predicate("is", "embeddings"))
    return run(Scenario("s", steps=(Step("a", (embeddings,), reply=ReplyBlock(elements)),)))  # type: ignore[arg-type]


def test_usage_goes_with_vectors() -> None:
    """The input count of an embedding answer, as recorded answers carry it."""
    assert embedding_reply(Vector((0.6, 0.8)), Vector((0.0, 1.0)), Usage(12, 0)) == []
    assert embedding_reply(Usage(12, 0), Vector((0.6, 0.8))) == []


@pytest.mark.parametrize(
    ("elements", "message", "hint"),
    [
        ((Flag(("violence",)), Usage(3, 0)), "`usage` conflicts with `flag`", "a moderation answer reports no"),
        ((Error(500, "x"), Usage(3, 0)), "`usage` conflicts with `error`", "a reply is either an error or an answer"),
        ((Usage(3, 0), Vector((1.0,)), Text("t")), "`text` conflicts with `vector`", "`vector` lines answer an embed"),
        ((Usage(3, 0), Text("t"), Vector((1.0,))), "`vector` conflicts with `text`", "`vector` lines answer an embed"),
        ((Usage(3, 0), Echo()), "`echo` conflicts with `usage`", "`echo` writes the answer itself"),
        ((Vector((1.0,)), Disconnect(2)), "`disconnect` conflicts with `vector`", "an embedding answer is one whole"),
        ((StreamError("x", 1), Vector((1.0,))), "`vector` conflicts with `stream error`", "an embedding answer is one"),
    ],
)
def test_usage_conflicts_where_an_answer_does(elements: tuple[object, ...], message: str, hint: str) -> None:
    (d,) = [d for d in embedding_reply(*elements) if d.severity == "error"]
    assert (d.code, d.message) == ("conflicting-reply", message)
    assert d.hint is not None and d.hint.startswith(hint)


def test_conflict_message_names_the_other_line() -> None:
    span = Span("a.mockllm", 7, 13, 7, 19)
    (d,) = reply_of(Text("t", span=span), Error(500, "x", span=Span("a.mockllm", 8, 13, 8, 30)))
    assert d.message == "`error` conflicts with `text` on line 7"
    assert d.related[0].span == span


def test_templates_in_scope() -> None:
    sc = Scenario(
        "s",
        lets=(Let("who", "Ann"),),
        steps=(
            Step(
                "ask",
                captures=(Capture("city", Subject("last_user_message"), Regex(r"in (\w+)")),),
                reply=ReplyBlock((Text("{{city}} {{who}} {{request.model}} {{tool_result.get_weather}}"),)),
            ),
            Step("answer", reply=ReplyBlock((ToolCall("f", {"a": ["{{city}}"]}),))),
        ),
    )
    assert run(sc) == []


def test_unknown_template_names_in_every_reply_string() -> None:
    elements = (
        Thinking("{{cty}}"),
        Chunks(("x", "{{nope}}")),
        Header("h", "{{nope}}"),
        ToolCall("f", {"q": "{{nope}}"}),
    )
    sc = Scenario(
        "s",
        steps=(
            Step("a", captures=(Capture("city", Subject("model"), Regex("x")),), reply=ReplyBlock(elements)),
            Step("b", reply=ReplyBlock((Error(500, "{{request.mdl}}"),))),
            Step("c", reply=ReplyBlock((Status(200), Body({"x": ["{{zz}}"]})))),
        ),
    )
    diags = run(sc)
    assert sorted((d.message, d.hint) for d in diags) == [
        ("unknown template name `{{cty}}`", "did you mean `{{city}}`?"),
        *[("unknown template name `{{nope}}`", NO_NAME_HINT)] * 3,
        ("unknown template name `{{request.mdl}}`", "did you mean `{{request.model}}`?"),
        ("unknown template name `{{zz}}`", NO_NAME_HINT),
    ]


def test_capture_used_before_it_is_taken() -> None:
    sc = Scenario(
        "s",
        steps=(
            Step("a", reply=ReplyBlock((Text("{{city}}"),))),
            Step("b", captures=(Capture("city", Subject("model"), Regex("x")),), reply=OK),
        ),
    )
    (d,) = run(sc)
    assert d.code == "capture-order"
    assert d.message == "`{{city}}` is captured by step `b`, which cannot run before this step"


def test_capture_in_order_any_is_in_scope() -> None:
    sc = Scenario(
        "s",
        order_any=True,
        steps=(
            Step("a", reply=ReplyBlock((Text("{{city}}"),))),
            Step("b", captures=(Capture("city", Subject("model"), Regex("x")),), reply=OK),
        ),
    )
    assert run(sc) == []


def test_capture_on_other_branch_is_out_of_scope() -> None:
    """A step `after` another only sees captures of steps that can run before it."""
    sc = Scenario(
        "s",
        steps=(
            Step("a", reply=OK),
            Step("b", captures=(Capture("x", Subject("model"), Regex("x")),), reply=OK),
            Step("c", after=After("a"), reply=OK),
            Step("d", after=After("c"), reply=ReplyBlock((Text("{{x}}"),))),
        ),
    )
    (d,) = run(sc)
    assert d.code == "capture-order"


def test_malformed_template() -> None:
    (d,) = reply_of(Text("hello {{city"))
    assert d.code == "bad-template"
    assert d.message == "unclosed '{{' in template: add the closing '}}'"


def test_reply_like_unknown_name_and_alias() -> None:
    sc = Scenario(
        "s",
        steps=(
            Step("a", reply=ReplyRef("helo")),
            Step("b", reply=ReplyRef("x", alias="erors")),
        ),
    )
    diags = run(sc, replies=(NamedReply("hello", (Text("hi"),)),), uses=(Use("e.mockllm", "errors"),))
    assert sorted((d.code, d.message, d.hint) for d in diags) == [
        ("unknown-alias", "`reply like erors.x`: no import is named `erors`", "did you mean `errors`?"),
        ("unknown-reply", "`reply like helo`: this file defines no reply `helo`", "did you mean `hello`?"),
    ]


def test_named_reply_templates_checked_at_each_use() -> None:
    nr = NamedReply("greet", (Text("Hi {{name}}"),))
    sc = Scenario("s", lets=(Let("name", "Ann"),), steps=(Step("a", reply=ReplyRef("greet")),))
    other = Scenario("t", steps=(Step("b", reply=ReplyRef("greet")),))
    diags = run(sc, other, replies=(nr,))
    assert [d.message for d in diags] == ["unknown template name `{{name}}` in reply `greet`, used by step `b`"]


def test_replaced_scenario_warning_names_both_files() -> None:
    s1 = Span("a.mockllm", 3, 1, 5, 1)
    s2 = Span("b.mockllm", 9, 1, 10, 1)
    f1 = ScriptFile("a.mockllm", scenarios=(Scenario("s", steps=(Step("x", reply=OK),), span=s1),))
    f2 = ScriptFile("b.mockllm", scenarios=(Scenario("s", steps=(Step("x", reply=OK),), span=s2),))
    (d,) = check(Library(files=(f1, f2)))
    assert d.severity == "warning"
    assert d.message == 'scenario "s" replaces the scenario of the same name in a.mockllm:3:1'
    assert d.span == s2
    assert d.related[0].span == s1


def test_defaults_may_hold_only_defaultable_elements() -> None:
    diags = run(defaults=Defaults(elements=(Latency(Duration(5)), Text("x"))))
    assert [d.message for d in diags] == ["`text` cannot be a default"]


def test_json_nodes_point_at_their_file() -> None:
    line0 = Span("a.json", 0, 0, 0, 0)
    f = ScriptFile("a.json", scenarios=(Scenario("s", steps=(Step("x", span=line0),), span=line0),))
    (d,) = check(Library(files=(f,)))
    assert d.span.file == "a.json"


def test_everything_reported_at_once_sorted() -> None:
    def at(line: int) -> Span:
        return Span("a.mockllm", line, 5, line, 9)

    sc = Scenario(
        "s",
        steps=(
            Step("a", reply=ReplyBlock((Text("x", span=at(4)), Error(1, "y", span=at(5)))), span=at(2)),
            Step("b", after=After("zz", span=at(7)), span=at(6)),
        ),
    )
    diags = run(sc)
    assert [(d.code, d.span.line) for d in diags] == [
        ("conflicting-reply", 5),
        ("missing-reply", 6),
        ("unknown-step", 7),
    ]


# ---------------------------------------------------------------------------------------------------------
# Golden files: tests/diagnostics/semantic_*.mockllm, each loaded (with its imports) and compiled in one run,
# rendered with `mockllm.dsl.diagnostics.render` and compared with the matching `.expected.txt`.

DIAGNOSTICS_DIR = Path(__file__).parent / "diagnostics"
GOLDEN = sorted(p.name for p in DIAGNOSTICS_DIR.glob("semantic_*.mockllm"))


def render_golden(name: str) -> str:
    compiled, library, diags = load_and_compile([name])
    assert compiled is None or not has_errors(diags)
    return render(diags, library.sources) + "\n"


def test_there_are_golden_files() -> None:
    assert len(GOLDEN) >= 10


#: in a golden file: the list of every provider name (`openai`, … and `bedrock`), so adding a provider
#: changes no golden file
EVERY_PROVIDER = "<every provider>"


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_diagnostics(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DIAGNOSTICS_DIR)
    expected = (DIAGNOSTICS_DIR / name.replace(".mockllm", ".expected.txt")).read_text(encoding="utf-8")
    assert render_golden(name) == expected.replace(EVERY_PROVIDER, ALL_PROVIDERS)
