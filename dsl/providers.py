"""The provider names of the language: the words ``provider is …`` accepts, one per API mockllm serves.

This is the one list. The grammar's bare provider words (``dsl/parse/parser.py`` writes them into the
``provider_word`` rule), the checker, the canonical text, the editor help, ``runtime.request.Provider``
and the CLI all read it. ``runtime/providers/registry.py`` holds one entry per name (its adapter,
routes, upstream, docs page), and ``tests/test_provider_registry.py`` fails when the two disagree: a
name is added here in the same change that adds its registry entry, so the language never names a
provider the server cannot serve."""

from __future__ import annotations

from typing import Literal, get_args

Provider = Literal[
    "openai", "anthropic", "gemini", "ollama", "responses", "cohere", "mistral", "azure", "vertex", "bedrock"
]

#: every provider name, in the order messages list them
PROVIDERS: tuple[Provider, ...] = get_args(Provider)
