"""Mistral Chat Completions (`POST /v1/chat/completions` as Mistral's own SDK speaks it): the request is
read as OpenAI's (Mistral's body is OpenAI's, plus tool-call arguments that may be objects and
``tool_choice: "any"``), and the answer is rendered in Mistral's shape, as docs/providers/mistral.md
describes.

What differs from OpenAI: tool-call ids are 9 letters and digits (and a history whose ids are not is
refused, as the real API refuses it); ``tool_choice`` is ``auto``, ``none``, ``any``, ``required`` or
``{"type": "function", "function": {"name": …}}``; a tool may leave out ``"type"`` (the real API takes it
as a function); response ids are 32 hex digits; ``usage`` has only the three counts (and, on a whole
answer, ``prompt_tokens_details``) and is sent on every stream's last chunk (no ``stream_options``);
streamed tool calls arrive whole, all of them in that last chunk with the finish reason and the usage
(``content`` null there), never as argument fragments; a ``thinking`` reply is a
``{"type": "thinking"}`` content chunk (what Magistral sends); finish reasons are ``stop``,
``length``, ``tool_calls`` and ``error``; errors are ``{"object": "error", "message", "type",
"param", "code"}``. Answers carry ``mistral-correlation-id`` (a UUID) and
``access-control-allow-origin: *``. Held against recorded Mistral traffic by
``tests/test_fidelity_recordings.py``."""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from mockllm.runtime.providers import events
from mockllm.runtime.providers.base import Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import (
    SSE_MEDIA,
    FieldPath,
    bearer_token,
    error_type_for,
    json_bytes,
    json_response,
    one_of,
    require_object,
    require_str,
    sse_frame,
    sse_raw_frame,
    stream_response,
)
from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter
from mockllm.runtime.reply.ids import hex_id
from mockllm.runtime.reply.plan import FinishReason, MessagePlan, PlannedToolCall
from mockllm.runtime.request import ChatRequest, HttpRequest, Provider

TOOL_CHOICES = ("auto", "none", "any", "required")
FINISH: dict[FinishReason, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "error",
}
ERROR_TYPES = {401: "unauthorized", 404: "invalid_model", 422: "invalid_request_error", 429: "rate_limited"}
CALL_ID = re.compile(r"[A-Za-z0-9]{9}")
_ROOT = FieldPath()


def completion_id(seed: str) -> str:
    """32 hex digits, Mistral's response id."""
    return hex_id(seed, 0, 32)


def call_id(call: PlannedToolCall) -> str:
    """9 letters and digits: the only tool-call id shape the real API accepts back."""
    return call.id_for("", 9)


def request_headers(ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    digits = ctx.request_id.removeprefix("req_")
    return (
        ("x-kong-request-id", digits),
        ("mistral-correlation-id", _uuid7(digits)),
        ("access-control-allow-origin", "*"),
    )


def _uuid7(seed: str) -> str:
    """A UUID of version 7's shape (what Mistral's correlation ids are) from the request id's digits."""
    h = hex_id(seed, 0, 32)
    return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"


def _usage(plan: MessagePlan) -> dict[str, int]:
    return {
        "prompt_tokens": plan.input_tokens,
        "total_tokens": plan.input_tokens + plan.output_tokens,
        "completion_tokens": plan.output_tokens,
    }


def _whole_usage(plan: MessagePlan) -> dict[str, Any]:
    return {**_usage(plan), "prompt_tokens_details": {"cached_tokens": 0}}


def _typed_tools(http: HttpRequest) -> HttpRequest:
    """The request with ``"type": "function"`` on every tool that leaves it out, as Mistral reads them."""
    if b'"tools"' not in http.body:
        return http
    try:
        body = json.loads(http.body)
    except ValueError:
        return http  # the OpenAI parser words the error
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list) or all(not isinstance(t, dict) or "type" in t for t in tools):
        return http
    body["tools"] = [{"type": "function", **t} if isinstance(t, dict) and "function" in t else t for t in tools]
    return attrs.evolve(http, body=json_bytes(body))


def _call_json(index: int, call: PlannedToolCall) -> dict[str, Any]:
    function = {"name": call.name, "arguments": call.arguments_json}
    return {"id": call_id(call), "function": function, "index": index}


def _thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


def _text(plan: MessagePlan) -> str:
    """The answer's text: Mistral has no refusal field, so a refusal is said as text."""
    return plan.text if plan.refusal is None else plan.text + plan.refusal


def _content(plan: MessagePlan) -> str | list[dict[str, Any]]:
    if plan.thinking is None:
        return _text(plan)
    return [_thinking(plan.thinking), {"type": "text", "text": _text(plan)}]


def completion_payload(plan: MessagePlan, ctx: RenderContext) -> dict[str, Any]:
    calls = [_call_json(i, c) for i, c in enumerate(plan.tool_calls)] or None
    message = {"role": "assistant", "tool_calls": calls, "content": _content(plan)}
    return {
        "id": completion_id(ctx.response_id),
        "object": "chat.completion",
        "created": ctx.created,
        "model": plan.model,
        "usage": _whole_usage(plan),
        "choices": [{"index": 0, "message": message, "finish_reason": FINISH[plan.finish]}],
    }


class _Framer:
    """Mistral's chunks: a role chunk, a chunk per piece of thinking (a ``thinking`` content part) and of
    text (the refusal said as the text's last piece), the finish chunk with the usage and the tool
    calls, each whole (one call without ``index``, as recorded; parallel calls with theirs), ``[DONE]``."""

    def __init__(self, plan: MessagePlan, ctx: RenderContext) -> None:
        self.plan = plan
        self.head = {"id": completion_id(ctx.response_id), "object": "chat.completion.chunk", "created": ctx.created}
        self.calls: list[dict[str, Any]] = []

    def chunk(self, delta: dict[str, Any], finish: str | None = None, content: bool = False) -> Frame:
        data: dict[str, Any] = {**self.head, "model": self.plan.model}
        data["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        if finish is not None:
            data["usage"] = _usage(self.plan)
        return sse_frame(data, content=content)

    def frame(self, event: events.Event) -> list[Frame]:
        match event:
            case events.Start():
                return [self.chunk({"role": "assistant", "content": ""})]
            case events.ThinkingDelta(text=piece):
                return [self.chunk({"content": [_thinking(piece)]}, content=True)]
            case events.TextDelta(text=piece):
                return [self.chunk({"content": piece}, content=True)]
            case events.Refusal(text=refusal) if refusal:
                return [self.chunk({"content": refusal}, content=True)]
            case events.ToolCallEnd(call=call):
                self.calls.append(
                    {"id": call_id(call), "function": {"name": call.name, "arguments": call.arguments_json}}
                )
                return []
            case events.Finish(reason=reason) if len(self.calls) > 1:
                # parallel calls keep their index, so clients that merge streamed calls by index keep them apart
                calls = [{**c, "index": i} for i, c in enumerate(self.calls)]
                return [self.chunk({"content": None, "tool_calls": calls}, finish=FINISH[reason], content=True)]
            case events.Finish(reason=reason) if self.calls:
                return [self.chunk({"content": None, "tool_calls": self.calls}, finish=FINISH[reason], content=True)]
            case events.Finish(reason=reason):
                return [self.chunk({"content": ""}, finish=FINISH[reason])]
            case events.End():
                return [sse_raw_frame("[DONE]")]
        return []


class MistralAdapter(OpenAIChatAdapter):
    provider: Provider = "mistral"
    object_arguments = True  # a history's tool-call arguments may be a JSON object, not only its text

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        return ProviderError(401, "Unauthorized") if bearer_token(http.headers) is None else None

    def parse(self, http: HttpRequest) -> ChatRequest:
        chat = super().parse(_typed_tools(http))
        choice = chat.body.get("tool_choice")
        path = _ROOT.key("tool_choice")
        if isinstance(choice, dict):
            one_of(choice.get("type", "function"), ("function",), path.key("type"))
            require_str(require_object(choice, "function", path), "name", path.key("function"))
        elif choice is not None:
            one_of(choice, TOOL_CHOICES, path)
        return chat

    def validate_history(self, chat: ChatRequest) -> None:
        """Every tool-call id of the history is 9 letters and digits, then OpenAI's pairing rules."""
        for m in chat.messages:
            ids = [c.id for c in m.tool_calls]
            if m.tool_result is not None:
                ids.append(m.tool_result.call_id)
            for found in ids:
                if found is not None and not CALL_ID.fullmatch(found):
                    raise ProviderError(
                        400,
                        f"Tool call id was {found} but must be a-z, A-Z, 0-9, with a length of 9. "
                        f"(messages[{m.index}])",
                    )
        super().validate_history(chat)

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        headers = request_headers(ctx)
        if chat.stream:
            frames = events.stream_frames(plan, _Framer(plan, ctx))
            return stream_response(frames, media_type=SSE_MEDIA, headers=headers)
        return json_response(completion_payload(plan, ctx), headers=headers)

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        error = {
            "object": "error",
            "message": message,
            "type": error_type_for(status, ERROR_TYPES, "invalid_request_error", "internal_server_error"),
            "param": param,
            "code": code,
        }
        return json_response(error, status=status, headers=request_headers(ctx))

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        error = {"object": "error", "message": message, "type": "internal_server_error", "param": None, "code": None}
        return sse_frame(error).data


__all__ = ["MistralAdapter", "call_id", "completion_id", "request_headers"]
