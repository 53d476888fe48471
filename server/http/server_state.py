"""What every request handler shares (:class:`ServerState`): the engine, the options, the store, the
adapters, the graceful stop, ids. A subsystem's routes (``SUBSYSTEM_ROUTES`` in app.py) are made from
it; it imports nothing of the app, so a subsystem's module may import it without a cycle."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mockllm.runtime.providers.base import Adapter, RenderContext
from mockllm.runtime.request import Provider
from mockllm.server.http.body_deadline import BodyDeadline
from mockllm.server.http.routes import adapter_for
from mockllm.server.metrics.metrics import Metrics
from mockllm.server.options import ServerOptions
from mockllm.server.passthrough import passthrough_for
from mockllm.server.shutdown import Shutdown
from mockllm.server.state.store import StateStore

if TYPE_CHECKING:
    from mockllm.runtime.engine.engine import Engine

_GLOB_CHARS = frozenset("*?[")
_random = random.Random()  # ids need to be unique, not secret: no system call per id (seeded from urandom)


def _hex(digits: int) -> str:
    """``digits`` (even) random hex digits. (Through bytes: twice as fast as formatting the number.)"""
    return _random.getrandbits(4 * digits).to_bytes(digits // 2, "big").hex()


class ServerState:
    """What every request handler shares: the engine, the options, the models seen so far."""

    def __init__(
        self,
        engine: Engine,
        options: ServerOptions,
        adapters: Mapping[Provider, Adapter] | None,
        store: StateStore | None = None,
    ) -> None:
        self.engine = engine
        self.store = store or StateStore(engine)  # where conversation state and the journal are kept
        self.options = options
        self._adapters = dict(adapters or {})
        self._requested: dict[str, None] = {}
        self._ids = itertools.count(1)
        self.shutdown = Shutdown(options.sleep)
        self.body_deadline = BodyDeadline(options.body_timeout_s)
        self.passthrough = passthrough_for(options.passthrough)
        self.metrics = Metrics()  # GET /_mockllm/metrics (server/metrics/)

    @property
    def closing(self) -> asyncio.Event:
        """Set when the server is stopping: hangs end at once, streams get the grace period."""
        return self.shutdown.stopping

    def adapter(self, provider: Provider) -> Adapter:
        return self._adapters.get(provider) or adapter_for(provider)

    def context(self, response_id: str | None = None) -> RenderContext:
        rid = response_id or f"{next(self._ids):06x}{_hex(44)}"
        return RenderContext(response_id=rid, created=int(self.options.clock.now()), request_id="req_" + _hex(32))

    def note_model(self, model: str) -> None:
        if model and len(self._requested) < 10_000:
            self._requested[model] = None

    def model_ids(self) -> list[str]:
        """Every plain model name in the library's `model is` / `model glob` conditions, then every
        model requested so far."""
        out: dict[str, None] = {}
        library = self.engine.library
        if library is not None:
            for machine in library.machines:
                for step in machine.steps:
                    for cond in step.conditions:
                        value = cond.predicate.value
                        if (
                            cond.subject.kind == "model"
                            and cond.predicate.op in ("is", "glob")
                            and isinstance(value, str)
                            and value
                            and not _GLOB_CHARS.intersection(value)
                        ):
                            out[value] = None
        out.update(self._requested)
        return list(out)


def server_state(app: Any) -> ServerState:
    state = app.state.mockllm
    assert isinstance(state, ServerState)
    return state
