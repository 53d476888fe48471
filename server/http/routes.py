"""The route table, and which provider a path (or a request's headers) speaks for: all read from the
provider registry (``runtime/providers/registry.py``), re-exported here for the server.

Routing is by path, never by ``Accept`` (docs/providers.md lists each API's paths). A path several
providers share (``/v1/models``: OpenAI, Anthropic and Gemini listings) is decided per request by
the entries' claims on the request's headers."""

from __future__ import annotations

from mockllm.runtime.providers.registry import (
    ROUTES,
    Handler,
    RouteSpec,
    adapter_for,
    openai_prefixed,
    provider_for,
)

__all__ = [
    "ROUTES",
    "Handler",
    "RouteSpec",
    "adapter_for",
    "openai_prefixed",
    "provider_for",
    "split_model_path",
]


def split_model_path(rest: str) -> tuple[str, str | None]:
    """``"gemini-2.5-flash:generateContent"`` → ``("gemini-2.5-flash", "generateContent")``;
    a plain model id gives ``(id, None)``. ``models/`` inside the id is kept as sent."""
    model, sep, method = rest.rpartition(":")
    if not sep:
        return rest, None
    return model, method
