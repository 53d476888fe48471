from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import PLAIN_SUBJECTS, ROLES, script_files

from mockllm.dsl.diagnostics import render
from mockllm.dsl.tree import nodes as n
from mockllm.dsl.tree.jsonform import ELEMENT_TAGS, from_json, from_json_text, to_json, to_json_text

# ---------------------------------------------------------------------------------------------------------
# A small tree strategy (trees the text syntax can express)

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
texts = st.text(max_size=12)
durations = st.builds(n.Duration, st.one_of(st.integers(0, 10_000).map(float), st.floats(0, 1e5)))
regexes = st.builds(n.Regex, texts, st.sampled_from(["", "i", "ms", "imsx"]))
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False), texts
)
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=8
)
json_objects = st.dictionaries(texts, json_values, max_size=3)

subjects = st.one_of(
    st.builds(n.Subject, st.sampled_from(PLAIN_SUBJECTS)),
    st.builds(n.Subject, st.just("any_message"), st.sampled_from(ROLES)),
    st.builds(n.Subject, st.sampled_from(["tool_result", "header", "field"]), texts),
)
predicates = st.one_of(
    st.builds(n.Predicate, st.sampled_from(["is", "is_not"]), json_values),
    st.builds(n.Predicate, st.sampled_from(["contains", "not_contains", "glob", "include", "exclude"]), texts),
    st.builds(n.Predicate, st.sampled_from(["matches", "not_matches"]), regexes),
    st.builds(n.Predicate, st.sampled_from(["present", "absent", "error"])),
    st.builds(n.Predicate, st.sampled_from(["at_least", "at_most"]), st.integers(-5, 5) | st.floats(-5, 5)),
)
conditions = st.builds(n.Condition, subjects, predicates, st.booleans())
counts = st.integers(0, 20)
elements = st.one_of(
    st.builds(n.Text, texts),
    st.builds(n.ToolCall, names, json_objects | st.none(), st.none() | texts),
    st.builds(n.Thinking, texts),
    st.builds(n.Refusal, texts),
    st.builds(n.Finish, st.sampled_from(["stop", "length", "tool_calls", "content_filter"])),
    st.builds(n.Usage, counts, counts),
    st.builds(n.Stream, st.just("word"), st.none(), st.none() | durations),
    st.builds(n.Stream, st.sampled_from(["chunks", "characters"]), counts, st.none() | durations),
    st.builds(n.Chunks, st.lists(texts, min_size=1, max_size=3).map(tuple)),
    st.builds(n.Latency, durations),
    st.builds(n.Error, st.integers(400, 599), texts),
    st.builds(n.RetryAfter, durations),
    st.builds(n.Header, texts, texts),
    st.builds(n.EchoHeader, texts),
    st.builds(n.Status, st.integers(100, 599)),
    st.builds(n.Body, json_values),
    st.builds(n.Disconnect, counts),
    st.builds(n.StreamError, texts, counts),
    st.builds(n.Hang),
    st.builds(n.Echo),
)
element_tuples = st.lists(elements, min_size=1, max_size=4).map(tuple)
defaultables = st.lists(
    st.one_of(
        st.builds(n.Latency, durations),
        st.builds(n.Stream, st.just("word"), st.none(), st.none() | durations),
        st.builds(n.Header, texts, texts),
    ),
    min_size=1,
    max_size=3,
).map(tuple)
replies = st.one_of(st.builds(n.ReplyBlock, element_tuples), st.builds(n.ReplyRef, names, st.none() | names))
consumptions = st.one_of(
    st.builds(n.Consumption, st.sampled_from(["once", "always"])), st.builds(n.Consumption, st.just("repeat"), counts)
)
steps = st.builds(
    n.Step,
    names,
    st.lists(conditions, max_size=2).map(tuple),
    st.none() | st.builds(n.After, names),
    st.lists(st.builds(n.Capture, names, subjects, regexes), max_size=2).map(tuple),
    st.lists(conditions, max_size=1).map(tuple),
    consumptions,
    replies,
)
scenarios = st.builds(
    n.Scenario,
    texts,
    st.integers(-10, 10),
    st.lists(texts, max_size=2).map(tuple),
    st.booleans(),
    st.lists(st.builds(n.Let, names, texts), max_size=2).map(tuple),
    st.lists(conditions, max_size=2).map(tuple),
    st.lists(steps, min_size=1, max_size=3).map(tuple),
)
files = st.builds(
    n.ScriptFile,
    st.just("t.mockllm"),
    st.none() | st.just(1),
    st.lists(st.builds(n.Use, texts, names), max_size=2).map(tuple),
    st.lists(st.builds(n.NamedReply, names, element_tuples), max_size=2).map(tuple),
    st.none() | st.builds(n.Defaults, defaultables, st.none() | replies) | st.builds(n.Defaults, st.just(()), replies),
    st.lists(scenarios, max_size=2).map(tuple),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files)
def test_round_trip_through_dicts(tree: n.ScriptFile) -> None:
    back, diagnostics = from_json(to_json(tree), "t.mockllm")
    assert diagnostics == []
    assert back == tree


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files)
def test_round_trip_through_text(tree: n.ScriptFile) -> None:
    text = to_json_text(tree)
    back, diagnostics = from_json_text(text, "t.mockllm")
    assert diagnostics == []
    assert back == tree


# ---------------------------------------------------------------------------------------------------------
# Shape


WEATHER = n.ScriptFile(
    "w.mockllm",
    1,
    scenarios=(
        n.Scenario(
            "Weather",
            steps=(
                n.Step(
                    "ask",
                    conditions=(
                        n.Condition(n.Subject("last_user_message"), n.Predicate("matches", n.Regex("weather", "i"))),
                    ),
                    reply=n.ReplyBlock((n.ToolCall("get_weather", {"city": "Paris"}), n.Latency(n.Duration(250)))),
                ),
                n.Step(
                    "again",
                    after=n.After("ask"),
                    consumption=n.Consumption("repeat", 2),
                    reply=n.ReplyRef("rate_limited", "errors"),
                ),
            ),
        ),
    ),
)


def test_shape_is_readable_and_tagged() -> None:
    data = to_json(WEATHER)
    assert list(data) == ["mockllm", "uses", "replies", "defaults", "scenarios"]
    assert data["mockllm"] == 1
    step = data["scenarios"][0]["steps"][0]
    assert step["reply"] == {
        "type": "block",
        "elements": [
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "id": None},
            {"type": "latency", "duration": {"ms": 250}},
        ],
    }
    assert step["conditions"][0]["predicate"] == {"op": "matches", "value": {"regex": "weather", "flags": "i"}}
    assert data["scenarios"][0]["steps"][1]["reply"] == {"type": "like", "name": "rate_limited", "alias": "errors"}
    assert "span" not in json.dumps(data)
    assert "path" not in data


def test_every_element_tag_is_snake_case_class_name() -> None:
    assert ELEMENT_TAGS[n.ToolCall] == "tool_call"
    assert ELEMENT_TAGS[n.EchoHeader] == "echo_header"
    assert ELEMENT_TAGS[n.RetryAfter] == "retry_after"
    assert ELEMENT_TAGS[n.StreamError] == "stream_error"
    assert len(set(ELEMENT_TAGS.values())) == len(n.REPLY_ELEMENT_TYPES)


def test_nodes_read_from_json_carry_the_file_name_at_line_zero() -> None:
    tree, diagnostics = from_json(to_json(WEATHER), "lib/w.json")
    assert diagnostics == [] and tree is not None
    assert tree.path == "lib/w.json"
    step = tree.scenarios[0].steps[0]
    assert (step.span.file, step.span.line) == ("lib/w.json", 0)
    assert step.conditions[0].predicate.span.file == "lib/w.json"


def test_defaults_may_be_left_out() -> None:
    step = {"name": "a", "reply": {"type": "block", "elements": [{"type": "echo"}]}}
    tree, diagnostics = from_json({"scenarios": [{"name": "s", "steps": [step]}]}, "x.json")
    assert diagnostics == []
    expected = n.Scenario("s", steps=(n.Step("a", reply=n.ReplyBlock((n.Echo(),))),))
    assert tree == n.ScriptFile("x.json", scenarios=(expected,))


# ---------------------------------------------------------------------------------------------------------
# Errors


def _messages(data: Any) -> list[str]:
    tree, diagnostics = from_json(data, "x.json")
    assert tree is None
    return [d.message for d in diagnostics]


def test_unknown_element_type_names_the_path_and_suggests() -> None:
    data = to_json(WEATHER)
    data["scenarios"][0]["steps"][0]["reply"]["elements"][0] = {"type": "txt", "text": "hi"}
    assert _messages(data) == [
        '$.scenarios[0].steps[0].reply.elements[0]: unknown element type "txt"; did you mean "text"?'
    ]


def test_every_problem_is_reported_once() -> None:
    data = to_json(WEATHER)
    data["scenarios"][0]["steps"][0]["name"] = 5
    data["scenarios"][0]["steps"][1]["consumption"] = {"kind": "repeat", "count": -1}
    data["scenarios"][0]["stpes"] = []
    messages = _messages(data)
    assert len(messages) == 3
    assert "$.scenarios[0].steps[0].name: expected a string, got 5" in messages
    assert "$.scenarios[0].steps[1].consumption.count: expected a whole number of 0 or more, got -1" in messages
    assert any(m.startswith('$.scenarios[0]: unknown key "stpes"; did you mean "steps"?') for m in messages)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([], "$: expected an object (a script file), got []"),
        ({"mockllm": "1"}, '$.mockllm: expected an integer, got "1"'),
        ({"scenarios": {}}, "$.scenarios: expected a list, got {}"),
        ({"scenarios": [{"steps": []}]}, '$.scenarios[0]: missing required key "name"'),
        (
            {"replies": [{"name": "r", "elements": [{"text": "x"}]}]},
            '$.replies[0].elements[0]: reply element needs a "type" key',
        ),
        (
            {
                "scenarios": [
                    {
                        "name": "s",
                        "steps": [
                            {
                                "name": "a",
                                "conditions": [{"subject": {"kind": "modle"}, "predicate": {"op": "present"}}],
                            }
                        ],
                    }
                ]
            },
            '$.scenarios[0].steps[0].conditions[0].subject.kind: "modle" is not one of',
        ),
        (
            {
                "scenarios": [
                    {
                        "name": "s",
                        "steps": [
                            {
                                "name": "a",
                                "conditions": [{"subject": {"kind": "header"}, "predicate": {"op": "present"}}],
                            }
                        ],
                    }
                ]
            },
            '$.scenarios[0].steps[0].conditions[0].subject.arg: subject "header" needs "arg"',
        ),
        (
            {
                "scenarios": [
                    {
                        "name": "s",
                        "steps": [
                            {
                                "name": "a",
                                "conditions": [
                                    {"subject": {"kind": "model"}, "predicate": {"op": "matches", "value": "gpt"}}
                                ],
                            }
                        ],
                    }
                ]
            },
            "$.scenarios[0].steps[0].conditions[0].predicate.value: expected a regex object",
        ),
        (
            {"scenarios": [{"name": "s", "steps": [{"name": "a b"}]}]},
            '$.scenarios[0].steps[0].name: "a b" is not a valid name',
        ),
        (
            {"replies": [{"name": "r", "elements": [{"type": "tool_call", "name": "f", "arguments": [1]}]}]},
            "$.replies[0].elements[0].arguments: tool call arguments must be a JSON object or null, got [1]",
        ),
        (
            {"replies": [{"name": "r", "elements": [{"type": "latency", "duration": 250}]}]},
            "$.replies[0].elements[0].duration: expected an object (a duration), got 250",
        ),
        ({"path": "elsewhere.mockllm"}, '$: unknown key "path"'),
        ({"scenarios": [{"name": "s", "steps": []}]}, "$.scenarios[0].steps: a scenario needs at least one step"),
        ({"scenarios": [{"name": "s", "steps": [{"name": "a"}]}]}, "$.scenarios[0].steps[0]: this step is empty"),
        ({"replies": [{"name": "r", "elements": []}]}, "$.replies[0].elements: a reply needs at least one element"),
        ({"defaults": {}}, '$.defaults: defaults need "elements" or a "fallback"'),
        (
            {"defaults": {"elements": [{"type": "latency", "duration": {"ms": 1}}, {"type": "text", "text": "x"}]}},
            '$.defaults.elements[1]: "text" cannot be a default (defaults hold "latency", "stream", "header")',
        ),
    ],
)
def test_structure_errors_name_the_json_path(data: Any, expected: str) -> None:
    messages = _messages(data)
    assert len(messages) == 1
    assert messages[0].startswith(expected), messages[0]


def test_invalid_json_points_at_the_decoder_position() -> None:
    tree, diagnostics = from_json_text('{\n  "scenarios": [1,,]\n}', "bad.json")
    assert tree is None
    [d] = diagnostics
    assert d.code == "json-syntax"
    assert d.message.startswith("invalid JSON: ")
    assert (d.span.file, d.span.line, d.span.column) == ("bad.json", 2, 19)


def test_structure_errors_in_text_point_at_the_value_with_a_caret() -> None:
    data = to_json(WEATHER)
    data["scenarios"][0]["steps"][0]["reply"]["elements"][1]["type"] = "latncy"
    text = json.dumps(data, indent=2)
    tree, diagnostics = from_json_text(text, "w.json")
    assert tree is None
    [d] = diagnostics
    line = text.splitlines()[d.span.line - 1]
    assert line.strip() == '"type": "latncy",'
    assert line[d.span.column - 1 :].startswith('"latncy"')
    rendered = render(diagnostics, {"w.json": text})
    assert 'did you mean "latency"?' in rendered
    assert "^^^^^^^^" in rendered


def test_unsupported_version_is_reported() -> None:
    _, diagnostics = from_json_text('{"mockllm": 2, "scenarios": []}', "v.json")
    assert [d.code for d in diagnostics] == ["unsupported-version"]
    assert diagnostics[0].message == "unsupported language version 2"
    assert diagnostics[0].span.line == 1


def test_nan_is_not_json() -> None:
    tree, diagnostics = from_json_text(
        '{"replies": [{"name": "r", "elements": [{"type": "body", "body": NaN}]}]}', "n.json"
    )
    assert tree is None
    assert diagnostics[0].code == "json-syntax"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script_files)
def test_round_trip_of_the_parsers_trees(tree: n.ScriptFile) -> None:
    back, diagnostics = from_json_text(to_json_text(tree), tree.path)
    assert diagnostics == []
    assert back == tree


def test_tool_call_with_null_arguments_reads_like_the_text_form() -> None:
    """`tool call NAME null` (arguments None) is `"arguments": null` in JSON, both ways."""
    from mockllm.dsl.format.formatter import format_file
    from mockllm.dsl.parse.parser import parse_text

    text = 'reply r:\n    tool call get_current_date null id "call_1"\n'
    tree, diagnostics = parse_text(text, "t.mockllm")
    assert diagnostics == [] and tree is not None
    data = to_json(tree)
    assert data["replies"][0]["elements"][0] == {
        "type": "tool_call",
        "name": "get_current_date",
        "arguments": None,
        "id": "call_1",
    }
    back, diagnostics = from_json_text(to_json_text(tree), "t.mockllm")
    assert diagnostics == []
    assert back == tree
    assert back is not None and format_file(back) == text


@pytest.mark.parametrize("arguments", [[1], "x", 3, True])
def test_tool_call_arguments_other_than_object_or_null_are_refused(arguments: Any) -> None:
    data = {"replies": [{"name": "r", "elements": [{"type": "tool_call", "name": "f", "arguments": arguments}]}]}
    [message] = _messages(data)
    assert message.startswith("$.replies[0].elements[0].arguments: tool call arguments must be a JSON object or null")
