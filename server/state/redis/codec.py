"""How the Redis store writes its values: one compact JSON encoder for everything it writes, and a
kept response (``previous_response_id``, Anthropic threads) to JSON and back, without the time it was
kept (Redis expires it instead)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from mockllm.runtime.engine.conversations import StoredResponse
from mockllm.runtime.jsonout import compact_encoder

# one encoder for every value the store writes, built once (mockllm.runtime.jsonout)
encode = compact_encoder(default=str)


@functools.cache
def _converter() -> Any:
    import cattrs

    return cattrs.Converter()


def response_to_json(stored: StoredResponse) -> str:
    data = _converter().unstructure(stored)
    data.pop("stored_at", None)
    return encode(data)


def response_from_json(raw: str) -> StoredResponse:
    data: Mapping[str, Any] = json.loads(raw)
    stored: StoredResponse = _converter().structure({**data, "stored_at": 0.0}, StoredResponse)
    return stored
