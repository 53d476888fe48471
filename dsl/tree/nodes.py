"""The syntax tree of a `.mockllm` file.

Every node is a frozen attrs value with a ``span`` (keyword-only, excluded from equality, so a tree
parsed from text equals the same tree built in code or loaded from JSON). Strings are kept exactly as
written, templates included; :mod:`mockllm.dsl.tree.templates` parses the ``{{name}}`` parts.

Tree shape::

    ScriptFile
      version, uses: Use*, replies: NamedReply*, defaults: Defaults?, scenarios: Scenario*,
      mcp_servers: McpServer* (tools: McpTool*, resources: McpResource*,
                               prompts: McpPrompt* (arguments: McpArgument*, messages: McpMessage*))
    Scenario
      name, priority, tags, order_any, lets: Let*, conditions: Condition*, steps: Step*
    Step
      name, conditions, after: After?, captures: Capture*, expects: Condition*,
      consumption: Consumption, reply: Reply?
    Reply = ReplyBlock (elements: ReplyElement*) | ReplyRef (alias?, name)
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any, Literal, TypeAlias

import attrs

from mockllm.dsl.span import NO_SPAN, Span

#: JSON values as they appear inline in scripts (tool arguments, raw bodies, literals).
JSON: TypeAlias = Any


def _span() -> Any:
    return attrs.field(default=NO_SPAN, eq=False, kw_only=True)


@attrs.frozen
class Duration:
    """A duration literal (``250ms``, ``2s``, ``1.5s``), kept in milliseconds."""

    ms: float

    @property
    def seconds(self) -> float:
        return self.ms / 1000.0

    def __str__(self) -> str:
        """The literal: whole seconds as ``2s``, whole milliseconds as ``250ms``, anything else as the
        shortest decimal that reads back as the same float (``10000.25ms``, never an exponent)."""
        if self.ms >= 1000 and self.ms % 1000 == 0:
            return f"{int(self.ms // 1000)}s"
        if float(self.ms).is_integer():
            return f"{int(self.ms)}ms"
        return f"{Decimal(repr(float(self.ms))):f}ms"


@attrs.frozen
class Regex:
    """A regex literal ``/pattern/flags`` (flags drawn from ``imsx``)."""

    pattern: str
    flags: str = ""

    def __str__(self) -> str:
        return "/" + self.pattern.replace("/", "\\/") + "/" + self.flags


#: A typed literal on the right of ``is`` / ``is not``: string, number, boolean, null, JSON.
LiteralValue: TypeAlias = Any

# ---------------------------------------------------------------------------------------------------------
# Conditions

SubjectKind = Literal[
    "provider",
    "endpoint",
    "model",
    "stream",
    "last_user_message",
    "last_message",
    "any_message",  # arg: role (user, assistant, system, tool)
    "system_prompt",
    "tools",
    "tool_result",  # arg: tool name
    "header",  # arg: header name
    "field",  # arg: dotted path
    "turn",
    "input",  # the texts of an embedding or moderation request
    "tool",  # the name of the tool an MCP call calls
    "argument",  # arg: dotted path into an MCP call's arguments
    "attachments",  # the kinds of the request's files, or of the last user message's non-text parts
]

PredicateOp = Literal[
    "is",
    "is_not",
    "contains",
    "not_contains",
    "matches",
    "not_matches",
    "glob",
    "include",
    "exclude",
    "present",
    "absent",
    "error",
    "at_least",
    "at_most",
]


@attrs.frozen
class Subject:
    kind: SubjectKind
    arg: str | None = None
    span: Span = _span()


@attrs.frozen
class Predicate:
    """``op`` with its operand: a literal for is/is_not, a string for contains/glob/include/exclude,
    a :class:`Regex` for matches, an int or float for at_least/at_most, None for present/absent/error."""

    op: PredicateOp
    value: LiteralValue = None
    span: Span = _span()


@attrs.frozen
class Condition:
    subject: Subject
    predicate: Predicate
    ignore_case: bool = False
    span: Span = _span()


# ---------------------------------------------------------------------------------------------------------
# Reply elements


@attrs.frozen
class Text:
    text: str
    span: Span = _span()


@attrs.frozen
class ToolCall:
    name: str
    arguments: JSON
    id: str | None = None
    span: Span = _span()


@attrs.frozen
class Thinking:
    text: str
    span: Span = _span()


@attrs.frozen
class Refusal:
    text: str
    span: Span = _span()


FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


@attrs.frozen
class Finish:
    reason: FinishReason
    span: Span = _span()


@attrs.frozen
class Usage:
    input_tokens: int
    output_tokens: int
    span: Span = _span()


StreamMode = Literal["word", "chunks", "characters"]


@attrs.frozen
class Stream:
    """``stream by word`` (count None), ``stream N chunks``, ``stream by N characters``; ``, D apart``."""

    mode: StreamMode
    count: int | None = None
    apart: Duration | None = None
    span: Span = _span()


@attrs.frozen
class Chunks:
    chunks: tuple[str, ...]
    span: Span = _span()


@attrs.frozen
class Latency:
    duration: Duration
    span: Span = _span()


@attrs.frozen
class Error:
    status: int
    message: str
    span: Span = _span()


@attrs.frozen
class RetryAfter:
    duration: Duration
    span: Span = _span()


@attrs.frozen
class Header:
    name: str
    value: str
    span: Span = _span()


@attrs.frozen
class EchoHeader:
    name: str
    span: Span = _span()


@attrs.frozen
class Status:
    status: int
    span: Span = _span()


@attrs.frozen
class Body:
    body: JSON
    span: Span = _span()


@attrs.frozen
class Disconnect:
    after_chunks: int
    span: Span = _span()


@attrs.frozen
class StreamError:
    message: str
    after_chunks: int
    span: Span = _span()


@attrs.frozen
class Hang:
    span: Span = _span()


@attrs.frozen
class Echo:
    span: Span = _span()


@attrs.frozen
class InterleaveCalls:
    """``interleave calls``: when streaming, the argument fragments of the reply's tool calls alternate
    (call 0's first fragment, call 1's first, …, then call 0's second, …) instead of one call finishing
    before the next starts."""

    span: Span = _span()


@attrs.frozen
class Vector:
    """``vector [0.12, -0.5, …]``: the embedding answered for one input of an embedding request; several
    lines answer the inputs in order (inputs beyond them get the default embedder's vector)."""

    values: tuple[float, ...]
    span: Span = _span()


@attrs.frozen
class VectorsFrom:
    """``vectors from "vectors.json"``: vectors for the inputs in order, from a JSON file holding an array
    of vectors (a path relative to the script). The loader reads it; the compiler turns it into
    :class:`Vector` elements."""

    path: str
    span: Span = _span()


#: The categories a `flag` line may name: OpenAI's moderation categories (omni-moderation).
MODERATION_CATEGORIES: tuple[str, ...] = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/intent",
    "self-harm/instructions",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)


@attrs.frozen
class Flag:
    """``flag "violence", "hate"``: a moderation answer that flags these categories for every input."""

    categories: tuple[str, ...]
    span: Span = _span()


@attrs.frozen
class Result:
    """An MCP tool's result: ``result "text"`` (text content), ``result {json}`` (structured content and
    its JSON text), ``result error "text"`` (a result with ``isError: true``)."""

    value: JSON  # a str for text, a dict for structured content
    is_error: bool = False
    span: Span = _span()


def _bytes_repr(data: bytes | None) -> str:
    """A file's bytes in a node's repr: their length and digest (a machine's digest changes with them)."""
    return "None" if data is None else f"<{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()[:16]}>"


@attrs.frozen
class Audio:
    """``audio "answer.wav"`` (these bytes as the audio, a path relative to the script; the loader reads
    the file and the compiler puts its bytes in ``data``) or ``audio 2.5s`` (audio of that length in the
    requested format, carrying the reply's text): a speech reply, a Gemini audio answer."""

    path: str | None = None
    length: Duration | None = None
    data: bytes | None = attrs.field(default=None, repr=_bytes_repr)  # the file's bytes, once compiled
    span: Span = _span()


@attrs.frozen
class Image:
    """``image "cat.png"``: this picture as each generated image (a path relative to the script; the
    loader reads it and the compiler puts its bytes in ``data``)."""

    path: str
    data: bytes | None = attrs.field(default=None, repr=_bytes_repr)
    span: Span = _span()


ReplyElement: TypeAlias = (
    Text
    | ToolCall
    | Thinking
    | Refusal
    | Finish
    | Usage
    | Stream
    | Chunks
    | Latency
    | Error
    | RetryAfter
    | Header
    | EchoHeader
    | Status
    | Body
    | Disconnect
    | StreamError
    | Hang
    | Echo
    | InterleaveCalls
    | Vector
    | VectorsFrom
    | Flag
    | Result
    | Audio
    | Image
)

REPLY_ELEMENT_TYPES: tuple[type, ...] = (
    Text,
    ToolCall,
    Thinking,
    Refusal,
    Finish,
    Usage,
    Stream,
    Chunks,
    Latency,
    Error,
    RetryAfter,
    Header,
    EchoHeader,
    Status,
    Body,
    Disconnect,
    StreamError,
    Hang,
    Echo,
    InterleaveCalls,
    Vector,
    VectorsFrom,
    Flag,
    Result,
    Audio,
    Image,
)

#: Elements a ``defaults:`` block may hold (besides the fallback).
DEFAULTABLE_TYPES: tuple[type, ...] = (Latency, Stream, Header)


@attrs.frozen
class ReplyBlock:
    """A ``reply:`` block; ``reply echo`` is a block holding the single element :class:`Echo`."""

    elements: tuple[ReplyElement, ...]
    span: Span = _span()


@attrs.frozen
class ReplyRef:
    """``reply like NAME`` or ``reply like ALIAS.NAME``."""

    name: str
    alias: str | None = None
    span: Span = _span()

    @property
    def qualified(self) -> str:
        return f"{self.alias}.{self.name}" if self.alias else self.name


Reply: TypeAlias = ReplyBlock | ReplyRef

# ---------------------------------------------------------------------------------------------------------
# Steps, scenarios, files


@attrs.frozen
class After:
    step: str
    span: Span = _span()


@attrs.frozen
class Capture:
    name: str
    subject: Subject
    regex: Regex
    span: Span = _span()


@attrs.frozen
class Consumption:
    """``once`` (the default, no line in the file), ``repeat N``, or ``always``."""

    kind: Literal["once", "repeat", "always"] = "once"
    count: int | None = None
    span: Span = _span()

    @property
    def max_uses(self) -> int | None:
        """How many matches use the step up; None for ``always``."""
        if self.kind == "always":
            return None
        if self.kind == "repeat":
            return self.count
        return 1


@attrs.frozen
class Step:
    name: str
    conditions: tuple[Condition, ...] = ()
    after: After | None = None
    captures: tuple[Capture, ...] = ()
    expects: tuple[Condition, ...] = ()
    consumption: Consumption = Consumption()
    reply: Reply | None = None
    span: Span = _span()


@attrs.frozen
class Let:
    name: str
    value: str
    span: Span = _span()


@attrs.frozen
class Scenario:
    name: str
    priority: int = 0
    tags: tuple[str, ...] = ()
    order_any: bool = False
    lets: tuple[Let, ...] = ()
    conditions: tuple[Condition, ...] = ()
    steps: tuple[Step, ...] = ()
    span: Span = _span()


@attrs.frozen
class NamedReply:
    name: str
    elements: tuple[ReplyElement, ...]
    span: Span = _span()


@attrs.frozen
class Defaults:
    """``defaults:``: elements applied to every step unless the step sets them, and the fallback.

    ``fallback echo`` is ``ReplyBlock((Echo(),))``; ``fallback like NAME`` a :class:`ReplyRef`;
    a ``fallback:`` block a :class:`ReplyBlock`."""

    elements: tuple[ReplyElement, ...] = ()
    fallback: Reply | None = None
    span: Span = _span()


@attrs.frozen
class Use:
    path: str
    alias: str
    span: Span = _span()


@attrs.frozen
class McpTool:
    """``tool NAME "description":`` in an ``mcp server`` block, with its JSON Schemas."""

    name: str
    description: str = ""
    input_schema: JSON = attrs.field(factory=lambda: {"type": "object"})
    output_schema: JSON = None
    span: Span = _span()


@attrs.frozen
class McpResource:
    """``resource "URI" "description":`` in an ``mcp server`` block: its ``text`` (and ``mime`` type),
    listed by ``resources/list`` and read by ``resources/read``."""

    uri: str
    description: str = ""
    text: str = ""
    mime: str = "text/plain"
    span: Span = _span()


@attrs.frozen
class McpArgument:
    """``argument NAME "description"`` of a prompt (``optional`` at the end: not required)."""

    name: str
    description: str = ""
    required: bool = True
    span: Span = _span()


@attrs.frozen
class McpMessage:
    """``user "…"`` or ``assistant "…"``: one message of a prompt, ``{{argument}}`` placeholders in it."""

    role: Literal["user", "assistant"]
    text: str
    span: Span = _span()


@attrs.frozen
class McpPrompt:
    """``prompt NAME "description":`` in an ``mcp server`` block: its arguments and messages, listed by
    ``prompts/list`` and filled in by ``prompts/get``."""

    name: str
    description: str = ""
    arguments: tuple[McpArgument, ...] = ()
    messages: tuple[McpMessage, ...] = ()
    span: Span = _span()


@attrs.frozen
class McpServer:
    """``mcp server "NAME":``: a tool server served at ``/mcp/NAME`` and by ``mockllm mcp NAME``."""

    name: str
    tools: tuple[McpTool, ...] = ()
    resources: tuple[McpResource, ...] = ()
    prompts: tuple[McpPrompt, ...] = ()
    span: Span = _span()


@attrs.frozen
class ScriptFile:
    path: str
    version: int | None = None
    uses: tuple[Use, ...] = ()
    replies: tuple[NamedReply, ...] = ()
    defaults: Defaults | None = None
    scenarios: tuple[Scenario, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    span: Span = _span()
