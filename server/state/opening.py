"""The state store ``--state URL`` names, opened: in this process's memory, or in Redis (imported only
then: the ``redis`` extra is optional)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockllm.server.state.poll_window import DEFAULT_POLL_S
from mockllm.server.state.store import StateStore

if TYPE_CHECKING:
    from mockllm.runtime.engine.engine import Engine


def open_store(engine: Engine, url: str | None, root: str = ".", poll: float = DEFAULT_POLL_S) -> StateStore:
    """The store ``--state URL`` names: None for memory, ``redis://HOST:PORT/DB`` for Redis, which
    compiles scenarios other processes post against ``root``, the scenario base, and polls for its
    answers for ``poll`` seconds at most (server/state/poll_window.py). Raises
    :class:`~mockllm.errors.UsageError` for a URL it cannot use (another scheme, the extra missing)."""
    if not url:
        return StateStore(engine)
    from mockllm.server.state.redis.store import RedisStore

    return RedisStore(
        engine,
        url,
        root=root,
        idle_seconds=engine.idle_seconds,
        journal_limit=engine.journal_limit,
        entry_body_bytes=engine.journal_entry_body_bytes,
        reply_bytes=engine.journal_total_bytes,
        cache_size=engine.max_conversations,
        poll=poll,
    )
