"""Bedrock InvokeModel with Anthropic bodies (``POST /model/{modelId}/invoke`` and
``/invoke-with-response-stream``): the Anthropic Messages API with the model in the path and
``anthropic_version`` in the body, answered through the Anthropic adapter and rewrapped.

A whole reply is the Messages JSON (ids ``msg_bdrk_01…``, ``toolu_bdrk_01…``) with Bedrock's token
count headers (input, output, cache read and cache write). A stream is one event-stream ``chunk`` event
per Anthropic stream event, its JSON base64-encoded in ``bytes``; ``message_stop`` carries
``amazon-bedrock-invocationMetrics``. What the first-party API adds and Bedrock does not send is taken
out (recorded Bedrock traffic, ``tests/test_fidelity_recordings.py``): the usage's tier and geography,
the input and cache counts ``message_delta`` repeats on the first-party API (Bedrock's holds
``output_tokens`` alone), and the ``caller`` of a ``tool_use`` block."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import attrs

from mockllm.runtime.providers.anthropic import AnthropicAdapter, parse_body
from mockllm.runtime.providers.base import Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.bedrock.wire import JSON_MEDIA, event_frame, event_stream, latency_ms, request_id
from mockllm.runtime.providers.common import json_bytes
from mockllm.runtime.reply.ids import base62
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

_ANTHROPIC = AnthropicAdapter()
_USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_creation",
    "output_tokens",
)
NOT_ANTHROPIC = (
    "Malformed input request: #: required key [anthropic_version] not found, please reformat your input and "
    "try again. (mockllm answers InvokeModel for Anthropic Messages bodies and Titan or Cohere embedding "
    "bodies; use Converse for other chat models)"
)


def parse_invoke(http: HttpRequest, model: str, stream: bool) -> ChatRequest:
    if b'"anthropic_version"' not in http.body:  # not an Anthropic body: say so before its other fields
        raise ProviderError(400, NOT_ANTHROPIC)
    chat = parse_body(http, model)
    version = chat.body.get("anthropic_version")
    if not isinstance(version, str) or not version:
        raise ProviderError(400, NOT_ANTHROPIC)
    return attrs.evolve(chat, provider="bedrock", stream=stream)


def validate_invoke(chat: ChatRequest) -> None:
    _ANTHROPIC.validate_history(chat)


def _message_id(ctx: RenderContext) -> str:
    return "msg_bdrk_01" + base62(ctx.response_id, 22)


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Bedrock's usage: the token counts, without the first-party API's tier and geography fields."""
    return {k: usage[k] for k in _USAGE_KEYS if k in usage}


def _rewrite(event: dict[str, Any], ctx: RenderContext, call_ids: Iterator[str]) -> dict[str, Any]:
    """A Messages object or stream event as Bedrock sends it: Bedrock's ids and usage. ``call_ids``
    gives the tool-use ids in the order the calls' blocks come."""
    message = event.get("message") if event.get("type") == "message_start" else event
    if isinstance(message, dict) and message.get("type") == "message":
        message["id"] = _message_id(ctx)
        message["usage"] = _usage(message["usage"])
        for block in message["content"]:
            if block.get("type") == "tool_use":
                block["id"] = next(call_ids)
                block.pop("caller", None)
    block = event.get("content_block")
    if event.get("type") == "content_block_start" and isinstance(block, dict) and block.get("type") == "tool_use":
        block["id"] = next(call_ids)
        block.pop("caller", None)
    if event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
        event["usage"] = {"output_tokens": event["usage"].get("output_tokens", 0)}
    return event


def _call_ids(plan: MessagePlan) -> Iterator[str]:
    return iter([call.id_for("toolu_bdrk_01", 22) for call in plan.tool_calls])


def _metrics(plan: MessagePlan) -> dict[str, int]:
    ms = latency_ms(plan)
    return {
        "inputTokenCount": plan.input_tokens,
        "outputTokenCount": plan.output_tokens,
        "invocationLatency": ms,
        "firstByteLatency": ms,
    }


def _sse_event(frame: Frame) -> dict[str, Any]:
    data = frame.data.split(b"data: ", 1)[1]
    event: dict[str, Any] = json.loads(data)
    return event


def render_invoke(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    rendered = _ANTHROPIC.render(plan, chat, ctx)
    rid = (("x-amzn-requestid", request_id(ctx)),)
    if rendered.frames is None:
        message = _rewrite(json.loads(rendered.body), ctx, _call_ids(plan))
        headers = (
            *rid,
            ("x-amzn-bedrock-invocation-latency", str(latency_ms(plan))),
            ("x-amzn-bedrock-output-token-count", str(plan.output_tokens)),
            ("x-amzn-bedrock-input-token-count", str(plan.input_tokens)),
            ("x-amzn-bedrock-cache-read-input-token-count", "0"),
            ("x-amzn-bedrock-cache-write-input-token-count", "0"),
        )
        return Rendered(status=200, media_type=JSON_MEDIA, headers=headers, body=json_bytes(message))
    frames: list[Frame] = []
    call_ids = _call_ids(plan)
    for frame in rendered.frames:
        event = _sse_event(frame)
        if event.get("type") == "ping":
            continue  # Bedrock does not relay pings
        if event.get("type") == "message_stop":
            event["amazon-bedrock-invocationMetrics"] = _metrics(plan)
        chunk = {"bytes": base64.b64encode(json_bytes(_rewrite(event, ctx, call_ids))).decode("ascii")}
        frames.append(event_frame("chunk", chunk, len(frames), frame.content))
    return event_stream(frames, (*rid, ("x-amzn-bedrock-content-type", JSON_MEDIA)))


__all__ = ["parse_invoke", "render_invoke", "validate_invoke"]
