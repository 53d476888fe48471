"""Writing scripts to disk atomically: a temporary file renamed into place, so a process killed
mid-write leaves the previous complete file (or none), never half of one. The audio and pictures a
recorded script names are written the same way, beside it, before it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from mockllm.runtime.recording.media import Asset


def write_script(out_dir: Path, filename: str, text: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / filename
    _write_atomically(target, text.encode("utf-8"))
    return target


def write_assets(out_dir: Path, assets: Iterable[Asset]) -> None:
    """Write the files a script names (its recorded audio and pictures) below ``out_dir``, before the
    script itself, so a script on disk never names a missing file. A file already there is kept: its
    name holds a digest of its content, so it has these bytes."""
    for item in assets:
        target = out_dir / item.path
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, item.data)


def _write_atomically(target: Path, data: bytes) -> None:
    """``data`` into ``target`` through a temporary file beside it, synced, then renamed into place."""
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
