"""Helpers every provider adapter shares: reading a JSON body with errors that say what is wrong,
checking field types with messages that name the field, SSE and NDJSON framing, and looking up
error types by HTTP status.

Field errors all read ``"<path>: <problem>"`` (``messages[2].role: 'robot' is not one of …``) and
carry the path as ``ProviderError.param`` and an OpenAI-style ``code`` (``missing_required_parameter``,
``invalid_type``, ``invalid_value``); adapters whose API has no codes simply ignore them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import attrs

from mockllm.dsl.jsontext import lone_surrogate, replace_lone_surrogates
from mockllm.runtime.jsonout import compact_encoder
from mockllm.runtime.providers.base import Frame, ProviderError, Rendered
from mockllm.runtime.request import Attachment, Message, ToolCall, ToolResult
from mockllm.runtime.values import fast_frozen

JSON_MEDIA = "application/json"
SSE_MEDIA = "text/event-stream"
SSE_UTF8_MEDIA = "text/event-stream; charset=utf-8"  # what OpenAI and Anthropic stream with
NDJSON_MEDIA = "application/x-ndjson"

V = TypeVar("V")

# ---------------------------------------------------------------- JSON in and out


json_text: Callable[[Any], str] = compact_encoder()
"""Compact JSON, UTF-8 kept as is (what the real APIs send): the encoder is built once
(:mod:`mockllm.runtime.jsonout`)."""


def json_bytes(value: Any) -> bytes:
    return utf8_json(json_text(value))


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_json(text: str) -> bytes:
    """JSON text as UTF-8. A lone surrogate cannot be encoded; in JSON text written with
    ``ensure_ascii=False`` it can only sit inside a string, where it is written as its escape
    (``\\ud800``, what ``ensure_ascii=True`` writes): valid JSON text, never an error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def utf8_text(text: str) -> bytes:
    """Plain text as UTF-8, each lone surrogate replaced by U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)  # shared: json.loads would build one per call
_scan: Any = _DECODER.scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__, not in the stubs
_space: Any = re.compile(r"[ \t\n\r]*").match  # json.decoder.WHITESPACE: always matches


def _loads(text: str) -> Any:
    """``json.loads(text, parse_constant=_reject_constant)``, without building a decoder per call."""
    if text.startswith("\ufeff"):  # what json.loads says about a byte-order mark
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    # JSONDecoder.decode and raw_decode, inlined (two Python calls fewer on every request)
    try:
        value, end = _scan(text, _space(text, 0).end())
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    end = _space(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


Surrogates = Literal["reject", "replace"]


def load_json(body: bytes, surrogates: Surrogates = "reject") -> Any:
    """Parse a request body, or raise a 400 that says where the JSON is broken.

    A lone surrogate escape (``"\\ud800"``, legal JSON text but no character) is rejected as OpenAI's
    and Anthropic's parsers do, or (``surrogates="replace"``) replaced by U+FFFD as Gemini and Ollama
    do: either way no string that cannot be written back out gets past this point."""
    if not body.strip():
        raise ProviderError(400, "request body is empty; expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProviderError(400, f"request body is not valid UTF-8 (byte {e.start})") from None
    if "\\u" in text:
        if surrogates == "replace":
            text = replace_lone_surrogates(text)
        else:
            lone = lone_surrogate(text)
            if lone is not None:
                raise ProviderError(400, f"request body is not valid JSON: {lone.describe()}")
    try:
        return _loads(text)
    except json.JSONDecodeError as e:
        raise ProviderError(
            400, f"request body is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except ValueError as e:
        raise ProviderError(400, f"request body is not valid JSON: {e}") from None
    except RecursionError:
        raise ProviderError(400, "request body is not valid JSON: nested too deeply") from None


def load_json_object(body: bytes, surrogates: Surrogates = "reject") -> dict[str, Any]:
    """Parse a request body that must be a JSON object."""
    value = load_json(body, surrogates)
    if not isinstance(value, dict):
        raise ProviderError(400, f"request body must be a JSON object, got {describe(value)}")
    return value


def parse_json_arguments(text: str) -> Any:
    """Tool-call arguments as sent in a history: the parsed JSON when it parses (a lone surrogate escape
    in it replaced, see :func:`load_json`), else the raw string."""
    try:
        return json.loads(replace_lone_surrogates(text))
    except (ValueError, RecursionError):
        return text


# ---------------------------------------------------------------- field paths and type checks


@attrs.frozen
class FieldPath:
    """Where a value sits in the body: ``messages[2].content`` (``dotted=False``, OpenAI/Gemini
    style) or ``messages.2.content`` (``dotted=True``, Anthropic style)."""

    text: str = ""
    dotted: bool = False

    def key(self, name: str) -> FieldPath:
        memo = (self.text, self.dotted, name)
        found = _PATHS.get(memo)
        if found is None:
            found = FieldPath(f"{self.text}.{name}" if self.text else name, self.dotted)
            _remember_path(memo, found)
        return found

    def at(self, index: int) -> FieldPath:
        memo = (self.text, self.dotted, index)
        found = _PATHS.get(memo)
        if found is None:
            found = FieldPath(f"{self.text}.{index}" if self.dotted else f"{self.text}[{index}]", self.dotted)
            _remember_path(memo, found)
        return found

    def __str__(self) -> str:
        return self.text or "request body"


# Every parse walks the same few paths (`messages`, `messages[0]`, `messages[0].content` …): they are
# built once and shared (they are immutable), not allocated per request.
_PATHS: dict[tuple[str, bool, str | int], FieldPath] = {}
_PATHS_LIMIT = 8192


def _remember_path(memo: tuple[str, bool, str | int], path: FieldPath) -> None:
    if len(_PATHS) >= _PATHS_LIMIT:
        _PATHS.clear()
    _PATHS[memo] = path


def describe(value: Any) -> str:
    """The JSON type of ``value`` in words, with the value when it is short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json_text(value)})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({json_text(shown)})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def kind(value: Any, *, array: str = "an array", integers: bool = False) -> str:
    """The JSON type of ``value`` in words, without the value (for APIs whose messages name only the
    type); ``integers`` tells integers from other numbers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and integers:
        return "an integer"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return array
    return "an object"


def quoted(values: Iterable[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def missing(path: FieldPath) -> ProviderError:
    return ProviderError(400, f"{path}: field required", code="missing_required_parameter", param=path.text)


def wrong_type(path: FieldPath, expected: str, value: Any) -> ProviderError:
    return ProviderError(
        400, f"{path}: expected {expected}, got {describe(value)}", code="invalid_type", param=path.text
    )


def invalid_value(path: FieldPath, problem: str) -> ProviderError:
    return ProviderError(400, f"{path}: {problem}", code="invalid_value", param=path.text)


def _checked(value: Any, path: FieldPath, kind: type[V], expected: str) -> V:
    if not isinstance(value, kind):
        raise wrong_type(path, expected, value)
    return value


def as_object(value: Any, path: FieldPath) -> dict[str, Any]:
    return _checked(value, path, dict, "an object")


def as_str(value: Any, path: FieldPath) -> str:
    return _checked(value, path, str, "a string")


def as_list(value: Any, path: FieldPath) -> list[Any]:
    return _checked(value, path, list, "an array")


def as_bool(value: Any, path: FieldPath) -> bool:
    return _checked(value, path, bool, "a boolean")


def objects(value: list[Any], path: FieldPath) -> Iterator[tuple[FieldPath, dict[str, Any]]]:
    """Each element of a JSON array, checked to be an object, with its path."""
    for i, raw in enumerate(value):
        at = path.at(i)
        yield at, as_object(raw, at)


def as_int(value: Any, path: FieldPath, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(path, "an integer", value)
    if minimum is not None and value < minimum:
        raise invalid_value(path, f"must be at least {minimum}, got {value}")
    return value


def one_of(value: Any, choices: Sequence[str], path: FieldPath) -> str:
    """A string that must be one of ``choices``."""
    text = as_str(value, path)
    if text not in choices:
        raise invalid_value(path, f"'{text}' is not one of {quoted(choices)}")
    return text


def require(obj: Mapping[str, Any], name: str, at: FieldPath) -> Any:
    """The value of a required field, any type (``missing`` when absent)."""
    if name not in obj:
        raise missing(at.key(name))
    return obj[name]


# The checks below build a field's path only to report an error: a value of the right type returns
# at once (these run for every field of every request).


def require_str(obj: Mapping[str, Any], name: str, at: FieldPath) -> str:
    value = require(obj, name, at)
    return value if isinstance(value, str) else as_str(value, at.key(name))


def require_list(obj: Mapping[str, Any], name: str, at: FieldPath) -> list[Any]:
    value = require(obj, name, at)
    return value if isinstance(value, list) else as_list(value, at.key(name))


def require_object(obj: Mapping[str, Any], name: str, at: FieldPath) -> dict[str, Any]:
    value = require(obj, name, at)
    return value if isinstance(value, dict) else as_object(value, at.key(name))


def require_int(obj: Mapping[str, Any], name: str, at: FieldPath, minimum: int | None = None) -> int:
    return as_int(require(obj, name, at), at.key(name), minimum)


# Optional fields: absent or JSON null both mean "not given".


def optional_str(obj: Mapping[str, Any], name: str, at: FieldPath) -> str | None:
    value = obj.get(name)
    return value if value is None or isinstance(value, str) else as_str(value, at.key(name))


def optional_list(obj: Mapping[str, Any], name: str, at: FieldPath) -> list[Any] | None:
    value = obj.get(name)
    return value if value is None or isinstance(value, list) else as_list(value, at.key(name))


def optional_object(obj: Mapping[str, Any], name: str, at: FieldPath) -> dict[str, Any] | None:
    value = obj.get(name)
    return value if value is None or isinstance(value, dict) else as_object(value, at.key(name))


def optional_bool(obj: Mapping[str, Any], name: str, at: FieldPath) -> bool | None:
    value = obj.get(name)
    return value if value is None or isinstance(value, bool) else as_bool(value, at.key(name))


# ---------------------------------------------------------------- one provider's wording


class BodyReader:
    """Reads a request body and its fields, raising every problem in one provider's own words.

    Paths are plain strings (``messages[2].content``); a field's path is its parent's path and its
    name (:meth:`join`). The defaults word errors as the functions above do (``"<path>: expected …"``,
    OpenAI-style codes); a provider whose API words them otherwise subclasses this and overrides the
    wording methods (:meth:`bad`, :meth:`bad_json`, :meth:`not_object`, :meth:`wrong_type`,
    :meth:`missing`) and the class attributes, then reads every field through one shared instance."""

    #: how a lone surrogate escape in the body is treated (see :func:`load_json`)
    surrogates: Surrogates = "reject"
    #: what the API calls a JSON array in its type errors
    array_word: str = "an array"
    #: the ``code`` of every error that names none (Gemini: ``INVALID_ARGUMENT``)
    code: str | None = None

    # ---- wording

    def bad(self, message: str, param: str | None = None, code: str | None = None) -> ProviderError:
        """A 400 with ``message`` (``param`` where the API's error shape has one)."""
        return ProviderError(400, message, code=code or self.code, param=param)

    def kind(self, value: Any) -> str:
        """The JSON type of ``value`` in the API's words."""
        return kind(value, array=self.array_word)

    def bad_json(self, problem: str) -> ProviderError:
        """The body is not JSON; ``problem`` is :func:`load_json`'s message."""
        return self.bad(problem)

    def not_object(self, value: Any) -> ProviderError:
        """The body is JSON but not an object."""
        return self.bad(f"request body must be a JSON object, got {describe(value)}")

    def wrong_type(self, where: str, expected: str, value: Any) -> ProviderError:
        return wrong_type(FieldPath(where), expected, value)

    def missing(self, where: str) -> ProviderError:
        return missing(FieldPath(where))

    # ---- reading

    def join(self, where: str, key: str) -> str:
        """The path of field ``key`` of the object at ``where`` (``""``: the body itself)."""
        return f"{where}.{key}" if where else key

    def get(self, data: Mapping[str, Any], key: str) -> Any:
        """Field ``key`` of ``data`` (None when absent); Gemini also accepts its snake_case spelling."""
        return data.get(key)

    def load_body(self, body: bytes) -> dict[str, Any]:
        """The body as a JSON object."""
        try:
            data = load_json(body, self.surrogates)
        except ProviderError as e:
            raise self.bad_json(e.message) from None
        if not isinstance(data, dict):
            raise self.not_object(data)
        return data

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.wrong_type(where, "an object", value)
        return value

    def array(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.wrong_type(where, self.array_word, value)
        return value

    def opt_str(self, data: Mapping[str, Any], key: str, where: str) -> str | None:
        """Field ``key`` of the object at ``where``: a string, or None when absent or null."""
        value = self.get(data, key)
        if value is not None and not isinstance(value, str):
            raise self.wrong_type(self.join(where, key), "a string", value)
        return value

    def req_str(self, data: Mapping[str, Any], key: str, where: str) -> str:
        """Field ``key`` of the object at ``where``: a string that must be there."""
        value = self.opt_str(data, key, where)
        if value is None:
            raise self.missing(self.join(where, key))
        return value


# ---------------------------------------------------------------- headers


class LowerCaseHeaders(dict[str, str]):
    """Header values by names the server already lower-cased: :func:`lower_headers` shares it as is
    instead of copying it for every request (it is never modified once built)."""


def lower_headers(headers: Mapping[str, str]) -> dict[str, str]:
    if type(headers) is LowerCaseHeaders:
        return headers
    return {k.lower(): v for k, v in headers.items()}


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive), if any."""
    value = lower_headers(headers).get("authorization", "").strip()
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


# ---------------------------------------------------------------- responses and frames


def json_response(payload: Any, *, status: int = 200, headers: Sequence[tuple[str, str]] = ()) -> Rendered:
    return Rendered(status=status, media_type=JSON_MEDIA, headers=tuple(headers), body=json_bytes(payload))


def stream_response(
    frames: Iterable[Frame], *, media_type: str = SSE_MEDIA, headers: Sequence[tuple[str, str]] = ()
) -> Rendered:
    return Rendered(status=200, media_type=media_type, headers=tuple(headers), frames=tuple(frames))


def sse_bytes(data: Any, event: str | None = None) -> bytes:
    """One SSE event: optional ``event:`` line, one ``data:`` line of compact JSON, blank line."""
    head = f"event: {event}\n" if event is not None else ""
    return utf8_json(f"{head}data: {json_text(data)}\n\n")


def sse_frame(data: Any, event: str | None = None, content: bool = False) -> Frame:
    return Frame(sse_bytes(data, event), content=content)


def sse_raw_frame(text: str) -> Frame:
    """A ``data:`` line sent verbatim (``[DONE]``)."""
    return Frame(utf8_json(f"data: {text}\n\n"))


def ndjson_frame(value: Any, content: bool = False) -> Frame:
    return Frame(json_bytes(value) + b"\n", content=content)


def pieces(chunks: Sequence[str], whole: str) -> tuple[str, ...]:
    """The planned chunks, or the whole text as one piece when the plan gave none."""
    if chunks:
        return tuple(chunks)
    return (whole,) if whole else ()


_WORD = re.compile(r"\s*\S+\s*|\s+")


def split_words(text: str) -> tuple[str, ...]:
    """Split ``text`` into word pieces (whitespace kept) that join back to it exactly."""
    return tuple(_WORD.findall(text))


# ---------------------------------------------------------------- error tables


def error_type_for(status: int, table: Mapping[int, str], client_default: str, server_default: str) -> str:
    """``table[status]``, else ``server_default`` for 5xx and ``client_default`` for anything else."""
    if status in table:
        return table[status]
    return server_default if status >= 500 else client_default


# ---------------------------------------------------------------- turns of block-content APIs


@fast_frozen
class WireTurn:
    """One wire message of an API whose content is a list of blocks (Anthropic, Bedrock Converse), read:
    its text, its tool calls (assistant) or tool results (user)."""

    text: str
    has_text: bool  # a user turn of tool results only has no user message besides them
    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()
    attachments: tuple[Attachment, ...] = ()  # its image, document and audio blocks

    def messages(self, role: str, index: int) -> list[Message]:
        """The turn as provider-neutral messages: one assistant message, or the tool results (one
        message each) then the user's text."""
        if role == "assistant":
            return [Message("assistant", self.text, tool_calls=self.calls, index=index)]
        out = [Message("tool", r.content, tool_result=r, index=index) for r in self.results]
        if self.has_text:
            out.append(Message("user", self.text, index=index, attachments=self.attachments))
        return out


def wire_turns(messages: Sequence[Message]) -> list[tuple[int, str, list[Message]]]:
    """The messages grouped back into the wire's turns, system messages left out: (wire index,
    ``"user"`` or ``"assistant"``, the messages of that turn)."""
    turns: list[tuple[int, str, list[Message]]] = []
    for m in messages:
        if m.role == "system":
            continue
        if turns and turns[-1][0] == m.index:
            turns[-1][2].append(m)
        else:
            turns.append((m.index, "assistant" if m.role == "assistant" else "user", [m]))
    return turns
