"""A conversation's script as text: the canonical layout, checked to read back as the same tree."""

from __future__ import annotations

from mockllm.dsl.format.formatter import format_file
from mockllm.runtime.recording.translate import Script


def script_text(script: Script) -> str:
    return format_file(script.tree)
