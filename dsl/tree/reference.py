"""The reference text of every keyword, and where in a script each statement may be written.

Editors need the language's vocabulary in one place: completion offers the statements a block may
hold, hover shows what a keyword means, the Pygments lexer colours the words. Each :class:`Entry`
is one statement or phrase as a script writes it (``last user message``, ``is at least``,
``retry after``), the block it belongs in, a snippet to insert, and one or two sentences of
reference in a QA reader's words (the same as ``docs/language.md``). Pure data: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import attrs

from mockllm.dsl.operations import OPERATIONS
from mockllm.dsl.providers import PROVIDERS
from mockllm.dsl.tree.describe import OP_WORDS

#: Where a line may stand: the file's top level, a scenario's or a step's body, a `when:`/`expect:`
#: block (conditions), a reply block (`reply:`, `reply NAME:`, `fallback:`), or `defaults:`; an
#: `mcp server` block (its tools, resources and prompts), a tool's block (its schemas), a resource's
#: block (its text) or a prompt's block (its arguments and messages).
Place = Literal[
    "top", "scenario", "step", "condition", "reply", "defaults", "mcp_server", "mcp_tool", "mcp_resource", "mcp_prompt"
]

#: What an entry is: a statement that starts a line, a condition's subject, a predicate, or a
#: word that only stands after another (`finish stop`, `is openai`).
Kind = Literal["statement", "subject", "predicate", "value"]


@attrs.frozen
class Entry:
    phrase: str  # the words as a script writes them, e.g. "retry after"
    kind: Kind
    places: tuple[Place, ...]
    doc: str
    snippet: str = ""  # LSP snippet syntax; empty: the phrase itself

    @property
    def insert(self) -> str:
        return self.snippet or self.phrase

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.phrase.split())


def _s(phrase: str, places: tuple[Place, ...], doc: str, snippet: str = "") -> Entry:
    return Entry(phrase, "statement", places, doc, snippet)


_REPLY: tuple[Place, ...] = ("reply",)

STATEMENTS: tuple[Entry, ...] = (
    # the file's top level
    _s(
        "mockllm",
        ("top",),
        "`mockllm 1`: the language version this file is written in; must be the first line.",
        "mockllm ${1:1}",
    ),
    _s(
        "use",
        ("top",),
        '`use "PATH" as ALIAS` imports a file relative to this one; its named replies are '
        "`ALIAS.NAME` and its scenarios join the library.",
        'use "${1:lib/errors.v1.mockllm}" as ${2:errors}',
    ),
    _s(
        "reply",
        ("top",),
        "`reply NAME:` defines a reusable reply; steps answer with it by `reply like NAME`.",
        "reply ${1:name}:\n    $0",
    ),
    _s(
        "defaults",
        ("top",),
        "`defaults:` holds `latency`, `stream` and `header` lines applied to every step of "
        "this file unless the step sets them, and the file's `fallback`.",
        "defaults:\n    $0",
    ),
    _s(
        "scenario",
        ("top",),
        '`scenario "NAME":` a conversation the server plays: its steps answer requests in '
        "order (one state machine per conversation).",
        'scenario "${1:name}":\n    $0',
    ),
    # a scenario's body
    _s(
        "priority",
        ("scenario",),
        "`priority N`: scenarios with a higher priority are tried first (default 0).",
        "priority ${1:10}",
    ),
    _s("tags", ("scenario",), "`tags a, b`: labels for filtering and reports.", "tags ${1:smoke}"),
    _s(
        "order any",
        ("scenario",),
        "`order any`: every step that is not used up may match, whatever ran before (the first unconsumed match wins).",
    ),
    _s(
        "let",
        ("scenario",),
        '`let NAME = "value"`: a variable for `{{NAME}}` templates in this scenario.',
        'let ${1:name} = "${2:value}"',
    ),
    _s(
        "when",
        ("scenario", "step"),
        "`when:` conditions, one per line, that must all hold; in a scenario they are ANDed into every step.",
        "when:\n    $0",
    ),
    _s(
        "step",
        ("scenario",),
        "`step NAME:` one answer of the scenario. Steps run in file order unless `after` names another predecessor.",
        "step ${1:name}:\n    $0",
    ),
    # a step's body
    _s(
        "after",
        ("step",),
        "`after STEP`: this step is eligible only right after STEP was used up; two steps "
        "after the same step are alternative branches.",
        "after ${1:step}",
    ),
    _s(
        "capture",
        ("step",),
        "`capture NAME from SUBJECT /REGEX/`: on a match, store the first group (or the "
        "whole match) as `{{NAME}}` for templates.",
        "capture ${1:name} from ${2:last user message} /${3:(\\\\w+)}/",
    ),
    _s(
        "expect",
        ("step",),
        "`expect:` conditions checked once the step is selected; a failure answers 400 "
        "`mockllm: expectation failed` and is recorded for `verify`.",
        "expect:\n    $0",
    ),
    _s(
        "repeat",
        ("step",),
        "`repeat N`: the step answers N times before it is used up (default once).",
        "repeat ${1:2}",
    ),
    _s("always", ("step",), "`always`: the step is never used up and never moves the scenario on."),
    _s(
        "reply like",
        ("step",),
        "`reply like NAME` / `reply like ALIAS.NAME`: answer with a named reply.",
        "reply like ${1:name}",
    ),
    _s("reply echo", ("step",), "`reply echo`: answer as the echo responder does (the last user message back)."),
    _s(
        "reply",
        ("step",),
        "`reply:` what the server sends when this step matches, one element per line.",
        "reply:\n    $0",
    ),
    # defaults
    _s("fallback echo", ("defaults",), "`fallback echo`: a request no step matches gets the echo answer."),
    _s(
        "fallback like",
        ("defaults",),
        "`fallback like NAME`: a request no step matches gets this named reply.",
        "fallback like ${1:name}",
    ),
    _s(
        "fallback",
        ("defaults",),
        "`fallback:` a reply block for requests no step matches; it consumes nothing.",
        "fallback:\n    $0",
    ),
    # reply elements (also the defaults' latency, stream and header)
    _s("text", _REPLY, '`text "…"`: assistant text; several `text` lines are joined.', 'text "${1}"'),
    _s(
        "tool call",
        _REPLY,
        "`tool call NAME {json}`: a tool call with JSON arguments; several lines are parallel "
        'calls; optional trailing `id "call_x"`.',
        "tool call ${1:name} {${2}}",
    ),
    _s(
        "thinking",
        _REPLY,
        '`thinking "…"`: a reasoning block where the provider has one (Anthropic thinking, Gemini thought).',
        'thinking "${1}"',
    ),
    _s(
        "refusal",
        _REPLY,
        '`refusal "…"`: a refusal (OpenAI `refusal`, Anthropic `stop_reason: refusal`).',
        'refusal "${1}"',
    ),
    _s(
        "finish",
        _REPLY,
        "`finish stop|length|tool_calls|content_filter`: the finish reason, mapped to each "
        "provider's vocabulary (default: `tool_calls` when calls are present, else `stop`).",
        "finish ${1|stop,length,tool_calls,content_filter|}",
    ),
    _s(
        "usage",
        _REPLY,
        "`usage N in, M out`: token usage (default: about one token per four characters).",
        "usage ${1:10} in, ${2:20} out",
    ),
    _s(
        "stream by word",
        ("reply", "defaults"),
        "`stream by word`: when the client streams, send the text one word "
        "per chunk (the default); optional `, D apart`.",
    ),
    _s(
        "stream by",
        ("reply", "defaults"),
        "`stream by N characters`: chunks of N characters; optional `, D apart`.",
        "stream by ${1:5} characters",
    ),
    _s(
        "stream error",
        _REPLY,
        '`stream error "message" after N chunks`: an in-band error event mid-stream.',
        'stream error "${1:message}" after ${2:3} chunks',
    ),
    _s(
        "stream",
        ("reply", "defaults"),
        "`stream N chunks`: split the text and tool arguments into N chunks; optional `, D apart` between chunks.",
        "stream ${1:4} chunks",
    ),
    _s("chunks", _REPLY, "`chunks:` explicit text chunks, one string per line.", 'chunks:\n    "${1}"'),
    _s(
        "latency",
        ("reply", "defaults"),
        "`latency D`: wait this long before the response starts (`250ms`, `2s`).",
        "latency ${1:250ms}",
    ),
    _s(
        "error",
        _REPLY,
        '`error STATUS "message"`: an error with the provider\'s own error body and type for that status.',
        'error ${1:429} "${2:Rate limit reached}"',
    ),
    _s(
        "retry after",
        _REPLY,
        "`retry after D`: adds `retry-after` (and `retry-after-ms`) headers.",
        "retry after ${1:1s}",
    ),
    _s(
        "header",
        ("reply", "defaults"),
        '`header "name" "value"`: an extra response header.',
        'header "${1:name}" "${2:value}"',
    ),
    _s(
        "echo header",
        _REPLY,
        '`echo header "name"`: copy a request header into the response.',
        'echo header "${1:name}"',
    ),
    _s("status", _REPLY, "`status N` with `body {json}`: a raw response, sent as written.", "status ${1:200}"),
    _s("body", _REPLY, "`body {json}`: the raw response body sent with `status`.", "body {${1}}"),
    _s(
        "disconnect after",
        _REPLY,
        "`disconnect after N chunks`: close the connection mid-stream, with no terminal event.",
        "disconnect after ${1:3} chunks",
    ),
    _s(
        "hang",
        _REPLY,
        "`hang`: accept the request and never answer, until the client gives up (bounded by the server's hang limit).",
    ),
    _s("echo", _REPLY, "`echo`: the echo responder's answer."),
    _s(
        "interleave calls",
        _REPLY,
        "`interleave calls`: when streaming, the argument fragments of the reply's tool "
        "calls alternate instead of one call finishing before the next starts.",
    ),
    _s(
        "vector",
        _REPLY,
        "`vector [0.1, -0.2, …]`: for an embedding request, the vector of one input; several lines "
        "answer the inputs in order (the rest get the default embedder's vector).",
        "vector [${1:0.1, 0.2, 0.3}]",
    ),
    _s(
        "vectors from",
        _REPLY,
        '`vectors from "FILE.json"`: for an embedding request, the inputs\' vectors in order, from a JSON '
        "file holding an array of vectors (relative to the script).",
        'vectors from "${1:vectors.json}"',
    ),
    _s(
        "result",
        _REPLY,
        '`result "text"` or `result {…}`: an MCP tool\'s result, as text content, or as structured content '
        'with its JSON text; `result error "text"`: a result marked `isError`.',
        'result ${1:{"ok": true\}}',
    ),
    _s(
        "mcp server",
        ("top",),
        '`mcp server "NAME":`: an MCP tool server, served at `/mcp/NAME` and by `mockllm mcp NAME`; '
        "it holds `tool` blocks.",
        'mcp server "${1:tools}":',
    ),
    _s(
        "tool",
        ("mcp_server",),
        '`tool NAME "description":`: a tool of the server, with its `input {…}` JSON Schema (and an '
        "optional `output {…}` schema).",
        'tool ${1:name} "${2:what it does}":',
    ),
    _s(
        "input",
        ("mcp_tool",),
        "`input {…}`: the JSON Schema of the tool's arguments (an object schema); calls whose arguments "
        "do not fit get the error a real server returns.",
        'input {"type": "object", "properties": {${1}}}',
    ),
    _s(
        "output",
        ("mcp_tool",),
        "`output {…}`: the JSON Schema of the tool's structured result; `check` tests scripted results "
        "against it, and a call no step answers gets a value that fits it.",
        'output {"type": "object", "properties": {${1}}}',
    ),
    _s(
        "resource",
        ("mcp_server",),
        '`resource "URI" "description":`: a resource of the server, listed by `resources/list`; its '
        '`text "…"` is what `resources/read` returns (`mime "…"` names its type; plain text by default).',
        'resource "${1:notes://readme}" "${2:what it holds}":\n    text "${3}"',
    ),
    _s(
        "prompt",
        ("mcp_server",),
        '`prompt NAME "description":`: a prompt of the server, listed by `prompts/list`, with its '
        '`argument` lines and its `user "…"`/`assistant "…"` messages, which `prompts/get` fills in.',
        'prompt ${1:name} "${2:what it asks}":\n    argument ${3:topic}\n    user "${4:Tell me about {{topic\}\}}"',
    ),
    _s(
        "text",
        ("mcp_resource",),
        '`text "…"`: the resource\'s content, as `resources/read` returns it.',
        'text "${1}"',
    ),
    _s(
        "mime",
        ("mcp_resource",),
        '`mime "TYPE"`: the resource\'s MIME type (`mimeType`), e.g. `mime "application/json"`; '
        "`text/plain` when left out.",
        'mime "${1:application/json}"',
    ),
    _s(
        "argument",
        ("mcp_prompt",),
        '`argument NAME "description"`: an argument of the prompt, required unless the line ends with '
        "`optional`; its value fills `{{NAME}}` in the messages.",
        'argument ${1:name} "${2:what it is}"',
    ),
    _s(
        "user",
        ("mcp_prompt",),
        '`user "…"`: a user message of the prompt; `{{argument}}` placeholders are filled in.',
        'user "${1}"',
    ),
    _s(
        "assistant",
        ("mcp_prompt",),
        '`assistant "…"`: an assistant message of the prompt; `{{argument}}` placeholders are filled in.',
        'assistant "${1}"',
    ),
    _s(
        "flag",
        _REPLY,
        '`flag "violence", …`: for a moderation request, flag these categories (OpenAI\'s moderation '
        "categories) for every input.",
        'flag "${1:violence}"',
    ),
    _s(
        "audio",
        _REPLY,
        '`audio "FILE"`: these bytes as the audio of a speech (or Gemini audio) answer, a file relative to the '
        "script; `audio 2.5s`: generated audio of that length in the requested format, saying the reply's "
        "text (or the request's input).",
        "audio ${1:2.5s}",
    ),
    _s(
        "image",
        _REPLY,
        '`image "FILE"`: this picture as each generated image of an images (or Gemini picture) answer, a file '
        "relative to the script.",
        'image "${1:picture.png}"',
    ),
)


def _subject(phrase: str, doc: str, snippet: str = "") -> Entry:
    return Entry(phrase, "subject", ("condition",), doc, snippet)


SUBJECTS: tuple[Entry, ...] = (
    _subject("provider", "The API the request came to: " + ", ".join(f"`{p}`" for p in PROVIDERS) + "."),
    _subject(
        "endpoint",
        'The request path, e.g. `"/v1/chat/completions"`, or an operation: '
        + ", ".join(f'`"{o}"`' for o in OPERATIONS)
        + ".",
    ),
    _subject("model", "The requested model name."),
    _subject("stream", "`true` when the client asked for a stream."),
    _subject("last user message", "Text of the last message whose role is user (tool results excluded)."),
    _subject("last message", "Text of the final message, any role."),
    _subject(
        "any message",
        "`any ROLE message`: true if some message of ROLE (`user`, `assistant`, `system`, "
        "`tool`) satisfies the predicate.",
        "any ${1|user,assistant,system,tool|} message",
    ),
    _subject("system prompt", "The system/developer instructions, joined."),
    _subject("tools", "The names of the tools offered."),
    _subject(
        "tool result for",
        '`tool result for "NAME"`: content of the latest result returned for a call to tool NAME.',
        'tool result for "${1:name}"',
    ),
    _subject("header", '`header "NAME"`: a request header (case-insensitive name).', 'header "${1:name}"'),
    _subject("field", '`field "a.b.0.c"`: a value in the raw JSON body, by dotted path.', 'field "${1:path}"'),
    _subject("turn", "Number of user messages so far (1 on the first request)."),
    _subject(
        "input",
        "The texts of an embedding or moderation request (a predicate holds if it holds for any of them).",
    ),
    _subject("tool", 'For an MCP call: the name of the tool called (`tool is "get_forecast"`).'),
    _subject(
        "argument",
        '`argument "NAME"`: for an MCP call, one argument\'s value (a dotted path for nested values).',
        'argument "${1:name}"',
    ),
    _subject(
        "attachments",
        "The kinds of the request's files, or of the last user message's non-text parts: `\"image\"`, "
        '`"audio"`, `"file"` (`attachments include "image"`, `attachments is absent`).',
    ),
)

_PREDICATE_DOCS: dict[str, tuple[str, str]] = {
    "is": ("Equality with a typed literal (string, number, `true`/`false`/`null`, JSON).", 'is "${1}"'),
    "is_not": ("Not equal to a typed literal.", 'is not "${1}"'),
    "contains": ('Substring: `contains "s"`.', 'contains "${1}"'),
    "not_contains": ("The substring does not occur.", 'not contains "${1}"'),
    "matches": ("Regex search: `matches /re/` (flags `i`, `m`, `s`, `x`).", "matches /${1}/"),
    "not_matches": ("The regex finds nothing.", "not matches /${1}/"),
    "glob": ('Shell-style wildcard on the whole value: `glob "gpt-4o*"`.', 'glob "${1}"'),
    "include": ('Membership in a list subject (`tools include "x"`).', 'include "${1}"'),
    "exclude": ("Not a member of a list subject.", 'exclude "${1}"'),
    "present": ("Existence: the header, field, tool result or tools are there.", ""),
    "absent": ("The header, field, tool result or tools are not there.", ""),
    "error": ("For `tool result for`: the result was marked as an error.", ""),
    "at_least": ("Numeric comparison: the value is N or more.", "is at least ${1:2}"),
    "at_most": ("Numeric comparison: the value is N or less.", "is at most ${1:2}"),
}

#: Predicates by their operator name (``dsl.nodes.PredicateOp``), as ``describe.OP_WORDS`` spells them.
PREDICATES: dict[str, Entry] = {
    op: Entry(OP_WORDS[op], "predicate", ("condition",), doc, snippet) for op, (doc, snippet) in _PREDICATE_DOCS.items()
}

IGNORING_CASE = Entry(
    "ignoring case", "predicate", ("condition",), "At the end of a condition: compare text without regard to case."
)

VALUES: tuple[Entry, ...] = (
    *(Entry(w, "value", ("condition",), f"The provider `{w}`.") for w in PROVIDERS),
    *(Entry(w, "value", _REPLY, f"Finish reason `{w}`.") for w in ("stop", "length", "tool_calls", "content_filter")),
    *(Entry(w, "value", ("condition",), f"The JSON literal `{w}`.") for w in ("true", "false", "null")),
    *(
        Entry(w, "value", ("condition",), f"`any {w} message`: some message whose role is {w}.")
        for w in ("user", "assistant", "system", "tool")
    ),
)

#: Words that only join others inside a statement (`use "…" as NAME`, `usage N in, M out`).
CONNECTORS = frozenset(
    {"as", "from", "like", "in", "out", "by", "apart", "characters", "chunks", "calls", "id", "word", "optional"}
)

ALL: tuple[Entry, ...] = (*STATEMENTS, *SUBJECTS, *PREDICATES.values(), IGNORING_CASE, *VALUES)


def statements(place: Place) -> list[Entry]:
    """The statements a line in ``place`` may begin with, in reference order."""
    return [e for e in STATEMENTS if place in e.places]


def vocabulary(entries: Iterable[Entry] = ALL) -> frozenset[str]:
    """Every word the entries use."""
    return frozenset(w for e in entries for w in e.words)


def lookup(words: list[str], index: int, place: Place | None = None) -> Entry | None:
    """The entry naming the word at ``words[index]`` of a line: the longest phrase of consecutive words
    that covers it, preferring entries that belong in ``place``."""
    best: tuple[int, int, Entry] | None = None
    for e in ALL:
        n = len(e.words)
        for start in range(max(0, index - n + 1), index + 1):
            if tuple(words[start : start + n]) != e.words:
                continue
            rank = (n, 1 if place is not None and place in e.places else 0)
            if best is None or rank > best[:2]:
                best = (rank[0], rank[1], e)
    return best[2] if best else None
