"""The resource and prompt words of an `mcp server` block (`resource "URI"` with `text` and `mime`,
`prompt NAME` with `argument` lines and `user`/`assistant` messages) through the parser, `check`,
`fmt`, the JSON form, the lexer and the editor."""

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

SERVER = '''\
mcp server "weather":
    tool get_forecast "Forecast for a city":
        input {"type": "object", "properties": {"city": {"type": "string"}}}
    resource "weather://cities" "The cities it knows":
        text """
            Paris
            Rome
            """
    resource "weather://stations.json":
        mime "application/json"
        text "{\\"stations\\": 3}"
    prompt ask_forecast "Ask for a city's forecast":
        argument city "the city"
        argument days optional
        user "What's the forecast for {{city}}?"
        assistant "Checking {{city}} for {{days}} days."
'''


def problems(text: str, tmp_path: Path) -> str:
    path = tmp_path / "t.mockllm"
    path.write_text(text, encoding="utf-8")
    _lib, library, diagnostics = load_and_compile([path])
    return render(diagnostics, dict(library.sources))


def test_resources_and_prompts_parse_into_the_server(tmp_path: Path) -> None:
    script, diagnostics = parse_text(SERVER, "t.mockllm")
    assert diagnostics == [] and script is not None
    (server,) = script.mcp_servers
    assert [t.name for t in server.tools] == ["get_forecast"]
    cities, stations = server.resources
    assert (cities.uri, cities.description, cities.text, cities.mime) == (
        "weather://cities",
        "The cities it knows",
        "Paris\nRome",
        "text/plain",
    )
    assert (stations.description, stations.text, stations.mime) == ("", '{"stations": 3}', "application/json")
    (prompt,) = server.prompts
    assert prompt.name == "ask_forecast" and prompt.description == "Ask for a city's forecast"
    assert [(a.name, a.description, a.required) for a in prompt.arguments] == [
        ("city", "the city", True),
        ("days", "", False),
    ]
    assert [(m.role, m.text) for m in prompt.messages] == [
        ("user", "What's the forecast for {{city}}?"),
        ("assistant", "Checking {{city}} for {{days}} days."),
    ]
    assert problems(SERVER, tmp_path) == ""


def test_a_server_may_declare_only_resources_or_prompts(tmp_path: Path) -> None:
    text = 'mcp server "docs":\n    resource "docs://readme":\n        text "Read me"\n'
    script, diagnostics = parse_text(text, "t.mockllm")
    assert diagnostics == [] and script is not None
    assert script.mcp_servers[0].tools == () and script.mcp_servers[0].resources[0].text == "Read me"
    assert problems(text, tmp_path) == ""


@pytest.mark.parametrize(
    ("text", "message", "hint", "where_"),
    [
        (
            'mcp server "w":\n    resource "weather://a":\n        mime "text/csv"\n',
            'resource "weather://a" has no `text`',
            'add `text "…"`',
            "t.mockllm:2:5",
        ),
        (
            'mcp server "w":\n    resource "weather://a":\n        text "a"\n        text "b"\n',
            '`text` is given twice for resource "weather://a"',
            "keep one (the first is on line 3)",
            "t.mockllm:4:9",
        ),
        (
            'mcp server "w":\n    prompt p "d":\n        argument city\n',
            "prompt `p` has no message",
            'add `user "…"`',
            "t.mockllm:2:5",
        ),
        (
            'mcp server "w":\n    prompt p:\n        user "x"\n        argument city "the city" required\n',
            "expected `optional` or the end of the line, found `required`",
            "",
            "t.mockllm:4:34",
        ),
    ],
)
def test_malformed_declarations_are_syntax_errors_at_their_place(
    tmp_path: Path, text: str, message: str, hint: str, where_: str
) -> None:
    out = problems(text, tmp_path)
    assert message in out, out
    assert hint in out, out
    assert where_ in out and "^" in out, out


@pytest.mark.parametrize(
    ("body", "message", "hint", "where_"),
    [
        (
            '    resource "cities":\n        text "Paris"\n',
            'error: resource "cities" is not a URI',
            '`resource "weather://cities"`',
            "t.mockllm:2:5",
        ),
        (
            '    resource "w://a":\n        text "1"\n    resource "w://a":\n        text "2"\n',
            'error: resource `w://a` is declared twice in `mcp server "w"`',
            "keep one declaration",
            "t.mockllm:4:5",
        ),
        (
            '    prompt p:\n        user "a"\n    prompt p:\n        user "b"\n',
            'error: prompt `p` is declared twice in `mcp server "w"`',
            "keep one declaration",
            "t.mockllm:4:5",
        ),
        (
            '    prompt p:\n        argument city\n        argument city\n        user "{{city}}"\n',
            "error: argument `city` is declared twice in prompt `p`",
            "keep one declaration",
            "t.mockllm:4:9",
        ),
        (
            '    prompt p:\n        argument city\n        user "Forecast for {{cty}}"\n',
            "error: prompt `p` has no argument `cty` for `{{cty}}`",
            "did you mean `{{city}}`?",
            "t.mockllm:4:9",
        ),
        (
            '    prompt p:\n        user "Forecast for {{town}}"\n',
            "error: prompt `p` has no argument `town` for `{{town}}`",
            'declare it: `argument town "what it is"`',
            "t.mockllm:3:9",
        ),
        (
            '    prompt p:\n        argument city\n        user "Forecast for {{city"\n',
            "error: unclosed '{{' in template",
            "write `{{argument}}`",
            "t.mockllm:4:9",
        ),
    ],
)
def test_check_catches_mistakes_in_resources_and_prompts(
    tmp_path: Path, body: str, message: str, hint: str, where_: str
) -> None:
    out = problems('mcp server "w":\n' + body, tmp_path)
    assert message in out, out
    assert hint in out, out
    assert where_ in out and "^" in out, out


def test_fmt_and_the_json_form_keep_resources_and_prompts() -> None:
    script, _ = parse_text(SERVER, "t.mockllm")
    assert script is not None
    canonical = format_file(script)
    assert canonical == SERVER
    again, diagnostics = parse_text(canonical, "t.mockllm")
    assert diagnostics == [] and again == script
    data = to_json(script)
    assert data["mcp_servers"][0]["resources"][1] == {
        "uri": "weather://stations.json",
        "description": "",
        "text": '{"stations": 3}',
        "mime": "application/json",
    }
    assert data["mcp_servers"][0]["prompts"][0]["arguments"][1] == {
        "name": "days",
        "description": "",
        "required": False,
    }
    assert data["mcp_servers"][0]["prompts"][0]["messages"][0] == {
        "role": "user",
        "text": "What's the forecast for {{city}}?",
    }
    back, problems_ = from_json_text(to_json_text(script), "t.mockllm")
    assert problems_ == [] and back == script
    only_tools = n.ScriptFile("x", mcp_servers=(n.McpServer("s", (n.McpTool("t"),)),))
    assert set(to_json(only_tools)["mcp_servers"][0]) == {"name", "tools"}  # the old shape, unchanged


def test_the_json_form_refuses_a_bad_role_and_a_bad_prompt_name() -> None:
    head = '{"mockllm": 1, "mcp_servers": [{"name": "w", "prompts": [{"name": '
    _s, diagnostics = from_json_text(head + '"p", "messages": [{"role": "system", "text": "x"}]}]}]}', "t.json")
    assert diagnostics and "$.mcp_servers[0].prompts[0].messages[0].role" in render(diagnostics, {})
    _s, diagnostics = from_json_text(head + '"two words", "messages": []}]}]}', "t.json")
    assert any("not a valid prompt name" in d.message for d in diagnostics)


def test_the_lexer_colours_the_new_words() -> None:
    tokens = list(MockllmLexer().get_tokens(SERVER))
    assert not [t for t in tokens if t[0] is Error]
    keywords = {value for kind, value in tokens if kind in Keyword}
    assert {"resource", "mime", "text", "prompt", "optional"} <= keywords


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    with started(tmp_path_factory.mktemp("lsp-mcp-catalog")) as c:
        yield c


def test_the_editor_completes_and_explains_the_new_words(client: Client, tmp_path: Path) -> None:
    text = SERVER.replace("        argument days optional\n", "        argument days optional\n        \n")
    text = text.replace('        mime "application/json"\n', '        \n        mime "application/json"\n')
    text = text.replace("    prompt ask_forecast", "    \n    prompt ask_forecast")
    uri = client.open(tmp_path / "w.mockllm", text)
    client.diagnostics(uri)

    def at(needle: str, line_offset: int) -> list[str]:
        row = where(text, needle)["line"] + line_offset
        return labels(client.request("textDocument/completion", doc(uri, {"line": row, "character": 8})))

    assert {"resource", "prompt", "tool"} <= set(at("    prompt ask_forecast", -1))
    assert {"text", "mime"} <= set(at('        mime "application/json"', -1))
    assert {"argument", "user", "assistant"} <= set(at("        argument days optional", 1))

    def hover(needle: str) -> str:
        result = client.request("textDocument/hover", doc(uri, where(text, needle)))
        assert result is not None, needle
        return str(result["contents"]["value"])

    assert "resources/read" in hover('resource "weather://cities"')
    assert "prompts/get" in hover("prompt ask_forecast")
    assert "MIME type" in hover('mime "application/json"')
    assert "required unless" in hover("argument city")
