"""Sockets under a small descriptor limit (`ulimit -n`, 256 on macOS by default): connections the
client closed are closed at once on every server, the server recovers once descriptors free up, and
a pytest run of many tests that each build an SDK client passes. The long form (1,000 tests under
``ulimit -n 256``) is ``python bench/reliability.py``."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from reliability import (
    open_descriptors,
    run_many_tests,
    serve_process,
    servers,
    short_connection,
    stop,
    wait_until,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="descriptor limits are POSIX (resource.setrlimit)")


@pytest.mark.parametrize("server", servers())
def test_320_short_connections_under_ulimit_256_all_succeed(server: str) -> None:
    with serve_process("--server", server, fd_limit=256) as (proc, _, port):
        statuses = [short_connection(port) for _ in range(320)]
        assert [s[:12] for s in statuses] == [b"HTTP/1.1 200"] * 320
        # every client closed its connection: the server holds none of them (no CLOSE_WAIT pile-up)
        if open_descriptors(proc.pid) is not None:
            assert wait_until(lambda: (open_descriptors(proc.pid) or 0) < 40, 3.0), open_descriptors(proc.pid)
        code, err = stop(proc)
    assert code == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("server", servers())
def test_the_server_recovers_once_descriptors_free_up(server: str) -> None:
    with serve_process("--server", server, fd_limit=64) as (proc, _, port):
        held = []
        for _ in range(120):  # more than the server can hold: the kernel queues the rest
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            held.append(sock)
        for sock in held:
            sock.close()
        # once the clients are gone the server answers again, within its accept retry (about 1 s)
        answered: list[bytes] = []

        def healthy() -> bool:
            try:
                answered.append(short_connection(port, timeout=1.0))
            except OSError:
                return False
            return answered[-1].startswith(b"HTTP/1.1 200")

        assert wait_until(healthy, 15.0, interval=0.2), answered[-3:]
        assert all(short_connection(port).startswith(b"HTTP/1.1 200") for _ in range(50))
        code, err = stop(proc)
    assert code == 0, err
    assert "Traceback" not in err


def test_a_pytest_run_under_a_small_descriptor_limit_passes(tmp_path: Path) -> None:
    """150 tests under ``ulimit -n 64`` (the same pressure as 1,000 under 256, which bench/ runs)."""
    result = run_many_tests(tmp_path, 150, fd_limit=64)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "150 passed" in result.stdout
