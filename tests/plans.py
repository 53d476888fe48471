"""Reply plans and refusals for the adapter tests: what the engine would hand an adapter, built
directly, and the ProviderError a call raises."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from mockllm.errors import ProviderError
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall


def error_of(fn: Callable[[], object]) -> ProviderError:
    """The ProviderError ``fn()`` raises (the test fails if it raises none)."""
    with pytest.raises(ProviderError) as info:
        fn()
    return info.value


def planned(name: str, args: Any, key: str) -> PlannedToolCall:
    """A tool call with ``args`` as JSON text, sent in one fragment."""
    text = json.dumps(args)
    return PlannedToolCall(name=name, arguments=args, arguments_json=text, argument_chunks=(text,), key=key)


def text_plan(model: str, text: str, size: int, input_tokens: int, **kw: Any) -> MessagePlan:
    """``text`` streamed in chunks of ``size`` characters, with ``input_tokens`` in and 3 out."""
    chunks = tuple(text[i : i + size] for i in range(0, len(text), size))
    return MessagePlan(model=model, text=text, text_chunks=chunks, input_tokens=input_tokens, output_tokens=3, **kw)
