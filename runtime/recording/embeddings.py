"""Embedding answers: the vectors each provider sent, and the input token count it reported, for the
``vector`` and ``usage`` lines of a recorded step.

The vectors: OpenAI, Azure and Mistral ``data[].embedding`` (a JSON array, or base64 little-endian
float32 when the client asked for ``encoding_format: base64``, as the official OpenAI SDK does),
Gemini ``embedding.values`` and ``embeddings[].values``, Vertex ``predictions[].embeddings.values``,
Ollama ``embeddings`` and the older ``embedding``, Cohere ``embeddings.float`` (or ``.base64``, or
the untyped list Bedrock's Cohere Embed sends), Bedrock Titan ``embedding``. The count:
``usage.prompt_tokens``, ``usageMetadata.promptTokenCount``, the predictions' ``statistics.token_count``,
``prompt_eval_count``, ``meta.billed_units.input_tokens``, ``inputTextTokenCount``, or Bedrock's
``x-amzn-bedrock-input-token-count`` header. The request is parsed by the server's own route
functions (:mod:`mockllm.runtime.providers.pairs`), so conditions see what serving sees. Values
are written as the shortest decimal that is the same float32, which is what serving sends back (it
rounds every vector to float32)."""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Any

from mockllm.runtime.providers.pairs import route_for_path, route_functions
from mockllm.runtime.recording.answer import Answer, load_json, number
from mockllm.runtime.request import ChatRequest, HttpRequest

__all__ = ["embedding_route", "parse", "read"]

_F32 = struct.Struct("<f")
#: vector types an answer may carry, in the order a recording prefers them (int8 and binary types are
#: lossy: no vector gives them back)
_TYPES = ("float", "base64")


def embedding_route(method: str, path: str, headers: Mapping[str, str] | None = None) -> str | None:
    """The embedding route ``path`` names (``"openai.embeddings"`` …; ``headers`` tell providers that
    share a path apart, as in serving), None for anything else (moderation calls included: a recorded
    moderation result is not written)."""
    route = route_for_path(path, headers) if method == "POST" else None
    return route if route is not None and not route.endswith("moderations") else None


def parse(route: str, http: HttpRequest) -> ChatRequest:
    return route_functions(route)[0](http)


def read(body: bytes, headers: Mapping[str, str] | None = None, request: Any = None) -> Answer:
    """The vectors of an embedding answer and, when the provider reported it, its input token count
    (as ``usage N in, 0 out``); ``headers`` are the response's (lower-cased names), ``request`` the
    request's body. Vectors of an integer or binary type (Mistral's ``output_dtype``, Cohere's
    ``int8`` …) are left out: no ``vector`` line gives them back."""
    data = load_json(body)
    if not isinstance(data, dict):
        return Answer()
    lossy = isinstance(request, dict) and request.get("output_dtype", "float") != "float"
    raw = [] if lossy else _raw_vectors(data)
    vectors = tuple(v for v in (_vector(r) for r in raw) if v is not None)
    tokens = _input_tokens(data, headers or {})
    return Answer(vectors=vectors, usage=None if tokens is None else (tokens, 0))


def _raw_vectors(data: dict[str, Any]) -> list[Any]:
    embeddings = data.get("embeddings")
    if isinstance(data.get("data"), list):  # OpenAI, Azure, Mistral
        items = sorted((d for d in data["data"] if isinstance(d, dict)), key=lambda d: number(d.get("index")))
        return [d.get("embedding") for d in items]
    if isinstance(embeddings, list):  # Gemini batch, Ollama /api/embed, Bedrock's Cohere Embed
        return [e.get("values") if isinstance(e, dict) else e for e in embeddings]
    if isinstance(embeddings, dict):  # Cohere's embeddings by type
        kind = next((k for k in _TYPES if isinstance(embeddings.get(k), list)), None)
        return list(embeddings[kind]) if kind is not None else []
    if isinstance(data.get("predictions"), list):  # Vertex :predict
        return [_dig(p, "embeddings", "values") for p in data["predictions"]]
    if isinstance(data.get("embedding"), dict):  # Gemini embedContent
        return [data["embedding"].get("values")]
    if isinstance(data.get("embedding"), list):  # Ollama /api/embeddings, Bedrock Titan
        return [data["embedding"]]
    return []


def _input_tokens(data: dict[str, Any], headers: Mapping[str, str]) -> int | None:
    found = [
        _dig(data, "usage", "prompt_tokens"),
        _dig(data, "usageMetadata", "promptTokenCount"),
        _dig(data, "meta", "billed_units", "input_tokens"),
        data.get("prompt_eval_count"),
        data.get("inputTextTokenCount"),
    ]
    if isinstance(data.get("predictions"), list):
        counts = [_dig(p, "embeddings", "statistics", "token_count") for p in data["predictions"]]
        found.append(sum(counts) if counts and all(isinstance(c, int) for c in counts) else None)
    header = headers.get("x-amzn-bedrock-input-token-count", "")
    found.append(int(header) if header.isdigit() else None)
    return next((v for v in found if isinstance(v, int) and not isinstance(v, bool) and v >= 0), None)


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


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
