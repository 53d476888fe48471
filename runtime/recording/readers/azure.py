"""Azure OpenAI answers: OpenAI Chat Completions bodies and streams (the content-filter fields and the
stream's leading prompt-filter chunk carry no answer), read by the OpenAI reader."""

from __future__ import annotations

from mockllm.runtime.recording.readers.openai_chat import read

PROVIDER = "azure"
CALL_IDS = True  # its tool calls carry ids a script can keep

__all__ = ["CALL_IDS", "PROVIDER", "read"]
