"""Cohere v2 Chat (`POST /v2/chat`): request parsing, history rules and response rendering, JSON and
SSE, as docs/providers/cohere.md describes.

A reply with tool calls puts its text in ``tool_plan`` (what Command models do: say the plan, then
call), streamed as ``tool-plan-delta`` events; each call streams as ``tool-call-start``, its argument
pieces as ``tool-call-delta`` and ``tool-call-end``. A call without arguments (``{}`` or ``null`` in
the script) carries the string ``"null"`` as its arguments, the quirk real Cohere models show for
parameterless tools. Events are ``event: <type>`` plus ``data: <json>`` (the JSON repeats the type);
``message-end`` carries the finish reason and the usage, and a mid-stream error is a ``message-end``
whose finish reason is ``ERROR`` with the message in ``delta.error``, an ``error_type`` and empty
usage; ``data: [DONE]`` ends every stream. Every answer carries Cohere's caching headers (and a
whole one ``num_chars`` and ``num_tokens``), as recorded Cohere traffic shows
(``tests/test_fidelity_recordings.py``)."""

from __future__ import annotations

from typing import Any

from mockllm.runtime.providers import common, events
from mockllm.runtime.providers.base import BaseAdapter, Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.openai_chat import content_attachments
from mockllm.runtime.reply.ids import hex_id
from mockllm.runtime.reply.plan import FinishReason, MessagePlan, PlannedToolCall
from mockllm.runtime.request import ChatRequest, HttpRequest, Message, Provider, Tool, ToolCall, ToolResult

ROLES = ("system", "user", "assistant", "tool")
TOOL_CHOICES = ("REQUIRED", "NONE")
FINISH: dict[FinishReason, str] = {
    "stop": "COMPLETE",
    "length": "MAX_TOKENS",
    "tool_calls": "TOOL_CALL",
    "content_filter": "ERROR",
}
NO_KEY_MESSAGE = "no api key supplied"
_ROOT = common.FieldPath()
_CONTENT = "a string or an array of content parts"
_TOOL_PARTS = ("text", "document")


def uuid_for(seed: str) -> str:
    """A version-4-shaped UUID derived from ``seed`` (Cohere's response ids are UUIDs)."""
    h = hex_id(seed, 0, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"


def call_id(call: PlannedToolCall) -> str:
    """``get_weather_1byjy32y4hvq``: the tool's name, ``_`` and 12 lower-case letters and digits."""
    return call.explicit_id if call.explicit_id is not None else f"{call.name}_{call.key[:12].lower()}"


def _no_arguments(call: PlannedToolCall) -> bool:
    return call.arguments is None or call.arguments == {}


def arguments_text(call: PlannedToolCall) -> str:
    """The call's ``arguments`` string: ``"null"`` for a call without arguments (Cohere's quirk)."""
    return "null" if _no_arguments(call) else call.arguments_json


# ---------------------------------------------------------------- parsing


def _part_text(value: Any, path: common.FieldPath, *, nullable: bool = False, tool: bool = False) -> str:
    """A message's text: a string, or its ``text`` parts joined with "\\n" (image and thinking parts
    carry no text). In a tool result (``tool``) parts are ``text`` or ``document``, whose ``data`` (a
    string, or an object written as JSON) is read as text."""
    if value is None and nullable:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise common.wrong_type(path, _CONTENT, value)
    texts: list[str] = []
    for at, part in common.objects(value, path):
        kind = (
            common.one_of(common.require(part, "type", at), _TOOL_PARTS, at.key("type"))
            if tool
            else common.require_str(part, "type", at)
        )
        if kind == "text":
            texts.append(common.require_str(part, "text", at))
        elif kind == "document":
            data = common.require(common.require_object(part, "document", at), "data", at.key("document"))
            texts.append(data if isinstance(data, str) else common.json_text(data))
    return "\n".join(texts)


def _tool_calls(value: list[Any], path: common.FieldPath) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for at, call in common.objects(value, path):
        function = common.require_object(call, "function", at)
        fn_at = at.key("function")
        name = common.require_str(function, "name", fn_at)
        arguments = common.optional_str(function, "arguments", fn_at)
        calls.append(
            ToolCall(common.optional_str(call, "id", at), name, common.parse_json_arguments(arguments or "{}"))
        )
    return tuple(calls)


def _tools(value: list[Any], path: common.FieldPath) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for at, tool in common.objects(value, path):
        common.one_of(common.require(tool, "type", at), ("function",), at.key("type"))
        function = common.require_object(tool, "function", at)
        fn_at = at.key("function")
        name = common.require_str(function, "name", fn_at)
        description = common.optional_str(function, "description", fn_at) or ""
        tools.append(Tool(name, description, common.optional_object(function, "parameters", fn_at) or {}))
    return tuple(tools)


def _messages(raw: list[Any], path: common.FieldPath) -> tuple[list[Message], list[str]]:
    messages: list[Message] = []
    system: list[str] = []
    names: dict[str, str] = {}
    for i, (at, obj) in enumerate(common.objects(raw, path)):
        role = common.one_of(common.require(obj, "role", at), ROLES, at.key("role"))
        if role == "system":
            text = _part_text(common.require(obj, "content", at), at.key("content"))
            system.append(text)
            messages.append(Message("system", text, index=i))
        elif role == "user":
            content = common.require(obj, "content", at)
            attached = content_attachments(content)
            messages.append(Message("user", _part_text(content, at.key("content")), index=i, attachments=attached))
        elif role == "assistant":
            text = _part_text(obj.get("content"), at.key("content"), nullable=True)
            plan = common.optional_str(obj, "tool_plan", at)
            raw_calls = common.optional_list(obj, "tool_calls", at)
            calls = _tool_calls(raw_calls, at.key("tool_calls")) if raw_calls else ()
            names.update((c.id, c.name) for c in calls if c.id is not None)
            messages.append(Message("assistant", text or plan or "", tool_calls=calls, index=i))
        else:
            call = common.require_str(obj, "tool_call_id", at)
            text = _part_text(common.require(obj, "content", at), at.key("content"), tool=True)
            messages.append(Message("tool", text, tool_result=ToolResult(call, names.get(call), text), index=i))
    return messages, system


# ---------------------------------------------------------------- rendering helpers


def _usage(plan: MessagePlan) -> dict[str, Any]:
    counts = {"input_tokens": plan.input_tokens, "output_tokens": plan.output_tokens}
    return {"billed_units": counts, "tokens": counts, "cached_tokens": 0}


def _call_json(call: PlannedToolCall) -> dict[str, Any]:
    function = {"name": call.name, "arguments": arguments_text(call)}
    return {"id": call_id(call), "type": "function", "function": function}


def _answer_text(plan: MessagePlan) -> str:
    """The message's text: Cohere has no refusal field, so a refusal is said as text."""
    return plan.text if plan.refusal is None else plan.text + plan.refusal


def response_payload(plan: MessagePlan, ctx: RenderContext) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    content: list[dict[str, Any]] = []
    if plan.thinking is not None:
        content.append({"type": "thinking", "thinking": plan.thinking})
    text = _answer_text(plan)
    if plan.tool_calls:
        message["tool_plan"] = text
        message["tool_calls"] = [_call_json(c) for c in plan.tool_calls]
    else:
        content.append({"type": "text", "text": text})
    if content:
        message["content"] = content
    return {
        "id": uuid_for(ctx.response_id),
        "message": message,
        "finish_reason": FINISH[plan.finish],
        "usage": _usage(plan),
    }


def _event(data: dict[str, Any], content: bool = False) -> Frame:
    return common.sse_frame(data, event=data["type"], content=content)


def _content(kind: str, index: int, piece: str) -> Frame:
    delta = {"message": {"content": {kind: piece}}}
    return _event({"type": "content-delta", "index": index, "delta": delta}, content=True)


class _Framer(events.Blocks):
    """Cohere's events: content blocks (``content-start``, ``content-delta``…, ``content-end``) for
    thinking and text, numbered from 0; with tool calls the text is the ``tool-plan-delta`` events and
    each call is ``tool-call-start``, ``tool-call-delta``… and ``tool-call-end`` (a call without
    arguments sends the one fragment ``"null"``); ``message-end`` carries the finish and the usage.
    Cohere has no refusal field: a refusal is said as the text's last piece."""

    def __init__(self, plan: MessagePlan, ctx: RenderContext) -> None:
        super().__init__()
        self.plan = plan
        self.ctx = ctx
        self.nulled: set[int] = set()  # calls without arguments whose "null" is sent

    def frame(self, event: events.Event) -> list[Frame]:
        plan = self.plan
        match event:
            case events.Start():
                start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
                first = {"id": uuid_for(self.ctx.response_id), "type": "message-start", "delta": {"message": start}}
                return [_event(first)]
            case events.ThinkingStart():
                return [self.block_start("thinking")]
            case events.ThinkingDelta(text=piece):
                return [_content("thinking", self.index, piece)]
            case events.ThinkingEnd():
                return [self.block_end()]
            case events.TextStart() if not plan.tool_calls and (plan.text or plan.refusal or plan.thinking is None):
                return [self.block_start("text")]
            case events.TextDelta(text=piece):
                return [self.said(piece)]
            case events.TextEnd() if self.open and not plan.refusal:
                return [self.block_end()]
            case events.Refusal(text=refusal) if refusal:
                return [self.said(refusal), *([self.block_end()] if self.open else [])]
            case events.ToolCallStart(index=i, call=call):
                first = {"id": call_id(call), "type": "function", "function": {"name": call.name, "arguments": ""}}
                return [_event({"type": "tool-call-start", "index": i, "delta": {"message": {"tool_calls": first}}})]
            case events.ToolArgsDelta(index=i, call=call, text=piece):
                if _no_arguments(call):
                    if i in self.nulled:
                        return []
                    self.nulled.add(i)
                    piece = "null"
                message = {"tool_calls": {"function": {"arguments": piece}}}
                return [_event({"type": "tool-call-delta", "index": i, "delta": {"message": message}}, content=True)]
            case events.ToolCallEnd(index=i):
                return [_event({"type": "tool-call-end", "index": i})]
            case events.End():
                end = {"finish_reason": FINISH[plan.finish], "usage": _usage(plan)}
                return [_event({"type": "message-end", "delta": end}), common.sse_raw_frame("[DONE]")]
        return []

    def block_start(self, kind: str) -> Frame:
        self.open = True
        content = {"type": kind, kind: ""}
        return _event({"type": "content-start", "index": self.index, "delta": {"message": {"content": content}}})

    def block_end(self) -> Frame:
        return self.closed(_event({"type": "content-end", "index": self.index}))

    def said(self, piece: str) -> Frame:
        """A piece of the answer's text: of the tool plan when there are calls, else of the text block."""
        if self.plan.tool_calls:
            return _event({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}}, content=True)
        return _content("text", self.index, piece)


class CohereAdapter(BaseAdapter):
    provider: Provider = "cohere"

    # -------------------------------------------------------------- requests

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        return ProviderError(401, NO_KEY_MESSAGE) if common.bearer_token(http.headers) is None else None

    def parse(self, http: HttpRequest) -> ChatRequest:
        body = common.load_json_object(http.body)
        root = _ROOT
        model = common.require_str(body, "model", root)
        raw_messages = common.require_list(body, "messages", root)
        if not raw_messages:
            raise common.invalid_value(root.key("messages"), "must contain at least one message")
        messages, system = _messages(raw_messages, root.key("messages"))
        raw_tools = common.optional_list(body, "tools", root)
        tools = _tools(raw_tools, root.key("tools")) if raw_tools else ()
        if body.get("tool_choice") is not None:
            choice = common.one_of(body["tool_choice"], TOOL_CHOICES, root.key("tool_choice"))
            if choice == "REQUIRED" and not tools:
                raise common.invalid_value(root.key("tool_choice"), "REQUIRED needs at least one tool in 'tools'")
        return ChatRequest(
            provider="cohere",
            endpoint=http.path,
            model=model,
            stream=bool(common.optional_bool(body, "stream", root)),
            messages=tuple(messages),
            system="\n".join(system),
            tools=tools,
            headers=common.lower_headers(http.headers),
            body=body,
        )

    def validate_history(self, chat: ChatRequest) -> None:
        """Each tool message answers a call of the nearest assistant message with tool calls before it."""
        calls: dict[str, int] = {}
        for m in chat.messages:
            if m.role == "assistant" and m.tool_calls:
                calls = {c.id: m.index for c in m.tool_calls if c.id is not None}
            elif m.role == "tool" and m.tool_result is not None:
                call = m.tool_result.call_id or ""
                if call not in calls:
                    known = ", ".join(sorted(calls)) or "none"
                    raise ProviderError(
                        400,
                        f"invalid request: messages[{m.index}].tool_call_id '{call}' does not match a tool call "
                        f"of an earlier assistant message (tool calls: {known})",
                    )

    # -------------------------------------------------------------- responses

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        headers = (*trace_headers(ctx), *CACHE_HEADERS, ("x-envoy-upstream-service-time", _ms(plan)))
        if chat.stream:
            frames = events.stream_frames(plan, _Framer(plan, ctx))
            headers = (*headers, ("via", "1.1 google"), ("x-accel-expires", "0"))
            return common.stream_response(frames, media_type=common.SSE_MEDIA, headers=headers)
        counts = count_headers(len(common.json_text(chat.body)), plan.input_tokens + plan.output_tokens)
        return common.json_response(response_payload(plan, ctx), headers=(*headers, *counts))

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        """``{"id": "<uuid>", "message": "…"}``: the SDK raises its class for the status
        (``TooManyRequestsError`` for 429, ``InternalServerError`` for 500, …)."""
        body = {"id": uuid_for(ctx.request_id), "message": message}
        return common.json_response(body, status=status, headers=(*trace_headers(ctx), *CACHE_HEADERS))

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        delta = {"finish_reason": "ERROR", "usage": {}, "error": message, "error_type": STREAM_ERROR_TYPE}
        return _event({"type": "message-end", "delta": delta}).data + common.sse_raw_frame("[DONE]").data


#: the ``error_type`` of a scripted mid-stream error (Cohere names the failure: ``INVALID_TOOL_GENERATION``…)
STREAM_ERROR_TYPE = "INTERNAL_SERVER_ERROR"
#: what Cohere's front sends with every answer: nothing may cache it
CACHE_HEADERS = (
    ("cache-control", "no-cache, no-store, no-transform, must-revalidate, private, max-age=0"),
    ("expires", "Thu, 01 Jan 1970 00:00:00 GMT"),
    ("pragma", "no-cache"),
)


def trace_headers(ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    return (("x-debug-trace-id", ctx.request_id.removeprefix("req_")),)


def count_headers(chars: int, tokens: int) -> tuple[tuple[str, str], ...]:
    """A whole answer's ``num_chars`` (of the request) and ``num_tokens`` (billed) headers."""
    return (("num_chars", str(chars)), ("num_tokens", str(tokens)))


def _ms(plan: MessagePlan) -> str:
    return str(round(plan.latency_s * 1000))


__all__ = ["CACHE_HEADERS", "CohereAdapter", "call_id", "count_headers", "trace_headers", "uuid_for"]
