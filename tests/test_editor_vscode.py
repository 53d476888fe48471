"""The VS Code package in editors/vscode: its JSON files parse and point at files that exist, its
TextMate grammar's patterns compile (with the `regex` module, whose syntax overlaps Oniguruma's for
everything the grammar uses) and colour an example the way a reader expects, and its words are the
language's words. No VS Code binary is built or run; a small TextMate-style tokenizer stands in."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import regex

from mockllm.cli import build_parser
from mockllm.dsl.parse.parser import _keywords
from mockllm.dsl.providers import PROVIDERS
from mockllm.dsl.tree import reference

ROOT = Path(__file__).resolve().parent.parent
VSCODE = ROOT / "editors" / "vscode"


def load(name: str) -> Any:
    return json.loads((VSCODE / name).read_text(encoding="utf-8"))


GRAMMAR = load("syntaxes/mockllm.tmLanguage.json")


def rules(grammar: dict[str, Any], patterns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The patterns with `include`s of the repository expanded, in order."""
    out: list[dict[str, Any]] = []
    for p in patterns:
        if "include" in p:
            target = grammar["repository"][p["include"].lstrip("#")]
            out += rules(grammar, target["patterns"]) if "patterns" in target and "match" not in target else [target]
        elif "match" in p or "begin" in p:
            out.append(p)
        else:
            out += rules(grammar, p.get("patterns", []))
    return out


def tokenize(line: str) -> list[tuple[str, str]]:
    """(text, scope) for one line, the TextMate way: at each point the pattern matching earliest wins
    (ties: the first listed); a begin/end rule covers the text up to its end."""
    top = rules(GRAMMAR, GRAMMAR["patterns"])
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(line):
        best: tuple[dict[str, Any], Any] | None = None
        for rule in top:
            m = regex.compile(rule.get("match") or rule["begin"]).search(line, pos)
            if m is not None and m.end() > m.start() and (best is None or m.start() < best[1].start()):
                best = (rule, m)
        if best is None:
            break
        rule, m = best
        if "match" in rule:
            if "captures" in rule:
                out += [(m[int(g)], c["name"]) for g, c in rule["captures"].items() if m[int(g)]]
            else:
                out.append((m[0], rule["name"]))
            pos = m.end()
        else:
            end = regex.compile(rule["end"]).search(line, m.end())
            stop = end.end() if end is not None else len(line)
            out.append((line[m.start() : stop], rule["name"]))
            pos = stop
    return out


def all_patterns(node: Any) -> list[str]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("match", "begin", "end", "while") and isinstance(value, str):
                found.append(value)
            else:
                found += all_patterns(value)
    elif isinstance(node, list):
        for item in node:
            found += all_patterns(item)
    return found


def test_the_package_points_at_files_that_exist() -> None:
    pkg = load("package.json")
    assert (VSCODE / pkg["main"]).is_file()
    (language,) = pkg["contributes"]["languages"]
    assert language["id"] == "mockllm" and language["extensions"] == [".mockllm"]
    assert (VSCODE / language["configuration"]).is_file()
    scopes = set()
    for grammar in pkg["contributes"]["grammars"]:
        assert (VSCODE / grammar["path"]).is_file()
        scopes.add(json.loads((VSCODE / grammar["path"]).read_text(encoding="utf-8"))["scopeName"])
        assert grammar["scopeName"] in scopes
    assert GRAMMAR["scopeName"] == "source.mockllm" and GRAMMAR["scopeName"] in scopes
    props = pkg["contributes"]["configuration"]["properties"]
    assert props["mockllm.server.command"]["default"] == "mockllm"
    assert props["mockllm.server.args"]["default"] == ["lsp"]
    client = (VSCODE / pkg["main"]).read_text(encoding="utf-8")
    assert 'config.get("server.command"' in client and 'config.get("server.args"' in client
    assert "vscode-languageclient" in pkg["dependencies"]


def test_the_command_the_client_starts_exists() -> None:
    args = build_parser().parse_args(
        load("package.json")["contributes"]["configuration"]["properties"]["mockllm.server.args"]["default"]
    )
    assert args.command == "lsp"


def test_language_configuration() -> None:
    conf = load("language-configuration.json")
    assert conf["comments"]["lineComment"] == "#"
    assert ["{", "}"] in conf["brackets"] and ["[", "]"] in conf["brackets"]
    increase = regex.compile(conf["indentationRules"]["increaseIndentPattern"])
    for opens in ('scenario "Weather":', "    step ask:", "        when:  # comment", "reply busy:"):
        assert increase.search(opens), opens
    for plain in ('            text "a:"', "    # note:", "        after ask", '    tags "a:b"'):
        assert not increase.search(plain), plain
    assert regex.compile(conf["wordPattern"]).fullmatch("rate_limited-2")


@pytest.mark.parametrize("name", ["syntaxes/mockllm.tmLanguage.json", "syntaxes/mockllm.markdown.tmLanguage.json"])
def test_every_pattern_compiles(name: str) -> None:
    patterns = all_patterns(load(name))
    assert patterns
    for p in patterns:
        # an `end` may refer back to its `begin`'s groups (`\\3`); TextMate fills them in first
        regex.compile(re.sub(r"\\([1-9])", "```", p))


def test_an_example_gets_the_scopes_a_reader_expects() -> None:
    text = (ROOT / "scenarios" / "examples" / "weather.mockllm").read_text(encoding="utf-8")
    scopes: dict[str, str] = {}
    for line in text.splitlines():
        for tok, scope in tokenize(line):
            scopes.setdefault(tok, scope)
    assert scopes["mockllm"] == "keyword.control.mockllm"
    assert scopes["scenario"] == "keyword.control.mockllm"
    assert scopes["step"] == "keyword.control.mockllm"
    assert scopes["ask_for_weather"] == "entity.name.function.mockllm"
    assert scopes["last"] == "support.type.subject.mockllm"
    assert scopes["contains"] == "keyword.operator.word.mockllm"
    assert scopes['"weather in"'] == "string.quoted.double.mockllm"
    assert scopes["/weather in ([A-Z][a-z]+)/"] == "string.regexp.mockllm"
    assert scopes["40ms"] == "constant.numeric.duration.mockllm"
    assert scopes["# Weather tool round trip."] == "comment.line.number-sign.mockllm"
    assert scopes["city"] == "variable.other.mockllm"
    refs = dict(tokenize("        reply like errors.rate_limited"))
    assert refs["errors"] == "entity.name.namespace.mockllm" and refs["rate_limited"] == "entity.name.function.mockllm"


def test_the_grammar_knows_every_word_of_the_language() -> None:
    words = reference.vocabulary() | reference.CONNECTORS | _keywords()
    unknown = []
    for word in sorted(words - set(PROVIDERS)):  # provider names: below, where they are written
        scopes = [s for _, s in tokenize(word)]
        if len(scopes) != 1 or not scopes[0].startswith(("keyword.", "support.", "constant.")):
            unknown.append(word)
    assert unknown == []


@pytest.mark.parametrize("name", [*PROVIDERS, "a_provider_added_later"])
def test_any_word_after_provider_is_a_provider_name(name: str) -> None:
    """The grammar lists no provider names (the provider registry does): it colours whatever word
    follows `provider is` (or `is not`), so adding a provider needs no edit of the grammar."""
    constant = "constant.language.mockllm"
    assert tokenize(f"            provider is {name}")[-1] == (name, constant)
    assert tokenize(f"            provider is not {name}") == [
        ("provider", "support.type.subject.mockllm"),
        ("is", "keyword.operator.word.mockllm"),
        ("not", "keyword.operator.word.mockllm"),
        (name, constant),
    ]
    assert tokenize("            provider is present")[-1] == ("present", "keyword.operator.word.mockllm")
    assert tokenize(f"            model is {name}")[-1] != (name, constant)


def test_the_docs_page_names_the_real_command() -> None:
    page = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    (toml_block,) = re.findall(r"```toml\n(.*?)```", page, re.DOTALL)
    helix = tomllib.loads(toml_block)
    assert [helix["language-server"]["mockllm"]["command"], *helix["language-server"]["mockllm"]["args"]] == [
        "mockllm",
        "lsp",
    ]
    assert helix["language"][0]["file-types"] == ["mockllm"]
    assert 'cmd = { "mockllm", "lsp" }' in page
    assert "pip install 'mockllm[lsp]'" in page
