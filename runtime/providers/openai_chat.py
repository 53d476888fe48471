"""OpenAI Chat Completions (`POST /v1/chat/completions`, `GET /v1/models`): request parsing, history
rules and response rendering, byte for byte as docs/providers/openai.md describes."""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from json.encoder import encode_basestring  # the string encoder json_text's encoder writes strings with
from typing import Any, Generic, TypeVar

from mockllm.runtime.providers import events, parts
from mockllm.runtime.providers.base import BaseAdapter, Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import (
    JSON_MEDIA,
    SSE_UTF8_MEDIA,
    FieldPath,
    as_int,
    as_object,
    bearer_token,
    error_type_for,
    invalid_value,
    json_bytes,
    json_response,
    json_text,
    load_json_object,
    lower_headers,
    objects,
    one_of,
    optional_bool,
    optional_list,
    optional_object,
    optional_str,
    parse_json_arguments,
    require,
    require_list,
    require_object,
    require_str,
    split_words,
    sse_frame,
    sse_raw_frame,
    stream_response,
    utf8_json,
    wrong_type,
)
from mockllm.runtime.reply.ids import chat_completion_id
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import Attachment, ChatRequest, HttpRequest, Message, Provider, Tool, ToolCall, ToolResult

ROLES = ("system", "developer", "user", "assistant", "tool")
SYSTEM_FINGERPRINT = "fp_mockllm"

NO_KEY_MESSAGE = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header using "
    "Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) "
    "if you're accessing the API from your browser and are prompted for a username and password. "
    "You can obtain an API key from https://platform.openai.com/account/api-keys."
)
TOOL_WITHOUT_CALL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
)
CALLS_WITHOUT_RESULTS = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)

ERROR_TYPES = {401: "invalid_request_error", 429: "requests"}
_ROOT = FieldPath()
ERROR_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}


# ---------------------------------------------------------------- parsing


def _content_text(value: Any, path: FieldPath, *, nullable: bool, allowed: tuple[str, ...] = ()) -> str:
    """A message's text: a string, or the text of its ``{type:"text"}`` parts joined with "\\n"
    (image, audio, file and refusal parts carry no text). ``allowed``: the part types the message's role
    takes (system and tool messages only text, assistant messages text and refusals), as the real API
    checks them; empty: any."""
    if value is None:
        if nullable:
            return ""
        raise wrong_type(path, "a string or an array of content parts", value)
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise wrong_type(path, "a string or an array of content parts", value)
    texts: list[str] = []
    for at, part in objects(value, path):
        kind = require_str(part, "type", at)
        if kind == "text":
            texts.append(require_str(part, "text", at))
        elif kind == "input_audio" and not allowed:  # (a user message: any part)
            _check_audio_format(part.get("input_audio"), at.key("input_audio"))
        elif allowed and kind not in allowed:
            supported = " and ".join(f"'{a}'" for a in allowed)
            raise ProviderError(
                400,
                f"Invalid value: '{kind}'. Supported values are: {supported}.",
                code="invalid_value",
                param=at.key("type").text,
            )
    return "\n".join(texts)


#: the formats an ``input_audio`` part may name
AUDIO_INPUT_FORMATS = ("wav", "mp3")


def _check_audio_format(audio: Any, path: FieldPath) -> None:
    """An ``input_audio`` part's ``format`` is wav or mp3, else the API's 400 (``Invalid value: 'webm'.
    Supported values are: 'wav' and 'mp3'.``, its param the format's path). Mistral's bare-string form
    names no format."""
    fmt = audio.get("format") if isinstance(audio, dict) else None
    if fmt is None or fmt in AUDIO_INPUT_FORMATS:
        return
    shown = fmt if isinstance(fmt, str) else json.dumps(fmt)
    raise ProviderError(
        400,
        f"Invalid value: '{shown}'. Supported values are: 'wav' and 'mp3'.",
        code="invalid_value",
        param=path.key("format").text,
    )


def content_attachments(value: Any) -> tuple[Attachment, ...]:
    """The images, audio and files of a message's content parts: OpenAI's ``image_url``
    (``{"url": …}``), ``input_audio`` (``{"data", "format"}``) and ``file`` (``{"file_data"}`` or
    ``{"file_id"}``) parts, and Mistral's and Cohere's spellings of them (``image_url`` and
    ``input_audio`` as bare strings, ``document_url``)."""
    if not isinstance(value, list):
        return ()
    found: list[Attachment] = []
    for part in value:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            found.append(parts.from_url(url if isinstance(url, str) else "", "image"))
        elif kind == "input_audio":
            audio = part.get("input_audio")
            if isinstance(audio, dict):
                fmt = audio.get("format")
                data = audio.get("data")
                media = f"audio/{fmt}" if isinstance(fmt, str) and fmt else "audio/*"
                found.append(parts.from_base64(data if isinstance(data, str) else "", "audio", media))
            else:
                found.append(parts.from_base64(audio if isinstance(audio, str) else "", "audio", "audio/*"))
        elif kind == "file":
            file = part.get("file")
            data = file.get("file_data") if isinstance(file, dict) else None
            found.append(parts.from_url(data, "file") if isinstance(data, str) else Attachment("file"))
        elif kind == "document_url":
            found.append(Attachment("file"))
    return tuple(found)


def _tool_calls(value: list[Any], path: FieldPath, object_arguments: bool = False) -> tuple[ToolCall, ...]:
    """A history's tool calls; ``object_arguments``: ``arguments`` may also be a JSON object (Mistral)."""
    calls: list[ToolCall] = []
    for at, call in objects(value, path):
        call_id = require_str(call, "id", at)
        kind = optional_str(call, "type", at) or "function"
        if kind == "custom":
            custom = require_object(call, "custom", at)
            name = require_str(custom, "name", at.key("custom"))
            calls.append(ToolCall(call_id, name, optional_str(custom, "input", at.key("custom")) or ""))
            continue
        if kind != "function":
            raise invalid_value(at.key("type"), f"'{kind}' is not one of 'function', 'custom'")
        function = require_object(call, "function", at)
        fn_at = at.key("function")
        name = require_str(function, "name", fn_at)
        arguments = require(function, "arguments", fn_at)
        if object_arguments and isinstance(arguments, dict):
            calls.append(ToolCall(call_id, name, arguments))
            continue
        calls.append(ToolCall(call_id, name, parse_json_arguments(require_str(function, "arguments", fn_at))))
    return tuple(calls)


def _tools(value: list[Any], path: FieldPath) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for at, tool in objects(value, path):
        kind = require_str(tool, "type", at)
        if kind not in ("function", "custom"):
            raise invalid_value(at.key("type"), f"'{kind}' is not one of 'function', 'custom'")
        spec = require_object(tool, kind, at)
        spec_at = at.key(kind)
        name = require_str(spec, "name", spec_at)
        description = optional_str(spec, "description", spec_at) or ""
        parameters = optional_object(spec, "parameters", spec_at) if kind == "function" else None
        tools.append(Tool(name, description, parameters or {}))
    return tuple(tools)


def _messages(
    raw_messages: list[Any], path: FieldPath, object_arguments: bool = False
) -> tuple[list[Message], list[str]]:
    messages: list[Message] = []
    system: list[str] = []
    call_names: dict[str, str] = {}
    for i, raw in enumerate(raw_messages):
        if type(raw) is dict:  # a user or system message with text content, checked inline (no paths built)
            content = raw.get("content")
            if type(content) is str:
                role = raw.get("role")
                if role == "user":
                    messages.append(Message("user", content, index=i))
                    continue
                if role == "system" or role == "developer":
                    system.append(content)
                    messages.append(Message("system", content, index=i))
                    continue
        at = path.at(i)
        obj = as_object(raw, at)
        role = one_of(require(obj, "role", at), ROLES, at.key("role"))
        content = obj.get("content")
        if role in ("system", "developer"):
            require(obj, "content", at)
            text = _content_text(content, at.key("content"), nullable=False, allowed=("text",))
            system.append(text)
            messages.append(Message("system", text, index=i))
        elif role == "user":
            require(obj, "content", at)
            text = content if isinstance(content, str) else _content_text(content, at.key("content"), nullable=False)
            messages.append(Message("user", text, index=i, attachments=content_attachments(content)))
        elif role == "assistant":
            text = _content_text(content, at.key("content"), nullable=True, allowed=("text", "refusal"))
            raw_calls = optional_list(obj, "tool_calls", at)
            calls = _tool_calls(raw_calls, at.key("tool_calls"), object_arguments) if raw_calls else ()
            for call in calls:
                if call.id is not None:
                    call_names[call.id] = call.name
            messages.append(Message("assistant", text, tool_calls=calls, index=i))
        else:  # tool
            call_id = require_str(obj, "tool_call_id", at)
            require(obj, "content", at)
            text = _content_text(content, at.key("content"), nullable=False, allowed=("text",))
            result = ToolResult(call_id, call_names.get(call_id), text)
            messages.append(Message("tool", text, tool_result=result, index=i))
    return messages, system


# ---------------------------------------------------------------- rendering helpers


def _usage(plan: MessagePlan) -> dict[str, Any]:
    return {
        "prompt_tokens": plan.input_tokens,
        "completion_tokens": plan.output_tokens,
        "total_tokens": plan.input_tokens + plan.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _call_json(call: PlannedToolCall) -> dict[str, Any]:
    return {
        "id": call.id_for("call_"),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json},
    }


def _has_content(plan: MessagePlan) -> bool:
    """Whether ``content`` is a string rather than null: text present, or nothing else to say."""
    return bool(plan.text) or (not plan.tool_calls and plan.refusal is None)


def _headers(ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    return (("x-request-id", ctx.request_id),)


def reply_headers(plan: MessagePlan, ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    """What the real API sends with every answer: the request id, the processing time (here: the
    scripted latency) and the API version."""
    return (
        ("x-request-id", ctx.request_id),
        ("openai-processing-ms", str(round(plan.latency_s * 1000))),
        ("openai-version", "2020-10-01"),
    )


_PAD = "Xq7Lr2Vb9Tk4Wz1Mn8Pd5Hs3Gc6Jf0Ya"


def obfuscation(piece: str) -> str:
    """The padding the real API adds to each streamed delta so that chunk sizes do not reveal the text
    (``stream_options.include_obfuscation: false`` turns it off): letters and digits bringing the
    piece to about 16 characters."""
    return _PAD[: max(2, 16 - len(piece))]


def wants_obfuscation(chat: ChatRequest) -> bool:
    body = chat.body if isinstance(chat.body, dict) else {}
    options = body.get("stream_options")
    return not (isinstance(options, dict) and options.get("include_obfuscation") is False)


def completion_payload(plan: MessagePlan, ctx: RenderContext) -> dict[str, Any]:
    """The non-streamed chat completion as a JSON value (what :func:`_completion_bytes` encodes)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": plan.text if _has_content(plan) else None,
        "refusal": plan.refusal,
        "annotations": [],
    }
    if plan.tool_calls:
        message["tool_calls"] = [_call_json(c) for c in plan.tool_calls]
    return {
        "id": chat_completion_id(ctx.response_id),
        "object": "chat.completion",
        "created": ctx.created,
        "model": plan.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "service_tier": "default",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": plan.finish}],
        "usage": _usage(plan),
    }


_USAGE_TAIL = (
    ',"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":'
    '{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}'
)


def _completion_bytes(plan: MessagePlan, ctx: RenderContext) -> bytes:
    """``json_bytes(completion_payload(plan, ctx))``, byte for byte, assembled from its pieces: only the
    strings are encoded (by the encoder ``json.dumps`` uses), the fixed parts are written once, here.
    Everything after ``created`` depends on the plan alone: it is written once per plan and reused
    while the plan is (a static reply's plan is, request after request)."""
    created = ctx.created
    if type(created) is not int:
        return json_bytes(completion_payload(plan, ctx))  # not a plain int: let the encoder decide
    tail = _COMPLETION_TAILS.get(plan)
    if tail is None:
        tail = _completion_tail(plan)
        if tail is None:
            return json_bytes(completion_payload(plan, ctx))
        _COMPLETION_TAILS.put(plan, tail, len(tail))
    head = f'{{"id":"{chat_completion_id(ctx.response_id)}","object":"chat.completion","created":{created}'
    return head.encode("ascii") + tail


def _completion_tail(plan: MessagePlan) -> bytes | None:
    """What follows ``created`` in the completion of ``plan``; None when a count is not a plain int."""
    inp, out = plan.input_tokens, plan.output_tokens
    if type(inp) is not int or type(out) is not int:
        return None
    content = json_text(plan.text) if _has_content(plan) else "null"
    refusal = json_text(plan.refusal) if plan.refusal is not None else "null"
    calls = f',"tool_calls":{json_text([_call_json(c) for c in plan.tool_calls])}' if plan.tool_calls else ""
    text = (
        f',"model":{json_text(plan.model)},"system_fingerprint":"{SYSTEM_FINGERPRINT}","service_tier":"default",'
        f'"choices":[{{"index":0,"message":{{"role":"assistant","content":{content},"refusal":{refusal},'
        f'"annotations":[]{calls}}},"logprobs":null,"finish_reason":{json_text(plan.finish)}}}],'
        f'"usage":{{"prompt_tokens":{inp},"completion_tokens":{out},"total_tokens":{inp + out}{_USAGE_TAIL}'
    )
    return utf8_json(text)


_NO_FIELDS: dict[str, Any] = {}
_PIECE_KEYS = ("content", "refusal")  # the deltas holding one piece of text, assembled without the encoder


def _padding(delta: dict[str, Any]) -> str:
    """A chunk's ``obfuscation``: the padding for its text or refusal piece."""
    piece = delta.get("content") or delta.get("refusal") or ""
    return obfuscation(piece if isinstance(piece, str) else "")


_TAIL_BYTES = 16 * 1024  # a larger reply (an echo of a long prompt …) is written afresh: memory stays small
V = TypeVar("V")


class _PlanCache(Generic[V]):
    """What was written from a plan alone, by ``id(plan)``, reused while the plan is (a static reply's plan
    is, request after request). An entry holds its plan by a weak reference: an entry whose plan is gone,
    or whose id a new plan took, is stale, and no entry keeps a plan (and its text) alive. At most
    ``limit`` entries, each at most :data:`_TAIL_BYTES`; ``key`` sets apart values written differently
    from one plan."""

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._entries: dict[int, tuple[weakref.ReferenceType[MessagePlan], Any, V]] = {}

    def get(self, plan: MessagePlan, key: Any = None) -> V | None:
        hit = self._entries.get(id(plan))
        if hit is None or hit[0]() is not plan or hit[1] != key:
            return None
        return hit[2]

    def put(self, plan: MessagePlan, value: V, size: int, key: Any = None) -> None:
        if size > _TAIL_BYTES:
            return
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[id(plan)] = (weakref.ref(plan), key, value)

    def __contains__(self, plan: object) -> bool:
        """Whether ``plan`` has a live entry (a stale one, left by a plan whose id it now has, is not its)."""
        hit = self._entries.get(id(plan))
        return hit is not None and hit[0]() is plan


# The tails of a plan's assembled chunks (ChunkFramer.frames), keyed by (framer class, padding): per frame
# either (tail bytes, content, None) or (None, False, the frame itself), for a frame holding nothing of the
# response. And a non-streamed completion's part after `created` (_completion_bytes).
_TAILS: _PlanCache[tuple[tuple[bytes | None, bool, Frame | None], ...]] = _PlanCache()
_COMPLETION_TAILS: _PlanCache[bytes] = _PlanCache()
_HEAD_MARK = "\x00mockllm chunk head\x00"  # stands for the head while tails are written: no chunk starts so
_MARK_BYTES = _HEAD_MARK.encode()
_MARK_LEN = len(_MARK_BYTES)


class ChunkFramer:
    """Chat completion chunks: a role chunk, content and refusal deltas, tool-call intros and argument
    fragments by index, the finish chunk, the usage chunk when asked for, ``[DONE]``. Every chunk's
    JSON is built by :meth:`data`, its choice ending with :meth:`choice_fields` (Azure's framer adds its
    content-filter fields there).

    A framer whose class keeps :meth:`data` as is writes the head every chunk starts with once per
    stream and assembles each chunk as a string around it (:meth:`assembled`): the same bytes as
    encoding each payload whole, which ``encoded=True`` does (the definition the assembled bytes are
    tested against, and what a framer overriding :meth:`data` or a ``created`` other than an int gets)."""

    def __init__(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext, encoded: bool = False) -> None:
        self.plan = plan
        self.chat = chat
        self.ctx = ctx
        self.completion_id = chat_completion_id(ctx.response_id)
        self.pad = wants_obfuscation(chat)
        self.head: str | None = None  # every chunk's text up to its delta, when chunks are assembled
        if not encoded and type(self).data is ChunkFramer.data and type(ctx.created) is int:
            self.head = (
                f'data: {{"id":{json_text(self.completion_id)},"object":"chat.completion.chunk",'
                f'"created":{ctx.created},"model":{json_text(plan.model)},'
                f'"system_fingerprint":{json_text(SYSTEM_FINGERPRINT)},"service_tier":"default",'
                '"choices":[{"index":0,"delta":'
            )
        self.usage_field = ',"usage":null' if chat.include_usage else ""
        # choice_fields' answers as written, by identity: a subclass returns a few constants, over and over
        self.written_fields: dict[int, tuple[dict[str, Any], str]] = {}

    def frames(self) -> tuple[Frame, ...]:
        """Every frame of the stream: :func:`events.stream_frames` over this framer.

        Assembled chunks are the head (id, created, model: this response's) and a tail that depends only
        on the plan and on the request's padding, so the tails of a plan are written once and reused
        while the plan is (a static reply's plan is, request after request): each chunk is then the
        head and its tail joined. A stream with a usage chunk (per response, not assembled) is framed
        in full each time."""
        head = self.head
        plan = self.plan
        if head is None or self.chat.include_usage:
            return events.stream_frames(plan, self)
        key = (type(self), self.pad)
        parts = _TAILS.get(plan, key)
        if parts is None:
            self.head = _HEAD_MARK
            try:
                marked = events.stream_frames(plan, self)
            finally:
                self.head = head
            parts = tuple(
                (f.data[_MARK_LEN:], f.content, None) if f.data.startswith(_MARK_BYTES) else (None, False, f)
                for f in marked
            )
            if any(frame is not None and _MARK_BYTES in frame.data for _, _, frame in parts):
                return events.stream_frames(plan, self)  # a framer that writes the head elsewhere: not split
            _TAILS.put(plan, parts, sum(len(tail) for tail, _, _ in parts if tail is not None), key)
        start = utf8_json(head)
        out: list[Frame] = []
        for tail, content, frame in parts:
            out.append(Frame(start + tail, content) if tail is not None else frame or Frame(b""))
        return tuple(out)

    def data(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.ctx.created,
            "model": self.plan.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "service_tier": "default",
            "choices": choices,
        }

    def choice_fields(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        """What a chunk's choice holds after its ``finish_reason`` (new keys only): nothing, on OpenAI. A
        dict returned must not change during the stream (assembled chunks write each one once)."""
        return _NO_FIELDS

    def chunk(self, delta: dict[str, Any], finish: str | None = None, content: bool = False) -> Frame:
        if self.head is not None:
            return self.assembled(self.head, delta, finish, content)
        fields = self.choice_fields(delta, finish)
        data = self.data([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, **fields}])
        if self.chat.include_usage:
            data["usage"] = None
        if self.pad:
            data["obfuscation"] = _padding(delta)
        return sse_frame(data, content=content)

    def assembled(self, head: str, delta: dict[str, Any], finish: str | None, content: bool) -> Frame:
        """:meth:`chunk`'s bytes from the head and the delta: a text or refusal piece (most of every
        stream) goes through the string encoder only."""
        written = None
        if len(delta) == 1:
            ((key, value),) = delta.items()
            if key in _PIECE_KEYS and type(value) is str:
                written = f'{{"{key}":{encode_basestring(value)}}}'
        ending = "null" if finish is None else json_text(finish)
        fields = self.choice_fields(delta, finish)
        known = self.written_fields.get(id(fields))
        if known is None or known[0] is not fields:
            known = self.written_fields[id(fields)] = (fields, f",{json_text(fields)[1:-1]}" if fields else "")
        more = known[1]
        choice = f'{written or json_text(delta)},"logprobs":null,"finish_reason":{ending}{more}}}]'
        pad = f',"obfuscation":"{_padding(delta)}"' if self.pad else ""  # letters and digits: nothing to escape
        return Frame(utf8_json(f"{head}{choice}{self.usage_field}{pad}}}\n\n"), content=content)

    def frame(self, event: events.Event) -> list[Frame]:
        match event:
            case events.Start():
                content = "" if _has_content(self.plan) else None
                return [self.chunk({"role": "assistant", "content": content, "refusal": None})]
            case events.TextDelta(text=piece):
                return [self.chunk({"content": piece}, content=True)]
            case events.Refusal(text=refusal):
                return [self.chunk({"refusal": piece}, content=True) for piece in split_words(refusal)]
            case events.ToolCallStart(index=i, call=call):
                first = {"index": i, "id": call.id_for("call_"), "type": "function"}
                return [self.chunk({"tool_calls": [{**first, "function": {"name": call.name, "arguments": ""}}]})]
            case events.ToolArgsDelta(index=i, text=piece):
                return [self.chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}, content=True)]
            case events.Finish(reason=reason):
                return [self.chunk({}, finish=reason)]
            case events.Usage() if self.chat.include_usage:
                return [sse_frame({**self.data([]), "usage": _usage(self.plan)})]
            case events.End():
                return [sse_raw_frame("[DONE]")]
        return []


OPENROUTER_PREFIX = "/api/v1/"  # OpenRouter's routes: openrouter.py adds what it adds


class OpenAIChatAdapter(BaseAdapter):
    provider: Provider = "openai"
    object_arguments = False  # whether a history's tool-call arguments may be JSON objects (Mistral's may)
    framer: type[ChunkFramer] = ChunkFramer  # what frames a streamed answer

    # -------------------------------------------------------------- requests

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        if bearer_token(http.headers) is None:
            return ProviderError(401, NO_KEY_MESSAGE, code="invalid_api_key")
        return None

    def parse(self, http: HttpRequest) -> ChatRequest:
        if http.path.startswith(OPENROUTER_PREFIX):
            from mockllm.runtime.providers.openrouter import with_model  # it builds on this module

            http = with_model(http)
        body = load_json_object(http.body)
        root = _ROOT
        model = require_str(body, "model", root)
        raw_messages = require_list(body, "messages", root)
        if not raw_messages:
            raise invalid_value(root.key("messages"), "must contain at least one message")
        messages, system = _messages(raw_messages, root.key("messages"), self.object_arguments)
        raw_tools = optional_list(body, "tools", root)
        tools = _tools(raw_tools, root.key("tools")) if raw_tools else ()
        stream = bool(optional_bool(body, "stream", root))
        options = optional_object(body, "stream_options", root) or {}
        include_usage = bool(optional_bool(options, "include_usage", root.key("stream_options")))
        if body.get("n") is not None and as_int(body["n"], root.key("n"), minimum=1) > 1:
            raise ProviderError(
                400,
                "mockllm: n > 1 (several choices per request) is not supported; ask for one choice, "
                "or script the alternatives as separate steps",
                code="invalid_value",
                param="n",
            )
        return ChatRequest(
            provider=self.provider,
            endpoint=http.path,
            model=model,
            stream=stream,
            messages=tuple(messages),
            system="\n".join(system),
            tools=tools,
            headers=lower_headers(http.headers),
            body=body,
            # the body's JSON length: the journal keeps a small body without walking it first (_size was
            # about 6 of the ~50 us a non-streaming chat request costs in-process; same journal text)
            body_size=len(http.body),
            include_usage=stream and include_usage,
        )

    def validate_history(self, chat: ChatRequest) -> None:
        """Tool messages must directly follow (possibly after sibling tool messages) the assistant
        message whose ``tool_calls`` they answer, and that message's calls must all be answered."""
        open_index: int | None = None  # the assistant message whose tool calls are being answered
        expected: set[str] = set()
        pending: list[str] = []
        for m in chat.messages:
            if m.role == "tool":
                call_id = m.tool_result.call_id if m.tool_result is not None else None
                shown = call_id if call_id is not None else "(none)"
                if open_index is None:
                    raise ProviderError(
                        400,
                        f"{TOOL_WITHOUT_CALL} (messages[{m.index}], tool_call_id '{shown}')",
                        param=f"messages.[{m.index}].role",
                    )
                if call_id not in expected:
                    raise ProviderError(
                        400,
                        f"Invalid parameter: 'tool_call_id' of '{shown}' not found in 'tool_calls' of previous "
                        f"message. (messages[{m.index}] answers none of the tool calls of messages[{open_index}]: "
                        f"{', '.join(sorted(expected))})",
                        param=f"messages.[{m.index}].tool_call_id",
                    )
                if call_id in pending:
                    pending.remove(call_id)
                continue
            if pending:
                raise _unanswered(open_index, pending)
            if m.role == "assistant" and m.tool_calls:
                open_index = m.index
                ids = [c.id for c in m.tool_calls if c.id is not None]
                expected, pending = set(ids), list(dict.fromkeys(ids))
            else:
                open_index, expected, pending = None, set(), []
        if pending:
            raise _unanswered(open_index, pending)

    # -------------------------------------------------------------- responses

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        headers = reply_headers(plan, ctx)
        if chat.endpoint.startswith(OPENROUTER_PREFIX):
            from mockllm.runtime.providers.openrouter import OpenRouterFramer, render_openrouter

            if not chat.stream:
                return render_openrouter(plan, ctx, headers)
            frames = OpenRouterFramer(plan, chat, ctx).frames()
            return stream_response(frames, media_type=SSE_UTF8_MEDIA, headers=headers)
        if chat.stream:
            frames = self.framer(plan, chat, ctx).frames()
            return stream_response(frames, media_type=SSE_UTF8_MEDIA, headers=headers)
        return Rendered(status=200, media_type=JSON_MEDIA, headers=headers, body=_completion_bytes(plan, ctx))

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        """``{"error": {message, type, param, code}}``. ``param`` is an extension of the adapter
        protocol: pass ``ProviderError.param`` when there is one."""
        error = {
            "message": message,
            "type": error_type_for(status, ERROR_TYPES, "invalid_request_error", "server_error"),
            "param": param,
            "code": code if code is not None else ERROR_CODES.get(status),
        }
        return json_response({"error": error}, status=status, headers=_headers(ctx))

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        error = {"message": message, "type": "server_error", "param": None, "code": None}
        return sse_frame({"error": error}).data

    def models(self, model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
        return models_response(model_ids, ctx)


def _unanswered(index: int | None, ids: list[str]) -> ProviderError:
    return ProviderError(
        400,
        f"{CALLS_WITHOUT_RESULTS}{', '.join(ids)} (messages[{index}])",
        param=f"messages.[{index}].role",
    )


# ---------------------------------------------------------------- models


def _model(model_id: str, ctx: RenderContext) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": ctx.created, "owned_by": "mockllm"}


def models_response(model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
    """``GET /v1/models``: every id once, in the order given."""
    data = [_model(m, ctx) for m in dict.fromkeys(model_ids)]
    return json_response({"object": "list", "data": data}, headers=_headers(ctx))


def model_response(model_id: str, ctx: RenderContext) -> Rendered:
    """``GET /v1/models/{id}``."""
    return json_response(_model(model_id, ctx), headers=_headers(ctx))


__all__ = ["OpenAIChatAdapter", "model_response", "models_response"]
