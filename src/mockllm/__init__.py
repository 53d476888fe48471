"""mockllm: a mock LLM server for end-to-end tests, driven by `.mockllm` scenario scripts."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
