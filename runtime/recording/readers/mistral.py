"""Mistral answers: Chat Completions bodies and chunks (tool calls arrive whole, usage on the last
chunk), read by the OpenAI reader."""

from __future__ import annotations

from mockllm.runtime.recording.readers.openai_chat import read

PROVIDER = "mistral"
CALL_IDS = True

__all__ = ["CALL_IDS", "PROVIDER", "read"]
