"""The scenarios every process sharing one Redis serves: ``lib`` (hash: generation, epoch, base) and
``posts`` (the posted texts in order) say what that is -- the library each process started with (or
none, after ``DELETE /_mockllm/scenarios``) with each post loaded on top. A process loads the library
again when the generation moves (compiling the posts it has not seen, and again those that did not
compile before). A new epoch (a delete or a restore) starts every scenario afresh in every
conversation, as a single server does. A process on which a post does not compile (its scenario base
lacks a file the post imports) serves the library without it and says so in ``unloaded`` (hash:
process -> its reports, as of the generation it loaded last), which every process's admin API shows."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mockllm.errors import StateUnavailable
from mockllm.server.state.posted import Posted, merged
from mockllm.server.state.redis.codec import encode
from mockllm.server.state.redis.scripts import PREFIX, lua

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.engine.engine import Engine

log = logging.getLogger("mockllm.server")

#: a call to Redis through the store: its errors become :class:`StateUnavailable`
Call = Callable[..., Awaitable[Any]]


class SharedLibrary:
    """What this process serves of the shared library: the generation and epoch it loaded, the digest
    prefix of the epoch (``salt``: states saved in another epoch are not this one's), the scenario base
    posts compile against, and the posts compiled so far. ``forget()`` is called when a new epoch
    starts (every conversation's states start afresh)."""

    def __init__(self, engine: Engine, client: Any, call: Call, root: str, forget: Callable[[], None]) -> None:
        self.engine = engine
        self._client = client
        self._call = call
        self._forget = forget
        self._read = client.register_script(lua("read_library"))
        self._change_script = client.register_script(lua("change_library"))
        self._report_script = client.register_script(lua("report_unloaded"))
        self.lock = asyncio.Lock()
        self.generation = 0
        self.epoch = 0
        self.salt = ""
        self._root = root
        self._posts: list[str] = []  # in the order they were posted
        self._compiled: dict[str, CompiledLibrary | None] = {}
        self._unloadable: dict[str, dict[str, Any]] = {}  # post -> why it does not compile here
        self._reported = ""  # the field of ``unloaded`` this process last wrote its reports to ("" none)
        self._report_owed = False  # the last report did not reach Redis: sent again at the next sync
        self._base = "start"  # what the posts go on top of: "start" (the files) or "none" (after a delete)

    async def sync(self, start: CompiledLibrary | None) -> None:
        """Serve what the shared library says, on top of ``start`` (the files this process started with)."""
        async with self.lock:
            keys = [PREFIX + "lib", PREFIX + "posts"]
            await self._load(await self._call(self._read, keys=keys), start)

    async def change(self, start: CompiledLibrary | None, change: str, post: str = "") -> None:
        """``change`` ("post" with the posted JSON, "clear" or "restore") the shared library and serve it."""
        async with self.lock:
            keys = [PREFIX + "lib", PREFIX + "posts", PREFIX + "version", PREFIX + "unloaded"]
            await self._load(await self._call(self._change_script, keys=keys, args=[change, post]), start)

    async def post(self, start: CompiledLibrary | None, posted: Posted, compiled: CompiledLibrary) -> None:
        post = posted.to_json()
        self._compiled[post] = compiled  # compiled once, here
        await self.change(start, "post", post)

    async def _load(self, shared: list[Any], start: CompiledLibrary | None) -> None:
        """Serve the library ``shared`` (read_library.lua's answer) describes, unless already serving it."""
        generation, epoch, base, posts = int(shared[0]), int(shared[1]), shared[2], list(shared[3])
        if generation == self.generation:
            if self._report_owed:
                await self._report(generation)
            return
        compiled: dict[str, CompiledLibrary | None] = {}
        # after a delete or a restore, every post is compiled afresh, as on a server that saw the change
        kept = self._compiled if epoch == self.epoch else {}
        for post in posts:
            if post not in compiled:  # one that did not compile here may now: its files may have come
                known = kept.get(post)
                compiled[post] = known if known is not None else await self._compile(post)
        self._posts, self._compiled, self._base = posts, compiled, base
        self._unloadable = {p: why for p, why in self._unloadable.items() if p in compiled and compiled[p] is None}
        if epoch != self.epoch:  # every scenario starts afresh in every conversation
            self.engine.load(None)
            self._forget()
        self.engine.load(self.assembled(start))
        self.generation, self.epoch = generation, epoch
        self.salt = f"{epoch}/" if epoch else ""
        await self._report(generation)

    def unloaded_here(self) -> list[dict[str, Any]]:
        """The posts this process serves the library without, each as :meth:`not_loaded` lists it."""
        server = f"{socket.gethostname()} pid {os.getpid()}"
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, post in enumerate(self._posts, 1):
            why = self._unloadable.get(post)
            if why is not None and post not in seen:  # a text posted twice is reported once
                seen.add(post)
                message = (
                    f"server {server} (scenario base {why['scenario_base']}) cannot load posted text {number} "
                    f"of {len(self._posts)} ({why['file']}): it serves the library without it"
                )
                out.append({"server": server, "pid": os.getpid(), "post": number, "message": message, **why})
        return out

    async def _report(self, generation: int) -> None:
        """Write this process's reports (or their absence, when it wrote some before) for ``generation``."""
        found = self.unloaded_here()
        self._report_owed = False
        if not found and not self._reported:
            return
        field = self.engine.id_seed  # this process's own, random: never another's, even one with its host and pid
        value = encode(found) if found else ""
        keys = [PREFIX + "lib", PREFIX + "unloaded"]
        try:
            written = int(await self._call(self._report_script, keys=keys, args=[generation, field, value]))
        except StateUnavailable:  # the library is loaded all the same; the report goes at the next sync
            self._report_owed = True
            return
        if written:
            self._reported = field if found else ""

    async def withdraw(self) -> None:
        """This process stops: it no longer serves without the posts it could not load."""
        if self._reported:
            try:
                await self._call(self._client.hdel, PREFIX + "unloaded", self._reported)
            except StateUnavailable:
                pass

    async def not_loaded(self) -> list[dict[str, Any]]:
        raw = await self._call(self._client.hvals, PREFIX + "unloaded")
        found = [report for value in raw for report in json.loads(value)]
        return sorted(found, key=lambda r: (r["post"], r["server"]))

    def assembled(self, start: CompiledLibrary | None) -> CompiledLibrary | None:
        """The library the server started with (none after a delete), the posts loaded on top in order."""
        library = start if self._base == "start" else None
        for post in self._posts:  # a text posted again goes on top again
            found = self._compiled[post]
            if found is not None:
                library = merged(library, found)
        return library

    async def _compile(self, post: str) -> CompiledLibrary | None:
        """A post another process made, compiled here (None, the errors logged and kept for
        :meth:`unloaded_here`, when it does not compile against this process's scenario base)."""
        posted = Posted.from_json(post)
        compiled, diagnostics, sources = await asyncio.to_thread(posted.compile, self._root)
        errors = [d for d in diagnostics if d.is_error]
        if errors or compiled is None:
            from mockllm.dsl.diagnostics import render, to_json

            text, root = render(errors, sources), os.path.realpath(self._root)
            log.error(
                "mockllm: scenarios another server posted do not compile here (scenario base %s); "
                "this server serves the library without them:\n%s",
                root,
                text,
            )
            where = {"file": posted.path or posted.file, "base": posted.base, "scenario_base": root}
            self._unloadable[post] = {**where, "errors": [to_json(d) for d in errors], "text": text}
            return None
        self._unloadable.pop(post, None)
        return compiled
