"""The versioned scenario library under `scenarios/`: it checks cleanly, and every named reply in
`scenarios/lib/errors.v1.mockllm` does what its name says through the official SDKs of OpenAI Chat,
Anthropic, Gemini and Ollama, each used through a tiny scenario that says `reply like errors.NAME`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import ollama
import openai
import pytest
from conftest import ServeText
from google import genai
from google.genai import errors as gerrors
from google.genai import types as gtypes
from sdk_clients import opened

from mockllm.dsl.parse.loader import load_paths
from mockllm.dsl.tree.nodes import Error, NamedReply, RetryAfter, StreamError, Text

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
ERRORS_LIB = SCENARIOS / "lib" / "errors.v1.mockllm"

MESSAGES: list[Any] = [{"role": "user", "content": "hello"}]


def mockllm_command() -> list[str]:
    """The installed console script when there is one, else `python -m mockllm`."""
    script = Path(sys.executable).with_name("mockllm")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mockllm"]


def named_replies() -> dict[str, NamedReply]:
    library = load_paths([ERRORS_LIB])
    assert not library.diagnostics
    return {reply.name: reply for reply in library.files[0].replies}


def element(name: str, kind: type[Any]) -> Any:
    found = [e for e in named_replies()[name].elements if isinstance(e, kind)]
    assert len(found) == 1, (name, kind)
    return found[0]


def script_for(name: str) -> str:
    """The tiny scenario that answers every request with `errors.NAME`."""
    return (
        f'use "{ERRORS_LIB}" as errors\n\n'
        f'scenario "uses {name}":\n    step fail:\n        always\n        reply like errors.{name}\n'
    )


def openai_client(url: str, **kw: Any) -> openai.OpenAI:
    return opened(openai.OpenAI(base_url=url + "/v1", api_key="test", max_retries=0, **kw))


def anthropic_client(url: str, **kw: Any) -> anthropic.Anthropic:
    return opened(anthropic.Anthropic(base_url=url, api_key="test", max_retries=0, **kw))


def gemini_client(url: str, **kw: Any) -> genai.Client:
    return opened(genai.Client(api_key="test", http_options=gtypes.HttpOptions(base_url=url, **kw)))


def generate(client: genai.Client, stream: bool) -> object:
    """One Gemini call. (Keep the client referenced while it runs: a dropped `genai.Client` closes
    its connection pool, and a call made through `client.models` alone then fails.)"""
    if stream:
        return list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hello"))
    return client.models.generate_content(model="gemini-2.5-flash", contents="hello")


def ollama_client(url: str, **kw: Any) -> ollama.Client:
    return opened(ollama.Client(host=url, **kw))


# ---------------------------------------------------------------------------------------------------------
# The library as files


def test_check_accepts_the_whole_library() -> None:
    done = subprocess.run(
        [*mockllm_command(), "check", "scenarios/"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "error" not in done.stdout.lower().replace("no problems", ""), done.stdout
    assert re.search(r"\d+ files checked, no problems", done.stdout), done.stdout


def test_check_json_report_is_clean() -> None:
    done = subprocess.run(
        [*mockllm_command(), "check", "--format", "json", "scenarios/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(done.stdout)
    diagnostics = report["diagnostics"] if isinstance(report, dict) else report
    assert done.returncode == 0 and diagnostics == [], done.stdout


@pytest.mark.parametrize("path", sorted(SCENARIOS.rglob("*.mockllm")), ids=lambda p: p.name)
def test_every_script_opens_with_its_version_and_what_it_tests(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "mockllm 1"
    assert lines[1].startswith("# ") and len(lines[1]) > 10


def test_library_files_are_versioned_by_path() -> None:
    names = [p.name for p in (SCENARIOS / "lib").glob("*.mockllm")]
    assert names and all(re.fullmatch(r"[a-z_]+\.v\d+\.mockllm", n) for n in names), names


# ---------------------------------------------------------------------------------------------------------
# errors.v1: HTTP errors, in each provider's shape

# name → (status, OpenAI class, Anthropic class, Anthropic error.type, Gemini class, Gemini status or None)
STATUS_ERRORS: dict[str, tuple[int, type[Exception], type[Exception], str, type[Exception], str | None]] = {
    "rate_limited": (
        429,
        openai.RateLimitError,
        anthropic.RateLimitError,
        "rate_limit_error",
        gerrors.ClientError,
        "RESOURCE_EXHAUSTED",
    ),
    "rate_limited_long": (
        429,
        openai.RateLimitError,
        anthropic.RateLimitError,
        "rate_limit_error",
        gerrors.ClientError,
        "RESOURCE_EXHAUSTED",
    ),
    "server_error": (
        500,
        openai.InternalServerError,
        anthropic.InternalServerError,
        "api_error",
        gerrors.ServerError,
        "INTERNAL",
    ),
    "unavailable": (
        503,
        openai.InternalServerError,
        anthropic.ServiceUnavailableError,
        "api_error",
        gerrors.ServerError,
        "UNAVAILABLE",
    ),
    "overloaded": (
        529,
        openai.InternalServerError,
        anthropic.OverloadedError,
        "overloaded_error",
        gerrors.ServerError,
        None,
    ),
    "unauthorized": (
        401,
        openai.AuthenticationError,
        anthropic.AuthenticationError,
        "authentication_error",
        gerrors.ClientError,
        None,
    ),
    "context_length": (
        400,
        openai.BadRequestError,
        anthropic.BadRequestError,
        "invalid_request_error",
        gerrors.ClientError,
        "INVALID_ARGUMENT",
    ),
}
FAULTS = {"timeout_hang", "cut_mid_stream", "stream_error"}


def test_every_named_reply_is_covered_here() -> None:
    assert set(named_replies()) == set(STATUS_ERRORS) | FAULTS


def retry_after_seconds(name: str) -> str | None:
    found = [e for e in named_replies()[name].elements if isinstance(e, RetryAfter)]
    return f"{found[0].duration.ms / 1000:g}" if found else None


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", sorted(STATUS_ERRORS))
def test_status_error_openai(serve_text: ServeText, name: str, stream: bool) -> None:
    status, exc_class, *_ = STATUS_ERRORS[name]
    error = element(name, Error)
    with serve_text(script_for(name)) as url:
        with pytest.raises(openai.APIStatusError) as info:
            openai_client(url).chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=stream)
    exc = info.value
    assert type(exc) is exc_class and exc.status_code == status == error.status
    assert isinstance(exc.body, dict) and exc.body["message"] == error.message
    assert {"message", "type", "param", "code"} <= set(exc.body)
    assert exc.request_id
    assert exc.response.headers.get("retry-after") == retry_after_seconds(name)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", sorted(STATUS_ERRORS))
def test_status_error_anthropic(serve_text: ServeText, name: str, stream: bool) -> None:
    status, _, exc_class, error_type, *_ = STATUS_ERRORS[name]
    error = element(name, Error)
    with serve_text(script_for(name)) as url:
        with pytest.raises(anthropic.APIStatusError) as info:
            anthropic_client(url).messages.create(
                model="claude-mock-1", max_tokens=10, messages=MESSAGES, stream=stream
            )
    exc = info.value
    assert type(exc) is exc_class and exc.status_code == status
    assert isinstance(exc.body, dict)
    assert exc.body["type"] == "error"
    assert exc.body["error"] == {"type": error_type, "message": error.message}
    assert exc.request_id and exc.body["request_id"] == exc.request_id
    assert exc.response.headers.get("retry-after") == retry_after_seconds(name)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", sorted(STATUS_ERRORS))
def test_status_error_gemini(serve_text: ServeText, name: str, stream: bool) -> None:
    status, *_, exc_class, gemini_status = STATUS_ERRORS[name]
    error = element(name, Error)
    with serve_text(script_for(name)) as url:
        with pytest.raises(gerrors.APIError) as info:
            generate(gemini_client(url), stream)
    exc = info.value
    assert type(exc) is exc_class and exc.code == status
    assert exc.message == error.message
    assert gemini_status is None or exc.status == gemini_status
    assert exc.details == {"error": {"code": status, "message": error.message, "status": exc.status}}


@pytest.mark.parametrize("name", sorted(STATUS_ERRORS))
def test_status_error_ollama(serve_text: ServeText, name: str) -> None:
    status, *_ = STATUS_ERRORS[name]
    with serve_text(script_for(name)) as url:
        with pytest.raises(ollama.ResponseError) as info:
            ollama_client(url).chat(model="llama3.2", messages=MESSAGES)
        raw = httpx.post(url + "/api/chat", json={"model": "llama3.2", "stream": False, "messages": MESSAGES})
    assert info.value.status_code == status
    assert info.value.error == element(name, Error).message
    assert raw.json() == {"error": element(name, Error).message}


def test_rate_limited_retry_after_headers(serve_text: ServeText) -> None:
    """Both spellings, so every SDK's retry policy sees the same delay."""
    with serve_text(script_for("rate_limited")) as url:
        response = httpx.post(
            url + "/v1/chat/completions",
            headers={"authorization": "Bearer test"},
            json={"model": "m", "messages": MESSAGES},
        )
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    assert response.headers["retry-after-ms"] == "1000"


# ---------------------------------------------------------------------------------------------------------
# errors.v1: faults (hang, disconnect, in-band stream error)


HANG_CLIENT_TIMEOUT_S = 0.3


def test_timeout_hang_every_client_times_out(serve_text: ServeText) -> None:
    t = HANG_CLIENT_TIMEOUT_S
    attempts: list[tuple[Callable[[str], object], type[BaseException] | tuple[type[BaseException], ...]]] = [
        (
            lambda url: openai_client(url, timeout=t).chat.completions.create(model="m", messages=MESSAGES),
            openai.APITimeoutError,
        ),
        (
            lambda url: anthropic_client(url, timeout=t).messages.create(model="m", max_tokens=10, messages=MESSAGES),
            anthropic.APITimeoutError,
        ),
        (
            lambda url: generate(gemini_client(url, timeout=int(t * 1000)), stream=False),
            (httpx2.TimeoutException, httpx.TimeoutException),
        ),
        (lambda url: ollama_client(url, timeout=t).chat(model="l", messages=MESSAGES), httpx.TimeoutException),
    ]
    with serve_text(script_for("timeout_hang"), hang_limit_s=2.0) as url:
        for call, expected in attempts:
            started = time.monotonic()
            with pytest.raises(expected):
                call(url)
            assert time.monotonic() - started >= t  # the client gave up after its own timeout


def streamed_text_before_the_fault(name: str) -> str:
    return element(name, Text).text  # type: ignore[no-any-return]


def test_cut_mid_stream_openai(serve_text: ServeText) -> None:
    got: list[str] = []
    with serve_text(script_for("cut_mid_stream")) as url:
        with pytest.raises((openai.APIConnectionError, httpx2.TransportError)):
            for chunk in openai_client(url).chat.completions.create(model="m", messages=MESSAGES, stream=True):
                if chunk.choices and chunk.choices[0].delta.content:
                    got.append(chunk.choices[0].delta.content)
    full = streamed_text_before_the_fault("cut_mid_stream")
    assert got and full.startswith("".join(got)) and "".join(got) != full


def test_cut_mid_stream_anthropic(serve_text: ServeText) -> None:
    got: list[str] = []
    with serve_text(script_for("cut_mid_stream")) as url:
        with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
            with anthropic_client(url).messages.stream(model="m", max_tokens=100, messages=MESSAGES) as s:
                got.extend(s.text_stream)
    full = streamed_text_before_the_fault("cut_mid_stream")
    assert got and full.startswith("".join(got)) and "".join(got) != full


def test_cut_mid_stream_gemini_and_ollama(serve_text: ServeText) -> None:
    with serve_text(script_for("cut_mid_stream")) as url:
        with pytest.raises((gerrors.APIError, httpx2.TransportError, httpx.TransportError)):
            generate(gemini_client(url), stream=True)
        with pytest.raises(httpx.TransportError):
            list(ollama_client(url).chat(model="l", messages=MESSAGES, stream=True))


def test_stream_error_openai(serve_text: ServeText) -> None:
    message = element("stream_error", StreamError).message
    with serve_text(script_for("stream_error")) as url:
        with pytest.raises(openai.APIError) as info:
            list(openai_client(url).chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert not isinstance(info.value, openai.APIStatusError)  # in-band: the HTTP status was 200
    assert message in str(info.value)


def test_stream_error_anthropic(serve_text: ServeText) -> None:
    message = element("stream_error", StreamError).message
    with serve_text(script_for("stream_error")) as url:
        with pytest.raises(anthropic.APIStatusError) as info:
            with anthropic_client(url).messages.stream(model="m", max_tokens=100, messages=MESSAGES) as s:
                s.get_final_message()
    assert info.value.status_code == 200
    assert isinstance(info.value.body, dict) and info.value.body["error"]["message"] == message


def test_stream_error_gemini_and_ollama(serve_text: ServeText) -> None:
    message = element("stream_error", StreamError).message
    with serve_text(script_for("stream_error")) as url:
        with pytest.raises(gerrors.ServerError) as gemini_info:
            generate(gemini_client(url), stream=True)
        with pytest.raises(ollama.ResponseError) as ollama_info:
            list(ollama_client(url).chat(model="l", messages=MESSAGES, stream=True))
    assert gemini_info.value.message == message
    assert ollama_info.value.error == message
