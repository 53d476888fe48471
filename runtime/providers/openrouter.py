"""OpenRouter (docs/providers/openai.md, "OpenAI-compatible services"): OpenAI's Chat Completions at
``/api/v1/…``, with what OpenRouter adds. The provider stays ``openai`` for matching (a script tells
the two apart with ``endpoint is "/api/v1/chat/completions"``).

Requests may name fallback models in ``models`` (``model`` may then be left out: the first is used);
answers carry ``provider`` (the upstream that answered), ids ``gen-<seconds>-<20 letters>``,
``native_finish_reason`` and ``reasoning`` on the choice, and usage with ``cost``, ``is_byok`` and
``cost_details`` (what OpenRouter's users read to track spending); no ``service_tier`` or
``system_fingerprint``."""

from __future__ import annotations

from typing import Any

import attrs

from mockllm.runtime.providers import events
from mockllm.runtime.providers.base import Frame, RenderContext, Rendered
from mockllm.runtime.providers.common import JSON_MEDIA, json_bytes, load_json_object, sse_frame
from mockllm.runtime.providers.openai_chat import OPENROUTER_PREFIX, ChunkFramer, completion_payload
from mockllm.runtime.reply.ids import base62
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

__all__ = ["PREFIX", "OpenRouterFramer", "is_openrouter", "render_openrouter", "with_model"]

PREFIX = OPENROUTER_PREFIX
UPSTREAM = "OpenAI"  # the `provider` an answer names
#: dollars per token, in and out (a small model's price): what `usage.cost` is made of
PRICE_IN = 0.00000015
PRICE_OUT = 0.0000006


def is_openrouter(path: str) -> bool:
    return path.startswith(PREFIX)


def with_model(http: HttpRequest) -> HttpRequest:
    """The request with ``model`` set to the first of ``models`` when it leaves ``model`` out."""
    if b'"models"' not in http.body:
        return http
    body = load_json_object(http.body)
    models = body.get("models")
    if "model" in body or not isinstance(models, list) or not models or not isinstance(models[0], str):
        return http
    return attrs.evolve(http, body=json_bytes({**body, "model": models[0]}))


def generation_id(ctx: RenderContext) -> str:
    return f"gen-{ctx.created}-{base62(ctx.response_id, 20)}"


def usage(plan: MessagePlan) -> dict[str, Any]:
    cost = round(plan.input_tokens * PRICE_IN + plan.output_tokens * PRICE_OUT, 10)
    return {
        "prompt_tokens": plan.input_tokens,
        "completion_tokens": plan.output_tokens,
        "total_tokens": plan.input_tokens + plan.output_tokens,
        "cost": cost,
        "is_byok": False,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "cost_details": {"upstream_inference_cost": None},
        "completion_tokens_details": {"reasoning_tokens": 0, "image_tokens": 0},
    }


def render_openrouter(plan: MessagePlan, ctx: RenderContext, headers: tuple[tuple[str, str], ...]) -> Rendered:
    payload = completion_payload(plan, ctx)
    payload.pop("service_tier", None)
    payload.pop("system_fingerprint", None)
    payload["id"] = generation_id(ctx)
    payload["provider"] = UPSTREAM
    for choice in payload["choices"]:
        choice["native_finish_reason"] = choice["finish_reason"]
        choice["message"]["reasoning"] = plan.thinking
    payload["usage"] = usage(plan)
    return Rendered(200, JSON_MEDIA, headers=headers, body=json_bytes(payload))


class OpenRouterFramer(ChunkFramer):
    """OpenAI's chunks as OpenRouter sends them: its id and ``provider`` on each, its usage (with the
    cost) on the usage chunk."""

    def __init__(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext, encoded: bool = False) -> None:
        super().__init__(plan, chat, ctx, encoded)
        self.completion_id = generation_id(ctx)

    def data(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.completion_id,
            "provider": UPSTREAM,
            "model": self.plan.model,
            "object": "chat.completion.chunk",
            "created": self.ctx.created,
            "choices": choices,
        }

    def frame(self, event: events.Event) -> list[Frame]:
        if isinstance(event, events.Usage) and self.chat.include_usage:
            return [sse_frame({**self.data([]), "usage": usage(self.plan)})]
        return super().frame(event)
