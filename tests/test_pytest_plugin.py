"""The pytest plugin, used the way a user's project uses it: a throwaway project in tmp_path with its
own ini options, scenario files and tests calling the official SDKs, run by pytest in a subprocess.

Three subprocess runs in all (each costs a few seconds): the project plainly, the same project under
pytest-xdist with two workers, and a second project for the ini options strict=false and
require_all_used=true."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from provider_cases import CITY_CALL, tool_loop

PYPROJECT = """
[tool.pytest.ini_options]
mockllm_scenarios = "scenarios"
"""

SESSION_SCENARIO = """
scenario "Greeting":
    step hello:
        when:
            last user message contains "hello"
        always
        reply:
            text "Hello from the session library."
"""

WEATHER_SCENARIO = tool_loop(
    None, [CITY_CALL], ['text "Sunny in {{city}}."', "stream 3 chunks"], result="is present", name="Weather"
)

BROKEN_SCENARIO = """
scenario "Broken":
    step a:
        reply:
            txt "hi"
"""

TESTS = """
import anthropic
import openai
import pytest

import mockllm as m

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def chat(fixture, text):
    client = openai.OpenAI(base_url=fixture.openai_base_url, api_key="test", max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


def test_session_library_with_openai(mockllm):
    assert chat(mockllm, "hello there") == "Hello from the session library."
    assert [r.step for r in mockllm.requests()] == ["hello"]


def test_session_library_with_anthropic(mockllm):
    client = anthropic.Anthropic(base_url=mockllm.anthropic_base_url, api_key="test", max_retries=0)
    reply = client.messages.create(
        model="claude-x", max_tokens=50, messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.content[0].text == "Hello from the session library."


@pytest.mark.mockllm("weather.mockllm")
def test_marker_loads_a_file_beside_the_test(mockllm):
    client = openai.OpenAI(base_url=mockllm.openai_base_url, api_key="test", max_retries=0)
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    first = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    stream = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Sunny in Oslo."
    assert mockllm.verify().ok


def test_scenarios_of_the_previous_test_are_gone(mockllm):
    assert [s["name"] for s in mockllm.server.scenarios()] == ["Greeting"]
    assert mockllm.requests() == []


def test_builder_load_and_env(mockllm_env):
    mockllm_env.load(
        m.scenario("Built").step("one").when(m.last_user_message().is_("ping")).repeat(2).reply(m.text("pong"))
    )
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY come from mockllm_env
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "ping"}])
    assert reply.choices[0].message.content == "pong"
    azure = openai.AzureOpenAI(max_retries=0)  # AZURE_OPENAI_ENDPOINT, its key and OPENAI_API_VERSION too
    reply = azure.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "ping"}])
    assert reply.choices[0].message.content == "pong"


def test_unmatched_request_fails_strict(mockllm):
    with pytest.raises(openai.NotFoundError):
        chat(mockllm, "something nobody scripted")


@pytest.mark.mockllm(strict=False)
def test_marker_turns_strict_off(mockllm):
    with pytest.raises(openai.NotFoundError):
        chat(mockllm, "something nobody scripted")


@pytest.mark.mockllm("weather.mockllm", require_all_used=True)
def test_marker_requires_all_used(mockllm):
    assert chat(mockllm, "hello") == "Hello from the session library."


@pytest.mark.mockllm("broken.mockllm")
def test_marker_with_a_broken_file(mockllm):
    pass
"""

OUTCOMES = {
    "test_session_library_with_openai": "PASSED",
    "test_session_library_with_anthropic": "PASSED",
    "test_marker_loads_a_file_beside_the_test": "PASSED",
    "test_scenarios_of_the_previous_test_are_gone": "PASSED",
    "test_builder_load_and_env": "PASSED",
    "test_unmatched_request_fails_strict": "FAILED",
    "test_marker_turns_strict_off": "PASSED",
    "test_marker_requires_all_used": "FAILED",
    "test_marker_with_a_broken_file": "ERROR",
}

SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR) \S*::(\w+)", re.MULTILINE)


def _project(root: Path, ini: str) -> Path:
    (root / "scenarios").mkdir(parents=True)
    (root / "scenarios" / "greeting.mockllm").write_text(SESSION_SCENARIO, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "weather.mockllm").write_text(WEATHER_SCENARIO, encoding="utf-8")
    (root / "tests" / "broken.mockllm").write_text(BROKEN_SCENARIO, encoding="utf-8")
    (root / "tests" / "test_app.py").write_text(TESTS, encoding="utf-8")
    (root / "pyproject.toml").write_text(ini, encoding="utf-8")
    return root


def _pytest(root: Path, *args: str) -> tuple[dict[str, str], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = proc.stdout + proc.stderr
    return {name: outcome for outcome, name in SUMMARY_LINE.findall(output)}, output


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _project(tmp_path_factory.mktemp("userproject"), PYPROJECT)


def test_plugin_in_a_user_project(project: Path) -> None:
    outcomes, output = _pytest(project)
    assert outcomes == OUTCOMES, output
    # strict mode: the failure carries the no-match report, naming the nearest step
    strict = output.split("test_unmatched_request_fails_strict", 1)[1]
    assert "mockllm: no step matched" in strict, output
    assert "step `hello`" in strict and 'seen "something nobody scripted"' in strict, output
    assert re.search(r"see the unmatched request in the inspector: http://127\.0\.0\.1:\d+/_mockllm/ui", strict), output
    # require_all_used: the steps of the marker's file the test never used are named
    assert "mockllm: steps never used:" in output, output
    assert 'scenario "Weather", step `ask`' in output and 'scenario "Weather", step `answer`' in output, output
    # a marker's file with errors: the test errors in setup with the rendered diagnostics
    assert "mockllm: broken.mockllm has errors" in output, output
    assert "tests/broken.mockllm:5:13" in output and '5 |             txt "hi"' in output, output


def test_plugin_under_xdist(project: Path) -> None:
    outcomes, output = _pytest(project, "-n", "2")
    assert outcomes == OUTCOMES, output
    assert "2 workers" in output or "gw1" in output, output


INI_PROJECT = """
[tool.pytest.ini_options]
mockllm_scenarios = "scenarios"
mockllm_strict = false
mockllm_require_all_used = true
"""

INI_TESTS = '''
import openai
import pytest


def ask(mockllm, text):
    client = openai.OpenAI(base_url=mockllm.openai_base_url, api_key="test", max_retries=0)
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])


def test_unmatched_is_allowed_when_not_strict(mockllm):
    with pytest.raises(openai.NotFoundError):
        ask(mockllm, "nobody scripted this")


def test_session_steps_are_not_required(mockllm):
    assert mockllm.requests() == []


def test_an_unused_loaded_step_fails(mockllm):
    mockllm.load("weather.mockllm")
    mockllm.load("""
scenario "Used":
    step only:
        reply:
            text "ok"
""")
    assert ask(mockllm, "anything").choices[0].message.content == "ok"
'''


def test_ini_options_strict_false_and_require_all_used(tmp_path: Path) -> None:
    root = _project(tmp_path, INI_PROJECT)
    (root / "tests" / "test_app.py").write_text(INI_TESTS, encoding="utf-8")
    outcomes, output = _pytest(root)
    assert outcomes == {
        "test_unmatched_is_allowed_when_not_strict": "PASSED",
        "test_session_steps_are_not_required": "PASSED",
        "test_an_unused_loaded_step_fails": "FAILED",
    }, output
    failure = output.split("test_an_unused_loaded_step_fails", 1)[1]
    assert 'scenario "Weather", step `ask`' in failure, output
    assert "step `only`" not in failure, output


def test_marker_is_registered(pytestconfig: pytest.Config) -> None:
    markers = pytestconfig.getini("markers")
    assert any(line.startswith("mockllm(") for line in markers)


PRINTED_ONCE_TESTS = """
import pytest
from openai import OpenAI


@pytest.mark.mockllm("weather.mockllm")
def test_sdk_raises(mockllm):
    client = OpenAI(base_url=mockllm.openai_base_url, api_key="t", max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "forecast, please"}])


@pytest.mark.mockllm("weather.mockllm")
def test_error_swallowed(mockllm):
    client = OpenAI(base_url=mockllm.openai_base_url, api_key="t", max_retries=0)
    try:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "forecast, please"}])
    except Exception:
        pass


@pytest.mark.mockllm("weather.mockllm")
def test_other_failure(mockllm):
    client = OpenAI(base_url=mockllm.openai_base_url, api_key="t", max_retries=0)
    try:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "forecast, please"}])
    except Exception:
        pass
    assert 1 == 2
"""


def test_each_no_match_report_is_printed_once_per_failing_test(tmp_path: Path) -> None:
    """Before: the SDK's error, the captured server log and the plugin's section each printed it."""
    (tmp_path / "weather.mockllm").write_text(WEATHER_SCENARIO, encoding="utf-8")
    (tmp_path / "test_once.py").write_text(PRINTED_ONCE_TESTS, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=short", "-q", "test_once.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert "3 failed" in out, out
    sections = re.split(r"^_{3,} (test_\w+) _{3,}$", out, flags=re.MULTILINE)
    per_test = dict(zip(sections[1::2], sections[2::2], strict=True))
    assert set(per_test) == {"test_sdk_raises", "test_error_swallowed", "test_other_failure"}
    for name, text in per_test.items():
        body = text.split("short test summary info")[0]
        assert body.count("no step matched this request") == 1, f"{name}:\n{body}"


OTHER_SERVER_LOGS = """
import logging

import httpx

import mockllm


def test_session_server_is_started(mockllm):
    assert mockllm.url


SCRIPT = (
    'scenario "s":\\n    step a:\\n        when:\\n            last user message contains "x"\\n'
    '        reply:\\n            text "y"\\n'
)
NOPE = {"model": "m", "messages": [{"role": "user", "content": "z"}]}


def test_another_server_keeps_its_warnings(caplog):
    caplog.set_level(logging.WARNING, logger="mockllm.server")
    with mockllm.serve(SCRIPT) as server:
        httpx.post(server.openai_base_url + "/chat/completions", json=NOPE)
    assert any("no step matched" in r.getMessage() for r in caplog.records)
"""


def test_the_session_servers_log_filter_leaves_other_servers_alone(tmp_path: Path) -> None:
    """Before: the session server's filter hid every server's no-match warnings for the rest of the
    session, so a later test's caplog saw none (a failure that depended on the order tests ran in)."""
    (tmp_path / "test_logs.py").write_text(OTHER_SERVER_LOGS, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:randomly", "test_logs.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "2 passed" in proc.stdout, proc.stdout + proc.stderr
