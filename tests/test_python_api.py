"""`mockllm.load`, `mockllm.load_or_raise` and `mockllm.serve`, through the public names only."""

from __future__ import annotations

import time
import types
from pathlib import Path

import anthropic
import attrs
import httpx
import openai
import pytest
from sdk_clients import opened

import mockllm

GREETING = """
scenario "Greeting":
    step hello:
        when:
            last user message contains "hello"
        always
        reply:
            text "Hi there."
"""

BROKEN = """
scenario "Broken":
    step a:
        reply:
            txt "hi"
"""


def test_public_names_are_exported() -> None:
    for name in ("load", "load_or_raise", "serve", "scenario", "text", "DiagnosticsError", "__version__"):
        assert name in mockllm.__all__
        assert hasattr(mockllm, name)
    assert mockllm.__version__ == "0.1.0"


def test_load_text_paths_and_builders_in_order(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "greeting.mockllm").write_text(GREETING, encoding="utf-8")
    built = mockllm.scenario("Built").step("one").reply(mockllm.text("x"))
    text = 'scenario "Inline":\n    step one:\n        reply echo\n'
    result = mockllm.load(tmp_path / "lib", text, built)
    assert result.ok, result.render()
    assert result.scenarios == ["Greeting", "Inline", "Built"]
    assert result.errors == () and result.render() == ""
    assert mockllm.load_or_raise(str(tmp_path / "lib" / "greeting.mockllm")).machines[0].name == "Greeting"


def test_load_reports_diagnostics_as_data() -> None:
    result = mockllm.load(BROKEN)
    assert not result.ok and result.compiled is None
    assert [d.code for d in result.errors] == ["syntax"]
    rendered = result.render()
    assert "<text>:5:13" in rendered and 'txt "hi"' in rendered and "did you mean `text`?" in rendered


def test_load_of_a_missing_path_is_a_diagnostic() -> None:
    result = mockllm.load("no/such/dir")
    assert not result.ok
    assert "no/such/dir: no such file or directory" in result.render()


def test_load_or_raise_raises_with_every_diagnostic() -> None:
    with pytest.raises(mockllm.DiagnosticsError) as info:
        mockllm.load_or_raise(BROKEN)
    assert len(info.value.diagnostics) == 1
    assert "expected a reply element" in str(info.value)


def test_load_rejects_what_is_not_a_source() -> None:
    with pytest.raises(TypeError, match="takes script text, a path, or a builder"):
        mockllm.load(42)  # type: ignore[arg-type]


def test_serve_with_errors_raises_before_starting() -> None:
    with pytest.raises(mockllm.DiagnosticsError, match="expected a reply element"):
        mockllm.serve(BROKEN)


def test_serve_answers_the_sdks_and_the_admin_calls(tmp_path: Path) -> None:
    (tmp_path / "weather.mockllm").write_text(
        """
scenario "Weather":
    step ask:
        when:
            last user message contains "weather"
        reply:
            text "Sunny."
            stream 3 chunks, 60ms apart
""",
        encoding="utf-8",
    )
    with mockllm.serve(GREETING) as server:
        health = server.url + "/_mockllm/health"
        assert server.url.startswith("http://127.0.0.1:")
        assert server.openai_base_url == server.url + "/v1"
        assert server.anthropic_base_url == server.gemini_base_url == server.ollama_host == server.url

        client = opened(openai.OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0))
        hello = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello"}])
        assert hello.choices[0].message.content == "Hi there."
        claude = opened(anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="test", max_retries=0))
        reply = claude.messages.create(model="c", max_tokens=10, messages=[{"role": "user", "content": "hello"}])
        assert reply.content[0].text == "Hi there."  # type: ignore[union-attr]
        assert [r.step for r in server.requests()] == ["hello", "hello"]
        assert len(server.conversations()) == 1  # the same opening: one conversation

        # a path loads in this process: the no-match report names the real file and line
        loaded = server.load(tmp_path / "weather.mockllm")
        assert loaded.scenarios == ("Weather",)
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "bye"}])
        verification = server.verify()
        assert not verification.ok
        report = verification.report()
        assert report.startswith("mockllm: 1 request matched no step")
        assert "mockllm: no step matched" in report and "weather.mockllm:3:5" in report
        assert {s["step"] for s in verification.unused_steps} == {"ask"}

        # streaming goes over a real socket: the chunks arrive apart
        started = time.monotonic()
        arrivals = []
        stream = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "weather?"}], stream=True
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                arrivals.append(time.monotonic() - started)
        assert len(arrivals) == 3 and arrivals[-1] >= 0.1

        # text and builders go through POST /_mockllm/scenarios; same names replace
        again = server.load(mockllm.scenario("Weather").step("ask").reply(mockllm.text("Rain.")))
        assert again.replaced == ("Weather",)
        with pytest.raises(mockllm.DiagnosticsError) as info:
            server.load(BROKEN)
        assert "<text>:5:13" in str(info.value) and 'txt "hi"' in str(info.value)

        server.reset()
        assert server.requests() == [] and server.conversations() == []
        assert server.verify().ok
        server.restore()
        assert [s["name"] for s in server.scenarios()] == ["Greeting"]
    assert not server.running
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    with pytest.raises(httpx.ConnectError):
        httpx.get(health, timeout=1)


def test_reset_of_one_conversation() -> None:
    with mockllm.serve() as server:  # no library: the echo responder
        for key in ("a", "b"):
            httpx.post(
                server.openai_base_url + "/chat/completions",
                headers={"x-mockllm-conversation": key, "authorization": "Bearer t"},
                json={"model": "m", "messages": [{"role": "user", "content": key}]},
            ).raise_for_status()
        server.reset("a")
        assert [r.conversation for r in server.requests()] == ["b"]


def test_start_and_stop_without_with() -> None:
    server = mockllm.serve(mockllm.scenario("S").step("a").always().reply(mockllm.text("ok"))).start()
    try:
        health = httpx.get(server.url + "/_mockllm/health").json()
        assert health["scenarios"] == 1
        assert "127.0.0.1" in repr(server)
    finally:
        server.stop()
    assert repr(server) == "<mockllm.MockServer not running>"


def test_the_public_api_is_one_explicit_export_list() -> None:
    """`mockllm/__init__.py` names what it exports (no star import), and exports nothing else."""
    source = (Path(mockllm.__file__)).read_text(encoding="utf-8")
    assert "import *" not in source
    assert len(mockllm.__all__) == len(set(mockllm.__all__))
    assert all(hasattr(mockllm, name) for name in mockllm.__all__)
    public = {
        name
        for name, value in vars(mockllm).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name != "annotations"
    }
    assert public == set(mockllm.__all__) - {"__version__"}


def test_requests_and_conversations_are_typed_records() -> None:
    script = mockllm.scenario("Greeting").step("hello").always().reply(mockllm.text("Hi."))
    with mockllm.serve(script) as server:
        httpx.post(
            server.openai_base_url + "/chat/completions",
            headers={"x-mockllm-conversation": "c1"},
            json={"model": "m", "messages": [{"role": "user", "content": "hello"}]},
        ).raise_for_status()
        (entry,) = server.requests()
        assert isinstance(entry, mockllm.JournalEntry)
        assert (entry.scenario, entry.step, entry.conversation, entry.status) == ("Greeting", "hello", "c1", 200)
        (conversation,) = server.conversations()
        assert isinstance(conversation, mockllm.ConversationRecord)
        assert conversation.conversation == "c1"
        assert [(m.scenario, dict(m.uses)) for m in conversation.machines] == [("Greeting", {"hello": 1})]


def test_clear_checks_the_status_it_gets() -> None:
    with mockllm.serve(admin_token="secret") as server:
        server.options = attrs.evolve(server.options, admin_token="wrong")
        with pytest.raises(RuntimeError, match="clearing the scenarios answered 403"):
            server.clear()


def test_serve_takes_the_hang_limit_the_cookbook_shows() -> None:
    hang = mockllm.scenario("Hang").step("wait").always().reply(mockllm.hang())
    with mockllm.serve(hang, hang_limit_s=0.2) as server:
        response = httpx.post(
            server.openai_base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert response.status_code == 504 or response.status_code >= 500
        assert server.requests()[0].note and "hang limit of 0.2s" in server.requests()[0].note
