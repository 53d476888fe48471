"""`use` inside script text resolves against a documented base, never the working directory by
accident (issue 13, item 4): the test file's directory in the pytest fixture, ``base=`` in the Python
API, the server's scenario base for the admin API. Posted text is never named `<admin>`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import mockllm
from mockllm.dsl.tree.jsonform import to_json_text

LIB = """
reply greeting:
    text "Hello from the library."
"""

USES_LIB = """
use "lib/replies.mockllm" as lib

scenario "Hi":
    step hi:
        always
        reply like lib.greeting
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "replies.mockllm").write_text(LIB, encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    return tmp_path


def ask(server: mockllm.MockServer) -> str:
    response = httpx.post(
        server.openai_base_url + "/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )
    response.raise_for_status()
    content: str = response.json()["choices"][0]["message"]["content"]
    return content


def test_load_takes_an_explicit_base(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "elsewhere")
    before = mockllm.load(USES_LIB)  # no base: the working directory, where lib/ is not
    assert not before.ok and str(project / "elsewhere") in before.render()
    assert "resolve against its base directory" in before.render()
    assert mockllm.load(USES_LIB, base=project).ok


def test_server_load_of_text_resolves_against_the_servers_base(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "elsewhere")
    with mockllm.serve(base=project) as server:
        server.load(USES_LIB)
        assert ask(server) == "Hello from the library."


def test_admin_post_resolves_against_the_scenario_base_and_names_no_admin_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "elsewhere")
    with mockllm.serve(base=project) as server:
        ok = httpx.post(server.url + "/_mockllm/scenarios", content=USES_LIB)
        assert ok.status_code == 200, ok.text
        assert ask(server) == "Hello from the library."
        bad = httpx.post(server.url + "/_mockllm/scenarios", content=USES_LIB.replace("lib/", "nowhere/"))
        assert bad.status_code == 400
        assert "<admin>" not in bad.text
        assert bad.json()["errors"][0]["span"]["file"] == "POST /_mockllm/scenarios"


def test_json_posted_scenarios_report_no_zero_position(project: Path) -> None:
    script = (
        'scenario "J":\n    step a:\n        when:\n            last user message contains "x"\n'
        '        reply:\n            text "ok"\n'
    )
    tree = mockllm.load(script).library.files[0]
    with mockllm.serve(base=project) as server:
        posted = httpx.post(
            server.url + "/_mockllm/scenarios",
            content=to_json_text(tree),
            headers={"content-type": "application/json"},
        )
        assert posted.status_code == 200, posted.text
        missed = httpx.post(
            server.openai_base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "nothing"}]},
        )
        assert missed.status_code == 404
        text = json.dumps(missed.json()) + json.dumps([e.to_json() for e in server.requests()])
        assert ":0:0" not in text and "<admin>" not in text
        assert "POST /_mockllm/scenarios" in text


def test_the_pytest_fixture_resolves_text_beside_the_test_file(project: Path) -> None:
    """The same test passes from the project root and from its tests/ directory."""
    tests = project / "tests"
    tests.mkdir()
    (tests / "lib").mkdir()
    (tests / "lib" / "replies.mockllm").write_text(LIB, encoding="utf-8")
    (tests / "test_inline.py").write_text(
        f'''
from openai import OpenAI

SCRIPT = """{USES_LIB}"""


def test_inline_use(mockllm):
    mockllm.load(SCRIPT)
    client = OpenAI(base_url=mockllm.openai_base_url, api_key="test", max_retries=0)
    reply = client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
    assert reply.choices[0].message.content == "Hello from the library."
''',
        encoding="utf-8",
    )
    for cwd, target in ((project, "tests/test_inline.py"), (tests, "test_inline.py")):
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(project), target],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
