"""One reader per provider: the answer body (JSON, or the SSE/NDJSON text of a stream) → :class:`Answer`.

Each reader module holds ``PROVIDER``, ``adapter()`` (the server's adapter, whose ``parse`` reads the
request exactly as serving does) and ``read(body, stream)``. Adding a provider is adding a module here
and one line to :data:`READERS`."""

from __future__ import annotations

from types import ModuleType

from mockllm.runtime.recording.readers import anthropic, gemini, ollama, openai_chat, responses

READERS: dict[str, ModuleType] = {m.PROVIDER: m for m in (openai_chat, responses, anthropic, gemini, ollama)}


def provider_for(method: str, path: str) -> str | None:
    """The provider whose chat route ``path`` is, None for any other request (listings, non-LLM)."""
    if method != "POST":
        return None
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/responses"):
        return "responses"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/api/chat"):
        return "ollama"
    if "/models/" in path and path.rsplit(":", 1)[-1] in ("generateContent", "streamGenerateContent"):
        return "gemini"
    return None
