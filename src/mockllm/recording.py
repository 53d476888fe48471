"""``mockllm import``: the file side of turning cassettes into scripts.

The translation itself is pure (:mod:`mockllm.runtime.recording`); this module reads cassette files
and writes each conversation's script (atomically, :mod:`mockllm.server.record.script_files`); the recording
proxy is :mod:`mockllm.server.record.recorder`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mockllm.errors import FileError, UsageError
from mockllm.runtime.recording.cassettes import load_cassette
from mockllm.runtime.recording.output import script_text
from mockllm.runtime.recording.translate import Turn, conversations, read_exchange, scripts
from mockllm.server.record.script_files import write_script

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
    skipped = 0
    for path in _cassette_files(paths):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FileError(f"cannot read {path}: {exc.strerror or exc}") from None
        for exchange in load_cassette(str(path), data):
            turn = read_exchange(exchange)
            if turn is None:
                skipped += 1
            else:
                turns.append(turn)
    written = [write_script(out_dir, s.filename, script_text(s)) for s in scripts(conversations(turns))]
    return written, len(turns), skipped


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
