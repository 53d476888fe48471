"""Helpers of the reliability tests (tests/test_reliability_*.py) and their long form in bench/:
a `mockllm serve` subprocess under a descriptor limit, raw short connections, the server's open
descriptors. Imported as ``from reliability import …`` (tests/conftest.py puts tests/ on the path)."""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

LISTENING = re.compile(r"^mockllm listening on (http://127\.0\.0\.1:(\d+))$")


def limit_descriptors(limit: int) -> None:
    """Run in the child before exec: at most ``limit`` open descriptors (``ulimit -n``)."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


@contextmanager
def serve_process(
    *args: str, fd_limit: int | None = None, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str, int]]:
    """`mockllm serve --port 0 ARGS` (under ``ulimit -n fd_limit``), yields (process, URL, port) once
    it listens; stops it with SIGTERM afterwards (killed if it does not exit in 10 s)."""
    environment = {k: v for k, v in os.environ.items() if k != "MOCKLLM_SCENARIOS"}
    environment.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockllm", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        preexec_fn=(lambda: limit_descriptors(fd_limit)) if fd_limit is not None else None,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().rstrip("\n")
        found = LISTENING.match(first)
        if not found:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"the server did not start: {first!r}\n{err}")
        yield proc, found.group(1), int(found.group(2))
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        for stream in (proc.stdout, proc.stderr):  # the pipes too, or each leaks a ResourceWarning
            if stream is not None:
                stream.close()


def stop(proc: subprocess.Popen[str], timeout: float = 15.0) -> tuple[int, str]:
    """SIGTERM ``proc``; (exit code, everything it wrote on stderr)."""
    proc.terminate()
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


HEALTH_REQUEST = b"GET /_mockllm/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def short_connection(port: int, request: bytes = HEALTH_REQUEST, timeout: float = 5.0) -> bytes:
    """One keep-alive request on a fresh connection, read to the end of its body, then closed by the
    client (what a test that builds an SDK client, calls once and drops it does). Returns the
    status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        want = int(length.group(1)) if length else 0
        while len(body) < want:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return head.split(b"\r\n", 1)[0]


def open_descriptors(pid: int) -> int | None:
    """How many descriptors process ``pid`` holds (None where /proc is not there)."""
    path = Path(f"/proc/{pid}/fd")
    try:
        return len(os.listdir(path))
    except OSError:
        return None


def wait_until(condition: object, timeout: float, interval: float = 0.05) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds pass; its last value."""
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


def servers() -> Sequence[str]:
    """The servers `mockllm serve` can run here: hypercorn, and uvicorn and granian when their extras
    (`fast`, `granian`) are in."""
    from mockllm.server.hosts.table import HOSTS

    return tuple(name for name, host in HOSTS.items() if host.missing() is None)


MANY_TESTS = """
import openai
import pytest


@pytest.mark.parametrize("i", range({count}))
def test_one(mockllm, i):
    # a new SDK client per test, never closed: what many test suites do
    client = openai.OpenAI(base_url=mockllm.url + "/v1", api_key="sk-test", max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o", messages=[{{"role": "user", "content": f"hi {{i}}"}}])
    assert reply.choices[0].message.content == f"hi {{i}}"
"""


def run_many_tests(directory: Path, count: int, fd_limit: int) -> subprocess.CompletedProcess[str]:
    """A pytest run of ``count`` tests that each build an openai client against the ``mockllm``
    fixture, under ``ulimit -n fd_limit``, in ``directory``."""
    (directory / "test_many.py").write_text(MANY_TESTS.format(count=count))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MOCKLLM_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "test_many.py"],
        cwd=directory,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        preexec_fn=lambda: limit_descriptors(fd_limit),
    )


def library_text(steps: int) -> bytes:
    """One scenario of ``steps`` steps, each with a condition and a reply."""
    step = '    step s{i}:\n        when:\n            last user message contains "w{i}"\n'
    step += '        reply:\n            text "r{i}"\n'
    return ('scenario "big":\n    order any\n' + "".join(step.format(i=i) for i in range(steps))).encode()


def probe_while(url: str, heavy: Callable[[str, httpx.Client], httpx.Response]) -> tuple[float, list[float], int]:
    """Send ``heavy`` on one connection and a health probe every 5 ms on another until it is answered:
    (how long the heavy request took, each probe's latency, the heavy request's status)."""
    done = threading.Event()
    result: dict[str, float | int] = {}

    def run() -> None:
        with httpx.Client(timeout=300) as client:
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
