"""One realtime session's state, protocol-neutral: its conversation items, its settings, its input
audio buffer, and the engine request a response becomes.

The session keeps, beside each item, the provider-neutral message it reads as (built once when the
item is added), so a response's request is a tuple of messages already made: no history is parsed
again per response. Audio that mockllm made is understood as the text it carries
(:mod:`~mockllm.runtime.media.inband`); other audio reads as a placeholder naming its length, as a
transcription of it would."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from mockllm.runtime.engine.conversations import CONVERSATION_HEADER
from mockllm.runtime.media import inband
from mockllm.runtime.media.audio import PCM_RATE
from mockllm.runtime.reply.media import placeholder
from mockllm.runtime.request import Attachment, ChatRequest, Message, Provider, Tool, ToolCall, ToolResult

ItemKind = Literal["message", "function_call", "function_call_output"]
Output = Literal["text", "audio"]
#: input audio kept per session (pcm16 at 24 kHz: about 11 minutes); more is refused by the protocol
MAX_BUFFER_BYTES = 32 * 1024 * 1024


def heard(pcm: bytes, rate: int = PCM_RATE) -> str:
    """What s16le mono ``pcm`` says: the text mockllm-made audio carries (after any leading digital
    silence), else a placeholder with its length."""
    start = len(pcm) - len(pcm.lstrip(b"\x00"))
    start -= start % 2
    carried = inband.read(pcm[start : start + inband.MAX_SAMPLE_BYTES])
    return carried if carried is not None else placeholder(len(pcm) / 2 / rate)


@attrs.frozen
class Item:
    """One conversation item: a message (a user's, the assistant's or a system one: its text, or the
    transcript of its audio), a function call the assistant made, or a function call's output."""

    id: str
    kind: ItemKind
    role: str = ""  # a message's: "user", "assistant", "system"
    text: str = ""  # a message's text, or what its audio says
    audio_bytes: int = 0  # a message with audio: how many bytes of it (the audio itself is not kept)
    call_id: str = ""
    name: str = ""  # a function call's
    arguments: str = ""  # a function call's arguments, as JSON text
    output: str = ""  # a function call output's


@attrs.frozen
class Settings:
    """What the session's responses use unless a response asks otherwise."""

    instructions: str = ""
    tools: tuple[Tool, ...] = ()
    output: Output = "audio"
    max_output_tokens: int | None = None


@attrs.frozen
class Ask:
    """One response the client asked for: overrides of the session's settings for it alone, whether it
    reads the conversation (``conversation=False``: only ``items``, out of band), and the client's
    event as sent (the journal's body)."""

    event: Any = None
    output: Output | None = None
    instructions: str | None = None
    tools: tuple[Tool, ...] | None = None
    conversation: bool = True
    items: tuple[Item, ...] = ()


def _message(item: Item, index: int, names: Mapping[str, str]) -> Message:
    if item.kind == "function_call":
        return Message("assistant", tool_calls=(ToolCall(item.call_id, item.name, _json(item.arguments)),), index=index)
    if item.kind == "function_call_output":
        result = ToolResult(item.call_id, names.get(item.call_id), item.output)
        return Message("tool", tool_result=result, index=index)
    role = item.role if item.role in ("user", "assistant", "system") else "user"
    attachments = (Attachment("audio", "audio/pcm", item.audio_bytes),) if item.audio_bytes else ()
    return Message(role, item.text, index=index, attachments=attachments)  # type: ignore[arg-type]


def _json(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text


@attrs.define
class Session:
    """One connection's session (owned by its driver: never shared)."""

    id: str
    key: str  # the conversation: the upgrade request's x-mockllm-conversation, else the session id
    provider: Provider
    endpoint: str
    model: str
    headers: Mapping[str, str]
    settings: Settings = attrs.field(factory=Settings)
    items: list[Item] = attrs.field(factory=list)
    messages: list[Message] = attrs.field(factory=list)  # items[i] reads as messages[i]
    summaries: list[dict[str, Any]] = attrs.field(factory=list)  # items[i] as the journal shows it
    audio: bytearray = attrs.field(factory=bytearray)  # the input audio buffer (pcm16)
    wire: dict[str, Any] = attrs.field(factory=dict)  # the protocol's own session fields, as it sends them
    responses: int = 0
    _names: dict[str, str] = attrs.field(factory=dict)  # call id -> function name
    _count: int = 0

    def next_id(self, prefix: str) -> str:
        """A fresh id in this session: ``prefix`` + the session's id + a counter (unique per session)."""
        self._count += 1
        return f"{prefix}{self.id[-12:]}{self._count:06d}"

    def add(self, item: Item, after: str | None = None) -> int:
        """Add ``item`` (after item ``after`` when given and known, else at the end); its position."""
        if item.kind == "function_call" and item.call_id:
            self._names[item.call_id] = item.name
        at = len(self.items)
        if after is not None:
            for i, known in enumerate(self.items):
                if known.id == after:
                    at = i + 1
                    break
        self.items.insert(at, item)
        self.messages.insert(at, _message(item, at, self._names))
        self.summaries.insert(at, summary(item))
        if at != len(self.items) - 1:  # positions after it moved
            self.messages[at:] = [attrs.evolve(m, index=i) for i, m in enumerate(self.messages[at:], at)]
        return at

    def find(self, item_id: str) -> Item | None:
        return next((item for item in self.items if item.id == item_id), None)

    def delete(self, item_id: str) -> bool:
        for i, item in enumerate(self.items):
            if item.id == item_id:
                del self.items[i], self.messages[i], self.summaries[i]
                self.messages[i:] = [attrs.evolve(m, index=j) for j, m in enumerate(self.messages[i:], i)]
                return True
        return False

    def request(self, ask: Ask) -> ChatRequest:
        """The engine request of the response ``ask`` asks for (operation ``"realtime"``)."""
        settings = self.settings
        instructions = settings.instructions if ask.instructions is None else ask.instructions
        tools = settings.tools if ask.tools is None else ask.tools
        extra = [_message(item, i, self._names) for i, item in enumerate(ask.items, len(self.items))]
        messages = (*self.messages, *extra) if ask.conversation else tuple(extra)
        items = [*self.summaries, *(summary(i) for i in ask.items)] if ask.conversation else []
        if instructions:
            messages = (Message("system", instructions, index=-1), *messages)
        headers = dict(self.headers)
        headers[CONVERSATION_HEADER] = self.key
        body = {"session": self.id, "event": ask.event, "items": items}
        return ChatRequest(
            provider=self.provider,
            endpoint=self.endpoint,
            model=self.model,
            stream=True,
            messages=tuple(messages),
            system=instructions,
            tools=tools,
            headers=headers,
            body=body,
            operation="realtime",
        )


def summary(item: Item) -> dict[str, Any]:
    """``item`` as the journal shows it (never the audio itself)."""
    out: dict[str, Any] = {"type": item.kind}
    if item.kind == "message":
        out["role"] = item.role
        out["text"] = item.text
        if item.audio_bytes:
            out["audio_bytes"] = item.audio_bytes
    elif item.kind == "function_call":
        out.update(call_id=item.call_id, name=item.name, arguments=item.arguments)
    else:
        out.update(call_id=item.call_id, output=item.output)
    return out
