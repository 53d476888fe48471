"""Vertex AI Gemini answers: Gemini bodies and streams, read by the Gemini reader."""

from __future__ import annotations

from mockllm.runtime.recording.readers.gemini import read

PROVIDER = "vertex"

__all__ = ["PROVIDER", "read"]
