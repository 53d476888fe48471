"""`mockllm serve --tls`, `mockllm.serve(tls=True)` and the `mockllm_tls` ini option: HTTPS on the
port with the loopback certificate mockllm makes (or the user's), judged by real clients that trust
only the authority file mockllm names (httpx with ``verify``, the openai SDK over https), on every
host that is installed."""

from __future__ import annotations

import datetime
import os
import re
import ssl
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest
from test_docs_site import blocks

import mockllm
from mockllm.errors import ServerError, UsageError
from mockllm.server.runner import server_missing
from mockllm.server.tls.loopback import CA_FILE, FOLDER, loopback_certificate

LISTENING = re.compile(r"^mockllm listening on (https://127\.0\.0\.1:\d+)$")
TRUST = re.compile(r"SSL_CERT_FILE=(\S+)")
GREETING = """
scenario "greeting":
    step hello:
        always
        reply:
            text "hello over TLS"
"""


@contextmanager
def serving(*args: str, cache: Path) -> Iterator[tuple[str, str]]:
    """`mockllm serve --port 0 ARGS` with its cache in ``cache``: yields (URL, stderr so far) once it
    printed where it listens and how clients trust it."""
    env = {k: v for k, v in os.environ.items() if k != "MOCKLLM_SCENARIOS"}
    env["XDG_CACHE_HOME"] = str(cache)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockllm", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline().rstrip("\n")
        found = LISTENING.match(first)
        assert found, (first, proc.stderr.read() if proc.poll() is not None else "")
        said = ""
        while "SSL_CERT_FILE" not in said and "clients must trust" not in said:
            line = proc.stderr.readline()
            assert line, said
            said += line
        yield found.group(1), said
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=15)


def ask_openai(base_url: str, verify: ssl.SSLContext) -> str | None:
    with httpx.Client(verify=verify) as http:
        client = openai.OpenAI(base_url=base_url + "/v1", api_key="test", max_retries=0, http_client=http)
        reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        return reply.choices[0].message.content


@pytest.mark.parametrize("server", ["hypercorn", "uvicorn", "granian"])
def test_serve_tls_on_every_host_is_trusted_through_the_file_it_names(tmp_path: Path, server: str) -> None:
    if server_missing(server):
        pytest.skip(f"{server} is not installed here (its extra)")
    script = tmp_path / "greeting.mockllm"
    script.write_text(GREETING)
    with serving(str(script), "--tls", "--server", server, cache=tmp_path / "cache") as (url, said):
        ca = TRUST.search(said)
        assert ca is not None, said
        assert ca.group(1) == str(tmp_path / "cache" / "mockllm" / "tls" / FOLDER / CA_FILE)
        trusted = ssl.create_default_context(cafile=ca.group(1))
        health = httpx.get(url + "/_mockllm/health", verify=trusted)
        answer = ask_openai(url, trusted)
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(url + "/_mockllm/health", verify=ssl.create_default_context())
    assert health.status_code == 200 and health.json()["scenarios"] == 1
    assert answer == "hello over TLS"
    # docs/tls.md shows these start-up lines, with its own port, library and cache
    shown = next(b.text for b in blocks("tls.md") if b.lang == "text" and "listening on" in b.text)
    port = url.rsplit(":", 1)[1]
    for line in shown.splitlines():
        line = line.replace("8443", port).replace("/home/you/.cache", str(tmp_path / "cache"))
        if "mockllm: serving 3 scenarios" not in line:
            assert line in f"mockllm listening on {url}\nmockllm inspector on {url}/_mockllm/ui\n{said}", line


def test_serve_with_the_users_own_certificate_and_bad_pairs_refused(tmp_path: Path) -> None:
    own = loopback_certificate(tmp_path / "own")  # any certificate and key the user has
    assert own.ca is not None
    with serving("--tls-cert", own.cert, "--tls-key", own.key, cache=tmp_path / "cache") as (url, said):
        answer = ask_openai(url, ssl.create_default_context(cafile=own.ca))
    assert "clients must trust the authority that signed it" in said
    assert answer == "hi"  # the echo responder
    assert not (tmp_path / "cache").exists()  # nothing made: the user's files serve

    def refused(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mockllm", "serve", "--port", "0", *args], capture_output=True, text=True, timeout=30
        )

    alone = refused("--tls-cert", own.cert)
    assert alone.returncode == 2 and "--tls-cert and --tls-key go together: --tls-key is missing" in alone.stderr
    swapped = refused("--tls-cert", own.key, "--tls-key", own.cert)
    assert swapped.returncode == 2 and "cannot serve TLS" in swapped.stderr, swapped.stderr
    absent = refused("--tls-cert", str(tmp_path / "nope.pem"), "--tls-key", own.key)
    assert absent.returncode == 2 and "nope.pem: no such file" in absent.stderr, absent.stderr
    assert "Traceback" not in alone.stderr + swapped.stderr + absent.stderr


def test_the_loopback_certificate_is_kept_renewed_and_names_loopback_only(tmp_path: Path) -> None:
    from cryptography import x509

    first = loopback_certificate(tmp_path)
    assert loopback_certificate(tmp_path) == first
    kept = Path(first.cert).read_bytes()
    assert loopback_certificate(tmp_path) == first and Path(first.cert).read_bytes() == kept  # not made again
    assert stat.S_IMODE(os.stat(first.key).st_mode) == 0o600
    leaf = x509.load_pem_x509_certificate(kept)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]
    assert not list(tmp_path.glob(".making-*")) and not list(tmp_path.glob(".stale-*"))

    near_end = leaf.not_valid_after_utc - datetime.timedelta(days=10)
    renewed = loopback_certificate(tmp_path, now=near_end)
    assert renewed == first and Path(renewed.cert).read_bytes() != kept  # same place, made again
    assert x509.load_pem_x509_certificate(Path(renewed.cert).read_bytes()).not_valid_after_utc > near_end


def test_python_api_serves_tls_and_its_admin_calls_trust_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with mockllm.serve(GREETING, tls=True) as server:
        assert server.url.startswith("https://127.0.0.1:")
        assert server.ca_file == str(tmp_path / "mockllm" / "tls" / FOLDER / CA_FILE)
        answer = ask_openai(server.url, server.ssl_context())
        journal = server.requests()  # the admin API, over https
        assert server.verify().ok
        idle = httpx.Client(verify=server.ssl_context())  # a pool keeping its connection when the server stops
        assert idle.get(server.url + "/_mockllm/health").status_code == 200
        thread = server._background()._thread
    assert thread is not None and not thread.is_alive()  # stopped, not left waiting on the idle client
    idle.close()
    assert answer == "hello over TLS"
    assert [entry.step for entry in journal] == ["hello"]
    with mockllm.serve() as plain:
        assert plain.url.startswith("http://") and plain.ca_file is None
        with pytest.raises(ServerError, match=r"serve\(tls=True\)"):
            plain.ssl_context()
    with pytest.raises(UsageError, match="go together"):
        mockllm.serve(tls=(str(tmp_path / "cert.pem"), ""))


PLUGIN_TESTS = """
import asyncio
import os

import openai
from google import genai
from google.genai import types


def test_env_trusts_the_server(mockllm_env):
    assert mockllm_env.url.startswith("https://")
    assert os.environ["SSL_CERT_FILE"] == mockllm_env.ca_file
    client = openai.OpenAI(max_retries=0)  # base URL, key and trust: all from the environment
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "hi"
    assert len(mockllm_env.requests()) == 1


def test_a_live_session_from_the_environment_alone(mockllm_env):
    async def talk():
        config = types.LiveConnectConfig(response_modalities=["TEXT"])
        async with genai.Client().aio.live.connect(model="gemini-live-2.5-flash-preview", config=config) as session:
            turn = types.Content(role="user", parts=[types.Part(text="live and trusted")])
            await session.send_client_content(turns=turn)
            return "".join([m.text or "" async for m in session.receive()])

    assert asyncio.run(talk()) == "live and trusted"
"""


def test_the_pytest_plugin_serves_tls_with_the_ini_option(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\nmockllm_tls = true\n")
    (tmp_path / "test_user.py").write_text(PLUGIN_TESTS)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    assert (tmp_path / "cache" / "mockllm" / "tls" / FOLDER / CA_FILE).is_file()
