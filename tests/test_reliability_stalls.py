"""While one heavy request is handled -- a body of many messages, a large library posted to the admin
API -- a health probe is still answered: the parse and the compile run in a worker thread. The
assertions are structural, so a loaded machine does not make them flaky: many probes complete while
the heavy request is in flight, and none of them waits for a large part of it. Absolute figures (the
probe answered within 100 ms) are measured by ``python bench/reliability.py``."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from reliability import library_text, probe_while, serve_process

MESSAGES = 40_000  # a 4 MB body of short messages: parsing it takes about a second on one core
STEPS = 600  # a library of one scenario with 600 steps


def many_messages(url: str, client: httpx.Client) -> httpx.Response:
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": f"message {i}"} for i in range(MESSAGES)]
    body = json.dumps({"model": "m", "messages": messages}).encode()
    return client.post(url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"})


def large_library(url: str, client: httpx.Client) -> httpx.Response:
    return client.post(url + "/_mockllm/scenarios", content=library_text(STEPS))


@pytest.mark.parametrize("heavy", [many_messages, large_library], ids=["large-body", "large-library"])
def test_a_health_probe_is_answered_while_a_heavy_request_is_handled(heavy: Callable[..., httpx.Response]) -> None:
    with serve_process("--no-auth", "--max-body-bytes", str(64 * 1024 * 1024)) as (_, url, _port):
        took, latencies, status = probe_while(url, heavy)
    assert status in (200, 400)  # answered (a long history may be refused by validation: still parsed)
    # the loop was never held for a large part of the heavy request, and kept answering throughout
    assert len(latencies) >= 5, (took, latencies)
    assert max(latencies) < took / 3, (took, sorted(latencies)[-5:])
