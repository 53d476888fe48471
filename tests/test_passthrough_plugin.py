"""The pytest plugin growing a suite one test at a time: a throwaway project whose tests call the
official SDKs, run by pytest in a subprocess, configured as docs/recording.md shows. With
``--mockllm-record`` what no script answers goes to a real local upstream (a mockllm server of its
own) and lands in each test's own folder; the next run, with the upstream gone and no flag, replays
it; a new test with nothing recorded fails as strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from recording_clients import UPSTREAM
from test_docs_site import blocks
from test_passthrough import LIBRARY, upstream

from mockllm.api import load

#: docs/recording.md's pyproject.toml ("In pytest: one folder per test"), with the upstream named
PYPROJECT = next(b.text for b in blocks("recording.md") if b.file == "pyproject.toml")
assert "mockllm_record_per_test = true" in PYPROJECT

TESTS = """
import json

import openai

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def weather(fixture, city):
    client = openai.OpenAI(base_url=fixture.openai_base_url, api_key="sk-secret-in-the-test", max_retries=0)
    messages = [{"role": "user", "content": f"What is the weather in {city}?"}]
    first = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    second = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    return json.loads(call.function.arguments), second.choices[0].message.content


def test_lima(mockllm):
    said = weather(mockllm, "Lima")
    assert said == ({"city": "Lima"}, "It is sunny in Lima today, with a light breeze from the sea.")


def test_oslo(mockllm):
    assert weather(mockllm, "Oslo")[1].startswith("It is sunny")
    assert mockllm.record_header == {"x-mockllm-record-to": "test_app.py::test_oslo"}
"""

NEW_TEST = """

def test_paris(mockllm):
    assert weather(mockllm, "Paris")[1].startswith("It is sunny")
"""


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", *args]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=180)


def test_each_test_grows_its_own_script_and_the_next_run_replays_it(tmp_path: Path) -> None:
    (tmp_path / "test_app.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "greeting.mockllm").write_text(LIBRARY, encoding="utf-8")
    with upstream(UPSTREAM) as up:
        ini = PYPROJECT + f'mockllm_passthrough = ["{up.url}"]\n'
        (tmp_path / "pyproject.toml").write_text(ini, encoding="utf-8")
        recorded = run(tmp_path, "--mockllm-record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    folders = sorted(p.parent.relative_to(tmp_path) for p in (tmp_path / "recorded").rglob("*.mockllm"))
    assert folders == [Path("recorded/test_app.py/test_lima"), Path("recorded/test_app.py/test_oslo")]
    for folder in folders:
        assert load(str(tmp_path / folder)).ok
        text = next((tmp_path / folder).glob("*.mockllm")).read_text(encoding="utf-8")
        assert "sk-secret-in-the-test" not in text and text.count("    step ") == 2
    replayed = run(tmp_path)  # the upstream is gone: every answer comes from the recorded folders
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    with (tmp_path / "test_app.py").open("a", encoding="utf-8") as f:
        f.write(NEW_TEST)
    new = run(tmp_path)
    assert new.returncode == 1 and "1 failed, 2 passed" in new.stdout
    assert "mockllm: no step matched" in new.stdout and "test_paris" in new.stdout
