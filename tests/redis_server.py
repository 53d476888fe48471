"""A real Redis server for the shared-state tests: Debian's ``redis-server`` on a free loopback port,
no persistence, its files in a temporary directory. Missing, it fails the test with how to install
it (``.ci/run`` installs it): the shared-state tests never skip."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

MISSING = (
    "redis-server is not installed: the shared-state tests need a real Redis "
    "(Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis; .ci/run installs it)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RedisServer:
    """``redis-server`` on 127.0.0.1:``port``; :meth:`stop` and :meth:`start` again keep the port."""

    def __init__(self, directory: Path) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            pytest.fail(MISSING, pytrace=False)
        self.executable = executable
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        command = [self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self.directory), "--loglevel", "warning"]
        self._proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        try:
            for _ in range(200):
                if self._proc.poll() is not None:
                    err = self._proc.stderr.read().decode() if self._proc.stderr else ""
                    pytest.fail(f"redis-server did not start on port {self.port}: {err}", pytrace=False)
                try:
                    client.ping()
                    return self
                except redis.exceptions.ConnectionError:
                    time.sleep(0.05)
        finally:
            client.close()
        pytest.fail(f"redis-server did not answer on port {self.port} within 10 s", pytrace=False)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.terminate()
            proc.wait(10)
            if proc.stderr is not None:
                proc.stderr.close()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True)

    def flush(self) -> None:
        client = self.client()
        try:
            client.flushdb()
        finally:
            client.close()
