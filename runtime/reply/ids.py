"""Ids in each provider's real format and length.

Applications store ids (tool calls by id, responses by id) and some check their shape, so the mock's
ids look like the real ones -- same prefix, alphabet and length -- and never repeat across
conversations, while staying deterministic: the same conversation and turn always get the same
tool-call ids, so a test's recorded expectations do not change from run to run.

Shapes (from recorded real traffic): OpenAI ``chatcmpl-`` + 29 letters/digits, ``call_`` + 24,
``x-request-id: req_`` + 32 hex; Responses ``resp_``/``msg_``/``fc_``/``rs_`` + 50 hex; Anthropic
``msg_01`` + 22, ``toolu_01`` + 22, ``request-id: req_011`` + 21; Gemini ``responseId`` 23 url-safe
base64 characters."""

from __future__ import annotations

import hashlib

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_B64URL = _B62 + "-_"


def _table(alphabet: str) -> bytes:
    """Byte ``b`` -> the ASCII of ``alphabet[b % len(alphabet)]``: one :meth:`bytes.translate` turns
    digest bytes into id characters. (62 does not divide 256, so the first eight letters come up a
    little more often than the rest -- invisible in an id, which only has to look real and not repeat.)"""
    return bytes(ord(alphabet[b % len(alphabet)]) for b in range(256))


_B62_TABLE = _table(_B62)
_B64URL_TABLE = _table(_B64URL)
_DIGEST_MAX = 64  # blake2b's largest digest, in bytes: the longest id one digest gives


def _chars(seed: str, table: bytes, length: int) -> str:
    """``length`` characters of ``table``'s alphabet from a digest of ``seed``: the same seed, the same
    characters; another seed, others. Longer ids chain digests."""
    if length <= 0:
        return ""
    data = seed.encode("utf-8", "surrogatepass")
    raw = hashlib.blake2b(data, digest_size=min(length, _DIGEST_MAX)).digest()
    while len(raw) < length:
        raw += hashlib.blake2b(raw, digest_size=min(length - len(raw), _DIGEST_MAX)).digest()
    return raw.translate(table).decode("ascii")


def base62(seed: str, length: int) -> str:
    """``length`` letters and digits derived from ``seed`` (a hex id or any other string)."""
    return _chars(seed, _B62_TABLE, length)


def call_key(conversation: str, prefix: str, n: int) -> str:
    """The key of the ``n``-th tool call of a conversation: 24 letters and digits, the same for the
    same conversation and ``n``, different for another conversation. ``prefix`` separates the keys
    of scripted calls from the echo responder's."""
    return base62(f"{prefix}\x00{conversation}\x00{n}", 24)


def hex_id(seed: str, index: int, length: int = 50) -> str:
    """``length`` hex digits derived from ``seed`` and ``index`` (Responses output item ids)."""
    return hashlib.sha256(f"{seed}\x00{index}".encode()).hexdigest()[:length]


def chat_completion_id(response_id: str) -> str:
    return "chatcmpl-" + base62(response_id, 29)


def anthropic_message_id(response_id: str) -> str:
    return "msg_01" + base62(response_id, 22)


def anthropic_request_id(request_id: str) -> str:
    """``req_011…`` from the server's ``req_<32 hex>`` request id."""
    return "req_011" + base62(request_id.removeprefix("req_"), 21)


def gemini_response_id(response_id: str) -> str:
    return _chars(response_id, _B64URL_TABLE, 23)
