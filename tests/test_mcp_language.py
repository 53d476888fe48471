"""The MCP words of the language: `mcp server` blocks, the `tool` and `argument` subjects and the
`result` reply lines, through the parser, `check`, `fmt`, the JSON form, the lexer and the editor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pygments.token import Error, Keyword
from test_lsp import Client, doc, labels, started, where

from mockllm.dsl.diagnostics import render
from mockllm.dsl.format.formatter import format_file
from mockllm.dsl.machines.compiler import load_and_compile
from mockllm.dsl.parse.parser import parse_text
from mockllm.dsl.tree import nodes as n
from mockllm.dsl.tree.jsonform import from_json_text, to_json, to_json_text
from mockllm.highlight import MockllmLexer

# The example of the language spec (language.md §10), as written there.
SPEC_EXAMPLE = """\
mcp server "weather":
    tool get_forecast "Forecast for a city":
        input {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

scenario "Forecast tool":
    step paris:
        always
        when:
            endpoint is "mcp"
            tool is "get_forecast"
            argument "city" is "Paris"
        reply:
            result {"city": "Paris", "sky": "clear", "high_c": 21}

scenario "Agent checks the forecast":
    step model_calls_tool:
        when:
            last user message contains "forecast"
        reply:
            tool call get_forecast {"city": "Paris"}

    step model_answers:
        when:
            tool result for "get_forecast" contains "clear"
        reply:
            text "Clear skies in Paris, 21°C."
"""

TOOLS = """\
mcp server "shop":
    tool lookup "Find an order":
        input {
            "type": "object",
            "properties": {"order": {"type": "object", "properties": {"id": {"type": "string"}}}},
            "required": ["order"]
        }
        output {"type": "object", "properties": {"status": {"type": "string"}, "items": {"type": "integer"}},
                "required": ["status"]}
    tool ping "Say hello":
        input {"type": "object"}
"""


def problems(text: str, tmp_path: Path) -> str:
    path = tmp_path / "t.mockllm"
    path.write_text(text, encoding="utf-8")
    _lib, library, diagnostics = load_and_compile([path])
    return render(diagnostics, dict(library.sources))


def test_the_spec_example_parses_into_servers_subjects_and_results(tmp_path: Path) -> None:
    script, diagnostics = parse_text(SPEC_EXAMPLE, "weather.mockllm")
    assert diagnostics == [] and script is not None
    (server,) = script.mcp_servers
    assert server.name == "weather"
    (tool,) = server.tools
    assert (tool.name, tool.description, tool.output_schema) == ("get_forecast", "Forecast for a city", None)
    assert tool.input_schema["required"] == ["city"]
    paris = script.scenarios[0].steps[0]
    assert [(c.subject.kind, c.subject.arg) for c in paris.conditions] == [
        ("endpoint", None),
        ("tool", None),
        ("argument", "city"),
    ]
    assert isinstance(paris.reply, n.ReplyBlock)
    assert paris.reply.elements == (n.Result({"city": "Paris", "sky": "clear", "high_c": 21}),)
    assert problems(SPEC_EXAMPLE, tmp_path) == ""


def test_text_and_error_results_and_a_nested_argument(tmp_path: Path) -> None:
    text = (
        TOOLS
        + """
scenario "s":
    step found:
        when:
            tool is "lookup"
            argument "order.id" is "A1"
        reply:
            result {"status": "shipped", "items": 2}
    step hello:
        when:
            tool is "ping"
        reply:
            result "pong"
    step broken:
        when:
            tool is "ping"
        reply:
            latency 50ms
            result error "the shop is closed"
"""
    )
    script, diagnostics = parse_text(text, "t.mockllm")
    assert diagnostics == [] and script is not None
    steps = script.scenarios[0].steps
    assert steps[0].conditions[1].subject == n.Subject("argument", "order.id")
    assert isinstance(steps[2].reply, n.ReplyBlock)
    assert steps[2].reply.elements[1] == n.Result("the shop is closed", True)
    assert problems(text, tmp_path) == ""


@pytest.mark.parametrize(
    ("step", "message", "hint"),
    [
        (
            'when:\n            tool is "lokup"\n        reply:\n            result "x"',
            "error: no `mcp server` declares a tool `lokup`",
            'did you mean `tool is "lookup"`?',
        ),
        (
            'when:\n            tool is "lookup"\n            argument "ordr" is "A1"\n        reply:\n'
            '            result {"status": "ok"}',
            "error: tool `lookup` has no argument `ordr` in its input schema",
            'did you mean `argument "order"`?',
        ),
        (
            'when:\n            tool is "lookup"\n        reply:\n            result {"items": "two"}',
            'error: this result does not fit the output schema of tool `lookup`: `items` is "two", not of type integer',
            "change the result or the tool's `output` schema",
        ),
        (
            'when:\n            tool is "lookup"\n        reply:\n            result {"items": 2}',
            "error: this result does not fit the output schema of tool `lookup`: `status` is required and missing",
            "the client checks every result against it",
        ),
        (
            'when:\n            tool is "lookup"\n        reply:\n            result "shipped"',
            "error: tool `lookup` declares an output schema, so its result must be structured",
            "clients refuse a text-only result",
        ),
        (
            'when:\n            tool is "ping"\n        reply:\n            result "pong"\n            text "hi"',
            "error: `text` conflicts with `result`",
            "give the tool call a step of its own",
        ),
        (
            'when:\n            last user message contains "x"\n        reply:\n            result "pong"',
            "warning: this step answers with a tool result, but no MCP call can match it",
            'add `tool is "NAME"`',
        ),
    ],
)
def test_check_catches_mistakes_at_their_place(tmp_path: Path, step: str, message: str, hint: str) -> None:
    text = TOOLS + f'\nscenario "s":\n    step a:\n        {step}\n'
    out = problems(text, tmp_path)
    assert message in out, out
    assert hint in out, out
    assert "t.mockllm:" in out and "^" in out  # file:line:col and a caret


def test_check_refuses_a_schema_that_is_not_an_object_schema(tmp_path: Path) -> None:
    text = 'mcp server "x":\n    tool t "d":\n        input {"type": "string"}\n'
    out = problems(text, tmp_path)
    assert 'error: the input schema of tool `t` must be an object schema (`"type": "object"`)' in out
    assert "t.mockllm:3:9" in out


def test_a_tool_without_an_input_schema_is_a_syntax_error() -> None:
    _script, diagnostics = parse_text('mcp server "x":\n    tool t "d":\n        output {"type": "object"}\n', "t")
    assert [d.message for d in diagnostics] == ["tool `t` declares no `input` schema"]


def test_fmt_and_the_json_form_keep_everything() -> None:
    text = TOOLS + '\nscenario "s":\n    step a:\n        when:\n            tool is "ping"\n        reply:\n'
    text += '            result error "closed"\n'
    script, _ = parse_text(text, "t.mockllm")
    assert script is not None
    canonical = format_file(script)
    assert '    tool lookup "Find an order":\n        input {"type": "object", "properties":' in canonical
    assert '        output {"type": "object", "properties": {"status"' in canonical
    assert '            result error "closed"' in canonical
    again, diagnostics = parse_text(canonical, "t.mockllm")
    assert diagnostics == [] and again == script
    data = to_json(script)
    assert data["mcp_servers"][0]["tools"][1] == {
        "name": "ping",
        "description": "Say hello",
        "input_schema": {"type": "object"},
        "output_schema": None,
    }
    back, problems_ = from_json_text(to_json_text(script), "t.mockllm")
    assert problems_ == [] and back == script
    assert "mcp_servers" not in to_json(n.ScriptFile("x"))  # files without servers keep their old shape


def test_the_json_form_refuses_a_structured_error_result() -> None:
    bad = '{"mockllm": 1, "scenarios": [{"name": "s", "steps": [{"name": "a", "reply": {"type": "block", '
    bad += '"elements": [{"type": "result", "value": {"a": 1}, "is_error": true}]}}]}]}'
    _script, diagnostics = from_json_text(bad, "t.json")
    assert any("an error result is text" in d.message for d in diagnostics)


def test_the_lexer_colours_the_new_words() -> None:
    tokens = list(MockllmLexer().get_tokens(SPEC_EXAMPLE))
    assert not [t for t in tokens if t[0] is Error]
    keywords = {value for kind, value in tokens if kind in Keyword}
    assert {"mcp", "server", "tool", "input", "result"} <= keywords


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    with started(tmp_path_factory.mktemp("lsp-mcp")) as c:
        yield c


def test_the_editor_completes_and_explains_the_new_words(client: Client, tmp_path: Path) -> None:
    text = SPEC_EXAMPLE.replace('        input {"type"', '        \n        input {"type"', 1)
    uri = client.open(tmp_path / "w.mockllm", text)
    client.diagnostics(uri)

    def at(line: int, character: int) -> list[str]:
        return labels(client.request("textDocument/completion", doc(uri, {"line": line, "character": character})))

    assert "mcp server" in at(4, 0)  # the blank line at the top level
    assert {"input", "output"} <= set(at(2, 8))  # inside a tool
    subj = where(text, 'tool is "get_forecast"')
    assert {"tool", "argument"} <= set(at(subj["line"], subj["character"]))

    def hover(needle: str) -> str:
        result = client.request("textDocument/hover", doc(uri, where(text, needle)))
        assert result is not None, needle
        return str(result["contents"]["value"])

    assert "MCP tool server" in hover("mcp server")
    assert "one argument's value" in hover('argument "city"')
    assert "isError" in hover("result {")
