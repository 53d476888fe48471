"""OpenAI Responses API, ``POST /v1/responses`` (docs/providers/responses.md): request parsing, history checks, and
the reply as one ``response`` object or as the typed SSE event sequence the SDK's stream state expects.

Error events mid-stream carry both the documented flat shape (``type``, ``code``, ``message``,
``param``) and the nested ``error`` object the live API actually sends; the nested object is what makes
the ``openai`` SDK's stream decoder raise ``APIError`` instead of yielding the event silently.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import attrs

from mockllm.runtime.providers import common, events
from mockllm.runtime.providers.base import BaseAdapter, Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.openai_chat import obfuscation, reply_headers, wants_obfuscation
from mockllm.runtime.providers.parts import from_base64, from_url
from mockllm.runtime.reply import tokens
from mockllm.runtime.reply.ids import hex_id
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import (
    Attachment,
    ChatRequest,
    Continuation,
    HttpRequest,
    Message,
    Provider,
    Role,
    Tool,
    ToolCall,
    ToolResult,
    resolve_tool_names,
)
from mockllm.runtime.values import fast_frozen

__all__ = ["ResponsesAdapter", "resolve_tool_names"]

_JSON = "application/json"
_SSE = common.SSE_UTF8_MEDIA

_NO_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header using "
    "Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if "
    "you're accessing the API from your browser and are prompted for a username and password. You can "
    "obtain an API key from https://platform.openai.com/account/api-keys."
)

_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_SKIPPED_PARTS = frozenset({"input_image", "input_file", "input_audio"})
# Input items that carry nothing a scenario condition reads; accepted and left out of the messages.
_SKIPPED_ITEMS = frozenset(
    {
        "reasoning",
        "item_reference",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "custom_tool_call",
        "custom_tool_call_output",
        "compaction",
    }
)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


class _Fields(common.BodyReader):
    """OpenAI Responses' wording: ``Invalid type for '<param>': expected …, but got … instead.``, with
    the field as ``param`` and OpenAI's codes."""

    code = "invalid_value"

    def kind(self, value: Any) -> str:
        return common.kind(value, integers=True)

    def bad_json(self, problem: str) -> ProviderError:
        message = f"We could not parse the JSON body of your request: {problem}. The OpenAI API expects a JSON payload."
        return ProviderError(400, message)

    def not_object(self, value: Any) -> ProviderError:
        return self.bad(f"Invalid type for the request body: expected an object, but got {self.kind(value)} instead.")

    def wrong_type(self, where: str, expected: str, value: Any) -> ProviderError:
        message = f"Invalid type for '{where}': expected {expected}, but got {self.kind(value)} instead."
        return self.bad(message, where, "invalid_type")

    def missing(self, where: str) -> ProviderError:
        return self.bad(f"Missing required parameter: '{where}'.", where, "missing_required_parameter")


FIELDS = _Fields()

#: answers are kept under their response id for ``previous_response_id``, with the call ids sent
CONTINUATION = Continuation(
    kept_id=lambda response_id: response_id,
    call_prefix="call_",
    call_length=24,
    lost_status=400,
    lost_message="Previous response with id '{id}' not found.",
)


def _unknown_type(where: str, kind: str | None, supported: str) -> ProviderError:
    """The error for an item or part whose ``type`` is missing or not one the API knows."""
    if kind is None:
        return FIELDS.missing(f"{where}.type")
    message = f"Invalid value for '{where}.type': {json.dumps(kind)}. Supported values are: {supported}."
    return FIELDS.bad(message, f"{where}.type")


def _parse_arguments(text: str) -> Any:
    return common.parse_json_arguments(text)


def _content_text(content: Any, param: str, allow_refusal: bool = True) -> str:
    """The text of a message's ``content``: a string, or the text parts of a list joined with newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise FIELDS.wrong_type(param, "a string or an array of content parts", content)
    texts: list[str] = []
    for i, part in enumerate(content):
        where = f"{param}[{i}]"
        if not isinstance(part, dict):
            raise FIELDS.wrong_type(where, "an object", part)
        kind = part.get("type")
        if kind is not None and not isinstance(kind, str):
            raise FIELDS.wrong_type(f"{where}.type", "a string", kind)
        if kind in _TEXT_PARTS:
            texts.append(FIELDS.req_str(part, "text", where))
        elif kind == "refusal" and allow_refusal:
            texts.append(FIELDS.req_str(part, "refusal", where))
        elif kind not in _SKIPPED_PARTS:
            raise _unknown_type(where, kind, "'input_text', 'input_image', 'input_file', 'output_text' and 'refusal'")
    return "\n".join(texts)


def _assistant_parts(content: Any, param: str) -> None:
    """An assistant message holds what the model said (``output_text``, ``refusal``): an image, file
    or audio part there gets the API's 400 (``Invalid value: 'input_image'. Supported values are:
    'output_text' and 'refusal'.``)."""
    if not isinstance(content, list):
        return
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _SKIPPED_PARTS:
            message = f"Invalid value: '{kind}'. Supported values are: 'output_text' and 'refusal'."
            raise FIELDS.bad(message, f"{param}[{i}]", code="invalid_value")


def _attachments(content: Any) -> tuple[Attachment, ...]:
    """The ``input_image``, ``input_audio`` and ``input_file`` parts of a message's content."""
    if not isinstance(content, list):
        return ()
    found: list[Attachment] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "input_image":
            url = part.get("image_url")
            found.append(from_url(url, "image") if isinstance(url, str) else Attachment("image"))
        elif kind == "input_file":
            data = part.get("file_data")
            found.append(from_url(data, "file") if isinstance(data, str) else Attachment("file"))
        elif kind == "input_audio":
            audio = part.get("input_audio")
            data = audio.get("data") if isinstance(audio, dict) else None
            fmt = audio.get("format") if isinstance(audio, dict) else None
            media = f"audio/{fmt}" if isinstance(fmt, str) else "audio/*"
            found.append(from_base64(data, "audio", media) if isinstance(data, str) else Attachment("audio"))
    return tuple(found)


@fast_frozen
class _Parsed:
    messages: tuple[Message, ...]
    system: tuple[str, ...]


def _parse_input(value: Any) -> _Parsed:
    if value is None:
        return _Parsed((), ())
    if isinstance(value, str):
        return _Parsed((Message(role="user", text=value),), ())
    if not isinstance(value, list):
        raise FIELDS.wrong_type("input", "a string or an array of input items", value)
    names: dict[str, str] = {}
    for item in value:
        if isinstance(item, dict) and item.get("type") == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                names.setdefault(call_id, name)
    messages: list[Message] = []
    system: list[str] = []
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise FIELDS.wrong_type(where, "an object", item)
        kind = item.get("type", "message" if "role" in item else None)
        if kind is not None and not isinstance(kind, str):
            raise FIELDS.wrong_type(f"{where}.type", "a string", kind)
        if kind == "message":
            role_name = FIELDS.req_str(item, "role", where)
            role = _ROLES.get(role_name)
            if role is None:
                raise FIELDS.bad(
                    f"Invalid value for '{where}.role': {json.dumps(role_name)}. Supported values are: 'user', "
                    "'assistant', 'system', and 'developer'.",
                    f"{where}.role",
                )
            if "content" not in item:
                raise FIELDS.missing(f"{where}.content")
            if role == "assistant":
                _assistant_parts(item["content"], f"{where}.content")
            text = _content_text(item["content"], f"{where}.content")
            if role == "system":
                system.append(text)
            messages.append(Message(role=role, text=text, index=i, attachments=_attachments(item["content"])))
        elif kind == "function_call":
            call_id = FIELDS.req_str(item, "call_id", where)
            name = FIELDS.req_str(item, "name", where)
            arguments = FIELDS.req_str(item, "arguments", where)
            call = ToolCall(id=call_id, name=name, arguments=_parse_arguments(arguments))
            if messages and messages[-1].role == "assistant":
                last = messages[-1]
                messages[-1] = attrs.evolve(last, tool_calls=(*last.tool_calls, call))
            else:
                messages.append(Message(role="assistant", tool_calls=(call,), index=i))
        elif kind == "function_call_output":
            call_id = FIELDS.req_str(item, "call_id", where)
            if "output" not in item:
                raise FIELDS.missing(f"{where}.output")
            output = _content_text(item["output"], f"{where}.output", allow_refusal=False)
            result = ToolResult(call_id=call_id, name=names.get(call_id), content=output)
            messages.append(Message(role="tool", tool_result=result, index=i))
        elif kind not in _SKIPPED_ITEMS:
            supported = "'message', 'function_call', 'function_call_output', 'reasoning' and 'item_reference'"
            raise _unknown_type(where, kind, supported)
    return _Parsed(tuple(messages), tuple(system))


def _parse_tools(value: Any) -> tuple[Tool, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FIELDS.wrong_type("tools", "an array", value)
    tools: list[Tool] = []
    for i, spec in enumerate(value):
        where = f"tools[{i}]"
        if not isinstance(spec, dict):
            raise FIELDS.wrong_type(where, "an object", spec)
        kind = FIELDS.req_str(spec, "type", where)
        if kind != "function":
            continue  # built-in tools (web_search, file_search, ...) are not callable functions
        name = FIELDS.req_str(spec, "name", where)
        description = FIELDS.opt_str(spec, "description", where) or ""
        parameters = spec.get("parameters")
        if parameters is None:
            parameters = {}
        if not isinstance(parameters, dict):
            raise FIELDS.wrong_type(f"{where}.parameters", "an object", parameters)
        tools.append(Tool(name=name, description=description, parameters=parameters))
    return tuple(tools)


def _instructions(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(m.text for m in _parse_input(value).messages)
    raise FIELDS.wrong_type("instructions", "a string", value)


class ResponsesAdapter(BaseAdapter):
    provider: Provider = "responses"

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        auth = http.headers.get("authorization", "")
        scheme, _, key = auth.strip().partition(" ")
        if scheme.lower() == "bearer" and key.strip():
            return None
        return ProviderError(401, _NO_KEY)

    def parse(self, http: HttpRequest) -> ChatRequest:
        data = FIELDS.load_body(http.body)
        model = FIELDS.req_str(data, "model", "")
        stream = data.get("stream")
        if stream is not None and not isinstance(stream, bool):
            raise FIELDS.wrong_type("stream", "a boolean", stream)
        previous = FIELDS.opt_str(data, "previous_response_id", "")
        if "input" not in data and previous is None and data.get("instructions") is None:
            raise FIELDS.missing("input")
        instructions = _instructions(data.get("instructions"))
        parsed = _parse_input(data.get("input"))
        system = ((instructions,) if instructions else ()) + parsed.system
        return ChatRequest(
            provider=self.provider,
            endpoint=http.path,
            model=model,
            stream=bool(stream),
            messages=parsed.messages,
            system="\n".join(system),
            tools=_parse_tools(data.get("tools")),
            headers=dict(http.headers),
            body=data,
            previous_response_id=previous,
            continuation=CONTINUATION,
        )

    def validate_history(self, chat: ChatRequest) -> None:
        if chat.previous_response_id is not None:
            return  # earlier calls live in the stored response the engine prepends
        seen: set[str] = set()
        for m in chat.messages:
            for call in m.tool_calls:
                if call.id is not None:
                    seen.add(call.id)
            result = m.tool_result
            if result is not None and result.call_id not in seen:
                raise ProviderError(
                    400,
                    f"No tool call found for function call output with call_id {result.call_id} (input[{m.index}]).",
                    param="input",
                )

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        headers = reply_headers(plan, ctx)
        if chat.stream:
            return Rendered(200, _SSE, headers=headers, frames=events.stream_frames(plan, _Framer(plan, chat, ctx)))
        output = [item for item, _ in _output(plan, chat, ctx.response_id)]
        return Rendered(
            200, _JSON, headers=headers, body=common.json_bytes(_response(plan, chat, ctx, output, final=True))
        )

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
        return Rendered(status, _JSON, headers=(("x-request-id", ctx.request_id),), body=common.json_bytes(body))

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        """The ``error`` event, numbered like every other event (``sequence`` = events sent before it:
        the Vercel AI SDK rejects an event without ``sequence_number``)."""
        error = {"type": "server_error", "code": "server_error", "message": message, "param": None}
        payload = {
            "type": "error",
            "code": "server_error",
            "message": message,
            "param": None,
            "sequence_number": sequence,
            "error": error,
        }
        return _event("error", payload)


# ---- rendering ----


def _status(plan: MessagePlan) -> tuple[str, dict[str, str] | None]:
    if plan.finish == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if plan.finish == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def _usage(plan: MessagePlan) -> dict[str, Any]:
    reasoning = min(tokens.estimate(plan.thinking), plan.output_tokens) if plan.thinking else 0
    return {
        "input_tokens": plan.input_tokens,
        "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
        "output_tokens": plan.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": plan.input_tokens + plan.output_tokens,
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message_parts(plan: MessagePlan) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if plan.text or not plan.refusal:
        parts.append(_text_part(plan.text))
    if plan.refusal:
        parts.append({"type": "refusal", "refusal": plan.refusal})
    return parts


def _wants_summary(chat: ChatRequest) -> bool:
    """Whether the request asked for a reasoning summary (``reasoning.summary``): only then does the
    real API stream summary events and fill the item's ``summary``."""
    body = chat.body if isinstance(chat.body, dict) else {}
    reasoning = body.get("reasoning")
    return isinstance(reasoning, dict) and reasoning.get("summary") not in (None, "none")


def _wants_encrypted(chat: ChatRequest) -> bool:
    body = chat.body if isinstance(chat.body, dict) else {}
    include = body.get("include")
    return isinstance(include, list) and "reasoning.encrypted_content" in include


def encrypted_reasoning(thinking: str) -> str:
    """An opaque stand-in for the encrypted reasoning the real API returns with
    ``include: ["reasoning.encrypted_content"]`` (same ``gAAAAA`` url-safe base64 look)."""
    digest = hashlib.sha256(thinking.encode("utf-8", "surrogatepass")).digest()
    return "gAAAAAB" + base64.urlsafe_b64encode(digest * 4).decode()


def _reasoning_item(plan: MessagePlan, chat: ChatRequest, rid: str) -> dict[str, Any]:
    item: dict[str, Any] = {"id": item_id("rs_", rid, 0), "type": "reasoning", "content": []}
    if _wants_encrypted(chat):
        item["encrypted_content"] = encrypted_reasoning(plan.thinking or "")
    item["summary"] = [{"type": "summary_text", "text": plan.thinking}] if _wants_summary(chat) else []
    return item


def _message_item(plan: MessagePlan, rid: str) -> dict[str, Any]:
    status = "completed" if plan.finish in ("stop", "tool_calls") else "incomplete"
    return {
        "id": item_id("msg_", rid, 1),
        "type": "message",
        "status": status,
        "content": _message_parts(plan),
        # `commentary` for text said before tool calls, `final_answer` for the answer itself
        "phase": "commentary" if plan.tool_calls else "final_answer",
        "role": "assistant",
    }


def _call_item(call: PlannedToolCall, rid: str, i: int) -> dict[str, Any]:
    return {
        "id": item_id("fc_", rid, 2 + i),
        "type": "function_call",
        "status": "completed",
        "arguments": call.arguments_json,
        "call_id": call.id_for("call_"),
        "name": call.name,
    }


def item_id(prefix: str, rid: str, index: int) -> str:
    """``msg_``/``fc_``/``rs_`` + 50 hex digits, like the response id (the first output item of a
    response shares its first digits, as the real API's do)."""
    return prefix + (rid[:16] + hex_id(rid, index, 50))[:50]


_Item = tuple[dict[str, Any], PlannedToolCall | None]


def _output(plan: MessagePlan, chat: ChatRequest, rid: str) -> list[_Item]:
    """The final output items in order, each with the planned call it renders (None for others)."""
    items: list[_Item] = []
    if plan.thinking:
        items.append((_reasoning_item(plan, chat, rid), None))
    if plan.text or plan.refusal or not plan.tool_calls:
        items.append((_message_item(plan, rid), None))
    items.extend((_call_item(call, rid, i), call) for i, call in enumerate(plan.tool_calls))
    return items


_REASONING_MODELS = ("gpt-5", "o1", "o3", "o4", "codex")


def _reasoning(model: str, requested: Any) -> dict[str, Any]:
    """``reasoning`` as the real API echoes it: the requested effort, else ``medium`` for reasoning
    models and null for the others; the requested summary, else null."""
    asked = requested if isinstance(requested, dict) else {}
    default = "medium" if model.startswith(_REASONING_MODELS) else None
    return {
        "context": "current_turn",
        "effort": asked.get("effort", default),
        "mode": "standard",
        "summary": asked.get("summary"),
    }


def _tools_echo(value: Any) -> list[Any]:
    """The request's tools as the response lists them: function tools with every field, an empty
    description as null."""
    if not isinstance(value, list):
        return []
    out: list[Any] = []
    for tool in value:
        if isinstance(tool, dict) and tool.get("type") == "function":
            out.append(
                {
                    "type": "function",
                    "description": tool.get("description") or None,
                    "name": tool.get("name"),
                    "output_schema": tool.get("output_schema"),
                    "parameters": tool.get("parameters"),
                    "strict": tool.get("strict", True),
                }
            )
        else:
            out.append(tool)
    return out


def _tool_usage() -> dict[str, Any]:
    details = {"image_tokens": 0, "text_tokens": 0}
    image_gen = {
        "input_tokens": 0,
        "input_tokens_details": dict(details),
        "output_tokens": 0,
        "output_tokens_details": dict(details),
        "total_tokens": 0,
    }
    return {"image_gen": image_gen, "web_search": {"num_requests": 0}}


def _response(
    plan: MessagePlan, chat: ChatRequest, ctx: RenderContext, output: list[dict[str, Any]], final: bool
) -> dict[str, Any]:
    """The Response object with every field the 2026 API sends, request settings echoed."""
    body: Mapping[str, Any] = chat.body if isinstance(chat.body, dict) else {}
    status, incomplete = _status(plan) if final else ("in_progress", None)

    def echo(key: str, default: Any) -> Any:
        value = body.get(key)
        return default if value is None else value

    text = echo("text", {})
    text = {"format": {"type": "text"}, "verbosity": "medium", **(text if isinstance(text, dict) else {})}
    return {
        "id": f"resp_{ctx.response_id}",
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "background": echo("background", False),
        "completed_at": ctx.created if final else None,
        "error": None,
        "frequency_penalty": echo("frequency_penalty", 0.0),
        "incomplete_details": incomplete,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "model": plan.model,
        "moderation": None,
        "output": output,
        "parallel_tool_calls": echo("parallel_tool_calls", True),
        "presence_penalty": echo("presence_penalty", 0.0),
        "previous_response_id": chat.previous_response_id,
        "prompt_cache_key": body.get("prompt_cache_key"),
        "prompt_cache_retention": echo("prompt_cache_retention", "24h"),
        "reasoning": _reasoning(plan.model, body.get("reasoning")),
        "safety_identifier": body.get("safety_identifier"),
        "service_tier": "default" if final else echo("service_tier", "auto"),
        "store": echo("store", True),
        "temperature": echo("temperature", 1.0),
        "text": text,
        "tool_choice": echo("tool_choice", "auto"),
        "tool_usage": _tool_usage(),
        "tools": _tools_echo(body.get("tools")),
        "top_logprobs": echo("top_logprobs", 0),
        "top_p": echo("top_p", 1.0),
        "truncation": echo("truncation", "disabled"),
        "usage": _usage(plan) if final else None,
        "user": body.get("user"),
        "metadata": echo("metadata", {}),
    }


def _event(kind: str, payload: Mapping[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + common.json_bytes(payload) + b"\n\n"


class _Events:
    """Collects stream events, numbering them in order; deltas get the real API's ``obfuscation``
    padding unless the request turned it off."""

    def __init__(self, pad: bool) -> None:
        self.frames: list[Frame] = []
        self.pad = pad

    def add(self, kind: str, content: bool = False, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": len(self.frames), **fields}
        if self.pad and kind in _PADDED:
            payload["obfuscation"] = obfuscation(str(fields.get("delta", "")))
        self.frames.append(Frame(_event(kind, payload), content=content))


_PADDED = frozenset({"response.output_text.delta", "response.function_call_arguments.delta"})


class _Framer:
    """Typed, numbered events: the response created and in progress; each output item added, its
    parts and deltas (reasoning summary only when asked for; a refusal in one delta), done; the
    response completed (or incomplete) with the whole output."""

    def __init__(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> None:
        self.plan = plan
        self.chat = chat
        self.ctx = ctx
        self.ev = _Events(wants_obfuscation(chat))
        self.final = _output(plan, chat, ctx.response_id)
        self.summary = _wants_summary(chat)
        self.reasoning: tuple[int, dict[str, Any]] | None = None
        self.message: tuple[int, dict[str, Any]] | None = None
        self.calls: dict[int, tuple[int, dict[str, Any]]] = {}
        for index, (item, call) in enumerate(self.final):
            if call is not None:
                self.calls[len(self.calls)] = (index, item)
            elif item["type"] == "reasoning":
                self.reasoning = (index, item)
            else:
                self.message = (index, item)

    def frame(self, event: events.Event) -> list[Frame]:
        before = len(self.ev.frames)
        self._add(event)
        return self.ev.frames[before:]

    def _add(self, event: events.Event) -> None:
        ev, plan = self.ev, self.plan
        match event:
            case events.Start():
                ev.add("response.created", response=_response(plan, self.chat, self.ctx, [], final=False))
                ev.add("response.in_progress", response=_response(plan, self.chat, self.ctx, [], final=False))
            case events.ThinkingStart() | events.ThinkingDelta() | events.ThinkingEnd() if self.reasoning is not None:
                self._reasoning(event, *self.reasoning)
            case events.TextStart() | events.TextDelta() | events.TextEnd() | events.Refusal() if (
                self.message is not None
            ):
                self._message(event, *self.message)
            case events.ToolCallStart(index=i):
                index, item = self.calls[i]
                added = {**item, "arguments": "", "status": "in_progress"}
                ev.add("response.output_item.added", output_index=index, item=added)
            case events.ToolArgsDelta(index=i, text=piece):
                index, item = self.calls[i]
                ids = {"item_id": item["id"], "output_index": index}
                ev.add("response.function_call_arguments.delta", content=True, **ids, delta=piece)
            case events.ToolCallEnd(index=i, call=call):
                index, item = self.calls[i]
                ids = {"item_id": item["id"], "output_index": index}
                ev.add("response.function_call_arguments.done", **ids, arguments=call.arguments_json)
                ev.add("response.output_item.done", output_index=index, item=item)
            case events.End():
                output = [item for item, _ in self.final]
                done = _response(plan, self.chat, self.ctx, output, final=True)
                ev.add("response.completed" if done["status"] == "completed" else "response.incomplete", response=done)

    def _reasoning(self, event: events.Event, index: int, item: dict[str, Any]) -> None:
        ev = self.ev
        ids = {"item_id": item["id"], "output_index": index, "summary_index": 0}
        match event:
            case events.ThinkingStart():
                ev.add("response.output_item.added", output_index=index, item={**item, "summary": []})
                if self.summary:  # the real API streams no summary events unless `reasoning.summary` asked
                    ev.add("response.reasoning_summary_part.added", **ids, part={"type": "summary_text", "text": ""})
            case events.ThinkingDelta(text=piece) if self.summary:
                ev.add("response.reasoning_summary_text.delta", content=True, **ids, delta=piece)
            case events.ThinkingEnd(text=thinking):
                if self.summary:
                    ev.add("response.reasoning_summary_text.done", **ids, text=thinking)
                    part = {"type": "summary_text", "text": thinking}
                    ev.add("response.reasoning_summary_part.done", **ids, part=part)
                ev.add("response.output_item.done", output_index=index, item=item)

    def _message(self, event: events.Event, index: int, item: dict[str, Any]) -> None:
        ev = self.ev
        parts: list[dict[str, Any]] = item["content"]
        text_part = 0 if parts[0]["type"] == "output_text" else None
        refusal_part = len(parts) - 1 if parts[-1]["type"] == "refusal" else None

        def ids(part_index: int) -> dict[str, Any]:
            return {"item_id": item["id"], "output_index": index, "content_index": part_index}

        match event:
            case events.TextStart():
                added = {**item, "status": "in_progress", "content": []}
                ev.add("response.output_item.added", output_index=index, item=added)
                if text_part is not None:
                    ev.add("response.content_part.added", **ids(text_part), part=_text_part(""))
            case events.TextDelta(text=piece) if text_part is not None:
                ev.add("response.output_text.delta", content=True, **ids(text_part), delta=piece, logprobs=[])
            case events.TextEnd(text=text):
                if text_part is not None:
                    ev.add("response.output_text.done", **ids(text_part), text=text, logprobs=[])
                    ev.add("response.content_part.done", **ids(text_part), part=parts[text_part])
                if refusal_part is None:
                    ev.add("response.output_item.done", output_index=index, item=item)
            case events.Refusal(text=refusal) if refusal_part is not None:
                at = ids(refusal_part)
                ev.add("response.content_part.added", **at, part={"type": "refusal", "refusal": ""})
                ev.add("response.refusal.delta", content=True, **at, delta=refusal)
                ev.add("response.refusal.done", **at, refusal=refusal)
                ev.add("response.content_part.done", **at, part=parts[refusal_part])
                ev.add("response.output_item.done", output_index=index, item=item)
