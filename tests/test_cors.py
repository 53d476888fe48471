"""CORS (issue 34): `--cors ORIGIN …` lets a web page of those origins call the mock, as a browser does
it: a preflight (``OPTIONS`` with ``Origin``, ``Access-Control-Request-Method`` and the headers the
``openai`` SDK sends from a browser) answered, then the real request answered with
``Access-Control-Allow-Origin``. Off by default; never on the admin API unless the admin token is set.
Raw requests through httpx, header for header what Chromium sends."""

from __future__ import annotations

import functools
import http.server
import shutil
import socketserver
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from conftest import Serve

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

PAGE = "http://localhost:5173"
SCRIPT = """
scenario "Browser":
    step hello:
        reply:
            text "Hello, page."
        always
"""
# what Chromium sends before `fetch(url, {method: "POST", headers: {...}})` from the openai SDK in a browser
PREFLIGHT = {
    "origin": PAGE,
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization,content-type,x-stainless-lang,x-stainless-os",
    "sec-fetch-mode": "cors",
    "sec-fetch-site": "cross-site",
    "sec-fetch-dest": "empty",
}
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _preflight(url: str, path: str) -> httpx.Response:
    return httpx.options(url + path, headers=PREFLIGHT)


def test_a_page_of_an_allowed_origin_calls_the_mock(serve: Serve) -> None:
    with serve(SCRIPT, cors=(PAGE,)) as server:
        pre = _preflight(server.url, "/v1/chat/completions")
        chat = httpx.post(
            server.url + "/v1/chat/completions",
            json=CHAT,
            headers={"origin": PAGE, "authorization": "Bearer sk-test"},
        )
        stranger = httpx.options(
            server.url + "/v1/chat/completions", headers={**PREFLIGHT, "origin": "https://evil.example"}
        )
    assert pre.status_code == 200, pre.text
    assert pre.headers["access-control-allow-origin"] == PAGE
    assert "POST" in pre.headers["access-control-allow-methods"]
    allowed = {h.strip() for h in pre.headers["access-control-allow-headers"].lower().split(",")}
    assert {"authorization", "content-type", "x-stainless-os"} <= allowed
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"] == "Hello, page."
    assert chat.headers["access-control-allow-origin"] == PAGE
    assert chat.headers["access-control-expose-headers"] == "*"  # the page's SDK reads x-request-id
    assert stranger.status_code == 400 and "access-control-allow-origin" not in stranger.headers


def test_off_by_default(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        chat = httpx.post(
            server.url + "/v1/chat/completions", json=CHAT, headers={"origin": PAGE, "authorization": "Bearer k"}
        )
        pre = _preflight(server.url, "/v1/chat/completions")
    assert chat.status_code == 200 and "access-control-allow-origin" not in chat.headers
    assert "access-control-allow-origin" not in pre.headers


def test_the_admin_api_only_with_the_admin_token(serve: Serve) -> None:
    with serve(SCRIPT, cors=("*",)) as server:
        open_pre = _preflight(server.url, "/_mockllm/requests")
        open_get = httpx.get(server.url + "/_mockllm/requests", headers={"origin": PAGE})
    assert "access-control-allow-origin" not in open_pre.headers
    assert open_get.status_code == 200 and "access-control-allow-origin" not in open_get.headers
    with serve(SCRIPT, cors=("*",), admin_token="s3cret") as server:
        guarded_pre = _preflight(server.url, "/_mockllm/requests")
        guarded = httpx.get(
            server.url + "/_mockllm/requests", headers={"origin": PAGE, "authorization": "Bearer s3cret"}
        )
    assert guarded_pre.status_code == 200 and guarded_pre.headers["access-control-allow-origin"] == "*"
    assert guarded.status_code == 200 and guarded.headers["access-control-allow-origin"] == "*"


# ---------------------------------------------------------------- a real browser

PAGE_HTML = """<!doctype html><html><body>waiting<script>
fetch("MOCK/v1/chat/completions", {
  method: "POST",
  headers: {"content-type": "application/json", "authorization": "Bearer sk-test", "x-stainless-os": "Linux"},
  body: JSON.stringify({model: "gpt-4o-mini", messages: [{role: "user", content: "hi"}]}),
}).then(async (r) => {
  const j = await r.json();
  document.body.textContent = "OK " + j.choices[0].message.content + " id=" + (r.headers.get("x-request-id") || "none");
}).catch((e) => { document.body.textContent = "BLOCKED " + e; });
</script></body></html>"""


def _chromium_page(mock: str, tmp: Path) -> str:
    """What headless Chromium shows after the page (served from another origin) called the mock."""
    (tmp / "index.html").write_text(PAGE_HTML.replace("MOCK", mock), encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp))
    with socketserver.TCPServer(("127.0.0.1", 0), handler) as site:
        threading.Thread(target=site.serve_forever, daemon=True).start()
        page = f"http://localhost:{site.server_address[1]}/index.html"  # another origin than 127.0.0.1:PORT
        try:
            out = subprocess.run(
                [
                    CHROMIUM,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--virtual-time-budget=10000",
                    f"--user-data-dir={tmp / 'profile'}",
                    "--dump-dom",
                    page,
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            site.shutdown()
    return out.stdout


def test_headless_chromium_calls_the_mock_from_another_origin(serve: Serve, tmp_path: Path) -> None:
    """The browser itself sends the preflight (the request carries `authorization` and an `x-stainless`
    header) and reads the answer and its request id; without `--cors` the same page is blocked."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
    with serve(SCRIPT, cors=("*",)) as server:
        allowed = _chromium_page(server.url, tmp_path)
    assert "OK Hello, page. id=req_" in allowed, allowed[-500:]
    with serve(SCRIPT) as server:
        blocked = _chromium_page(server.url, tmp_path)
    assert "BLOCKED" in blocked and "OK " not in blocked, blocked[-500:]
