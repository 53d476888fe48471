"""Where conversation state and the journal are kept: the state-store interface the server talks to.

The engine (runtime/engine) decides every turn as a function of a conversation's machine states;
a store keeps those states, the stored responses (``previous_response_id``, Anthropic threads),
the steps used and the journal. :class:`StateStore` is the embedded default: the engine's own
tables, in this process's memory, called directly (the hot path does not even await it). A shared
store (``--state redis://…``, server/state/redis/) keeps them in Redis so several processes serve
one library as if they were one server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mockllm.server.state.posted import Posted, merged

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.engine.engine import Engine
    from mockllm.runtime.engine.journal import Delivery
    from mockllm.runtime.engine.outcome import Outcome
    from mockllm.runtime.request import ChatRequest


class StateStore:
    """Conversation state and the journal in this process's memory (the engine's own tables)."""

    shared = False  # a shared store's handle() must be awaited; this one's engine is called directly

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.start = engine.library  # what the server started with: restore_library() goes back to it

    @property
    def description(self) -> str:
        return "in memory"

    async def handle(self, chat: ChatRequest, meanwhile: Callable[[Outcome], object] | None = None) -> Outcome:
        """The outcome of ``chat``. A shared store calls ``meanwhile`` with the outcome it decided while
        it waits for that decision to be committed (the server renders the reply then); the outcome it
        returns may differ (another process moved the conversation on: decided again)."""
        return self.engine.handle(chat)

    def settle(self, entry_id: int, delivery: Delivery) -> None:
        """Record how a journalled request was answered, once (see :meth:`Engine.settle`)."""
        self.engine.settle(entry_id, delivery)

    async def reject(
        self, provider: str, endpoint: str, status: int, message: str, chat: ChatRequest | None = None
    ) -> None:
        """Journal a request refused before matching (see :meth:`Engine.reject`)."""
        self.engine.reject(provider, endpoint, status, message, chat)

    async def reset(self, conversation: str | None = None) -> None:
        self.engine.reset(conversation)

    # ---- the library, as the admin API changes it ------------------------------------------------------

    async def sync_library(self) -> None:
        """Serve the library every process sharing this state serves (in memory: this one's)."""

    async def post_library(self, posted: Posted, compiled: CompiledLibrary) -> None:
        """Load ``compiled`` (``posted``, compiled) on top of the library: ``POST /_mockllm/scenarios``."""
        self.engine.load(merged(self.engine.library, compiled))

    async def clear_library(self) -> None:
        """No scenarios: the echo responder answers (``DELETE /_mockllm/scenarios``)."""
        self.engine.load(None)

    async def restore_library(self) -> None:
        """Back to the library the server started with."""
        self.engine.load(self.start)

    async def reload_library(self, library: CompiledLibrary) -> None:
        """The files the server started with, edited (``--watch``): in memory, they replace the library."""
        self.start = library
        self.engine.load(library)

    def unloaded_here(self) -> list[dict[str, Any]]:
        """The posts this process serves the library without (see :meth:`not_loaded`)."""
        return []

    async def not_loaded(self) -> list[dict[str, Any]]:
        """Per process sharing this state, the posts it cannot load (its scenario base lacks what they
        import), as it last found: in memory, none (a post that does not compile is refused)."""
        return []

    async def journal_page(self, limit: int, after: int) -> tuple[list[dict[str, Any]], int | None]:
        return self.engine.journal_page(limit, after)

    async def journal_newest(self, limit: int, before: int | None) -> list[dict[str, Any]]:
        """Up to ``limit`` entries with ids below ``before`` (None: the newest), newest first."""
        return self.engine.journal_newest(limit, before)

    async def journal_find(self, ids: list[int]) -> list[dict[str, Any]]:
        """The kept entries with these ids, in the order asked (the inspector's rows on show)."""
        return self.engine.journal_find(ids)

    async def journal_kept(self, ids: list[int]) -> list[int]:
        """Those of ``ids`` whose entries are still kept."""
        return self.engine.journal_kept(ids)

    async def journal_newest_id(self) -> int:
        """The newest journal entry's id (0: none)."""
        return self.engine.journal_newest_id()

    async def conversations(self) -> list[dict[str, Any]]:
        return self.engine.conversations()

    async def verify(self) -> dict[str, Any]:
        return self.engine.verify()

    async def verdict(self) -> dict[str, Any]:
        """What ``GET /_mockllm/verify`` answers (and ``MockServer.verify``, in the same process):
        :meth:`verify`, with the posts a process serves without, which make it not ok."""
        return _verdict(await self.verify(), await self.not_loaded())

    def verdict_here(self) -> dict[str, Any]:
        """:meth:`verdict` of the engine's own tables, read on the calling thread as
        ``MockServer.restore`` resets them (the pytest fixture asks after every test: no hop to the
        server's loop). Only for the store in memory: a shared store's state is elsewhere."""
        return _verdict(self.engine.verify(), [])

    async def close(self) -> None:
        """Release connections (nothing to release in memory)."""


def _verdict(report: dict[str, Any], not_loaded: list[dict[str, Any]]) -> dict[str, Any]:
    # a server serving without a post: its requests go astray, so the verdict is not ok
    return {**report, "ok": report["ok"] and not not_loaded, "not_loaded": not_loaded}
