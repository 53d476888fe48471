"""Ollama's native chat, ``POST /api/chat`` (docs/providers/ollama.md), plus ``GET /api/tags`` and ``/api/version``;
``POST /api/generate`` is read as a chat turn by :mod:`ollama_generate`.

A request without ``stream`` streams (the server's default); streams are NDJSON, one compact object per line
and no blank lines. Tool call arguments are JSON objects, never strings. Ollama itself checks nothing about
tool-call bookkeeping, so neither does :meth:`OllamaAdapter.validate_history`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from mockllm.runtime.providers import common, events
from mockllm.runtime.providers.base import BaseAdapter, Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.ollama_generate import GENERATE_PATH, parse_generate, render_generate
from mockllm.runtime.providers.parts import base64_size
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import (
    Attachment,
    ChatRequest,
    HttpRequest,
    Message,
    Provider,
    Role,
    Tool,
    ToolCall,
    ToolResult,
)

__all__ = ["VERSION", "OllamaAdapter", "rfc3339", "tags_response", "version_response"]

VERSION = "0.12.6"  # what /api/version reports: recent enough for clients that gate on features

_JSON = "application/json; charset=utf-8"  # gin's c.JSON, as the real server answers
_NDJSON = "application/x-ndjson"
_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_DONE_REASONS = {"stop": "stop", "tool_calls": "stop", "length": "length", "content_filter": "stop"}
_MS = 1_000_000  # nanoseconds


def rfc3339(seconds: int, nanoseconds: int = 0) -> str:
    """UTC time as Ollama writes it: RFC 3339 with nine fractional digits."""
    extra, nanos = divmod(nanoseconds, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds + extra, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"


class _Fields(common.BodyReader):
    """Ollama's wording: ``invalid request: <path> must be <type>, got <type>``, no codes."""

    surrogates = "replace"

    def bad_json(self, problem: str) -> ProviderError:
        return self.bad(f"invalid request: {problem}")

    def not_object(self, value: Any) -> ProviderError:
        return self.bad(f"invalid request: the body must be a JSON object, got {common.kind(value)}")

    def wrong_type(self, where: str, expected: str, value: Any) -> ProviderError:
        return self.bad(f"invalid request: {where} must be {expected}, got {common.kind(value)}")

    def load_body(self, body: bytes) -> dict[str, Any]:
        if not body.strip():
            raise self.bad("missing request body")
        return super().load_body(body)


FIELDS = _Fields()


def _arguments(value: Any, where: str) -> Any:
    if value is None:
        return {}
    if isinstance(value, str):  # not what Ollama sends, but OpenAI-minded clients do; keep what they meant
        return common.parse_json_arguments(value)
    return FIELDS.obj(value, where)


def _tool_calls(value: Any, where: str) -> tuple[ToolCall, ...]:
    calls = []
    for j, raw in enumerate(FIELDS.array(value, where)):
        call = FIELDS.obj(raw, f"{where}[{j}]")
        function = FIELDS.obj(call.get("function"), f"{where}[{j}].function")
        name = FIELDS.opt_str(function, "name", f"{where}[{j}].function")
        if not name:
            raise FIELDS.bad(f"invalid request: {where}[{j}].function.name is required")
        arguments = _arguments(function.get("arguments"), f"{where}[{j}].function.arguments")
        calls.append(ToolCall(id=FIELDS.opt_str(call, "id", f"{where}[{j}]"), name=name, arguments=arguments))
    return tuple(calls)


def _messages(value: Any) -> tuple[tuple[Message, ...], str]:
    if value is None:
        return (), ""
    messages: list[Message] = []
    system: list[str] = []
    open_calls: list[ToolCall] = []  # calls of the latest assistant turn not yet answered, in order
    every_call: dict[str, ToolCall] = {}
    for i, raw in enumerate(FIELDS.array(value, "messages")):
        where = f"messages[{i}]"
        message = FIELDS.obj(raw, where)
        role_name = message.get("role")
        role = _ROLES.get(role_name) if isinstance(role_name, str) else None
        if role is None:
            raise FIELDS.bad(
                f"invalid request: {where}.role must be one of system, user, assistant, tool, "
                f"got {json.dumps(role_name)}"
            )
        text = FIELDS.opt_str(message, "content", where) or ""
        if role == "system":
            system.append(text)
        if role == "assistant":
            calls = _tool_calls(message["tool_calls"], f"{where}.tool_calls") if message.get("tool_calls") else ()
            open_calls = list(calls)
            every_call.update((c.id, c) for c in calls if c.id is not None)
            messages.append(Message(role="assistant", text=text, tool_calls=calls, index=i))
        elif role == "tool":
            name = FIELDS.opt_str(message, "tool_name", where) or FIELDS.opt_str(message, "name", where)
            call_id = FIELDS.opt_str(message, "tool_call_id", where)
            answered = every_call.get(call_id) if call_id is not None else None
            if answered is None:
                answered = next((c for c in open_calls if c.name == name), None) if name else None
            if answered is None and name is None and open_calls:
                answered = open_calls[0]  # untagged results answer the calls in order
            if answered is not None:
                if answered in open_calls:
                    open_calls.remove(answered)
                name = name or answered.name
                call_id = call_id or answered.id
            result = ToolResult(call_id=call_id, name=name, content=text)
            messages.append(Message(role="tool", tool_result=result, index=i))
        else:
            messages.append(Message(role=role, text=text, index=i, attachments=_images(message, where)))
    return tuple(messages), "\n".join(system)


def _images(message: dict[str, Any], where: str) -> tuple[Attachment, ...]:
    """A message's ``images``: bare base64 strings (no ``data:`` prefix), each an image attachment."""
    images = message.get("images")
    if images is None:
        return ()
    if not isinstance(images, list) or not all(isinstance(i, str) for i in images):
        raise FIELDS.bad(f"invalid request: {where}.images must be an array of base64 strings")
    return tuple(Attachment("image", _image_type(i), base64_size(i)) for i in images)


def _image_type(data: str) -> str:
    """The media type base64 image data starts with (PNG, JPEG, GIF, WebP), as Ollama sniffs it."""
    for prefix, media in (
        ("iVBOR", "image/png"),
        ("/9j/", "image/jpeg"),
        ("R0lG", "image/gif"),
        ("UklG", "image/webp"),
    ):
        if data.startswith(prefix):
            return media
    return "image/*"


def _tools(value: Any) -> tuple[Tool, ...]:
    if value is None:
        return ()
    tools = []
    for i, raw in enumerate(FIELDS.array(value, "tools")):
        spec = FIELDS.obj(raw, f"tools[{i}]")
        if spec.get("type", "function") != "function":
            continue
        function = FIELDS.obj(spec.get("function"), f"tools[{i}].function")
        name = FIELDS.opt_str(function, "name", f"tools[{i}].function")
        if not name:
            raise FIELDS.bad(f"invalid request: tools[{i}].function.name is required")
        description = FIELDS.opt_str(function, "description", f"tools[{i}].function") or ""
        parameters = function.get("parameters")
        tools.append(
            Tool(
                name,
                description,
                {} if parameters is None else FIELDS.obj(parameters, f"tools[{i}].function.parameters"),
            )
        )
    return tuple(tools)


class OllamaAdapter(BaseAdapter):
    provider: Provider = "ollama"

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        return None  # a local Ollama asks for no credentials

    def version(self, ctx: RenderContext) -> Rendered:
        return version_response(ctx)

    def banner(self, ctx: RenderContext) -> Rendered:
        """``GET /``: what a running Ollama says."""
        return Rendered(200, "text/plain; charset=utf-8", body=b"Ollama is running")

    def parse(self, http: HttpRequest) -> ChatRequest:
        if http.path == GENERATE_PATH:
            return parse_generate(http, self.provider, FIELDS)
        data = FIELDS.load_body(http.body)
        model = data.get("model")
        if model is None or model == "":
            raise FIELDS.bad("model is required")
        if not isinstance(model, str):
            raise FIELDS.wrong_type("model", "a string", model)
        stream = data.get("stream", True)
        if stream is None:
            stream = True
        if not isinstance(stream, bool):
            raise FIELDS.wrong_type("stream", "a boolean", stream)
        messages, system = _messages(data.get("messages"))
        return ChatRequest(
            provider=self.provider,
            endpoint=http.path,
            model=model,
            stream=stream,
            messages=messages,
            system=system,
            tools=_tools(data.get("tools")),
            headers=dict(http.headers),
            body=data,
        )

    def validate_history(self, chat: ChatRequest) -> None:
        return None  # Ollama accepts any order of roles and any tool results

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        if chat.endpoint == GENERATE_PATH:
            return render_generate(plan, chat, _stamps(plan, ctx), _done(plan))
        if chat.stream:
            return Rendered(200, _NDJSON, frames=events.stream_frames(plan, _Framer(plan, ctx)))
        message: dict[str, Any] = {"role": "assistant", "content": plan.text + (plan.refusal or "")}
        if plan.thinking:
            message["thinking"] = plan.thinking
        if plan.tool_calls:
            message["tool_calls"] = [_call(call, i) for i, call in enumerate(plan.tool_calls)]
        body = {"model": plan.model, "created_at": rfc3339(ctx.created, _elapsed(plan)), "message": message}
        return Rendered(200, _JSON, body=common.json_bytes({**body, **_done(plan)}))

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        return Rendered(status, _JSON, body=common.json_bytes({"error": message}))

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        return common.json_bytes({"error": message}) + b"\n"

    def models(self, model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
        return tags_response(model_ids, ctx)


# ---- rendering ----


def _durations(plan: MessagePlan) -> dict[str, int]:
    load = 2 * _MS
    prompt = max(1, plan.input_tokens) * _MS // 10
    evaluation = max(1, plan.output_tokens) * 10 * _MS
    return {
        "total_duration": load + prompt + evaluation + _MS,
        "load_duration": load,
        "prompt_eval_count": plan.input_tokens,
        "prompt_eval_duration": prompt,
        "eval_count": plan.output_tokens,
        "eval_duration": evaluation,
    }


def _elapsed(plan: MessagePlan) -> int:
    return _durations(plan)["total_duration"]


def _stamps(plan: MessagePlan, ctx: RenderContext) -> Callable[[int], str]:
    """``created_at`` of a generate answer's n-th streamed line (-1: the final line, or a whole answer)."""
    total = _elapsed(plan)
    step = total // (len(plan.text) + 2)

    def stamp(n: int) -> str:
        return rfc3339(ctx.created, total if n < 0 else min(n * step, total))

    return stamp


def _done(plan: MessagePlan) -> dict[str, Any]:
    return {"done": True, "done_reason": _DONE_REASONS[plan.finish], **_durations(plan)}


def _call(call: PlannedToolCall, index: int) -> dict[str, Any]:
    # Ollama's arguments are an object: null (a parameterless call) is {}, other values are wrapped.
    # Calls carry no id (docs/providers.md: Gemini and Ollama calls come without ids).
    if call.arguments is None:
        arguments: Any = {}
    else:
        arguments = call.arguments if isinstance(call.arguments, dict) else {"value": call.arguments}
    return {"function": {"index": index, "name": call.name, "arguments": arguments}}


class _Framer:
    """NDJSON: one message a piece of thinking or text, the refusal, one a whole tool call; their
    ``created_at`` spread over the answer's time; then the ``done`` line with the durations."""

    def __init__(self, plan: MessagePlan, ctx: RenderContext) -> None:
        self.plan = plan
        self.ctx = ctx
        self.messages: list[dict[str, Any]] = []

    def frame(self, event: events.Event) -> list[Frame]:
        match event:
            case events.ThinkingDelta(text=piece):
                self.messages.append({"role": "assistant", "content": "", "thinking": piece})
            case events.TextDelta(text=piece):
                self.messages.append({"role": "assistant", "content": piece})
            case events.Refusal(text=refusal) if refusal:
                self.messages.append({"role": "assistant", "content": refusal})
            case events.ToolCallEnd(index=i, call=call):
                self.messages.append({"role": "assistant", "content": "", "tool_calls": [_call(call, i)]})
            case events.End():
                return self._frames()
        return []

    def _frames(self) -> list[Frame]:
        plan, ctx = self.plan, self.ctx
        step = _elapsed(plan) // (len(self.messages) + 1)
        frames = [
            common.ndjson_frame(
                {"model": plan.model, "created_at": rfc3339(ctx.created, n * step), "message": m, "done": False},
                content=True,
            )
            for n, m in enumerate(self.messages)
        ]
        final = {
            "model": plan.model,
            "created_at": rfc3339(ctx.created, _elapsed(plan)),
            "message": {"role": "assistant", "content": ""},
            **_done(plan),
        }
        frames.append(common.ndjson_frame(final))
        return frames


# ---- other endpoints ----


def tags_response(model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
    """``GET /api/tags``: the library's models as locally installed ones (``name:latest`` when untagged)."""
    models = []
    for model in model_ids:
        name = model if ":" in model else f"{model}:latest"
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        models.append(
            {
                "name": name,
                "model": name,
                "modified_at": rfc3339(ctx.created),
                "size": 2_019_393_189,
                "digest": digest,
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "llama",
                    "families": ["llama"],
                    "parameter_size": "3.2B",
                    "quantization_level": "Q4_K_M",
                },
            }
        )
    return Rendered(200, _JSON, body=common.json_bytes({"models": models}))


def version_response(ctx: RenderContext) -> Rendered:
    """``GET /api/version``."""
    return Rendered(200, _JSON, body=common.json_bytes({"version": VERSION}))
