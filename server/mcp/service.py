"""One MCP message answered, whatever the transport: sessions, the handshake, what is answered from
the declaration alone (the tool, resource and prompt listings, resource reads, prompts filled in),
and tool calls decided by the engine through the state store (so they are journalled, verified and
shown by the admin views like model requests)."""

from __future__ import annotations

import importlib.metadata
import itertools
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mockllm.dsl.tree.nodes import McpServer
from mockllm.runtime.engine.journal import Delivery
from mockllm.runtime.mcp import catalog
from mockllm.runtime.mcp import protocol as p
from mockllm.runtime.values import fast_frozen

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.state.store import StateStore

MAX_SESSIONS = 10_000


def software_version() -> str:
    """mockllm's version, for ``serverInfo``."""
    try:
        return importlib.metadata.version("mockllm")
    except importlib.metadata.PackageNotFoundError:
        return ""


@attrs.define
class Session:
    """One client's session: its id (``Mcp-Session-Id``), the negotiated version, and the key of the
    conversation its calls belong to when the client names none."""

    id: str
    version: str = p.LATEST_VERSION
    initialized: bool = False
    closed: bool = False


class Sessions:
    """The live sessions, at most ``limit`` (the oldest is forgotten first)."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self._table: OrderedDict[str, Session] = OrderedDict()
        self._limit = limit
        self._count = itertools.count(1)

    def open(self) -> Session:
        session = Session(f"{next(self._count):04x}{secrets.token_hex(14)}")
        self._table[session.id] = session
        while len(self._table) > self._limit:
            self._table.popitem(last=False)[1].closed = True
        return session

    def get(self, session_id: str) -> Session | None:
        return self._table.get(session_id)

    def close(self, session_id: str) -> bool:
        session = self._table.pop(session_id, None)
        if session is None:
            return False
        session.closed = True
        return True


@fast_frozen
class Handled:
    """The answer to one message: a JSON-RPC message to send now (``message``), or a tool call's
    :class:`~mockllm.runtime.mcp.protocol.Answer` with its journal entry (settle it once sent), or
    nothing (a notification or a client's response)."""

    message: dict[str, Any] | None = None
    call: p.Answer | None = None
    entry_id: int = 0


NOTHING = Handled()

#: the methods answered from the ``mcp server`` block alone (no step), by name
_DECLARED: dict[str, Callable[[McpServer, p.Message], dict[str, Any]]] = {
    "tools/list": lambda server, msg: p.rpc_result(msg.id, p.tools_list(server)),
    "resources/list": lambda server, msg: p.rpc_result(msg.id, catalog.resources_list(server)),
    "resources/read": lambda server, msg: catalog.resources_read(server, msg.id, msg.params),
    "resources/templates/list": lambda server, msg: p.rpc_result(msg.id, {"resourceTemplates": []}),
    "prompts/list": lambda server, msg: p.rpc_result(msg.id, catalog.prompts_list(server)),
    "prompts/get": lambda server, msg: catalog.prompts_get(server, msg.id, msg.params),
}


def _declares(server: McpServer, method: str) -> bool:
    """Whether ``server`` serves ``method``: resources and prompts only where the block declares some
    (as ``initialize`` advertises them), else "method not found"."""
    if method.startswith("resources/"):
        return bool(server.resources)
    if method.startswith("prompts/"):
        return bool(server.prompts)
    return True


class McpService:
    def __init__(self, engine: Engine, store: StateStore, software: str = "") -> None:
        self.engine = engine
        self.store = store
        self.software = software
        self.sessions = Sessions()
        self._library: CompiledLibrary | None = None
        self._servers: dict[str, McpServer] = {}

    def server(self, name: str) -> McpServer | None:
        library = self.engine.library
        if library is not self._library:  # loaded anew (the admin API): its servers by name
            self._library = library
            self._servers = {s.name: s for s in library.mcp_servers} if library is not None else {}
        return self._servers.get(name)

    def server_names(self) -> list[str]:
        library = self.engine.library
        return [s.name for s in library.mcp_servers] if library is not None else []

    async def handle(
        self, server: McpServer, msg: p.Message, session: Session, headers: Mapping[str, str] | None = None
    ) -> Handled:
        """Answer ``msg`` in ``session`` (``headers``: the HTTP request's, lower-cased, for the
        conversation header; none on stdio)."""
        if msg.kind != "request":
            if msg.method == "notifications/initialized":
                session.initialized = True
            return NOTHING
        method = msg.method
        if method == "initialize":
            session.version = p.negotiate(msg.params)
            session.initialized = True
            return Handled(p.rpc_result(msg.id, p.initialize_result(server, session.version, self.software)))
        if method == "ping":
            return Handled(p.rpc_result(msg.id, {}))
        if method == "tools/call":
            if not session.initialized:
                return Handled(p.rpc_error(msg.id, p.INVALID_REQUEST, "Invalid request: initialize the session first"))
            return await self._call(server, msg, session, headers)
        answer = _DECLARED.get(method)
        if answer is not None and _declares(server, method):
            if not session.initialized:
                return Handled(p.rpc_error(msg.id, p.INVALID_REQUEST, "Invalid request: initialize the session first"))
            return Handled(answer(server, msg))
        return Handled(p.rpc_error(msg.id, p.METHOD_NOT_FOUND, "Method not found", method))

    async def _call(
        self, server: McpServer, msg: p.Message, session: Session, headers: Mapping[str, str] | None
    ) -> Handled:
        call = p.prepare_call(server, msg, f"mcp-{session.id}", headers)
        if call.immediate is not None or call.chat is None or call.tool is None:
            if call.rejected is not None:  # journalled, so `verify` shows a call the script never expected
                await self.store.reject("mcp", f"/mcp/{server.name}", 200, call.rejected, call.chat)
            if call.rpc_error:
                return Handled(call.immediate)
            return Handled(p.rpc_result(msg.id, call.immediate))
        store = self.store  # in memory, the engine is called directly (as for chat requests)
        outcome = await store.handle(call.chat) if store.shared else self.engine.handle(call.chat)
        answer = p.answer(msg.id, outcome.plan, call.tool, call.chat.arguments)
        return Handled(None, answer, outcome.entry_id)

    def settle(self, entry_id: int, status: int, *, client_gone: bool = False, note: str | None = None) -> None:
        if entry_id:
            plain = status == 200 and not client_gone and note is None  # (most calls: one shared delivery)
            self.store.settle(entry_id, _DELIVERED if plain else Delivery(status, client_gone, note))


_DELIVERED = Delivery(200)
