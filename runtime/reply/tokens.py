"""Token estimates: about one token per four characters, at least 1 (docs/language.md, ``usage``)."""

from __future__ import annotations


def estimate(text: str) -> int:
    return max(1, len(text) // 4)
