"""The operation names of the language: what a request asks for, whatever its provider's path, as
``endpoint is "embeddings"`` names it. This is the one list, as ``dsl/providers.py`` is for providers:
the checker, the editor help and ``runtime.request.Operation`` read it, and
``runtime/providers/registry.py`` holds one :class:`OperationSpec` per name (how the server answers
it, on which transports); ``tests/test_provider_registry.py`` fails when the two disagree."""

from __future__ import annotations

from typing import Literal, get_args

Operation = Literal[
    "chat",
    "embeddings",
    "moderations",
    "count_tokens",
    "mcp",
    "speech",
    "transcription",
    "translation",
    "images",
    "rerank",
    "realtime",
]

#: the operations answered with audio, a transcript or pictures (server spec §14): their requests match
#: only steps naming `endpoint`, `input` or `attachments`
MEDIA_OPERATIONS: tuple[Operation, ...] = ("speech", "transcription", "translation", "images")

#: the operations whose requests are chat turns: they match every chat step (a realtime session's
#: responses, server spec §15), not only steps naming `endpoint`, `input` or `attachments`
CHAT_TURNS: tuple[Operation, ...] = ("chat", "realtime")

#: every operation name, in the order messages list them
OPERATIONS: tuple[Operation, ...] = get_args(Operation)
