"""While one heavy request is handled -- a body of many messages, a large library posted to the admin
API -- a health probe is still answered: the parse and the compile run in a worker thread. The
assertions are structural, so a loaded machine does not make them flaky: many probes complete while
the heavy request is in flight, and none of them waits for a large part of it. Absolute figures (the
probe answered within 100 ms) are measured by ``python bench/reliability.py``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from reliability import serve_process

MESSAGES = 40_000  # a 4 MB body of short messages: parsing it takes about a second on one core
STEPS = 600  # a library of one scenario with 600 steps


def many_messages(url: str, client: httpx.Client) -> httpx.Response:
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": f"message {i}"} for i in range(MESSAGES)]
    body = json.dumps({"model": "m", "messages": messages}).encode()
    return client.post(url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"})


def large_library(url: str, client: httpx.Client) -> httpx.Response:
    step = '    step s{i}:\n        when:\n            last user message contains "w{i}"\n'
    step += '        reply:\n            text "r{i}"\n'
    steps = "".join(step.format(i=i) for i in range(STEPS))
    return client.post(url + "/_mockllm/scenarios", content=('scenario "big":\n    order any\n' + steps).encode())


def probe_while(url: str, heavy: Callable[[str, httpx.Client], httpx.Response]) -> tuple[float, list[float], int]:
    """(how long the heavy request took, each probe's latency while it was in flight, its status)."""
    done = threading.Event()
    result: dict[str, float | int] = {}

    def run() -> None:
        with httpx.Client(timeout=120) as client:
            started = time.monotonic()
            result["status"] = heavy(url, client).status_code
            result["took"] = time.monotonic() - started
        done.set()

    latencies: list[float] = []
    with httpx.Client(timeout=60) as probe:
        probe.get(url + "/_mockllm/health")
        thread = threading.Thread(target=run)
        thread.start()
        while not done.wait(0.005):
            started = time.monotonic()
            assert probe.get(url + "/_mockllm/health").status_code == 200
            latencies.append(time.monotonic() - started)
        thread.join()
    return float(result["took"]), latencies, int(result["status"])


@pytest.mark.parametrize("heavy", [many_messages, large_library], ids=["large-body", "large-library"])
def test_a_health_probe_is_answered_while_a_heavy_request_is_handled(heavy: Callable[..., httpx.Response]) -> None:
    with serve_process("--no-auth", "--max-body-bytes", str(64 * 1024 * 1024)) as (_, url, _port):
        took, latencies, status = probe_while(url, heavy)
    assert status in (200, 400)  # answered (a long history may be refused by validation: still parsed)
    # the loop was never held for a large part of the heavy request, and kept answering throughout
    assert len(latencies) >= 5, (took, latencies)
    assert max(latencies) < took / 3, (took, sorted(latencies)[-5:])
