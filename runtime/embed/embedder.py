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
from collections.abc import Iterator, Sequence
from typing import overload

_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_PAIR_WEIGHT = 0.5
_TRIGRAM_WEIGHT = 0.25
_F32 = struct.Struct("<f")
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


class SparseVector(Sequence[float]):
    """A vector held as its few non-zero coordinates (what the default embedder makes: a few dozen of
    1536), read as a sequence of floats. The wire renderers (``vector_json``, ``float32_bytes``) write it
    without visiting the zeros, which is most of the cost of answering a batch."""

    __slots__ = ("dims", "nonzero")

    def __init__(self, dims: int, nonzero: dict[int, float]) -> None:
        self.dims = dims
        self.nonzero = nonzero  # index → float32-rounded value, never 0.0

    def __len__(self) -> int:
        return self.dims

    @overload
    def __getitem__(self, index: int) -> float: ...
    @overload
    def __getitem__(self, index: slice) -> list[float]: ...
    def __getitem__(self, index: int | slice) -> float | list[float]:
        if isinstance(index, slice):
            return self.to_list()[index]
        if index < 0:
            index += self.dims
        if not 0 <= index < self.dims:
            raise IndexError("vector index out of range")
        return self.nonzero.get(index, 0.0)

    def __iter__(self) -> Iterator[float]:
        return iter(self.to_list())

    def to_list(self) -> list[float]:
        out = [0.0] * self.dims
        for index, value in self.nonzero.items():
            out[index] = value
        return out


def embed_sparse(text: str, dimensions: int) -> SparseVector:
    """The unit-length vector of ``text`` with ``dimensions`` coordinates (float32 values), sparse."""
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
    indexes = list(sparse)
    values = array("f", [sparse[i] / norm for i in indexes]).tolist()  # rounded to float32
    return SparseVector(dimensions, {i: v for i, v in zip(indexes, values, strict=True) if v})


def embed(text: str, dimensions: int) -> list[float]:
    """The unit-length vector of ``text`` with ``dimensions`` coordinates (float32 values)."""
    return embed_sparse(text, dimensions).to_list()


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
    if isinstance(vector, SparseVector):
        out = bytearray(4 * vector.dims)
        for index, value in vector.nonzero.items():
            _F32.pack_into(out, 4 * index, value)
        return bytes(out)
    return struct.pack(f"<{len(vector)}f", *vector)


def vector_json(vector: Sequence[float]) -> str:
    """The JSON array of a vector, as ``json.dumps`` writes it (``float.__repr__`` per value)."""
    if isinstance(vector, SparseVector):
        parts = ["0.0"] * vector.dims
        for index, value in vector.nonzero.items():
            parts[index] = repr(value)
    else:
        parts = [repr(float(v)) for v in vector]
    return "[" + ",".join(parts) + "]"


def to_float32(vector: Sequence[float]) -> list[float]:
    """``vector`` rounded to float32 precision (scripted vectors are sent as the API would send them)."""
    return array("f", vector).tolist()
