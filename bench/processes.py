"""The processes a benchmark starts (`bench/run.py`'s servers, `bench/aimock.py`'s Node peer): how
one is stopped, and the last lines it wrote to stderr, for the message when it fails."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 10 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def tail(path: Path) -> str:
    """``stderr: `` and the last three non-empty lines of the file at ``path``."""
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln]
    except OSError:
        lines = []
    return "stderr: " + (" / ".join(lines[-3:]) if lines else "(empty)")
