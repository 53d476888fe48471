"""The admin API cannot be used to read files or from a web page: imports in posted scripts resolve
only to scripts inside the scenario base, error text never quotes another file, requests with a
foreign ``Host`` or ``Origin`` are refused, and the admin token can come from the environment or a
file instead of the command line (where `ps` shows it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Serve
from reliability import serve_process

SECRET = "MOCKLLM_TEST_SECRET_VALUE_41c7"
# What is refused is under test here, not how fast: a loaded machine answers a new server's first
# requests (the first script load builds the parser) later than httpx's default 5 s.
HTTP = httpx.Client(timeout=60)
REPLY = 'reply greeting:\n    text "hello from the shared file"\n'


def post(url: str, text: str, **params: str) -> httpx.Response:
    return HTTP.post(url + "/_mockllm/scenarios", content=text.encode(), params=params)


def importing(path: str) -> str:
    return f'use "{path}" as shared\n\nscenario "s":\n    step a:\n        reply like shared.greeting\n'


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "base"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "shared.mockllm").write_text(REPLY)
    (root / "notes.txt").write_text(f"{SECRET}\n")
    (tmp_path / "outside.mockllm").write_text(f"{SECRET}\n" + REPLY)
    return root


def test_imports_inside_the_base_load(serve: Serve, base: Path) -> None:
    with serve(scenario_base=str(base)) as server:
        loaded = post(server.url, importing("lib/shared.mockllm"))
        nested = post(server.url, importing("shared.mockllm").replace('"s"', '"t"'), base="lib")
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["loaded"] == ["s"]
    assert nested.status_code == 200, nested.text


@pytest.mark.parametrize(
    "target",
    [
        "/proc/self/environ",
        "/etc/passwd",
        "../outside.mockllm",
        "notes.txt",
        "lib/../../outside.mockllm",
        "link.mockllm",
    ],
)
def test_imports_outside_the_base_or_of_other_files_are_refused_without_quoting_them(
    serve: Serve, base: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOCKLLM_TEST_SECRET", SECRET)  # in /proc/self/environ of this process
    (base / "link.mockllm").symlink_to(base.parent / "outside.mockllm")
    with serve(scenario_base=str(base)) as server:
        answer = post(server.url, importing(target))
        json_form = HTTP.post(
            server.url + "/_mockllm/scenarios",
            json={"uses": [{"path": target, "alias": "shared"}], "scenarios": []},
        )
    assert answer.status_code == 400
    codes = [e["code"] for e in answer.json()["errors"]]
    assert "import-outside-base" in codes, answer.json()
    assert SECRET not in answer.text
    assert SECRET not in json_form.text


def test_imports_resolve_against_the_working_directory_by_default(
    serve: Serve, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(base)
    with serve() as server:
        inside = post(server.url, importing("lib/shared.mockllm"))
        outside = post(server.url, importing("../outside.mockllm"))
    assert inside.status_code == 200, inside.text
    assert outside.status_code == 400 and SECRET not in outside.text


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({}, True),
        ({"host": "localhost"}, True),
        ({"host": "app.localhost:3000"}, True),
        ({"origin": "http://localhost:5173"}, True),
        ({"origin": "http://127.0.0.1:8000"}, True),
        ({"host": "evil.example"}, False),  # DNS rebinding: a page on evil.example resolved to 127.0.0.1
        ({"host": "evil.example:8080"}, False),
        ({"origin": "https://evil.example"}, False),  # a cross-site form post or fetch
        ({"origin": "null"}, False),  # a sandboxed frame or a file:// page
    ],
)
def test_requests_on_behalf_of_a_foreign_web_page_are_refused(
    serve: Serve, headers: dict[str, str], allowed: bool
) -> None:
    with serve() as server:
        reset = HTTP.post(server.url + "/_mockllm/reset", headers=headers)
        load = HTTP.post(server.url + "/_mockllm/scenarios", content=b"", headers=headers)
        health = HTTP.get(server.url + "/_mockllm/health", headers=headers)
    statuses = {reset.status_code, load.status_code, health.status_code}
    assert statuses == ({200} if allowed else {403}), (reset.text, load.text)
    if not allowed:
        assert "refused" in reset.json()["error"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/cmdline")
@pytest.mark.parametrize("how", ["environment", "file"])
def test_the_admin_token_can_stay_out_of_the_command_line(tmp_path: Path, how: str) -> None:
    token = "tok-" + os.urandom(8).hex()
    args: list[str] = []
    env: dict[str, Any] = {}
    if how == "file":
        (tmp_path / "token").write_text(token + "\n")
        args = ["--admin-token-file", str(tmp_path / "token")]
    else:
        env = {"MOCKLLM_ADMIN_TOKEN": token}
    with serve_process(*args, env=env) as (proc, url, _):
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace")
        without = HTTP.get(url + "/_mockllm/health")
        wrong = HTTP.get(url + "/_mockllm/health", headers={"authorization": "Bearer nope"})
        right = HTTP.get(url + "/_mockllm/health", headers={"authorization": f"Bearer {token}"})
    assert token not in cmdline
    assert (without.status_code, wrong.status_code, right.status_code) == (401, 403, 200)


def test_an_unreadable_or_empty_token_file_is_a_clear_error(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "empty").write_text("\n")
    for path, says in ((tmp_path / "missing", "cannot read the admin token file"), (tmp_path / "empty", "empty")):
        done = subprocess.run(
            [sys.executable, "-m", "mockllm", "serve", "--port", "0", "--admin-token-file", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert says in done.stderr and "Traceback" not in done.stderr
