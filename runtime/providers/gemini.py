"""Google Gemini, ``models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse`` (docs/providers/gemini.md).

Every request key is accepted in camelCase and snake_case (google-genai 3.x mixes them). Streams are bare
``data: <json>`` SSE events separated by a blank line; the last one carries the finish reason, the usage and
content parts, so ``client.chats`` keeps the streamed turn in its history.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mockllm.runtime.providers import common, events
from mockllm.runtime.providers.base import BaseAdapter, Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.gemini_media import media_parts
from mockllm.runtime.providers.parts import from_base64, kind_of
from mockllm.runtime.reply import tokens
from mockllm.runtime.reply.ids import gemini_response_id
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import (
    Attachment,
    ChatRequest,
    HttpRequest,
    Message,
    Provider,
    Tool,
    ToolCall,
    ToolResult,
)
from mockllm.runtime.values import fast_frozen

__all__ = ["GeminiAdapter", "count_tokens", "json_schema", "models_response", "status_name"]

_JSON = "application/json; charset=UTF-8"
_SSE = "text/event-stream"
_STREAM_HEADERS = (("content-disposition", "attachment"),)

_NO_KEY = (
    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or "
    "other form of API consumer identity to call this API."
)

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_TOO_DEEP = "Invalid JSON payload received. The request is nested too deeply."
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}
_GENERATE = frozenset({"generateContent", "streamGenerateContent"})
_PATH = re.compile(r"models/(?P<model>[^/:]+):(?P<method>\w+)$")


def status_name(status: int) -> str:
    """The google.rpc status name the API pairs with an HTTP status."""
    return _STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _get(data: Mapping[str, Any], camel: str) -> Any:
    """A field spelled either way: ``systemInstruction`` or ``system_instruction``."""
    if camel in data:
        return data[camel]
    return data.get(_snake(camel))


class _Fields(common.BodyReader):
    """Gemini's wording (``Invalid JSON payload received. Invalid value at '<path>': …``), every key
    in camelCase or snake_case."""

    surrogates = "replace"
    array_word = "a list"
    code = "INVALID_ARGUMENT"

    def get(self, data: Mapping[str, Any], key: str) -> Any:
        return _get(data, key)

    def bad_json(self, problem: str) -> ProviderError:
        return self.bad(f"Invalid JSON payload received. The {problem}.")

    def not_object(self, value: Any) -> ProviderError:
        return self.bad(
            f"Invalid JSON payload received. Expected a JSON object as the request body, got {self.kind(value)}."
        )

    def wrong_type(self, where: str, expected: str, value: Any) -> ProviderError:
        return self.bad(
            f"Invalid JSON payload received. Invalid value at '{where}': expected {expected}, got {self.kind(value)}."
        )


FIELDS = _Fields()
# the names modules built on this one (Vertex) read fields through; all are FIELDS' methods
_bad, _list, _load_body, _obj, _opt_str = FIELDS.bad, FIELDS.array, FIELDS.load_body, FIELDS.obj, FIELDS.opt_str


# ---- request ----


@fast_frozen
class _Target:
    model: str
    method: str


def _target(http: HttpRequest) -> _Target:
    model = http.path_params.get("model")
    method = http.path_params.get("method")
    if model is None or method is None:
        found = _PATH.search(http.path)
        if found is None:
            raise ProviderError(404, f"The path {http.path} is not a Gemini model method.", code="NOT_FOUND")
        model, method = model or found["model"], method or found["method"]
    return _Target(model.removeprefix("models/"), method)


def _text_of(content: Any, where: str) -> str:
    """The text of a ``systemInstruction``: a Content, a bare string, or a list of parts."""
    if isinstance(content, str):
        return content
    parts = _get(content, "parts") if isinstance(content, dict) else content
    texts = []
    for j, part in enumerate(FIELDS.array(parts, f"{where}.parts")):
        text = FIELDS.opt_str(FIELDS.obj(part, f"{where}.parts[{j}]"), "text", f"{where}.parts[{j}]")
        if text is not None:
            texts.append(text)
    return "\n".join(texts)


def _function_call(part: Any, where: str) -> ToolCall:
    call = FIELDS.obj(part, where)
    name = FIELDS.opt_str(call, "name", where)
    if not name:
        raise FIELDS.bad(f"* GenerateContentRequest.{where}.name: Name cannot be empty.")
    args = _get(call, "args")
    if args is None:
        args = {}
    return ToolCall(id=FIELDS.opt_str(call, "id", where), name=name, arguments=FIELDS.obj(args, f"{where}.args"))


def _function_response(part: Any, where: str, calls: Sequence[ToolCall]) -> ToolResult:
    data = FIELDS.obj(part, where)
    name = FIELDS.opt_str(data, "name", where)
    if not name:
        raise FIELDS.bad(f"* GenerateContentRequest.{where}.name: Name cannot be empty.")
    response = _get(data, "response")
    response = FIELDS.obj({} if response is None else response, f"{where}.response")
    call_id = FIELDS.opt_str(data, "id", where)
    if call_id is None:
        call_id = next((c.id for c in calls if c.name == name and c.id is not None), None)
    inner = response.get("result") if len(response) == 1 else None
    is_error = "error" in response or (isinstance(inner, dict) and "error" in inner)
    return ToolResult(call_id=call_id, name=name, content=result_text(response), is_error=is_error)


def result_text(response: dict[str, Any]) -> str:
    """The text a tool returned. google-genai wraps a function's return value as ``{"result": value}``
    (``{"output": …}`` is the other common key); unwrap a lone wrapper so ``tool result for`` and
    ``{{tool_result.NAME}}`` read the same text as on the other providers. Anything else is the
    response object's JSON."""
    if len(response) == 1:
        ((key, value),) = response.items()
        if key in ("result", "output", "content"):
            if isinstance(value, str):
                return value
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(response, ensure_ascii=False, separators=(",", ":"))


def _messages(contents: list[Any]) -> tuple[Message, ...]:
    messages: list[Message] = []
    previous_role = ""
    for i, raw in enumerate(contents):
        where = f"contents[{i}]"
        content = FIELDS.obj(raw, where)
        role = content.get("role") or "user"
        if role not in ("user", "model"):
            raise FIELDS.bad(f"Please use a valid role: user, model. ({where}.role is {json.dumps(role)})")
        parts = FIELDS.array(_get(content, "parts"), f"{where}.parts") if _get(content, "parts") is not None else []
        if not parts:
            raise FIELDS.bad(f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty.")
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[ToolResult] = []
        attached: list[Attachment] = []
        answered = messages[-1].tool_calls if messages and messages[-1].role == "assistant" else ()
        for j, raw_part in enumerate(parts):
            pwhere = f"{where}.parts[{j}]"
            part = FIELDS.obj(raw_part, pwhere)
            text = FIELDS.opt_str(part, "text", pwhere)
            if text is not None and _get(part, "thought") is not True:
                texts.append(text)
            if (call := _get(part, "functionCall")) is not None:
                calls.append(_function_call(call, f"{pwhere}.functionCall"))
            if (response := _get(part, "functionResponse")) is not None:
                results.append(_function_response(response, f"{pwhere}.functionResponse", answered))
            if (inline := _get(part, "inlineData")) is not None:
                attached.append(_inline(inline, f"{pwhere}.inlineData"))
            if (file := _get(part, "fileData")) is not None:
                media = _get(FIELDS.obj(file, f"{pwhere}.fileData"), "mimeType")
                attached.append(Attachment(kind_of(str(media or "")), str(media or ""), 0))
        if role == "model":
            if previous_role == "model" and messages and messages[-1].role == "assistant":
                last = messages[-1]  # a streamed turn comes back as one Content per chunk
                messages[-1] = attrs.evolve(
                    last, text=last.text + "".join(texts), tool_calls=(*last.tool_calls, *calls)
                )
            else:
                messages.append(Message(role="assistant", text="".join(texts), tool_calls=tuple(calls), index=i))
        else:
            messages.extend(Message(role="tool", tool_result=r, index=i) for r in results)
            if texts or attached or not results:
                messages.append(Message(role="user", text="\n".join(texts), index=i, attachments=tuple(attached)))
        previous_role = role
    return tuple(messages)


def _inline(value: Any, where: str) -> Attachment:
    """An ``inlineData`` part: its media type and the size of its base64 data."""
    inline = FIELDS.obj(value, where)
    data = _get(inline, "data")
    if not isinstance(data, str):
        raise FIELDS.bad(f"* GenerateContentRequest.{where}.data: expected base64 bytes")
    media = _get(inline, "mimeType")
    return from_base64(data, "file", media if isinstance(media, str) else "")


_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}


def json_schema(schema: Any) -> Any:
    """An OpenAPI-style Gemini ``Schema`` (upper-case types, either key spelling) as JSON Schema."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for raw_key, value in schema.items():
        key = _camel(raw_key)
        if key == "type" and isinstance(value, str):
            if value.upper() in _TYPES:
                out["type"] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "additionalProperties"):
            out[key] = json_schema(value)
        elif key != "propertyOrdering":
            out[key] = value
    return out


def _tools(value: Any) -> tuple[Tool, ...]:
    if value is None:
        return ()
    tools: list[Tool] = []
    for i, raw in enumerate(FIELDS.array(value, "tools")):
        spec = FIELDS.obj(raw, f"tools[{i}]")
        decls = _get(spec, "functionDeclarations")
        if decls is None:
            continue  # googleSearch, codeExecution, ...: not callable functions
        for j, raw_decl in enumerate(FIELDS.array(decls, f"tools[{i}].functionDeclarations")):
            where = f"tools[{i}].functionDeclarations[{j}]"
            decl = FIELDS.obj(raw_decl, where)
            name = FIELDS.opt_str(decl, "name", where)
            if not name:
                raise FIELDS.bad(f"* GenerateContentRequest.{where}.name: Name cannot be empty.")
            described = FIELDS.opt_str(decl, "description", where) or ""
            raw_json = _get(decl, "parametersJsonSchema")
            if raw_json is not None:
                params = FIELDS.obj(raw_json, f"{where}.parametersJsonSchema")
            else:
                raw_params = _get(decl, "parameters")
                params = json_schema(FIELDS.obj(raw_params, f"{where}.parameters")) if raw_params is not None else {}
            tools.append(Tool(name=name, description=described, parameters=params))
    return tuple(tools)


def _validate_responses(chat: ChatRequest) -> None:
    msgs = chat.messages
    i = 0
    while i < len(msgs):
        first = msgs[i]
        if first.role != "tool" or first.tool_result is None:
            i += 1
            continue
        group = [first.tool_result]
        j = i + 1
        while j < len(msgs) and msgs[j].index == first.index and msgs[j].tool_result is not None:
            result = msgs[j].tool_result
            assert result is not None
            group.append(result)
            j += 1
        before = msgs[i - 1] if i > 0 else None
        calls = before.tool_calls if before is not None and before.role == "assistant" else ()
        where = f"contents[{first.index}]"
        if not calls:
            raise FIELDS.bad(
                "Please ensure that function response turn comes immediately after a function call turn. "
                f"{where} answers {group[0].name!r}, but the turn before it made no function call."
            )
        assert before is not None
        if len(group) != len(calls):
            raise FIELDS.bad(
                "Please ensure that the number of function response parts is equal to the number of function "
                f"call parts of the function call turn. {where} has {len(group)} function response(s) for "
                f"{len(calls)} function call(s) in contents[{before.index}]."
            )
        remaining = list(calls)
        for result in group:
            match = next((c for c in remaining if c.id is not None and c.id == result.call_id), None)
            match = match or next((c for c in remaining if c.name == result.name), None)
            if match is None:
                called = ", ".join(repr(c.name) for c in calls)
                raise FIELDS.bad(
                    f"{where} has a function response for {result.name!r}, but the function call turn "
                    f"contents[{before.index}] called {called}."
                )
            remaining.remove(match)
        i = j


class GeminiAdapter(BaseAdapter):
    provider: Provider = "gemini"

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        if http.headers.get("x-goog-api-key", "").strip() or http.query.get("key", "").strip():
            return None
        return ProviderError(403, _NO_KEY, code="PERMISSION_DENIED")

    def parse(self, http: HttpRequest) -> ChatRequest:
        try:
            return self._parse(http)
        except RecursionError:
            raise FIELDS.bad(_TOO_DEEP) from None

    def _parse(self, http: HttpRequest) -> ChatRequest:
        target = _target(http)
        if target.method not in _GENERATE:
            raise ProviderError(
                404, f"Method {target.method} is not found for models/{target.model}.", code="NOT_FOUND"
            )
        data = FIELDS.load_body(http.body)
        contents = _get(data, "contents")
        if contents is None:
            raise FIELDS.bad("* GenerateContentRequest.contents: contents is not specified")
        system = _get(data, "systemInstruction")
        return ChatRequest(
            provider=self.provider,
            endpoint=http.path,
            model=target.model,
            stream=target.method == "streamGenerateContent",
            messages=_messages(FIELDS.array(contents, "contents")),
            system=_text_of(system, "systemInstruction") if system is not None else "",
            tools=_tools(_get(data, "tools")),
            headers=dict(http.headers),
            body=data,
        )

    def validate_history(self, chat: ChatRequest) -> None:
        _validate_responses(chat)

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        if chat.stream:
            framer = _Framer(plan, ctx, self.answer, media_parts(plan, chat))
            return Rendered(200, _SSE, headers=_STREAM_HEADERS, frames=events.stream_frames(plan, framer))
        media, instead = media_parts(plan, chat)
        answer = [p for p in _answer_parts(plan) if not (instead and "text" in p)] + media
        parts = _thought_parts(plan) + (answer or [{"text": ""}])
        return Rendered(200, _JSON, body=common.json_bytes(self.answer(_chunk(plan, ctx, parts, final=True), ctx)))

    def answer(self, response: dict[str, Any], ctx: RenderContext) -> dict[str, Any]:
        """One ``GenerateContentResponse`` (a whole answer, or one streamed chunk) as this API sends it:
        Gemini's as built; Vertex adds its own fields here."""
        return response

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        name = code if code is not None and re.fullmatch(r"[A-Z_]+", code) else status_name(status)
        return Rendered(
            status, _JSON, body=common.json_bytes({"error": {"code": status, "message": message, "status": name}})
        )

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        return _sse({"error": {"code": 500, "message": message, "status": "INTERNAL"}})

    def models(self, model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
        return models_response(model_ids, ctx)

    def count_tokens(self, http: HttpRequest, ctx: RenderContext) -> Rendered:
        return count_tokens(http, ctx)


# ---- response ----


def _usage(plan: MessagePlan, answered: float) -> dict[str, Any]:
    """``usageMetadata`` as every chunk of the real API carries it: the prompt and thinking counts, and
    the candidates count so far (``answered``: the share of the answer sent, 1.0 on the last chunk)."""
    thoughts = min(tokens.estimate(plan.thinking), plan.output_tokens) if plan.thinking else 0
    answer = plan.output_tokens - thoughts
    so_far = answer if answered >= 1.0 else max(1, min(answer, round(answer * answered)))
    usage: dict[str, Any] = {
        "promptTokenCount": plan.input_tokens,
        "candidatesTokenCount": so_far,
        "totalTokenCount": plan.input_tokens + so_far + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": plan.input_tokens}],
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _chunk(
    plan: MessagePlan, ctx: RenderContext, parts: list[dict[str, Any]], final: bool, answered: float = 1.0
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if final:
        candidate["finishReason"] = _FINISH[plan.finish]
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": _usage(plan, 1.0 if final else answered),
        "modelVersion": plan.model,
        "responseId": gemini_response_id(ctx.response_id),
    }


def _thought_parts(plan: MessagePlan) -> list[dict[str, Any]]:
    return [{"text": plan.thinking, "thought": True}] if plan.thinking else []


def _answer_parts(plan: MessagePlan) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": plan.text}] if plan.text else []
    if plan.refusal:
        parts.append({"text": plan.refusal})
    parts.extend(_call_part(call) for call in plan.tool_calls)
    return parts


def _call_part(call: PlannedToolCall) -> dict[str, Any]:
    return {"functionCall": {"name": call.name, "args": _args(call.arguments)}}


def _args(arguments: Any) -> Any:
    """Gemini's args are an object: null (a parameterless call) is {}, other values are wrapped."""
    if arguments is None:
        return {}
    return arguments if isinstance(arguments, dict) else {"value": arguments}


def _sse(value: Any) -> bytes:
    """One event, framed with CRLF as the real API frames its streams."""
    return b"data: " + common.json_bytes(value) + b"\r\n\r\n"


#: what :meth:`GeminiAdapter.answer` is: a response as built → as the API sends it
Answer = Callable[[dict[str, Any], RenderContext], dict[str, Any]]


class _Framer:
    """One content part per event; the finish reason rides on the last one (a final empty text part
    when nothing but thinking was said, so the chunk still has text and the turn stays valid). Gemini 3
    models end a function-call answer with such an empty chunk too, as the real API does; every chunk
    carries usage with the candidates count so far. Calls are sent whole."""

    def __init__(
        self,
        plan: MessagePlan,
        ctx: RenderContext,
        shape: Answer,
        media: tuple[list[dict[str, Any]], bool] = ([], False),
    ) -> None:
        self.media = media  # inlineData parts sent last, and whether they replace the text
        self.plan = plan
        self.ctx = ctx
        self.shape = shape  # the adapter's ``answer``
        self.thoughts: list[dict[str, Any]] = []
        self.answer: list[dict[str, Any]] = []

    def frame(self, event: events.Event) -> list[Frame]:
        match event:
            case events.ThinkingDelta(text=piece):
                self.thoughts.append({"text": piece, "thought": True})
            case events.TextDelta(text=piece):
                self.answer.append({"text": piece})
            case events.Refusal(text=refusal) if refusal:
                self.answer.append({"text": refusal})
            case events.ToolCallEnd(call=call):
                self.answer.append(_call_part(call))
            case events.End():
                return self._frames()
        return []

    def _frames(self) -> list[Frame]:
        plan, answer = self.plan, self.answer
        media, instead = self.media
        if media:
            answer = [p for p in answer if not (instead and "text" in p)] + media
        parts = [(part, True) for part in self.thoughts + answer]
        if not answer or (plan.model.startswith(_GEMINI_3) and "functionCall" in answer[-1]):
            parts.append(({"text": ""}, False))
        total = sum(_size(part) for part in answer) or 1
        sent = 0
        frames = []
        for n, (part, content) in enumerate(parts):
            if "thought" not in part:
                sent += _size(part)
            chunk = _chunk(plan, self.ctx, [part], final=n == len(parts) - 1, answered=sent / total)
            frames.append(Frame(_sse(self.shape(chunk, self.ctx)), content=content))
        return frames


_GEMINI_3 = ("gemini-3", "models/gemini-3")


def _size(part: dict[str, Any]) -> int:
    """A part's weight in the running token count: its text's length (a function call counts 16)."""
    text = part.get("text")
    return len(text) if isinstance(text, str) else 16


# ---- other endpoints ----


def _texts(value: Any) -> list[str]:
    """Every ``text`` string anywhere inside a request body."""
    if isinstance(value, dict):
        found = [value["text"]] if isinstance(value.get("text"), str) else []
        return found + [t for k, v in value.items() if k != "text" for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def count_tokens(http: HttpRequest, ctx: RenderContext) -> Rendered:
    """``models/{model}:countTokens``: ``{"totalTokens": N}`` estimated from the request's text.
    Raises :class:`ProviderError` for a body the API would reject."""
    try:
        return _count_tokens(http)
    except RecursionError:
        raise FIELDS.bad(_TOO_DEEP) from None


def _count_tokens(http: HttpRequest) -> Rendered:
    data = FIELDS.load_body(http.body)
    request = _get(data, "generateContentRequest")
    contents = _get(request, "contents") if isinstance(request, dict) else _get(data, "contents")
    if contents is None:
        raise FIELDS.bad("* CountTokensRequest.contents: contents is not specified")
    _messages(FIELDS.array(contents, "contents"))  # the same checks generateContent makes
    total = tokens.estimate("".join(_texts(contents)))
    return Rendered(200, _JSON, body=common.json_bytes({"totalTokens": total}))


def models_response(model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
    """``GET /{v1,v1beta}/models``: the models the library names."""
    models = [
        {
            "name": f"models/{model.removeprefix('models/')}",
            "version": "001",
            "displayName": model.removeprefix("models/"),
            "description": "Served by mockllm.",
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }
        for model in model_ids
    ]
    return Rendered(200, _JSON, body=common.json_bytes({"models": models}))
