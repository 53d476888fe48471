"""A real Redis server on a free loopback port (Debian's ``redis-server``, no persistence, its files in
a given directory), for measuring and testing ``mockllm serve --state redis://…``::

    with redis_server() as url:
        subprocess.Popen([sys.executable, "-m", "mockllm", "serve", "--port", "0", "--state", url, …])

The tests use it through tests/redis_server.py, where a missing ``redis-server`` fails the test."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

MISSING = (
    "redis-server is not installed: the shared-state tests need a real Redis "
    "(Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis; .ci/run installs it)"
)


class RedisMissing(RuntimeError):
    """No Redis could be started (the message says why and how to install it)."""


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
            raise RedisMissing(MISSING)
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
                    raise RedisMissing(f"redis-server did not start on port {self.port}: {err}")
                try:
                    client.ping()
                    return self
                except redis.exceptions.ConnectionError:
                    time.sleep(0.05)
        finally:
            client.close()
        raise RedisMissing(f"redis-server did not answer on port {self.port} within 10 s")

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


@contextmanager
def redis_server() -> Iterator[str]:
    """A fresh Redis for the duration of the block: its URL, ``redis://127.0.0.1:PORT/0``."""
    with tempfile.TemporaryDirectory(prefix="mockllm-redis-") as directory:
        server = RedisServer(Path(directory)).start()
        try:
            yield server.url
        finally:
            server.stop()
