"""`mockllm lsp` driven as an editor drives it: a real subprocess, JSON-RPC over its stdin/stdout.

The client below frames messages with Content-Length headers and reads the server's answers and
notifications on a thread; nothing of the transport is mocked. Expectations come from the files
themselves (line and column of a word) and from `mockllm check` / `mockllm fmt` run on the same file.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mockllm.cli import main

WAIT = 30.0  # a guard against a hung server, not a speed expectation

BROKEN = """\
mockllm 1
use "lib/errors.mockllm" as errors

scenario "Weather":
    step ask:
        when:
            modle is "gpt-4o"
        reply:
            text "sunny"

    step again:
        after nowhere
        reply like errors.missing
"""

GOOD = """\
mockllm 1
use "lib/errors.mockllm" as errors

reply busy:
    error 503 "busy"

scenario "Weather":
    when:
        provider is openai

    step ask:
        when:
            last user message contains "weather"
        reply:
            text "sunny"

    step retry:
        after ask
        reply like errors.rate_limited

    step later:
        after retry
        reply like busy
"""

LIB = """\
reply rate_limited:
    error 429 "slow down"
    retry after 1s
"""

UGLY = """\
mockllm 1
scenario "Layout":
    step one:
        when:
            model   is "gpt-4o"
        reply:
            text "a"

    step two:
        reply:
              text   "b"
"""


class Client:
    """A minimal LSP client over a subprocess's pipes."""

    def __init__(self, cwd: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mockllm", "lsp"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                key, _, value = line.decode().partition(":")
                headers[key.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self.inbox.put(json.loads(body))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            msg = self.inbox.get(timeout=WAIT)
            if msg.get("id") == self.next_id and "method" not in msg:
                assert "error" not in msg, msg["error"]
                return msg.get("result")
            self._other(msg)

    def _other(self, msg: dict[str, Any]) -> None:
        if "id" in msg and "method" in msg:  # a request from the server (e.g. registerCapability)
            self.send({"id": msg["id"], "result": None})
        else:
            self.notifications.append(msg)

    def diagnostics(self, uri: str, version: int | None = None) -> list[dict[str, Any]]:
        """The next diagnostics published for ``uri`` (for ``version`` when given)."""
        while True:
            for i, msg in enumerate(self.notifications):
                p = msg.get("params", {})
                if msg.get("method") == "textDocument/publishDiagnostics" and p.get("uri") == uri:
                    if version is None or p.get("version") == version:
                        del self.notifications[: i + 1]
                        return list(p["diagnostics"])
            self._other(self.inbox.get(timeout=WAIT))

    def open(self, path: Path, text: str) -> str:
        uri = path.resolve().as_uri()
        self.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "mockllm", "version": 1, "text": text}}
        )
        return uri

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


@contextlib.contextmanager
def started(root: Path) -> Iterator[Client]:
    """A language server in ``root``, initialized, shut down after (for other modules' fixtures)."""
    c = Client(root)
    try:
        c.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}})
        c.notify("initialized", {})
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def server_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lsp")


@pytest.fixture(scope="module")
def client(server_root: Path) -> Iterator[Client]:
    """One server for the module (starting one is the slow part); each test works in its own folder."""
    c = Client(server_root)
    result = c.request("initialize", {"processId": os.getpid(), "rootUri": server_root.as_uri(), "capabilities": {}})
    caps = result["capabilities"]
    for feature in ("completionProvider", "hoverProvider", "definitionProvider", "documentSymbolProvider"):
        assert caps.get(feature), feature
    assert caps.get("documentFormattingProvider") and caps.get("documentRangeFormattingProvider")
    c.notify("initialized", {})
    yield c
    c.close()


@pytest.fixture
def project(server_root: Path, request: pytest.FixtureRequest) -> Path:
    folder = server_root / request.node.name
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "errors.mockllm").write_text(LIB, encoding="utf-8")
    return folder


def where(text: str, needle: str, nth: int = 0) -> dict[str, int]:
    """The LSP position of the ``nth`` occurrence of ``needle`` in ``text``."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at)
    return {"line": line, "character": at - (text.rfind("\n", 0, at) + 1)}


def doc(uri: str, pos: dict[str, int]) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": pos}


def check_json(project: Path, name: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """`mockllm check --format json` run where the server runs (file names in messages are the same)."""
    old = os.getcwd()
    os.chdir(project.parent)
    name = f"{project.name}/{name}"
    try:
        main(["check", "--format", "json", name])
    finally:
        os.chdir(old)
    return list(json.loads(capsys.readouterr().out))


def test_diagnostics_are_those_of_check_at_their_ranges(
    client: Client, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / "weather.mockllm"
    path.write_text(BROKEN, encoding="utf-8")
    uri = client.open(path, BROKEN)
    got = client.diagnostics(uri)
    expected = check_json(project, "weather.mockllm", capsys)
    assert len(got) == len(expected) >= 3
    for g, e in zip(sorted(got, key=lambda d: (d["range"]["start"]["line"], d["message"])), expected, strict=True):
        span = e["span"]
        assert g["range"]["start"] == {"line": span["line"] - 1, "character": span["column"] - 1}
        assert g["range"]["end"] == {"line": span["end_line"] - 1, "character": span["end_column"] - 1}
        assert g["message"].startswith(e["message"])
        assert g["code"] == e["code"] and g["severity"] == 1
    by_code = {d["code"]: d for d in got}
    assert by_code["syntax"]["range"]["start"] == where(BROKEN, "modle")
    assert by_code["unknown-step"]["range"]["start"] == where(BROKEN, "nowhere")
    assert by_code["unknown-reply"]["range"]["start"] == where(BROKEN, "errors.missing")


def test_a_problem_in_an_imported_file_shows_on_the_use_line(client: Client, project: Path) -> None:
    (project / "lib" / "errors.mockllm").write_text('reply rate_limited:\n    error 429 "x"\n    retry afterr 1s\n')
    path = project / "main.mockllm"
    uri = client.open(path, GOOD)
    got = client.diagnostics(uri)
    assert len(got) == 1
    d = got[0]
    assert d["range"]["start"] == {"line": 1, "character": 0}
    assert "lib/errors.mockllm:3:" in d["message"]
    related = d["relatedInformation"][0]["location"]
    assert related["uri"] == (project / "lib" / "errors.mockllm").resolve().as_uri()
    assert related["range"]["start"]["line"] == 2


def test_diagnostics_follow_changes(client: Client, project: Path) -> None:
    path = project / "weather.mockllm"
    uri = client.open(path, BROKEN)
    assert client.diagnostics(uri, 1)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": GOOD}]},
    )
    assert client.diagnostics(uri, 2) == []
    # an incremental edit: `ask` → `asc` in `after ask` leaves an unknown step
    at = where(GOOD, "after ask")
    start = {"line": at["line"], "character": at["character"] + 8}
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 3},
            "contentChanges": [
                {"range": {"start": start, "end": {**start, "character": start["character"] + 1}}, "text": "c"}
            ],
        },
    )
    got = client.diagnostics(uri, 3)
    assert [d["code"] for d in got] == ["unknown-step"]
    assert got[0]["range"]["start"] == {**start, "character": start["character"] - 2}


def test_an_import_cycle_through_the_open_file_is_reported_as_check_reports_it(
    client: Client, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = 'use "b.mockllm" as b\n\nscenario "A":\n    step one:\n        reply like b.answer\n'
    (project / "a.mockllm").write_text(a, encoding="utf-8")
    (project / "b.mockllm").write_text('use "a.mockllm" as a\n\nreply answer:\n    text "hi"\n', encoding="utf-8")
    uri = client.open(project / "a.mockllm", a)
    got = client.diagnostics(uri)
    expected = check_json(project, "a.mockllm", capsys)
    assert [e["code"] for e in expected] == ["import-cycle"]
    assert [d["code"] for d in got] == ["import-cycle"]
    assert expected[0]["message"] in got[0]["message"]  # shown on the `use` line of the open file
    assert got[0]["range"]["start"] == {"line": 0, "character": 0}


def labels(result: Any) -> list[str]:
    items = result["items"] if isinstance(result, dict) else result
    return [i["label"] for i in items]


def test_completion_in_context(client: Client, project: Path) -> None:
    text = GOOD.replace("        after retry\n", "        after \n").replace(
        "            last user message contains", "            last user message  contains"
    )
    text += '\nscenario "Second":\n    \n'
    path = project / "main.mockllm"
    uri = client.open(path, text)
    client.diagnostics(uri)

    def at(pos: dict[str, int]) -> list[str]:
        return labels(client.request("textDocument/completion", doc(uri, pos)))

    after = where(text, "after \n")
    steps = at({**after, "character": after["character"] + 6})
    assert steps == ["ask", "retry"]  # the scenario's other steps, not `later` itself

    like = where(text, "reply like busy")
    replies = at({**like, "character": like["character"] + 11})
    assert replies[0] == "busy" and "errors.rate_limited" in replies

    subj = where(text, "last user message")
    assert "last user message" in at(subj)
    assert {"provider", "model", "tool result for"} <= set(at(subj))
    predicates = at({**subj, "character": subj["character"] + len("last user message ")})
    assert predicates[:3] == ["is", "is not", "contains"] and "is present" in predicates
    assert "include" not in predicates

    provider = where(text, "openai")
    assert {"openai", "anthropic", "gemini"} <= set(at(provider))

    scenario_body = where(text, '"Second":\n')
    top_of_second = at({"line": scenario_body["line"] + 1, "character": 4})
    assert top_of_second == ["priority", "tags", "order any", "let", "when", "step"]
    assert "scenario" in at({"line": scenario_body["line"] + 2, "character": 0})

    text_line = where(text, 'text "sunny"')
    elements = at(text_line)
    assert {"text", "tool call", "latency", "error", "retry after"} <= set(elements)

    use = where(text, "lib/errors")
    assert at(use) == ["lib/"]
    assert at({**use, "character": use["character"] + 4}) == ["lib/errors.mockllm"]


def test_definition_of_after_reply_like_and_use(client: Client, project: Path) -> None:
    uri = client.open(project / "main.mockllm", GOOD)

    def target(needle: str, offset: int) -> dict[str, Any]:
        pos = where(GOOD, needle)
        result = client.request("textDocument/definition", doc(uri, {**pos, "character": pos["character"] + offset}))
        assert result is not None, needle
        return dict(result[0] if isinstance(result, list) else result)

    loc = target("after ask", 7)
    assert loc["uri"] == uri and loc["range"]["start"] == where(GOOD, "ask:")
    loc = target("after retry", 8)
    assert loc["range"]["start"] == where(GOOD, "retry:")
    loc = target("reply like busy", 12)
    assert loc["uri"] == uri and loc["range"]["start"] == where(GOOD, "busy:")
    loc = target("errors.rate_limited", 10)
    assert loc["uri"] == (project / "lib" / "errors.mockllm").resolve().as_uri()
    assert loc["range"]["start"] == where(LIB, "rate_limited")
    loc = target("use", 6)
    assert loc["uri"] == (project / "lib" / "errors.mockllm").resolve().as_uri()


def test_hover_shows_reference_text_and_named_replies(client: Client, project: Path) -> None:
    uri = client.open(project / "main.mockllm", GOOD)

    def hover(needle: str, offset: int = 0) -> str:
        pos = where(GOOD, needle)
        result = client.request("textDocument/hover", doc(uri, {**pos, "character": pos["character"] + offset}))
        assert result is not None, needle
        return str(result["contents"]["value"])

    assert "eligible only right after" in hover("after ask")
    assert "last message whose role is user" in hover("last user message", 6)
    assert "Substring" in hover("contains")
    shown = hover("errors.rate_limited", 9)
    assert 'error 429 "slow down"' in shown and "retry after 1s" in shown
    assert 'error 503 "busy"' in hover("reply like busy", 12)


def test_document_symbols(client: Client, project: Path) -> None:
    uri = client.open(project / "main.mockllm", GOOD)
    result = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    names = [(s["name"], s["kind"]) for s in result]
    assert names == [("errors", 2), ("busy", 12), ("Weather", 5)]
    weather = result[2]
    assert [c["name"] for c in weather["children"]] == ["ask", "retry", "later"]
    assert weather["children"][1]["selectionRange"]["start"] == where(GOOD, "retry:")


def apply(text: str, edits: list[dict[str, Any]]) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(p: dict[str, int]) -> int:
        return offsets[p["line"]] + p["character"] if p["line"] < len(lines) else len(text)

    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[: offset(e["range"]["start"])] + e["newText"] + text[offset(e["range"]["end"]) :]
    return text


def test_formatting_edits_equal_fmt(client: Client, project: Path) -> None:
    path = project / "ugly.mockllm"
    path.write_text(UGLY, encoding="utf-8")
    uri = client.open(path, UGLY)
    edits = client.request(
        "textDocument/formatting", {"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": True}}
    )
    assert edits
    old = os.getcwd()
    os.chdir(project)
    try:
        assert main(["fmt", "ugly.mockllm"]) == 0
    finally:
        os.chdir(old)
    formatted = path.read_text(encoding="utf-8")
    assert formatted != UGLY
    assert apply(UGLY, edits) == formatted

    # range formatting touches only the lines in the range
    first = where(UGLY, "step two")
    ranged = client.request(
        "textDocument/rangeFormatting",
        {
            "textDocument": {"uri": uri},
            "range": {"start": first, "end": {"line": first["line"] + 2, "character": 0}},
            "options": {"tabSize": 4, "insertSpaces": True},
        },
    )
    assert ranged and all(e["range"]["start"]["line"] >= first["line"] for e in ranged)
    partly = apply(UGLY, ranged)
    assert partly == UGLY.replace('              text   "b"', '            text "b"')

    # a file with syntax errors is left alone, as fmt leaves it
    broken = client.open(project / "broken.mockllm", BROKEN)
    assert (
        client.request(
            "textDocument/formatting",
            {"textDocument": {"uri": broken}, "options": {"tabSize": 4, "insertSpaces": True}},
        )
        is None
    )


def test_lsp_without_pygls_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['pygls'] = None; from mockllm.cli import main; sys.exit(main(['lsp']))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "mockllm: the language server needs pygls: pip install 'mockllm[lsp]'"
