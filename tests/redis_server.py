"""The shared-state tests' real Redis (bench/redis_state.py): a missing or failing ``redis-server``
fails the test with what to install (``.ci/run`` installs it); these tests never skip."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parent.parent / "bench"))  # after tests/: bench has a reliability.py too

from redis_state import RedisMissing
from redis_state import RedisServer as _RedisServer


class RedisServer(_RedisServer):
    def __init__(self, directory: Path) -> None:
        try:
            super().__init__(directory)
        except RedisMissing as exc:
            pytest.fail(str(exc), pytrace=False)

    def start(self) -> RedisServer:
        try:
            super().start()
        except RedisMissing as exc:
            pytest.fail(str(exc), pytrace=False)
        return self


__all__ = ["RedisServer"]
