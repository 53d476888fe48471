"""Embedding answers: the vectors each provider sent, for the ``vector`` lines of a recorded step.

OpenAI ``data[].embedding`` (a JSON array, or base64 little-endian float32 when the client asked for
``encoding_format: base64``, as the official SDK does), Gemini ``embedding.values`` and
``embeddings[].values``, Ollama ``embeddings`` and the older ``embedding``. The request is parsed by the
server's own route functions (:mod:`mockllm.runtime.providers.inputs`), so conditions see what
serving sees. Values are written as the shortest decimal that is the same float32, which is what
serving sends back (it rounds every vector to float32)."""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from mockllm.runtime.providers.inputs import route_for_path, route_functions
from mockllm.runtime.recording.answer import Answer, load_json, number
from mockllm.runtime.request import ChatRequest, HttpRequest

__all__ = ["embedding_route", "parse", "read"]

_F32 = struct.Struct("<f")


def embedding_route(method: str, path: str) -> str | None:
    """The embedding route ``path`` names (``"openai.embeddings"`` …), None for anything else
    (moderation calls included: a recorded moderation result is not written)."""
    route = route_for_path(path) if method == "POST" else None
    return route if route is not None and not route.endswith("moderations") else None


def parse(route: str, http: HttpRequest) -> ChatRequest:
    return route_functions(route)[0](http)


def read(body: bytes) -> Answer:
    data = load_json(body)
    if not isinstance(data, dict):
        return Answer()
    raw: list[Any] = []
    if isinstance(data.get("data"), list):  # OpenAI
        items = sorted((d for d in data["data"] if isinstance(d, dict)), key=lambda d: number(d.get("index")))
        raw = [d.get("embedding") for d in items]
    elif isinstance(data.get("embeddings"), list):  # Gemini batch, Ollama /api/embed
        raw = [e.get("values") if isinstance(e, dict) else e for e in data["embeddings"]]
    elif isinstance(data.get("embedding"), dict):  # Gemini embedContent
        raw = [data["embedding"].get("values")]
    elif isinstance(data.get("embedding"), list):  # Ollama /api/embeddings
        raw = [data["embedding"]]
    vectors = tuple(v for v in (_vector(r) for r in raw) if v is not None)
    return Answer(vectors=vectors)


def _vector(raw: Any) -> tuple[float, ...] | None:
    if isinstance(raw, str):
        try:
            packed = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(packed) % 4:
            return None
        return tuple(_shortest(v) for (v,) in _F32.iter_unpack(packed))
    if isinstance(raw, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw):
        return tuple(_shortest(float(v)) for v in raw)
    return None


def _shortest(value: float) -> float:
    """The shortest decimal that rounds to the same float32 as ``value`` (0.6000000238418579 → 0.6)."""
    try:
        target = _F32.pack(value)
    except OverflowError:
        return value
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        if _F32.pack(candidate) == target:
            return candidate
    return float(_F32.unpack(target)[0])
