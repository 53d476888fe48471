"""Writing scripts to disk atomically: a temporary file renamed into place, so a process killed
mid-write leaves the previous complete file (or none), never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_script(out_dir: Path, filename: str, text: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / filename
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=out_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
