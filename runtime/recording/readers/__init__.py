"""One reader per provider: the answer body (JSON, or the SSE/NDJSON text of a stream) → :class:`Answer`.

Each reader module holds ``PROVIDER``, ``read(body, stream)`` and, when the provider's tool calls carry
ids a script can keep (``tool call … id "…"``), ``CALL_IDS = True``; the request is parsed by the
server's own adapter (``registry.adapter_for``), exactly as serving does. The provider registry names each
provider's reader module (``reader``) and the recorded paths that are its chat requests (``recorded``):
adding a provider is adding a module here and naming it in its registry entry."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType

from mockllm.runtime.providers.registry import ENTRIES, recorded_provider

READERS: dict[str, ModuleType] = {
    e.name: importlib.import_module(f"mockllm.runtime.recording.readers.{e.reader}") for e in ENTRIES if e.reader
}


def provider_for(method: str, path: str, headers: Mapping[str, str] | None = None) -> str | None:
    """The provider whose chat route ``path`` is (``headers`` tell providers sharing a path apart),
    None for any other request (listings, non-LLM)."""
    return recorded_provider(method, path, headers)
