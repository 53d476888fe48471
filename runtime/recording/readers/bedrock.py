"""Bedrock answers: not read yet. The registry entry's ``recorded`` pattern matches no path, so
``mockllm convert`` passes recorded Bedrock traffic over until this reader decodes it (ConverseStream
and InvokeModelWithResponseStream bodies are AWS event streams: ``runtime/providers/eventstream.py``
decodes them)."""

from __future__ import annotations

from mockllm.runtime.recording.answer import Answer

PROVIDER = "bedrock"


def read(body: bytes, stream: bool) -> Answer:
    return Answer(error="mockllm: recorded Bedrock answers are not read yet")
