"""Clients that go away: a reset in the middle of a stream is journalled as the client gone (every
one of them), and a request whose client hung up before sending its whole body is not processed
(not matched, not journalled, no step used), on every server."""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability import open_descriptors, serve_process, servers, wait_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SO_LINGER resets are POSIX")

SCRIPT = """
scenario "s":
    step a:
        always
        reply:
            text "a b c d e f g h i j"
            stream by word, 50ms apart
"""
# For the resets: a client resets after the first chunk, and on a loaded machine its thread may wait
# half a second or more for the CPU before it gets to; a stream 50 ms apart would be over by then
# (answered whole, rightly not "client gone"). Seconds apart, every reset lands mid-stream; an
# answer whose client reset ends at once, so the test takes no longer.
SLOW_SCRIPT = SCRIPT.replace("50ms apart", "1s apart")
BODY = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}).encode()


def head(length: int, path: str = "/v1/chat/completions") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def reset_after_first_chunk(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head(len(BODY)) + BODY)
        data = b""
        while b"data:" not in data:
            data += sock.recv(65536)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST


@pytest.mark.parametrize("server", servers())
def test_every_reset_mid_stream_is_journalled_as_client_gone(tmp_path: Path, server: str) -> None:
    script = tmp_path / "s.mockllm"
    script.write_text(SLOW_SCRIPT)
    with serve_process(str(script), "--server", server) as (proc, url, port):
        httpx.get(url + "/_mockllm/health", timeout=60)
        before = open_descriptors(proc.pid)
        threads = [threading.Thread(target=reset_after_first_chunk, args=(port,)) for _ in range(100)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)

        def journal() -> list[dict[str, object]]:
            entries: list[dict[str, object]] = httpx.get(url + "/_mockllm/requests", timeout=60).json()
            return entries

        assert wait_until(lambda: sum(1 for e in journal() if e.get("client_gone")) == 100, 10.0)
        entries = journal()
        if before is not None:  # the storm leaves no descriptor behind
            assert wait_until(lambda: (open_descriptors(proc.pid) or 0) <= before + 1, 5.0), (
                before,
                open_descriptors(proc.pid),
            )
    assert len(entries) == 100
    assert all(e["client_gone"] and "client went away after" in str(e["note"]) for e in entries), entries[:3]


@pytest.mark.parametrize("server", servers())
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/_mockllm/scenarios"])
def test_a_request_whose_client_hung_up_mid_body_is_not_processed(tmp_path: Path, server: str, path: str) -> None:
    script = tmp_path / "s.mockllm"
    script.write_text(SCRIPT.replace("        always\n", ""))  # a step used once
    sent = BODY if path.startswith("/v1") else b'scenario "new":\n    step b:\n        reply:\n            text "x"\n'
    with serve_process(str(script), "--server", server) as (proc, url, port):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(head(len(sent) + 100, path) + sent)  # a complete JSON text, but 100 bytes short
            time.sleep(0.2)
        time.sleep(0.5)
        journal = httpx.get(url + "/_mockllm/requests").json()
        names = [s["name"] for s in httpx.get(url + "/_mockllm/scenarios").json()]
        # the step was not used up: a whole request still matches it
        whole = httpx.post(url + "/v1/chat/completions", content=BODY, headers={"authorization": "Bearer k"})
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert journal == []
    assert names == ["s"]
    assert whole.status_code == 200
    assert "Traceback" not in err


def test_an_abandoned_upload_gets_408_and_its_connection_is_closed(serve: Any) -> None:
    with serve(SCRIPT, body_timeout_s=0.5) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(head(len(BODY) + 100) + BODY)  # 100 bytes short, and nothing more comes
            started = time.monotonic()
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:  # the server closed the connection
                    break
                data += chunk
            took = time.monotonic() - started
        journal = server.engine.journal()
    assert data.startswith(b"HTTP/1.1 408"), data[:200]
    assert b"did not arrive within 0.5s" in data
    assert took < 5.0
    assert journal == []
