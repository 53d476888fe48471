"""The route table, and which provider a path (or a request's headers) speaks for: all read from the
provider registry (``runtime/providers/registry.py``), re-exported here for the server.

Routing is by path, never by ``Accept`` (docs/providers.md lists each API's paths). A path several
providers share (``/v1/models``: OpenAI, Anthropic and Gemini listings) is decided per request by
the entries' claims on the request's headers."""

from __future__ import annotations

from mockllm.runtime.providers.registry import (
    ENTRIES,
    ROUTES,
    Handler,
    RouteSpec,
    adapter_for,
    provider_for,
)

__all__ = [
    "GEMINI_EMBED_METHODS",
    "GEMINI_METHODS",
    "ROUTES",
    "Handler",
    "RouteSpec",
    "adapter_for",
    "provider_for",
    "split_model_path",
]

#: every ``{model}:METHOD`` operation a "model_path" route answers, and those that are embeddings
GEMINI_METHODS = tuple(dict.fromkeys(m for e in ENTRIES for m in e.model_methods))
GEMINI_EMBED_METHODS = tuple(dict.fromkeys(m for e in ENTRIES for m, h in e.model_methods.items() if h == "inputs"))


def split_model_path(rest: str) -> tuple[str, str | None]:
    """``"gemini-2.5-flash:generateContent"`` → ``("gemini-2.5-flash", "generateContent")``;
    a plain model id gives ``(id, None)``. ``models/`` inside the id is kept as sent."""
    model, sep, method = rest.rpartition(":")
    if not sep:
        return rest, None
    return model, method
