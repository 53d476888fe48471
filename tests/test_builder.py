"""The fluent builder produces the same syntax tree as the text form, and prints back as that text."""

from __future__ import annotations

import datetime
import re

import pytest

import mockllm as m
from mockllm.dsl.parse.parser import parse_text
from mockllm.dsl.tree import nodes as n


def parsed(text: str) -> n.ScriptFile:
    tree, diagnostics = parse_text(text, "t.mockllm")
    assert not diagnostics, diagnostics
    assert tree is not None
    return tree


def parsed_scenario(text: str) -> n.Scenario:
    tree = parsed(text)
    assert len(tree.scenarios) == 1
    return tree.scenarios[0]


WEATHER = r"""
scenario "Weather":
    priority 10
    tags smoke

    step ask:
        when:
            last user message contains "weather"
            tools include "get_weather"
        capture city from last user message /weather in (\w+)/
        reply:
            tool call get_weather {"city": "{{city}}"}

    step answer:
        when:
            tool result for "get_weather" is present
        reply:
            text "Sunny in {{city}}"
            stream 4 chunks, 40ms apart
"""


def weather() -> m.ScenarioBuilder:
    return (
        m.scenario("Weather")
        .priority(10)
        .tags("smoke")
        .step("ask")
        .when(m.last_user_message().contains("weather"), m.tools().include("get_weather"))
        .capture("city", m.last_user_message(), r"weather in (\w+)")
        .reply(m.tool_call("get_weather", {"city": "{{city}}"}))
        .step("answer")
        .when(m.tool_result("get_weather").is_present())
        .reply(m.text("Sunny in {{city}}"), m.stream(chunks=4, apart="40ms"))
    )


EVERY_CONDITION = r"""
scenario "Every condition":
    priority -3
    tags smoke, "two words"
    order any
    let who = "Ann"
    when:
        provider is openai
        model glob "gpt-*"

    step conditions:
        when:
            endpoint is not "/v1/responses"
            stream is true
            last message not contains "bye" ignoring case
            any user message matches /hi\/there/im
            any assistant message not matches /sorry/
            any system message is absent
            any tool message is error
            system prompt is "Be brief."
            tools exclude "delete_everything"
            header "x-team" is "search"
            field "metadata.run.0" is {"a": [1, 2.5, null]}
            turn is at least 2
            turn is at most 7
            model is null
            field "temperature" is 0.5
            field "n" is 3
            field "store" is false
        expect:
            last user message contains "please" ignoring case
        repeat 3
        reply echo

    step later:
        after conditions
        always
        reply like canned
"""


def every_condition() -> m.ScenarioBuilder:
    return (
        m.scenario("Every condition")
        .priority(-3)
        .tags("smoke", "two words")
        .order_any()
        .let("who", "Ann")
        .when(m.provider().is_("openai"), m.model().glob("gpt-*"))
        .step("conditions")
        .when(
            m.endpoint().is_not("/v1/responses"),
            m.streaming().is_(True),
            m.last_message().not_contains("bye").ignoring_case(),
            m.any_user_message().matches("hi/there", "im"),
            m.any_assistant_message().not_matches(re.compile("sorry")),
            m.any_system_message().is_absent(),
            m.any_tool_message().is_error(),
            m.system_prompt().is_("Be brief."),
            m.tools().exclude("delete_everything"),
            m.request_header("x-team").is_("search"),
            m.field("metadata.run.0").is_({"a": [1, 2.5, None]}),
            m.turn().at_least(2),
            m.turn().at_most(7),
            m.model().is_(None),
            m.field("temperature").is_(0.5),
            m.field("n").is_(3),
            m.field("store").is_(False),
        )
        .expect(m.last_user_message().ignoring_case().contains("please"))
        .repeat(3)
        .reply_echo()
        .step("later")
        .after("conditions")
        .always()
        .reply_like("canned")
    )


EVERY_ELEMENT = r'''
scenario "Every element":
    step all:
        reply:
            text """
                Two
                lines
                """
            tool call lookup {"q": "x", "n": [1, 2]} id "call_1"
            tool call ping {}
            thinking "hmm"
            refusal "no"
            finish length
            usage 12 in, 34 out
            stream by word
            stream by 5 characters, 1.5s apart
            chunks:
                "a"
                "b c"
            latency 250ms
            error 429 "slow down"
            retry after 2s
            header "x-a" "1"
            echo header "x-request-id"
            status 201
            body {"raw": true}
            body [1, "two"]
            disconnect after 3 chunks
            stream error "boom" after 2 chunks
            hang
            echo
'''


def every_element() -> m.ScenarioBuilder:
    return (
        m.scenario("Every element")
        .step("all")
        .reply(
            m.text("Two\nlines"),
            m.tool_call("lookup", {"q": "x", "n": [1, 2]}, id="call_1"),
            m.tool_call("ping"),
            m.thinking("hmm"),
            m.refusal("no"),
            m.finish("length"),
            m.usage(12, 34),
            m.stream(),
            m.stream(characters=5, apart=datetime.timedelta(seconds=1.5)),
            m.chunks("a", "b c"),
            m.latency("250ms"),
            m.error(429, "slow down"),
            m.retry_after("2s"),
            m.header("x-a", "1"),
            m.echo_header("x-request-id"),
            m.status(201),
            m.body({"raw": True}),
            m.body([1, "two"]),
            m.disconnect(after_chunks=3),
            m.stream_error("boom", after_chunks=2),
            m.hang(),
            m.echo(),
        )
    )


CASES = {
    "weather": (WEATHER, weather),
    "every condition": (EVERY_CONDITION, every_condition),
    "every element": (EVERY_ELEMENT, every_element),
}


@pytest.mark.parametrize("name", list(CASES))
def test_builder_tree_equals_parsed_tree(name: str) -> None:
    text, build = CASES[name]
    assert build().build() == parsed_scenario(text)


@pytest.mark.parametrize("name", list(CASES))
def test_to_text_round_trips(name: str) -> None:
    _, build = CASES[name]
    built = build()
    assert parsed_scenario(built.to_text()) == built.build()


def test_to_text_is_the_canonical_text() -> None:
    assert weather().to_text() == WEATHER.lstrip("\n")


def test_a_whole_file_with_defaults_named_replies_and_uses() -> None:
    text = """\
mockllm 1

use "lib/common.mockllm" as common

defaults:
    latency 20ms
    header "x-mock" "yes"
    fallback like common.sorry

reply canned:
    text "Canned."

scenario "S":
    step one:
        reply like canned
"""
    built = m.script(
        m.use("lib/common.mockllm", "common"),
        m.defaults(m.latency("20ms"), m.header("x-mock", "yes"), fallback="like common.sorry"),
        m.named_reply("canned", m.text("Canned.")),
        m.scenario("S").step("one").reply_like("canned"),
        version=1,
        path="t.mockllm",
    )
    assert built.build() == parsed(text)
    assert built.to_text() == text


def test_fallback_forms() -> None:
    assert m.defaults(fallback="echo").fallback == n.ReplyBlock((n.Echo(),))
    assert m.defaults(fallback=[m.text("sorry")]).fallback == n.ReplyBlock((n.Text("sorry"),))
    with pytest.raises(m.BuilderError, match="'echo' or 'like NAME'"):
        m.defaults(fallback="nope")


def test_builders_are_immutable_values() -> None:
    base = m.scenario("Shared").step("one").reply(m.text("1"))
    longer = base.step("two").reply(m.text("2"))
    assert [s.name for s in base.build().steps] == ["one"]
    assert [s.name for s in longer.build().steps] == ["one", "two"]


def test_save_writes_a_script_that_loads(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "weather.mockllm"  # type: ignore[operator]
    weather().save(path)
    result = m.load(path)
    assert result.ok, result.render()
    assert result.scenarios == ["Weather"]


def test_when_before_a_step_is_the_scenarios() -> None:
    s = m.scenario("S").when(m.provider().is_("anthropic")).step("a").when(m.turn().is_(1)).reply(m.echo()).build()
    assert [c.subject.kind for c in s.conditions] == ["provider"]
    assert [c.subject.kind for c in s.steps[0].conditions] == ["turn"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: m.scenario("S").reply(m.text("x")), r"call \.step\(NAME\) before \.reply"),
        (lambda: m.scenario("S").capture("c", m.model(), "x"), r"before \.capture"),
        (lambda: m.scenario("S").step("has space"), "step name 'has space' is not a name"),
        (lambda: m.scenario("S").step("a").capture("1x", m.model(), "x"), "capture name '1x'"),
        (lambda: m.latency(250), "not a duration"),
        (lambda: m.latency("quarter second"), "not a duration"),
        (lambda: m.model().matches("(unclosed"), "not a valid regex"),
        (lambda: m.model().matches("x", "g"), "flag 'g' is not one of i, m, s, x"),
        (lambda: m.finish("done"), "finish reason 'done'"),  # type: ignore[arg-type]
        (lambda: m.any_message("robot"), "role 'robot'"),  # type: ignore[arg-type]
        (lambda: m.stream(chunks=2, characters=3), "not both"),
        (lambda: m.scenario("S").step("a").when(m.model()), "subject without a predicate"),  # type: ignore[arg-type]
        (lambda: m.scenario("S").step("a").reply("text"), "takes reply elements"),  # type: ignore[arg-type]
        (lambda: m.usage(1.5, 2), "whole number"),  # type: ignore[arg-type]
        (lambda: m.turn().at_least("2"), "needs a number"),  # type: ignore[arg-type]
    ],
)
def test_mistakes_say_what_is_wrong(make: object, message: str) -> None:
    with pytest.raises(m.BuilderError, match=message):
        make()  # type: ignore[operator]


def test_durations() -> None:
    assert m.duration("250ms") == n.Duration(250)
    assert m.duration("1.5s") == n.Duration(1500)
    assert m.duration(datetime.timedelta(milliseconds=40)) == n.Duration(40)
    assert str(m.stream(apart="2s").apart) == "2s"


def test_compiled_regex_flags_carry_over() -> None:
    cond = m.last_user_message().matches(re.compile("hello", re.IGNORECASE | re.DOTALL)).build()
    assert cond.predicate.value == n.Regex("hello", "is")
