"""`mockllm serve --watch`: reload the library when its files change, by polling (standard library
only: no file-system notification dependency, the same on every platform).

Every ``interval`` seconds the watcher takes the modification time and size of every script the
library was loaded from (the files and directories given, searched again for new files, and every
file they import). A change is reloaded once the files have stopped changing for one interval, so
an editor's save-in-several-writes is read once, whole. The reload compiles in a worker thread;
the new library replaces the old one in one step (the engine's ``load``), so a request sees either
the old library or the new one, never a mix. When the edited library has errors, the old one keeps
serving and the diagnostics are printed. Conversations keep the state of every scenario whose
definition did not change; an edited or new scenario starts afresh in every conversation."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from mockllm.server.state.store import StateStore

DEFAULT_INTERVAL_S = 0.5

Snapshot = dict[str, tuple[int, int]]


def script_files(paths: Sequence[str], imported: Sequence[str] = ()) -> list[str]:
    """The script files of ``paths`` (directories searched recursively) and the ``imported`` ones."""
    from mockllm.dsl.parse.loader import SCRIPT_SUFFIXES

    out: list[str] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            out.extend(str(f) for f in p.rglob("*") if f.suffix in SCRIPT_SUFFIXES and f.is_file())
        else:
            out.append(str(p))
    out.extend(imported)
    return sorted(set(out))


def snapshot(files: Sequence[str]) -> Snapshot:
    """Each file's (modification time in ns, size); (-1, -1) for a file that is not there now."""
    found: Snapshot = {}
    for name in files:
        try:
            st = os.stat(name)
        except OSError:
            found[name] = (-1, -1)
        else:
            found[name] = (st.st_mtime_ns, st.st_size)
    return found


def _imported(sources: Sequence[str]) -> list[str]:
    return [name for name in sources if os.path.isfile(name)]


async def watch_library(
    store: StateStore,
    paths: Sequence[str],
    imported: Sequence[str],
    out: TextIO,
    interval: float = DEFAULT_INTERVAL_S,
    seen: Snapshot | None = None,
) -> None:
    """Poll ``paths`` (and the ``imported`` files) and reload the library of ``store``'s engine on change,
    until cancelled (with the state in Redis, scenarios posted to the fleet stay on top of the files).
    Reports go to ``out``, one line each (diagnostics as ``mockllm check`` prints them). ``seen``: the files
    as they were when the library was loaded, so an edit made before this task first runs is not missed."""
    from mockllm.dsl.diagnostics import render
    from mockllm.dsl.machines.compiler import load_and_compile

    extra = list(imported)
    if seen is None:
        seen = snapshot(script_files(paths, extra))
    while True:
        await asyncio.sleep(interval)
        now = snapshot(script_files(paths, extra))
        if now == seen:
            continue
        while True:  # wait until the files have stopped changing
            await asyncio.sleep(interval)
            settled = snapshot(script_files(paths, extra))
            if settled == now:
                break
            now = settled
        seen = now
        library, loaded, diagnostics = await asyncio.to_thread(load_and_compile, paths)
        extra = _imported(list(loaded.sources))
        seen = snapshot(script_files(paths, extra))
        errors = [d for d in diagnostics if d.is_error]
        if errors or library is None:
            print(render(diagnostics, loaded.sources), file=out)
            count = len(errors)
            print(
                f"mockllm: the edited library has {count} error{'s' if count != 1 else ''}; "
                "still serving the previous one",
                file=out,
                flush=True,
            )
            continue
        warnings = [d for d in diagnostics if not d.is_error]
        if warnings:
            print(render(warnings, loaded.sources), file=out)
        await store.reload_library(library)
        count = len(library.machines)
        print(f"mockllm: reloaded {count} scenario{'s' if count != 1 else ''}", file=out, flush=True)
