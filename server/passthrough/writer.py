"""``--record-missing DIR``: each passed-through exchange written into DIR as it ends.

The exchange is read as ``mockllm record`` reads it (:mod:`mockllm.runtime.recording`), grouped into its
conversation with the others of this run, and its step added to the conversation's file
(:func:`~mockllm.runtime.recording.append.appended`): the file is read, grown and replaced atomically
(a temporary file renamed into place, flushed to disk first), under a lock on its folder that other
threads and processes writing there take too. So parallel conversations never interleave or lose a
step, and a process killed at any moment leaves every file as it was before or after one whole
exchange.

A request can name where its exchange goes (``x-mockllm-record-to: NAME``): a folder under DIR, or
a file when NAME ends in ``.mockllm``; a test's node id works as it is (``::`` separates folders).
NAME never leaves DIR: ``..``, absolute paths and hidden names are made plain."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs

from mockllm.dsl.diagnostics import has_errors
from mockllm.dsl.format.formatter import format_file
from mockllm.dsl.parse.parser import parse_text
from mockllm.runtime.recording.append import appended, conversation_tag
from mockllm.runtime.recording.exchange import Exchange
from mockllm.runtime.recording.translate import Turn, conversations, read_exchange, script
from mockllm.server.record.script_files import write_assets, write_script

try:
    import fcntl
except ImportError:  # (not on Windows: one process's threads are kept apart all the same)
    fcntl = None  # type: ignore[assignment]

__all__ = ["ScriptWriter", "Target", "Written", "target_for"]

log = logging.getLogger("mockllm.server")

#: Turns kept per target to group a new one with its conversation, and targets kept.
TURNS_KEPT = 2000
TARGETS_KEPT = 1000
_PLAIN = re.compile(r"[^\w.\-\[\]=+,@ ]")
_PART_CHARS = 120


@attrs.frozen
class Target:
    """Where a request's exchanges go: a folder (one file per conversation) or one file."""

    folder: Path
    file: str | None = None  # a file name in ``folder``; None: one file per conversation
    label: str = ""  # leads each scenario's name: the NAME asked for


@attrs.frozen
class Written:
    path: Path
    steps: int  # the steps of the conversation's scenario now


def target_for(root: Path, name: str | None) -> Target:
    """The place ``x-mockllm-record-to: NAME`` names under ``root`` (``root`` itself without one)."""
    if not name:
        return Target(root)
    parts = [_plain(p) for p in re.split(r"::|[/\\]", name.strip())]
    parts = [p for p in parts if p]
    if not parts:
        return Target(root)
    label = "/".join(parts)
    if parts[-1].endswith(".mockllm") and len(parts[-1]) > len(".mockllm"):
        return Target(root.joinpath(*parts[:-1]), parts[-1], label.removesuffix(".mockllm"))
    return Target(root.joinpath(*parts), None, label)


def _plain(part: str) -> str:
    cleaned = _PLAIN.sub("_", part).strip().lstrip(".")
    return cleaned[:_PART_CHARS]


class ScriptWriter:
    """Writes exchanges into ``root``; one per server process, shared by its requests. :meth:`add` does
    file I/O and waits for the folder's lock: call it from a worker thread."""

    def __init__(self, root: Path, *, keep_timing: bool = False) -> None:
        self.root = root
        self.keep_timing = keep_timing
        self._lock = threading.Lock()
        self._turns: OrderedDict[str, list[Turn]] = OrderedDict()  # by the NAME asked for

    def add(
        self, exchange: Exchange, name: str | None = None, pictures: Mapping[str, bytes] | None = None
    ) -> Written | None:
        """Write ``exchange`` into its conversation's file; None when it is nothing a script can hold
        (not a call of a known provider), or its file cannot be grown (a script with errors, left as
        it is: a warning says so). ``pictures``: an images answer's URL pictures, fetched, by URL."""
        turn = read_exchange(exchange, pictures)
        if turn is None:
            return None
        key = name or ""
        with self._lock:
            turns = self._turns.setdefault(key, [])
            self._turns.move_to_end(key)
            turns.append(turn)
            del turns[:-TURNS_KEPT]
            while len(self._turns) > TARGETS_KEPT:
                self._turns.popitem(last=False)
            mine = next(c for c in conversations(turns) if any(t is turn for t in c.turns))
        new = script(mine, self.keep_timing)
        target = target_for(self.root, name)
        with _folder_lock(target.folder):
            filename = target.file or _file_of(target.folder, new.filename)
            path = target.folder / filename
            source = path.read_text(encoding="utf-8") if path.exists() else None
            existing = None
            if source is not None:
                existing, problems = parse_text(source, str(path))
                if existing is None or has_errors(problems):
                    log.warning("mockllm: %s has errors: the exchange is not written into it", path)
                    return None
            tree = appended(existing, new, target.label)
            write_assets(target.folder, new.assets)
            write_script(target.folder, filename, format_file(tree, source))
        tag = conversation_tag(new.tree.scenarios[0].name)
        steps = next((len(s.steps) for s in tree.scenarios if conversation_tag(s.name) == tag), 0)
        return Written(path, steps)


def _file_of(folder: Path, filename: str) -> str:
    """The file already holding the conversation ``filename`` is named for (by its key, the last part
    of the name: the opening it is named for may differ from this run's first turn), else ``filename``."""
    key = filename.rsplit("_", 1)[-1]
    for found in sorted(folder.glob(f"*_{key}")):
        return found.name
    return filename


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Held while a file in ``folder`` is read and replaced: by this process's threads and by other
    processes (``flock`` on the folder; each call opens it anew, so threads exclude each other too)."""
    folder.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        with _THREADS:
            yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


_THREADS = threading.Lock()
