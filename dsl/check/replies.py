"""Reply checks: elements that cannot share one reply (two ``finish`` lines, an error beside an
answer, ``hang`` with anything but ``latency`` …) and ``interleave calls`` with fewer than two calls."""

from __future__ import annotations

from collections.abc import Sequence

from mockllm.dsl.check.common import Reporter, line_of
from mockllm.dsl.check.vectors import check_input_elements
from mockllm.dsl.diagnostics import Related
from mockllm.dsl.tree.nodes import (
    Audio,
    Body,
    Chunks,
    Disconnect,
    Echo,
    EchoHeader,
    Error,
    Finish,
    Flag,
    Hang,
    Header,
    Image,
    InterleaveCalls,
    Latency,
    Refusal,
    ReplyElement,
    Result,
    RetryAfter,
    Status,
    Stream,
    StreamError,
    Text,
    Thinking,
    ToolCall,
    Usage,
    Vector,
    VectorsFrom,
)

ELEMENT_WORDS: dict[type, str] = {
    Text: "text",
    ToolCall: "tool call",
    Thinking: "thinking",
    Refusal: "refusal",
    Finish: "finish",
    Usage: "usage",
    Stream: "stream",
    Chunks: "chunks:",
    Latency: "latency",
    Error: "error",
    RetryAfter: "retry after",
    Header: "header",
    EchoHeader: "echo header",
    Status: "status",
    Body: "body",
    Disconnect: "disconnect",
    StreamError: "stream error",
    Hang: "hang",
    Echo: "echo",
    InterleaveCalls: "interleave calls",
    Vector: "vector",
    VectorsFrom: "vectors from",
    Flag: "flag",
    Result: "result",
    Audio: "audio",
    Image: "image",
}

# What kind of answer an element makes; elements of different kinds cannot share a reply.
_KIND: dict[type, str] = {
    Text: "answer",
    ToolCall: "answer",
    Thinking: "answer",
    Refusal: "answer",
    Chunks: "answer",
    Finish: "answer",
    Usage: "usage",  # goes with an answer or with vectors (only the input count is used there)
    Disconnect: "answer",
    StreamError: "answer",
    InterleaveCalls: "answer",
    Error: "error",
    Status: "raw",
    Body: "raw",
    Hang: "hang",
    Echo: "echo",
    Vector: "vectors",
    VectorsFrom: "vectors",
    Flag: "flags",
    Result: "result",
    Audio: "audio",
    Image: "image",
}
_SINGLE = (
    Finish,
    Usage,
    Stream,
    Latency,
    Error,
    Status,
    Body,
    RetryAfter,
    Chunks,
    Hang,
    Echo,
    Disconnect,
    StreamError,
    InterleaveCalls,
    VectorsFrom,
    Audio,
)
_CUTS = (Disconnect, StreamError)
_LATER = "to fail first and answer later, use two steps"
_RAW = "`status` and `body` send a raw response exactly as written"
_TWO_STEPS = 'give each kind of request its own step (`when: endpoint is "embeddings"`, `"moderations"`, `"chat"`)'
_KIND_HINTS = {
    frozenset(
        {"answer", "error"}
    ): "a reply is either an error or an answer; to fail first and answer later, use two steps",
    frozenset(
        {"answer", "raw"}
    ): "`status` and `body` send a raw response exactly as written; put the content in the `body`",
    frozenset(
        {"error", "raw"}
    ): "use either `error` (the provider's own error shape) or `status` + `body` (sent as written)",
    frozenset({"answer", "echo"}): "`echo` writes the answer itself; remove one of the two lines",
    frozenset({"error", "echo"}): "`echo` writes the answer itself; remove one of the two lines",
    frozenset({"raw", "echo"}): "`echo` writes the answer itself; remove one of the two lines",
    frozenset({"vectors", "answer"}): f"`vector` lines answer an embedding request, the others a chat; {_TWO_STEPS}",
    frozenset({"flags", "answer"}): f"`flag` lines answer a moderation request, the others a chat; {_TWO_STEPS}",
    frozenset({"vectors", "flags"}): f"vectors answer an embedding request, flags a moderation request; {_TWO_STEPS}",
    frozenset({"vectors", "error"}): f"a reply is either an error or vectors; {_LATER}",
    frozenset({"flags", "error"}): f"a reply is either an error or flags; {_LATER}",
    frozenset({"vectors", "raw"}): f"{_RAW}; put the vectors in the `body`",
    frozenset({"flags", "raw"}): f"{_RAW}; put the results in the `body`",
    frozenset({"vectors", "echo"}): "`echo` answers an embedding with the default embedder's vectors; remove one line",
    frozenset({"flags", "echo"}): "`echo` answers a moderation request with nothing flagged; remove one line",
}
_KIND_HINTS |= {  # an MCP tool's `result` answers a tool call, never a model request
    frozenset({"result", other}): f"`result` lines answer an MCP tool call, `{word}` a model request; "
    'give the tool call a step of its own (`when: tool is "NAME"`)'
    for other, word in (("answer", "text"), ("vectors", "vector"), ("flags", "flag"), ("usage", "usage"))
} | {
    frozenset({"result", "error"}): "a tool answers either an error or a result; for a result with `isError`, "
    'write `result error "…"`',
    frozenset({"result", "raw"}): "an MCP tool call has no HTTP body of its own to script; use `result` lines",
    frozenset({"result", "echo"}): "a tool call no step answers gets the default result; remove one line",
}
_KIND_HINTS |= {  # `usage` belongs to an answer (chat or vectors), so it conflicts where an answer does
    frozenset({"usage", other}): _KIND_HINTS[frozenset({"answer", other})] for other in ("error", "raw", "echo")
}
_KIND_HINTS[frozenset({"usage", "flags"})] = "a moderation answer reports no token usage; remove the `usage` line"
_KIND_HINTS |= (
    {  # `audio` and `image` answer speech and images requests (and Gemini's audio and pictures)
        frozenset({media, other}): f"`{media}` answers a {what} request, `{word}` another kind; "
        f'give each kind of request its own step (`when: endpoint is "{op}"`)'
        for media, what, op in (("audio", "speech", "speech"), ("image", "images", "images"))
        for other, word in (("vectors", "vector"), ("flags", "flag"), ("result", "result"))
    }
    | {frozenset({media, "error"}): f"a reply is either an error or {media}; {_LATER}" for media in ("audio", "image")}
    | {frozenset({media, "raw"}): f"{_RAW}; use `{media}` lines or a `body`, not both" for media in ("audio", "image")}
    | {frozenset({media, "echo"}): "`echo` writes the answer itself; remove one line" for media in ("audio", "image")}
    | {frozenset({"audio", "image"}): "a reply answers with audio or with pictures; give each its own step"}
)
#: kinds that share a reply: token usage with a chat answer, or with vectors (the input count); the text
#: that speech says, or that goes with Gemini's pictures
_TOGETHER = (
    frozenset({"usage", "answer"}),
    frozenset({"usage", "vectors"}),
    frozenset({"audio", "answer"}),
    frozenset({"image", "answer"}),
    frozenset({"usage", "audio"}),
    frozenset({"usage", "image"}),
)
_HANG_HINT = "`hang` never answers, so only `latency` may go with it"
#: `disconnect` and `stream error` cut a stream in the middle; an embedding answer is one whole body
_CUT_VECTORS_HINT = (
    "an embedding answer is one whole body, with no middle to cut: to drop the connection instead of "
    "answering, give `disconnect` a step of its own"
)


def check_elements(r: Reporter, elements: Sequence[ReplyElement], file: str, block: str = "reply") -> None:
    """Elements of one block that cannot go together."""
    first_of_type: dict[type, ReplyElement] = {}
    first_of_kind: dict[str, ReplyElement] = {}
    non_latency: ReplyElement | None = None
    hang: ReplyElement | None = None
    conflicted: set[int] = set()  # ids of the elements reported as conflicting
    for el in elements:
        word = ELEMENT_WORDS[type(el)]
        conflict: tuple[ReplyElement, str] | None = None
        if isinstance(el, _SINGLE) and type(el) in first_of_type:
            conflict = (first_of_type[type(el)], f"a {block} has one `{word}` line; keep one")
        kind = _KIND.get(type(el))
        if conflict is None and kind is not None:
            for other_kind, other in first_of_kind.items():
                if other_kind != kind and frozenset({kind, other_kind}) not in _TOGETHER:
                    hint = _HANG_HINT if "hang" in (kind, other_kind) else _KIND_HINTS[frozenset({kind, other_kind})]
                    if "vectors" in (kind, other_kind) and (isinstance(el, _CUTS) or isinstance(other, _CUTS)):
                        hint = _CUT_VECTORS_HINT
                    conflict = (other, hint)
                    break
        if conflict is None and hang is not None and not isinstance(el, Latency):
            conflict = (hang, _HANG_HINT)
        if conflict is None and isinstance(el, Hang) and non_latency is not None:
            conflict = (non_latency, _HANG_HINT)
        if conflict is None and isinstance(el, Text | Chunks):
            other_type: type = Chunks if isinstance(el, Text) else Text
            if other_type in first_of_type:
                conflict = (
                    first_of_type[other_type],
                    "`chunks:` gives the text in pieces; remove the `text` lines or the `chunks:` block",
                )
        if conflict is None and isinstance(el, Vector | VectorsFrom):
            other_type = VectorsFrom if isinstance(el, Vector) else Vector
            if other_type in first_of_type:
                conflict = (first_of_type[other_type], "give the vectors inline or from a file, not both")
        if conflict is None and isinstance(el, Disconnect | StreamError):
            other_type = StreamError if isinstance(el, Disconnect) else Disconnect
            if other_type in first_of_type:
                conflict = (first_of_type[other_type], "a stream ends one way: keep `disconnect` or `stream error`")
        if conflict is not None:
            conflicted.add(id(el))
            other, hint = conflict
            other_word = ELEMENT_WORDS[type(other)]
            other_span = r.at(other.span, file)
            same = type(other) is type(el)
            message = (
                f"second `{word}` line in one {block} (the first is{line_of(other_span)})"
                if same and other_span.line
                else f"`{word}` conflicts with `{other_word}`{line_of(other_span)}"
            )
            if same and not other_span.line:
                message = f"second `{word}` line in one {block}"
            r.err(
                "conflicting-reply",
                message,
                r.at(el.span, file),
                hint=hint,
                related=[Related(other_span, f"`{other_word}` is here")],
            )
        first_of_type.setdefault(type(el), el)
        if kind is not None:
            first_of_kind.setdefault(kind, el)
        if isinstance(el, Hang):
            hang = hang or el
        elif not isinstance(el, Latency) and non_latency is None:
            non_latency = el
    check_input_elements(r, elements, file)
    interleave = first_of_type.get(InterleaveCalls)
    calls = sum(isinstance(el, ToolCall) for el in elements)
    if interleave is not None and id(interleave) not in conflicted and calls < 2 and block == "reply":
        r.warn(
            "interleave-no-effect",
            "`interleave calls` has no effect with fewer than two tool calls",
            r.at(interleave.span, file),
            hint="add more `tool call` lines to interleave, or remove `interleave calls`",
        )
