"""``mockllm import``: the file side of turning cassettes into scripts.

The translation itself is pure (:mod:`mockllm.runtime.recording`); this module reads cassette files
and writes each conversation's script (atomically, :mod:`mockllm.server.record.script_files`); the recording
proxy is :mod:`mockllm.server.record.recorder`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from mockllm.errors import FileError, UsageError
from mockllm.runtime.recording.cassettes import load_cassette
from mockllm.runtime.recording.exchange import Exchange
from mockllm.runtime.recording.media import picture_sources
from mockllm.runtime.recording.output import script_text
from mockllm.runtime.recording.translate import Turn, conversations, read_exchange, scripts
from mockllm.server.record.script_files import write_assets, write_script

__all__ = ["import_command", "import_files"]

CASSETTE_SUFFIXES = (".yaml", ".yml", ".har", ".json")


def _cassette_files(paths: Sequence[str]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in CASSETTE_SUFFIXES)
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return found


def import_files(paths: Sequence[str], out_dir: Path) -> tuple[list[Path], int, int]:
    """Convert the cassettes at ``paths``: (the scripts written, exchanges used, exchanges skipped)."""
    turns: list[Turn] = []
    exchanges: list[Exchange] = []
    skipped = 0
    for path in _cassette_files(paths):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FileError(f"cannot read {path}: {exc.strerror or exc}") from None
        loaded = load_cassette(str(path), data)
        exchanges += loaded
        for exchange in loaded:
            turn = read_exchange(exchange)
            if turn is None:
                skipped += 1
            else:
                turns.append(turn)
    pictures = _pictures(exchanges)
    turns = [_with_pictures(t, pictures) for t in turns]
    written = []
    for s in scripts(conversations(turns)):
        write_assets(out_dir, s.assets)
        written.append(write_script(out_dir, s.filename, script_text(s)))
    return written, len(turns), skipped


def _with_pictures(turn: Turn, pictures: dict[str, bytes]) -> Turn:
    """``turn`` with the pictures its images answer gave as URLs, when the recording holds them."""
    if turn.chat.operation != "images":
        return turn
    ex = turn.exchange
    urls = [p for p in picture_sources(ex.body, ex.response_headers) if isinstance(p, str)]
    fetched = {u: pictures[urlsplit(u).path] for u in urls if urlsplit(u).path in pictures}
    return attrs.evolve(turn, fetched=fetched) if fetched else turn


def _pictures(exchanges: Sequence[Exchange]) -> dict[str, bytes]:
    """The pictures the recording fetched itself (a HAR holds the browser's GET of each image URL), by
    URL path: an images answer's `url` pictures are found here (any host: the path names the picture)."""
    return {
        ex.path: ex.body
        for ex in exchanges
        if ex.method == "GET" and ex.status == 200 and ex.response_headers.get("content-type", "").startswith("image/")
    }


def import_command(args: argparse.Namespace) -> int:
    written, used, skipped = import_files(args.files, Path(args.out))
    note = ""
    if skipped:
        what = (
            "interaction that is not an LLM chat call" if skipped == 1 else "interactions that are not LLM chat calls"
        )
        note = f"; skipped {skipped} {what}"
    print(
        f"mockllm import: wrote {len(written)} script{'s' * (len(written) != 1)} ({used} exchanges) to {args.out}{note}"
    )
    for path in written:
        print(f"  {path}")
    sys.stdout.flush()
    return 0
