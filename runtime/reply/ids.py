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
import re

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_B64URL = _B62 + "-_"


def _digits(number: int, alphabet: str, length: int) -> str:
    """The ``length`` lowest digits of ``number`` in base ``len(alphabet)``, lowest first: the
    definition :func:`_encode` computes two digits at a time."""
    base = len(alphabet)
    out = []
    for _ in range(length):
        number, digit = divmod(number, base)
        out.append(alphabet[digit])
    return "".join(out)


_PAIRS: dict[str, tuple[int, tuple[str, ...]]] = {}


def _pairs(alphabet: str) -> tuple[int, tuple[str, ...]]:
    """``base ** 2`` and every two-digit string, lowest digit first, by its value."""
    found = _PAIRS.get(alphabet)
    if found is None:
        base = len(alphabet)
        found = (base * base, tuple(alphabet[v % base] + alphabet[v // base] for v in range(base * base)))
        _PAIRS[alphabet] = found
    return found


def _encode(number: int, alphabet: str, length: int) -> str:
    """:func:`_digits`, two digits per division (an id is on every response: half the loop)."""
    square, pairs = _pairs(alphabet)
    out = []
    for _ in range((length + 1) // 2):
        number, pair = divmod(number, square)
        out.append(pairs[pair])
    text = "".join(out)
    return text if len(text) == length else text[:length]


_HEX = re.compile(r"[0-9a-f]{32,}")


def _number(seed: str) -> int:
    """The number a hex id stands for; any other string (a test's ``"r1"``) is hashed first."""
    if _HEX.fullmatch(seed):
        return int(seed, 16)
    return int(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest(), 16)


def base62(seed: str, length: int) -> str:
    """``length`` letters and digits derived from a hex id (at least 32 digits) or any other string."""
    return _encode(_number(seed), _B62, length)


def call_key(conversation: str, prefix: str, n: int) -> str:
    """The key of the ``n``-th tool call of a conversation: 24 letters and digits, the same for the
    same conversation and ``n``, different for another conversation. ``prefix`` separates the keys
    of scripted calls from the echo responder's."""
    digest = hashlib.sha256(f"{prefix}\x00{conversation}\x00{n}".encode("utf-8", "surrogatepass")).hexdigest()
    return base62(digest, 24)


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
    return _encode(_number(response_id), _B64URL, 23)
