"""Bedrock Converse (``POST /model/{modelId}/converse`` and ``/converse-stream``): request parsing,
Bedrock's history rules and the reply, whole (JSON) or streamed (event-stream messages
``messageStart``, ``contentBlockStart``/``Delta``/``Stop``, ``messageStop``, ``metadata``)."""

from __future__ import annotations

from typing import Any

from mockllm.runtime.providers import events
from mockllm.runtime.providers.anthropic import signature
from mockllm.runtime.providers.base import Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.bedrock.wire import JSON_MEDIA, event_frame, event_stream, latency_ms, request_id
from mockllm.runtime.providers.common import (
    FieldPath,
    WireTurn,
    as_object,
    json_bytes,
    json_text,
    load_json_object,
    lower_headers,
    objects,
    one_of,
    optional_list,
    optional_object,
    optional_str,
    pieces,
    require,
    require_list,
    require_object,
    require_str,
    wire_turns,
)
from mockllm.runtime.providers.parts import base64_size
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import Attachment, ChatRequest, HttpRequest, Message, Tool, ToolCall, ToolResult

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "content_filtered",
}


def _result_text(value: list[Any], path: FieldPath) -> str:
    """A ``toolResult``'s content: its text blocks, and its JSON blocks as compact JSON, one per line."""
    texts: list[str] = []
    for at, block in objects(value, path):
        if "text" in block:
            texts.append(require_str(block, "text", at))
        elif "json" in block:
            texts.append(json_text(block["json"]))
    return "\n".join(texts)


def _tool_block(
    block: dict[str, Any], kind: str, at: FieldPath, role: str, allowed: str
) -> tuple[dict[str, Any], FieldPath]:
    """A ``toolUse`` or ``toolResult`` block's object and path, refused in the other role's messages."""
    where = at.key(kind)
    if role != allowed:
        raise ProviderError(400, f"{where}: {kind} blocks are only allowed in {allowed} messages")
    return require_object(block, kind, at), where


def _turn(role: str, content: list[Any], path: FieldPath, names: dict[str, str]) -> WireTurn:
    if not content:
        message = path.text.rpartition(".")[0]
        raise ProviderError(
            400,
            f"The content field in the Message object at {message} is empty. Add a ContentBlock object to the "
            "content field and try again.",
        )
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    attached: list[Attachment] = []
    other = False
    for at, block in objects(content, path):
        if "text" in block:
            text = require_str(block, "text", at)
            if not text.strip():
                raise ProviderError(
                    400,
                    f"The text field in the ContentBlock object at {at} is blank. Add text to the text field, "
                    "and try again.",
                )
            texts.append(text)
        elif "toolUse" in block:
            use, use_at = _tool_block(block, "toolUse", at, role, "assistant")
            call_id = require_str(use, "toolUseId", use_at)
            name = require_str(use, "name", use_at)
            calls.append(ToolCall(call_id, name, require(use, "input", use_at)))
            names[call_id] = name
        elif "toolResult" in block:
            result, result_at = _tool_block(block, "toolResult", at, role, "user")
            use_id = require_str(result, "toolUseId", result_at)
            text = _result_text(require_list(result, "content", result_at), result_at.key("content"))
            status = optional_str(result, "status", result_at)
            results.append(ToolResult(use_id, names.get(use_id), text, status == "error"))
        else:  # image, document, video, reasoningContent, cachePoint, guardContent …: no text
            other = True
            media = next((k for k in ("image", "document", "audio", "video") if k in block), None)
            if media is not None:
                attached.append(_attachment(media, block[media]))
    has_text = bool(texts) or other or not results
    return WireTurn("\n".join(texts), has_text, tuple(calls), tuple(results), tuple(attached))


_DOCUMENT_TYPES = {
    "pdf": "application/pdf",
    "csv": "text/csv",
    "html": "text/html",
    "txt": "text/plain",
    "md": "text/markdown",
}


def _attachment(kind: str, block: Any) -> Attachment:
    """An ``image``, ``document``, ``audio`` or ``video`` block: its format as a media type, and the size of
    its ``source.bytes`` (base64 in the JSON botocore sends; 0 for an S3 location)."""
    fmt = block.get("format") if isinstance(block, dict) else None
    fmt = fmt if isinstance(fmt, str) else ""
    source = block.get("source") if isinstance(block, dict) else None
    data = source.get("bytes") if isinstance(source, dict) else None
    size = base64_size(data) if isinstance(data, str) else 0
    if kind == "image":
        return Attachment("image", f"image/{fmt}" if fmt else "", size)
    if kind == "audio":
        return Attachment("audio", f"audio/{fmt}" if fmt else "", size)
    media = _DOCUMENT_TYPES.get(fmt, f"application/{fmt}" if fmt else "") if kind == "document" else f"video/{fmt}"
    return Attachment("file", media, size)


def _system(value: list[Any], path: FieldPath) -> str:
    texts = [require_str(block, "text", at) for at, block in objects(value, path) if "text" in block]
    return "\n".join(texts)


def _tools(config: dict[str, Any], path: FieldPath) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for at, tool in objects(require_list(config, "tools", path), path.key("tools")):
        spec = tool.get("toolSpec")
        if spec is None:
            continue  # cachePoint, systemTool
        spec_at = at.key("toolSpec")
        spec = require_object(tool, "toolSpec", at)
        schema = require_object(spec, "inputSchema", spec_at)
        tools.append(
            Tool(
                require_str(spec, "name", spec_at),
                optional_str(spec, "description", spec_at) or "",
                require_object(schema, "json", spec_at.key("inputSchema")),
            )
        )
    return tuple(tools)


def parse_converse(http: HttpRequest, model: str, stream: bool) -> ChatRequest:
    body = load_json_object(http.body)
    root = FieldPath(dotted=True)
    messages: list[Message] = []
    names: dict[str, str] = {}
    for index, raw in enumerate(optional_list(body, "messages", root) or []):
        i = root.key("messages").at(index)
        raw = as_object(raw, i)
        role = one_of(require(raw, "role", i), ("user", "assistant"), i.key("role"))
        messages += _turn(role, require_list(raw, "content", i), i.key("content"), names).messages(role, index)
    system = optional_list(body, "system", root)
    config = optional_object(body, "toolConfig", root)
    return ChatRequest(
        provider="bedrock",
        endpoint=http.path,
        model=model,
        stream=stream,
        messages=tuple(messages),
        system=_system(system, root.key("system")) if system else "",
        tools=_tools(config, root.key("toolConfig")) if config is not None else (),
        headers=lower_headers(http.headers),
        body=body,
    )


def validate_converse(chat: ChatRequest) -> None:
    """Bedrock's rules: a user message first, roles alternating, each ``toolResult`` answering a
    ``toolUse`` of the assistant message just before it, and every such ``toolUse`` answered;
    ``toolConfig`` is required once the history holds tool blocks."""
    turns = wire_turns(chat.messages)
    if not turns or turns[0][1] != "user":
        raise ProviderError(
            400,
            "A conversation must start with a user message. Try again with a conversation that starts with a "
            "user message.",
        )
    has_tool_blocks = False
    previous: list[str] = []
    for n, (index, role, msgs) in enumerate(turns):
        if n and turns[n - 1][1] == role:
            raise ProviderError(
                400,
                "A conversation must alternate between user and assistant roles. Make sure the conversation "
                "alternates between user and assistant roles and try again.",
            )
        results = [m.tool_result.call_id for m in msgs if m.tool_result is not None]
        if results:
            has_tool_blocks = True
            if len(results) > len(previous):
                raise ProviderError(
                    400,
                    f"The number of toolResult blocks at messages.{index}.content exceeds the number of toolUse "
                    "blocks of previous turn.",
                )
            unknown = [r for r in results if r not in previous]
            if unknown:
                raise ProviderError(
                    400,
                    f"messages.{index}.content: toolResult toolUseId {unknown[0]} answers no toolUse block of "
                    f"messages.{turns[n - 1][0]} (its toolUse ids: {', '.join(previous) or 'none'}).",
                )
        if previous:
            missing = [c for c in previous if c not in results]
            if missing:
                raise ProviderError(
                    400,
                    f"Expected toolResult blocks at messages.{index}.content for the following Ids: "
                    + ", ".join(missing),
                )
        previous = [c.id for m in msgs for c in m.tool_calls if c.id is not None]
        has_tool_blocks = has_tool_blocks or bool(previous)
    if has_tool_blocks and not chat.tools and not (isinstance(chat.body, dict) and "toolConfig" in chat.body):
        raise ProviderError(
            400, "The toolConfig field must be defined when using toolUse and toolResult content blocks."
        )


# ---------------------------------------------------------------- Converse replies


def _stop_reason(plan: MessagePlan) -> str:
    return "content_filtered" if plan.refusal is not None else STOP_REASONS.get(plan.finish, "end_turn")


def _usage(plan: MessagePlan) -> dict[str, Any]:
    """Converse's usage; ``serverToolUsage`` is empty (no server-side tools ran), as Bedrock sends it."""
    return {
        "inputTokens": plan.input_tokens,
        "outputTokens": plan.output_tokens,
        "serverToolUsage": {},
        "totalTokens": plan.input_tokens + plan.output_tokens,
    }


def tool_use_id(call: PlannedToolCall) -> str:
    return call.id_for("tooluse_", 22)


def _input(call: PlannedToolCall) -> tuple[Any, str, tuple[str, ...]]:
    """A call's input, its JSON text and streamed pieces; `tool call NAME null` sends ``{}`` (Converse
    inputs are JSON objects in practice; the SDKs that read them expect one)."""
    if call.arguments is None:
        return {}, "{}", ("{}",)
    return call.arguments, call.arguments_json, pieces(call.argument_chunks, call.arguments_json)


def render_converse(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    headers = (("x-amzn-requestid", request_id(ctx)),)
    if chat.stream:
        return event_stream(events.stream_frames(plan, _Framer(plan), interleave=False), headers)
    content: list[dict[str, Any]] = []
    if plan.thinking is not None:
        reasoning = {"reasoningText": {"text": plan.thinking, "signature": signature(plan.thinking)}}
        content.append({"reasoningContent": reasoning})
    text = plan.text or plan.refusal or ""  # the refusal's wording when there is no text
    if text:
        content.append({"text": text})
    for call in plan.tool_calls:
        content.append({"toolUse": {"toolUseId": tool_use_id(call), "name": call.name, "input": _input(call)[0]}})
    payload = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _stop_reason(plan),
        "usage": _usage(plan),
        "metrics": {"latencyMs": latency_ms(plan)},
    }
    return Rendered(status=200, media_type=JSON_MEDIA, headers=headers, body=json_bytes(payload))


class _Framer(events.Blocks):
    """``messageStart``; per content block its deltas and ``contentBlockStop`` (reasoning text then its
    signature; the text -- or the refusal's wording when there is no text; each tool call opened by
    ``contentBlockStart`` with its id and name, then ``toolUse.input`` pieces); ``messageStop`` with the
    stop reason; ``metadata`` with usage and metrics. Each message carries Bedrock's ``p`` padding."""

    def __init__(self, plan: MessagePlan) -> None:
        super().__init__()  # a block is open once it has had a delta
        self.plan = plan
        self.sent = 0  # messages so far (the padding varies with it)

    def add(self, kind: str, payload: dict[str, Any], content: bool = False) -> Frame:
        frame = event_frame(kind, payload, self.sent, content)
        self.sent += 1
        return frame

    def delta(self, delta: dict[str, Any], content: bool = True) -> Frame:
        self.open = True
        return self.add("contentBlockDelta", {"contentBlockIndex": self.index, "delta": delta}, content)

    def stop(self) -> Frame:
        return self.closed(self.add("contentBlockStop", {"contentBlockIndex": self.index}))

    def frame(self, event: events.Event) -> list[Frame]:
        plan = self.plan
        match event:
            case events.Start():
                return [self.add("messageStart", {"role": "assistant"})]
            case events.ThinkingDelta(text=piece):
                return [self.delta({"reasoningContent": {"text": piece}})]
            case events.ThinkingEnd(text=thinking):
                return [self.delta({"reasoningContent": {"signature": signature(thinking)}}, False), self.stop()]
            case events.TextDelta(text=piece):
                return [self.delta({"text": piece})]
            case events.TextEnd():
                return [self.stop()] if self.open else []
            case events.Refusal(text=refusal) if not plan.text:  # the refusal's wording, in one piece
                return [self.delta({"text": refusal}), self.stop()]
            case events.ToolCallStart(call=call):
                start = {"toolUse": {"toolUseId": tool_use_id(call), "name": call.name}}
                frames = [self.add("contentBlockStart", {"contentBlockIndex": self.index, "start": start})]
                if call.arguments is None:  # `tool call NAME null`: the input is an object
                    frames.append(self.delta({"toolUse": {"input": "{}"}}))
                return frames
            case events.ToolArgsDelta(call=call, text=piece) if call.arguments is not None:
                return [self.delta({"toolUse": {"input": piece}})]
            case events.ToolCallEnd():
                return [self.stop()]
            case events.Finish():
                return [self.add("messageStop", {"stopReason": _stop_reason(plan)})]
            case events.Usage():
                return [self.add("metadata", {"usage": _usage(plan), "metrics": {"latencyMs": latency_ms(plan)}})]
        return []


__all__ = ["parse_converse", "render_converse", "validate_converse"]
