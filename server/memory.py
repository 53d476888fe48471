"""Handing freed memory back to the operating system after a reset.

Dropping the journal and the conversation table frees their objects, but the C allocator keeps the
pages it got for them: RSS stays at its peak (issue 12: a reset after 2,000 large unmatched requests
released none of 439 MB). On glibc, ``malloc_trim(0)`` returns the free pages at the top of and
inside the heap; elsewhere this is a no-op. A full garbage collection first frees anything only a
reference cycle kept alive."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Callable

_trim: Callable[[int], int] | None = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _trim = _libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        _trim = None


def release_memory() -> None:
    """Collect garbage and return free heap pages to the OS where the C library allows it."""
    gc.collect()
    if _trim is not None:
        _trim(0)
