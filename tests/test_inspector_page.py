"""The inspector page (docs/inspector.md) in a real browser: Debian's headless chromium, driven by
Playwright (its Python package only: the browser is the system's, `playwright install` never runs).

One browser and one server for the module (the browser costs seconds to start); requests come from
the official openai SDK; every wait is bounded and polls, no test asserts how fast the page is. The
screenshots in docs/images/ are taken here (MOCKLLM_SCREENSHOTS=1 writes them there)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from playwright.sync_api import expect, sync_playwright
from test_inspector_timing import Timeline, chat, held_request, timed_server

import mockllm

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 5000  # the page polls every 500 ms: what it shows comes within a second; this bounds a slow CI
DOCS_IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"

LIBRARY = """\
scenario "Weather":
    step ask:
        when:
            last user message contains "weather"
        reply:
            text "Which city?"
    step answer:
        when:
            last user message contains "Oslo"
        reply:
            text "Sunny in Oslo."
"""

BROKEN = """\
scenario "Broken":
    step one:
        when:
            last user message contanes "x"
        reply:
            text "y"
"""

INJECTED = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:

    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
    profile = tempfile.mkdtemp(prefix="mockllm-chromium-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1500, "height": 900}
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[mockllm.MockServer]:
    folder = tmp_path_factory.mktemp("inspector")
    (folder / "weather.mockllm").write_text(LIBRARY)
    with mockllm.serve(folder / "weather.mockllm") as running:
        yield running


def _shot(page: Any, name: str, tmp_path: Path) -> None:
    """A screenshot for docs/inspector.md: into docs/images/ when MOCKLLM_SCREENSHOTS=1, else tmp_path."""
    folder = DOCS_IMAGES if os.environ.get("MOCKLLM_SCREENSHOTS") == "1" else tmp_path
    page.screenshot(path=str(folder / name))
    assert (folder / name).stat().st_size > 1000


def _open(browser: Any, url: str) -> tuple[Any, list[str], list[str]]:
    """A page on ``url`` with the console errors and the requests to anywhere else it makes."""
    page = browser.new_page()
    errors: list[str] = []
    outside: list[str] = []
    origin = url.split("/_mockllm", 1)[0]
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith((origin, "data:")) else outside.append(r.url))
    page.goto(url)
    page.wait_for_selector("#library .scenario-link", timeout=WAIT_MS)
    return page, errors, outside


def test_live_journal_machine_no_match_escaping_and_reset(
    browser: Any, server: mockllm.MockServer, tmp_path: Path
) -> None:
    server.reset()
    page, errors, outside = _open(browser, server.url + "/_mockllm/ui")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
        headers = {"x-mockllm-conversation": "trip-1"}
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "weather please"}], extra_headers=headers
        )
        assert reply.choices[0].message.content == "Which city?"
        # the request shows without a reload; the machine marks where trip-1 now stands
        page.wait_for_selector('#journal tr[data-id="1"]', timeout=WAIT_MS)
        assert "Weather / ask" in page.inner_text('#journal tr[data-id="1"]')
        page.wait_for_selector('#machine g.node.current[data-node="s0"]', timeout=WAIT_MS)
        assert page.locator("#machine g.node.current").count() == 1  # start is left: only `ask` is marked

        # a no-match whose body carries markup: the nearest step and its failed condition, the body as text
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": INJECTED}], extra_headers=headers
            )
        page.wait_for_selector('#journal tr.unmatched[data-id="2"]', timeout=WAIT_MS)
        page.click('#journal tr[data-id="2"]')
        page.wait_for_selector("#detail .nearest", timeout=WAIT_MS)
        assert "Weather / answer" in page.inner_text("#detail .nearest")
        failed = page.inner_text("#detail .conditions .failed")
        assert 'last user message contains "Oslo"' in failed and "<script>" in failed
        assert INJECTED.replace('"', '\\"') in page.inner_text("#detail .request-body")
        assert "no step matched" in page.inner_text("#detail .reply-body")
        assert page.evaluate("window.__pwned") is None  # neither the script nor the onerror ran
        assert page.locator("#detail script, #detail img").count() == 0
        _shot(page, "inspector-no-match.png", tmp_path)

        # verify lists the unmatched request; reset empties the journal and moves trip-1 back to start
        page.click("#verify-button")
        page.wait_for_selector("#verify .verify-unmatched li", timeout=WAIT_MS)
        assert "#2 trip-1" in page.inner_text("#verify .verify-unmatched")
        page.click("#reset-all")
        expect(page.locator("#journal tbody tr")).to_have_count(0, timeout=WAIT_MS)
        expect(page.locator("#machine g.node.current")).to_have_count(0, timeout=WAIT_MS)
        assert httpx.get(server.url + "/_mockllm/requests").json() == []
        assert errors == [] and outside == []
    finally:
        page.close()


def test_loading_a_scenario_text_shows_diagnostics_at_their_lines(
    browser: Any, server: mockllm.MockServer, tmp_path: Path
) -> None:
    page, errors, outside = _open(browser, server.url + "/_mockllm/ui")
    try:
        page.click("#load-pane summary")
        page.fill("#load-text", BROKEN)
        page.click("#load-button")
        page.wait_for_selector("#load-result .diagnostic", timeout=WAIT_MS)
        diagnostic = page.locator("#load-result .diagnostic").first
        assert diagnostic.get_attribute("data-line") == "4"  # the misspelt word's line
        assert "error" in diagnostic.inner_text()
        assert "nothing loaded" in page.inner_text("#load-result")
        _shot(page, "inspector-diagnostics.png", tmp_path)
        page.fill("#load-text", BROKEN.replace("contanes", "contains"))
        page.click("#load-button")
        page.wait_for_selector('#library .scenario-link:text("Broken")', timeout=WAIT_MS)
        assert "loaded: Broken" in page.inner_text("#load-result")
        page.click('#library .scenario-link:text("Weather")')
        page.wait_for_selector('#machine g.node[data-node="s1"]', timeout=WAIT_MS)
        page.click('#library .step-link:text("answer")')
        page.wait_for_selector("#step-source:not([hidden])", timeout=WAIT_MS)
        assert 'last user message contains "Oslo"' in page.inner_text("#step-source")
        _shot(page, "inspector.png", tmp_path)
        # the one console line: the browser's own note of the refused POST's 400 (the diagnostics' answer)
        assert len(errors) == 1 and "status of 400" in errors[0], errors
        assert outside == []
    finally:
        page.close()
        httpx.delete(server.url + "/_mockllm/scenarios")


def test_with_an_admin_token_the_page_asks_for_it_and_sends_it(browser: Any, tmp_path: Path) -> None:
    with mockllm.serve(LIBRARY, admin_token="s3cret") as running:
        page = browser.new_page()
        try:
            page.goto(running.url + "/_mockllm/ui")  # no token: the files load, the views ask for it
            page.wait_for_selector("#token-form:not([hidden])", timeout=WAIT_MS)
            page.fill("#token-input", "s3cret")
            page.click("#token-form button")
            page.wait_for_selector("#library .scenario-link", timeout=WAIT_MS)
            page.goto("about:blank")
            page.goto(running.url + "/_mockllm/ui#token=s3cret")  # or in the fragment (never sent to the server)
            page.wait_for_selector("#library .scenario-link", timeout=WAIT_MS)
            assert "token" not in page.url
        finally:
            page.close()


def test_timing_reply_bodies_from_redis_late_changes_and_operations(
    browser: Any, redis_url: str, tmp_path: Path
) -> None:
    """Against a Redis-backed server on a fake clock: the took column and the detail's timing, a reply
    body kept in Redis, a row on an older page that changes when its client goes away, and a
    non-chat request's row with its operation (and the filter for it)."""
    timeline = Timeline()
    with timed_server(timeline, redis_url) as running:
        url = running.url
        page, errors, outside = _open(browser, url + "/_mockllm/ui")
        try:
            with held_request(url):  # entry 1: a hang, held until the test closes the connection
                page.wait_for_selector('#journal tr[data-id="1"] td.duration.going', timeout=WAIT_MS)
                for i in range(55):  # each 2 s on the fake clock: the held row leaves the newest fifty
                    assert chat(url, f"slow {i}").status_code == 200
                page.wait_for_selector('#journal tr[data-id="56"]', timeout=WAIT_MS)
                expect(page.locator('#journal tr[data-id="1"]')).to_have_count(0, timeout=WAIT_MS)
                page.click("#journal-older")
                page.wait_for_selector('#journal tr[data-id="1"]', timeout=WAIT_MS)
                assert page.inner_text('#journal tr[data-id="1"] td.duration') == "going…"
                timeline.clock.advance(7.5)
            # the client went away: its row, on the older page, changes without a reload
            status = page.locator('#journal tr[data-id="1"] td.status')
            expect(status).to_contain_text("client gone", timeout=WAIT_MS)
            assert page.inner_text('#journal tr[data-id="1"] td.duration') == "117.50 s"  # 55 times 2 s, then 7.5 s
            _shot(page, "inspector-timing.png", tmp_path)
            page.click('#journal tr[data-id="1"]')
            expect(page.locator("#detail .timing")).to_contain_text("the client went away after 117.50 s")
            assert "no reply sent" in page.inner_text("#detail .timing")

            page.click("#journal-newest")
            page.wait_for_selector('#journal tr[data-id="56"]', timeout=WAIT_MS)
            assert page.inner_text('#journal tr[data-id="56"] td.duration') == "2.00 s"
            page.click('#journal tr[data-id="56"]')
            expect(page.locator("#detail .timing")).to_contain_text("first byte after 2.00 s · ended after 2.00 s")
            expect(page.locator("#detail .reply-body")).to_contain_text('"content": "Finally."')  # kept in Redis

            client = openai.OpenAI(base_url=url + "/v1", api_key="test", max_retries=0)
            vectors = client.embeddings.create(model="text-embedding-3-small", input="vectors please")
            assert len(vectors.data[0].embedding) > 0  # (no step names embeddings: the default embedder)
            page.wait_for_selector('#journal tr[data-id="57"]', timeout=WAIT_MS)
            assert page.inner_text('#journal tr[data-id="57"] td.operation') == "embeddings"
            assert page.inner_text('#journal tr[data-id="56"] td.operation') == "chat"
            page.select_option("#filter-operation", "embeddings")
            expect(page.locator("#journal tbody tr")).to_have_count(1, timeout=WAIT_MS)
            page.click('#journal tr[data-id="57"]')
            expect(page.locator("#detail .timing")).to_contain_text("ended after")
            assert errors == [] and outside == []
        finally:
            page.close()


def test_a_realtime_sessions_response_is_a_row_with_its_operation(browser: Any, server: mockllm.MockServer) -> None:
    """A response in an OpenAI Realtime session (the openai SDK's realtime client) is journalled like a
    request: its row names the operation `realtime`, which the filter picks out from the chat rows."""
    server.restore()  # (the test before cleared the scenarios)
    page, errors, outside = _open(browser, server.url + "/_mockllm/ui")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "weather please"}],
            extra_headers={"x-mockllm-conversation": "typed-1"},
        )

        response: Any = None
        headers = {"x-mockllm-conversation": "voice-1"}
        with client.realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            conn.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            text = {"type": "input_text", "text": "weather please"}
            conn.conversation.item.create(item={"type": "message", "role": "user", "content": [text]})
            conn.response.create()
            for event in conn:
                if event.type == "response.done":
                    response = event.response
                    break
        assert response.output[0].content[0].text == "Which city?"
        voice = page.locator("#journal tbody tr", has_text="voice-1")
        expect(voice.locator("td.operation")).to_have_text("realtime", timeout=WAIT_MS)
        expect(voice.locator("td.duration")).not_to_have_text("going…", timeout=WAIT_MS)
        expect(page.locator("#journal tbody tr", has_text="typed-1").locator("td.operation")).to_have_text("chat")
        page.select_option("#filter-operation", "realtime")
        expect(page.locator("#journal tbody tr")).to_have_count(1, timeout=WAIT_MS)
        voice.click()
        expect(page.locator("#detail")).to_contain_text("Weather", timeout=WAIT_MS)
        expect(page.locator("#detail .reply-body")).to_contain_text("Which city?")
        assert errors == [] and outside == []
    finally:
        page.close()
