"""Anthropic Messages (`POST /v1/messages`, `POST /v1/messages/count_tokens`, `GET /v1/models`):
request parsing, history rules and response rendering, byte for byte as docs/providers/anthropic.md describes."""

from __future__ import annotations

import base64
import datetime
import hashlib
from collections.abc import Sequence
from typing import Any

from mockllm.runtime.providers import common, events
from mockllm.runtime.providers.base import BaseAdapter, Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.parts import from_base64
from mockllm.runtime.reply import tokens
from mockllm.runtime.reply.ids import anthropic_message_id, anthropic_request_id
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import (
    Attachment,
    AttachmentKind,
    ChatRequest,
    Continuation,
    HttpRequest,
    Message,
    Provider,
    Tool,
    ToolCall,
    ToolResult,
)

ROLES = ("user", "assistant", "system")

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}

CONTENT_SHAPE = "a string or an array of content blocks"


# ---------------------------------------------------------------- parsing


def _text_blocks(value: Any, path: common.FieldPath, media_at: common.FieldPath | None = None) -> str:
    """``system``, a system message or a ``tool_result``'s content: a string, or text blocks joined
    with "\\n" (image and document blocks carry no text). ``media_at``: where the API says a block's
    media type sits (a tool result's blocks: ``messages.1.content.0.tool_result.content.0``)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise common.wrong_type(path, CONTENT_SHAPE, value)
    texts: list[str] = []
    for i, raw in enumerate(value):
        block = common.as_object(raw, path.at(i))
        kind = common.require_str(block, "type", path.at(i))
        if kind == "text":
            texts.append(common.require_str(block, "text", path.at(i)))
        elif kind in ("image", "document"):
            _check_media_type(kind, block.get("source"), (media_at or path).at(i))
    return "\n".join(texts)


#: the media types a base64 ``image`` or ``document`` block may declare, as the API lists them
_BASE64_MEDIA = {
    "image": ("image/jpeg", "image/png", "image/gif", "image/webp"),
    "document": ("application/pdf",),
}


def _check_media_type(kind: str, source: Any, at: common.FieldPath) -> None:
    """A base64 ``image`` or ``document`` block's ``media_type`` is one the API takes; else its 400,
    worded as the API words it (``messages.0.content.1.image.source.base64.media_type: Input should be
    'image/jpeg', 'image/png', 'image/gif' or 'image/webp'``)."""
    if not isinstance(source, dict) or source.get("type") != "base64":
        return
    allowed = _BASE64_MEDIA[kind]
    if source.get("media_type") in allowed:
        return
    quoted = [f"'{m}'" for m in allowed]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    raise ProviderError(400, f"{at}.{kind}.source.base64.media_type: Input should be {listed}")


def _turn(role: str, content: Any, path: common.FieldPath, call_names: dict[str, str]) -> common.WireTurn:
    if isinstance(content, str):
        return common.WireTurn(content, True)
    if not isinstance(content, list):
        raise common.wrong_type(path, CONTENT_SHAPE, content)
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    attached: list[Attachment] = []
    other = False
    for at, block in common.objects(content, path):
        kind = common.require_str(block, "type", at)
        if kind == "text":
            texts.append(common.require_str(block, "text", at))
        elif kind == "tool_use":
            if role != "assistant":
                raise common.invalid_value(at.key("type"), "`tool_use` blocks are only allowed in assistant messages")
            call_id = common.require_str(block, "id", at)
            name = common.require_str(block, "name", at)
            calls.append(ToolCall(call_id, name, common.require_object(block, "input", at)))
            call_names[call_id] = name
        elif kind == "tool_result":
            if role != "user":
                raise common.invalid_value(at.key("type"), "`tool_result` blocks are only allowed in user messages")
            use_id = common.require_str(block, "tool_use_id", at)
            raw_content = block.get("content")
            inner = at.key("tool_result").key("content")
            text = "" if raw_content is None else _text_blocks(raw_content, at.key("content"), inner)
            is_error = bool(common.optional_bool(block, "is_error", at))
            results.append(ToolResult(use_id, call_names.get(use_id), text, is_error))
        else:  # image, document, thinking, redacted_thinking, server tool blocks...: no text
            other = True
            if kind in ("image", "document"):
                if role == "assistant":  # the API's own words (its path names the content, not the block)
                    raise ProviderError(400, f"{path}: '{kind}' blocks are not permitted within assistant turns")
                _check_media_type(kind, block.get("source"), at)
                attached.append(_attachment(kind, block.get("source")))
    has_text = bool(texts) or other or not results
    return common.WireTurn("\n".join(texts), has_text, tuple(calls), tuple(results), tuple(attached))


def _attachment(kind: str, source: Any) -> Attachment:
    """An ``image`` or ``document`` block: base64 data with its media type, else a URL or file id."""
    default: AttachmentKind = "image" if kind == "image" else "file"
    if not isinstance(source, dict):
        return Attachment(default)
    media = source.get("media_type")
    data = source.get("data")
    if source.get("type") == "base64" and isinstance(data, str):
        return from_base64(data, default, media if isinstance(media, str) else "")
    if source.get("type") == "text" and isinstance(data, str):
        return Attachment("file", media if isinstance(media, str) else "text/plain", len(data.encode()))
    return Attachment(default, media if isinstance(media, str) else "")


def _tools(value: list[Any], path: common.FieldPath) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for at, tool in common.objects(value, path):
        name = common.require_str(tool, "name", at)
        description = common.optional_str(tool, "description", at) or ""
        kind = common.optional_str(tool, "type", at)
        if kind is None or kind == "custom":
            schema = common.require_object(tool, "input_schema", at)
        else:  # a server tool (web_search_20250305, bash_..., text_editor_...): no schema
            schema = {}
        tools.append(Tool(name, description, schema))
    return tuple(tools)


def _parse(http: HttpRequest, *, need_max_tokens: bool, model: str | None = None) -> ChatRequest:
    body = common.load_json_object(http.body)
    root = common.FieldPath(dotted=True)
    if model is None:
        model = common.require_str(body, "model", root)
    if need_max_tokens:
        common.require_int(body, "max_tokens", root, minimum=1)
    raw_messages = common.require_list(body, "messages", root)
    if not raw_messages:
        raise common.invalid_value(root.key("messages"), "at least one message is required")
    system: list[str] = []
    if body.get("system") is not None:
        system.append(_text_blocks(body["system"], root.key("system")))
    messages: list[Message] = []
    call_names: dict[str, str] = {}
    for i, raw in enumerate(raw_messages):
        at = root.key("messages").at(i)
        obj = common.as_object(raw, at)
        role = common.one_of(common.require(obj, "role", at), ROLES, at.key("role"))
        content = common.require(obj, "content", at)
        if role == "system":
            text = _text_blocks(content, at.key("content"))
            system.append(text)
            messages.append(Message("system", text, index=i))
            continue
        messages += _turn(role, content, at.key("content"), call_names).messages(role, i)
    raw_tools = common.optional_list(body, "tools", root)
    stream = body.get("stream")
    thread, previous = _thread(body.get("thread"), root.key("thread"))
    return ChatRequest(
        provider="anthropic",
        endpoint=http.path,
        model=model,
        stream=common.as_bool(stream, root.key("stream")) if stream is not None else False,
        messages=tuple(messages),
        system="\n".join(system),
        tools=_tools(raw_tools, root.key("tools")) if raw_tools else (),
        headers=common.lower_headers(http.headers),
        body=body,
        previous_response_id=previous,
        thread=thread,
        continuation=THREADS if thread is not None else None,
    )


def _thread(value: Any, at: common.FieldPath) -> tuple[str | None, str | None]:
    """The message-threads beta's ``thread``: ``{"type": "create"}`` keeps this conversation under the
    reply's id; ``{"type": "continue", "previous_message_id": …}`` sends only the new messages."""
    if value is None:
        return None, None
    obj = common.as_object(value, at)
    kind = common.one_of(common.require(obj, "type", at), ("create", "continue"), at.key("type"))
    if kind == "create":
        return kind, None
    return kind, common.require_str(obj, "previous_message_id", at)


def _block_index(chat: ChatRequest, message_index: int, use_id: str | None, fallback: int) -> int:
    """Where the ``tool_result`` answering ``use_id`` sits in that message's content, from the raw body."""
    body = chat.body
    try:
        content = body["messages"][message_index]["content"]
        for i, block in enumerate(content):
            if block.get("type") == "tool_result" and block.get("tool_use_id") == use_id:
                return i
    except (KeyError, IndexError, TypeError, AttributeError):
        pass
    return fallback


# ---------------------------------------------------------------- rendering helpers


def signature(thinking: str) -> str:
    """A deterministic, opaque-looking signature for a thinking block."""
    digest = hashlib.sha256(f"mockllm-thinking:{thinking}".encode("utf-8", "surrogatepass")).digest()
    return base64.b64encode(digest + hashlib.sha256(digest).digest()).decode("ascii")


def _stop_reason(plan: MessagePlan) -> str:
    return "refusal" if plan.refusal is not None else STOP_REASONS.get(plan.finish, "end_turn")


def _visible_text(plan: MessagePlan) -> tuple[str, tuple[str, ...]]:
    """The text block's text and pieces: the text, else the refusal wording."""
    if plan.text or plan.refusal is None:
        return plan.text, common.pieces(plan.text_chunks, plan.text)
    return plan.refusal, (plan.refusal,)


def _wants_text_block(plan: MessagePlan, text: str) -> bool:
    return bool(text) or not plan.tool_calls


def _usage(plan: MessagePlan) -> dict[str, Any]:
    return {
        "input_tokens": plan.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": plan.output_tokens,
        "service_tier": "standard",
        "inference_geo": "not_available",
    }


def _delta_usage(plan: MessagePlan) -> dict[str, Any]:
    """``message_delta.usage``: the real API repeats the input and cache counts here (clients that read
    usage from the last event only, like langchain-anthropic, depend on it)."""
    return {
        "input_tokens": plan.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": plan.output_tokens,
    }


def _tool_use(call: PlannedToolCall, input_: Any) -> dict[str, Any]:
    """A ``tool_use`` block; ``caller`` says the model called the tool itself (not a server tool)."""
    caller = {"type": "direct"}
    return {"type": "tool_use", "id": call.id_for("toolu_01", 22), "name": call.name, "input": input_, "caller": caller}


def _headers(ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    return (("request-id", anthropic_request_id(ctx.request_id)),)


def _stream_headers(ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    return (("request-id", anthropic_request_id(ctx.request_id)), ("cache-control", "no-cache"))


def _event(data: dict[str, Any], content: bool = False) -> Frame:
    return common.sse_frame(data, event=str(data["type"]), content=content)


_PING = _event({"type": "ping"})
_DETAILED_CODES = frozenset({"thread_not_found"})

#: message threads: an answer is kept under its message id for ``thread.previous_message_id``; a lost
#: thread is the documented 404 ``thread_not_found``, on which the SDK replays the whole conversation
THREADS = Continuation(
    kept_id=anthropic_message_id,
    call_prefix="toolu_01",
    call_length=22,
    lost_status=404,
    lost_message=(
        "No usable Thread state was found for previous_message_id '{id}'. Replay the full "
        'conversation with thread: {"type": "create"} to start a new Thread.'
    ),
    lost_code="thread_not_found",
)


class _Framer(events.Blocks):
    """``message_start``; one content block at a time (thinking with its signature, the text -- or the
    refusal's wording when there is no text --, each ``tool_use`` with ``input_json_delta`` pieces),
    a ``ping`` after the first block starts; ``message_delta`` with the stop reason and usage;
    ``message_stop``."""

    def __init__(self, plan: MessagePlan, ctx: RenderContext) -> None:
        super().__init__()
        self.plan = plan
        self.ctx = ctx

    def start(self, block: dict[str, Any]) -> list[Frame]:
        self.open = True
        frames = [_event({"type": "content_block_start", "index": self.index, "content_block": block})]
        if self.index == 0:
            frames.append(_PING)  # the real API pings right after the first block starts
        return frames

    def delta(self, delta: dict[str, Any], content: bool = True) -> Frame:
        return _event({"type": "content_block_delta", "index": self.index, "delta": delta}, content=content)

    def stop(self) -> Frame:
        return self.closed(_event({"type": "content_block_stop", "index": self.index}))

    def frame(self, event: events.Event) -> list[Frame]:
        plan = self.plan
        match event:
            case events.Start():
                message: dict[str, Any] = {
                    "id": anthropic_message_id(self.ctx.response_id),
                    "type": "message",
                    "role": "assistant",
                    "model": plan.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(plan) | {"output_tokens": 1},
                }
                return [_event({"type": "message_start", "message": message})]
            case events.ThinkingStart():
                return self.start({"type": "thinking", "thinking": "", "signature": ""})
            case events.ThinkingDelta(text=piece):
                return [self.delta({"type": "thinking_delta", "thinking": piece})]
            case events.ThinkingEnd(text=thinking):
                return [self.delta({"type": "signature_delta", "signature": signature(thinking)}, False), self.stop()]
            case events.TextDelta(text=piece):
                opening = [] if self.open else self.start({"type": "text", "text": ""})
                return [*opening, self.delta({"type": "text_delta", "text": piece})]
            case events.TextEnd():
                text, _ = _visible_text(plan)
                if not self.open and not _wants_text_block(plan, text):
                    return []
                frames = [] if self.open else self.start({"type": "text", "text": ""})
                if not plan.text and plan.refusal is not None:  # the refusal's wording, in one piece
                    frames.append(self.delta({"type": "text_delta", "text": plan.refusal}))
                return [*frames, self.stop()]
            case events.ToolCallStart(call=call):
                frames = self.start(_tool_use(call, {}))
                if call.arguments is None:  # `tool call NAME null`: Anthropic's input is always an object
                    frames.append(self.delta({"type": "input_json_delta", "partial_json": "{}"}))
                return frames
            case events.ToolArgsDelta(call=call, text=piece) if call.arguments is not None:
                return [self.delta({"type": "input_json_delta", "partial_json": piece})]
            case events.ToolCallEnd():
                return [self.stop()]
            case events.Usage():
                delta = {"stop_reason": _stop_reason(plan), "stop_sequence": None}
                return [_event({"type": "message_delta", "delta": delta, "usage": _delta_usage(plan)})]
            case events.End():
                return [_event({"type": "message_stop"})]
        return []


class AnthropicAdapter(BaseAdapter):
    provider: Provider = "anthropic"

    # -------------------------------------------------------------- requests

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        headers = common.lower_headers(http.headers)
        if not headers.get("x-api-key", "").strip() and common.bearer_token(headers) is None:
            return ProviderError(401, "x-api-key header is required")
        if not headers.get("anthropic-version", "").strip():
            return ProviderError(400, "anthropic-version: header is required")
        return None

    def parse(self, http: HttpRequest) -> ChatRequest:
        return _parse(http, need_max_tokens=True)

    def validate_history(self, chat: ChatRequest) -> None:
        if chat.thread == "continue":
            return  # the calls these results answer live in the thread the engine prepends
        turns = common.wire_turns(chat.messages)
        if turns and turns[0][1] != "user":
            raise ProviderError(400, f'messages.{turns[0][0]}: first message must use the "user" role')
        previous_calls: tuple[str, ...] = ()
        previous_index = -1
        for index, role, msgs in turns:
            results = [m.tool_result for m in msgs if m.tool_result is not None]
            answered = {r.call_id for r in results}
            if previous_calls:
                missing = [c for c in previous_calls if role != "user" or c not in answered]
                if missing:
                    raise ProviderError(
                        400,
                        f"messages.{previous_index}: `tool_use` ids were found without `tool_result` blocks "
                        f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                        "corresponding `tool_result` block in the next message.",
                    )
            for n, result in enumerate(results):
                if result.call_id not in previous_calls:
                    block = _block_index(chat, index, result.call_id, n)
                    raise ProviderError(
                        400,
                        f"messages.{index}.content.{block}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {result.call_id}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message.",
                    )
            previous_index = index
            previous_calls = tuple(c.id for m in msgs for c in m.tool_calls if c.id is not None)

    # -------------------------------------------------------------- responses

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        if chat.stream:
            frames = events.stream_frames(plan, _Framer(plan, ctx), interleave=False)  # blocks never overlap
            return common.stream_response(frames, media_type=common.SSE_UTF8_MEDIA, headers=_stream_headers(ctx))
        content: list[dict[str, Any]] = []
        if plan.thinking is not None:
            content.append({"type": "thinking", "thinking": plan.thinking, "signature": signature(plan.thinking)})
        text, _ = _visible_text(plan)
        if _wants_text_block(plan, text):
            content.append({"type": "text", "text": text})
        for call in plan.tool_calls:
            content.append(_tool_use(call, call.arguments if call.arguments is not None else {}))
        payload = {
            "id": anthropic_message_id(ctx.response_id),
            "type": "message",
            "role": "assistant",
            "model": plan.model,
            "content": content,
            "stop_reason": _stop_reason(plan),
            "stop_sequence": None,
            "usage": _usage(plan),
        }
        return common.json_response(payload, headers=_headers(ctx))

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        """``{"type":"error","error":{type,message},"request_id"}``; ``code`` becomes
        ``error.details.error_code`` for the codes the SDK acts on (``param`` unused)."""
        error: dict[str, Any] = {
            "type": common.error_type_for(status, ERROR_TYPES, "invalid_request_error", "api_error"),
            "message": message,
        }
        request_id = anthropic_request_id(ctx.request_id)
        if code in _DETAILED_CODES:  # the SDK reads `error.details.error_code` (a lost thread: replay)
            error["details"] = {"error_code": code}
        payload = {"type": "error", "error": error, "request_id": request_id}
        retry = "true" if status in (408, 409, 429) or status >= 500 else "false"
        return common.json_response(
            payload, status=status, headers=(("request-id", request_id), ("x-should-retry", retry))
        )

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        return common.sse_frame(
            {"type": "error", "error": {"type": "api_error", "message": message}}, event="error"
        ).data

    def models(self, model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
        return models_response(model_ids, ctx)

    def count_tokens(self, http: HttpRequest, ctx: RenderContext) -> Rendered:
        return count_tokens(http, ctx)


# ---------------------------------------------------------------- other endpoints


def input_text(chat: ChatRequest) -> str:
    """What a token count counts: the system prompt, every message's text and calls, the tools."""
    parts = [chat.system]
    for m in chat.messages:
        if m.role == "system":
            continue
        parts.append(m.text)
        parts += [c.name + common.json_text(c.arguments) for c in m.tool_calls]
    parts += [t.name + t.description + common.json_text(dict(t.parameters)) for t in chat.tools]
    return "\n".join(p for p in parts if p)


def parse_body(http: HttpRequest, model: str) -> ChatRequest:
    """A Messages body whose model is named outside it (Bedrock's ``/model/{modelId}/invoke``): parsed and
    checked as ``POST /v1/messages`` parses it. Raises :class:`ProviderError` for what the API rejects."""
    return _parse(http, need_max_tokens=True, model=model)


def count_tokens(http: HttpRequest, ctx: RenderContext) -> Rendered:
    """``POST /v1/messages/count_tokens``: the body is a Messages body without ``max_tokens``;
    answers ``{"input_tokens": N}`` (about one token per four characters). Raises
    :class:`ProviderError` for a body the real API would reject."""
    chat = _parse(http, need_max_tokens=False)
    return common.json_response({"input_tokens": tokens.estimate(input_text(chat))}, headers=_headers(ctx))


def models_response(model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
    """``GET /v1/models`` in Anthropic's list shape (one page, ``has_more: false``)."""
    created = datetime.datetime.fromtimestamp(ctx.created, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ids = list(dict.fromkeys(model_ids))
    data = [{"type": "model", "id": m, "display_name": m, "created_at": created} for m in ids]
    payload = {
        "data": data,
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }
    return common.json_response(payload, headers=_headers(ctx))


__all__ = ["AnthropicAdapter", "count_tokens", "models_response", "parse_body", "signature"]
