"""The provider-neutral request every adapter parses into, and every condition reads from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from mockllm.dsl.operations import Operation as Operation  # what a request asks for: `endpoint is "embeddings"`
from mockllm.dsl.providers import Provider as Provider  # the language's provider names: one list
from mockllm.runtime.values import fast_frozen

Role = Literal["system", "user", "assistant", "tool"]
AttachmentKind = Literal["image", "audio", "file"]


@fast_frozen
class Attachment:
    """A non-text part of a message (an image, audio, a file) or a request's uploaded file, as the
    journal and the `attachments` subject see it: its kind, its media type and its size in bytes (0
    when it is only referenced by URL or id). The payload itself is never kept."""

    kind: AttachmentKind
    media_type: str = ""
    size: int = 0


@fast_frozen
class HttpRequest:
    """What the server hands an adapter: the HTTP request, already read, nothing parsed."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]  # names lower-cased
    body: bytes
    path_params: Mapping[str, str] = attrs.field(factory=dict)


@fast_frozen
class ToolCall:
    """A tool call the assistant made earlier in the history."""

    id: str | None
    name: str
    arguments: Any  # parsed JSON when it parses, else the raw string


@fast_frozen
class ToolResult:
    """A result returned for a tool call. ``name`` is resolved from the call when the wire lacks it."""

    call_id: str | None
    name: str | None
    content: str
    is_error: bool = False


@fast_frozen
class Message:
    """One normalised message. Tool results are messages of role ``tool`` (one per result), so a
    provider turn mixing tool results and text becomes several messages, results first."""

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_result: ToolResult | None = None
    index: int = 0  # position of the originating message/turn in the wire request
    attachments: tuple[Attachment, ...] = ()  # its images, audio and files, in order


@fast_frozen
class Tool:
    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=dict)  # JSON Schema, lower-case types


@attrs.frozen
class Continuation:
    """How a provider's API continues a conversation from an answer mockllm keeps (the Responses API's
    ``previous_response_id``, Anthropic's message threads). Its adapter sets it on the request; the
    engine, which knows no provider, keeps each answer under the id and with the tool-call ids the
    adapter sends, and answers a continuation whose history is gone with this error."""

    kept_id: Callable[[str], str]  # the id a later request names, from the turn's response id
    call_prefix: str  # the tool-call ids the adapter sends: ``PlannedToolCall.id_for(prefix, length)``
    call_length: int
    lost_status: int  # a continuation whose history is gone (never answered, evicted or reset)
    lost_message: str  # "{id}": the id it names
    lost_code: str | None = None


@fast_frozen
class ChatRequest:
    provider: Provider
    endpoint: str  # the request path
    model: str
    stream: bool
    messages: tuple[Message, ...]
    system: str = ""  # system/developer instructions, joined with "\n"
    tools: tuple[Tool, ...] = ()
    headers: Mapping[str, str] = attrs.field(factory=dict)  # names lower-cased
    body: Any = None  # the raw JSON body, for `field "a.b"` conditions
    # when ``body`` is parsed from JSON (or is part of it): that JSON's length as received, so the journal
    # knows a small body is small without measuring it (JournalEntry.body_bound); None: not known
    body_size: int | None = None
    include_usage: bool = False  # OpenAI stream_options.include_usage
    previous_response_id: str | None = None  # Responses API; Anthropic's thread `previous_message_id`
    thread: str | None = None  # Anthropic message threads: "create" or "continue" (None: no thread)
    continuation: Continuation | None = None  # set where the API continues from kept answers
    # embedding and moderation requests (no messages): the texts, and an embedding's own dimension
    operation: Operation = "chat"
    inputs: tuple[str, ...] = ()
    dimensions: int | None = None
    # an MCP tools/call (operation "mcp"): the tool's name and its arguments (a JSON object)
    tool: str | None = None
    arguments: Any = None
    # speech, transcription, translation and images: the uploaded files (transcription's audio, the
    # images of an edit), and for a transcription, how long the audio lasts (seconds) and whether
    # mockllm made it (then ``inputs`` holds the text it carries)
    attachments: tuple[Attachment, ...] = ()
    audio_seconds: float | None = None

    # ---- derived views used by conditions, the engine and the echo responder ----

    def last_user_message(self) -> str | None:
        for m in reversed(self.messages):
            if m.role == "user":
                return m.text
        return None

    def last_message(self) -> str | None:
        if not self.messages:
            return None
        m = self.messages[-1]
        if m.role == "tool" and m.tool_result is not None:
            return m.tool_result.content
        return m.text

    def turn(self) -> int:
        return sum(1 for m in self.messages if m.role == "user")

    def attachment_kinds(self) -> list[str]:
        """What the `attachments` subject reads: the kinds of the request's files, else of the last user
        message's non-text parts."""
        if self.attachments:
            return [a.kind for a in self.attachments]
        for m in reversed(self.messages):
            if m.role == "user":
                return [a.kind for a in m.attachments]
        return []

    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    def latest_tool_result(self, name: str) -> ToolResult | None:
        for m in reversed(self.messages):
            if m.tool_result is not None and m.tool_result.name == name:
                return m.tool_result
        return None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def resolve_tool_names(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Name the tool results whose wire form carries only a call id, from the calls earlier in the
    history (the Responses API's stored history holds calls its new input only answers)."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for m in messages:
        names.update((c.id, c.name) for c in m.tool_calls if c.id is not None)
        result = m.tool_result
        if result is not None and result.name is None and result.call_id in names:
            m = attrs.evolve(m, tool_result=attrs.evolve(result, name=names[result.call_id]))
        out.append(m)
    return tuple(out)
