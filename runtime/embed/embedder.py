"""The default embedder: the vector mockllm answers for a text when no script gives one.

A retrieval test needs vectors that behave like real ones where it matters -- texts that share words
score a higher cosine similarity than unrelated texts -- and that never change: the same text, model
and dimension give the same vector on every run, machine and Python version. So the vector is a
*feature hash*: the text's words, word pairs and character trigrams (of each word, padded) are each
hashed with BLAKE2b (never ``hash()``, which is salted per process, and no random state), the hash
picks a coordinate and a sign, the feature's weight is added there, and the sum is scaled to unit
length. Shared words put weight on the same coordinates, so related texts point the same way;
trigrams make "embedding" and "embeddings" close too. Values are rounded to float32, the precision
the real APIs send, so a base64 (float32) answer decodes to exactly the float answer.

Pure standard library: each distinct feature is hashed once (an LRU cache), a vector is built from
its few non-zero coordinates, and only the final list is dense."""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import re
import struct
from array import array
from collections.abc import Sequence

_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_PAIR_WEIGHT = 0.5
_TRIGRAM_WEIGHT = 0.25
_EMPTY_FEATURE = "\x00empty"  # what a text without any word contributes, so its vector is unit length too


@functools.lru_cache(maxsize=65536)
def _feature_hash(feature: str) -> int:
    """64 stable bits for a feature (BLAKE2b of its UTF-8 bytes)."""
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8, person=b"mockllm-embed").digest()
    return int.from_bytes(digest, "little")


def features(text: str) -> dict[str, float]:
    """The weighted features of ``text``: its case-folded words, adjacent word pairs, and the
    character trigrams of each word padded with ``#`` (``#pa``, ``par``, …, ``is#``)."""
    words = _WORD.findall(text.casefold())
    out: dict[str, float] = {}
    for word in words:
        key = "w:" + word
        out[key] = out.get(key, 0.0) + _WORD_WEIGHT
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            key = "c:" + padded[i : i + 3]
            out[key] = out.get(key, 0.0) + _TRIGRAM_WEIGHT
    for a, b in itertools.pairwise(words):
        key = f"p:{a} {b}"
        out[key] = out.get(key, 0.0) + _PAIR_WEIGHT
    if not out:
        out[_EMPTY_FEATURE] = 1.0
    return out


def embed(text: str, dimensions: int) -> list[float]:
    """The unit-length vector of ``text`` with ``dimensions`` coordinates (float32 values)."""
    if dimensions < 1:
        raise ValueError("dimensions must be at least 1")
    sparse: dict[int, float] = {}
    for feature, weight in features(text).items():
        h = _feature_hash(feature)
        index = h % dimensions
        signed = weight if (h >> 63) & 1 else -weight
        sparse[index] = sparse.get(index, 0.0) + signed
    norm = math.sqrt(math.fsum(v * v for v in sparse.values()))
    if norm == 0.0:  # every feature cancelled out on a tiny dimension: fall back to one coordinate
        sparse = {_feature_hash(text) % dimensions: 1.0}
        norm = 1.0
    vector = array("f", bytes(4 * dimensions))
    for index, value in sparse.items():
        vector[index] = value / norm
    return vector.tolist()


def embed_all(texts: Sequence[str], dimensions: int) -> list[list[float]]:
    return [embed(t, dimensions) for t in texts]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors of the same length (0.0 when either is all zeros)."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(math.fsum(x * x for x in a))
    nb = math.sqrt(math.fsum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def float32_bytes(vector: Sequence[float]) -> bytes:
    """The little-endian float32 bytes of a vector (what ``encoding_format: base64`` encodes)."""
    return struct.pack(f"<{len(vector)}f", *vector)


def to_float32(vector: Sequence[float]) -> list[float]:
    """``vector`` rounded to float32 precision (scripted vectors are sent as the API would send them)."""
    return array("f", vector).tolist()
