"""What a provider answered, provider-neutral: the facts a reply element can reproduce."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from mockllm.dsl.tree.nodes import FinishReason


@attrs.frozen
class Call:
    """A tool call; ``fragments`` are its argument text as a stream delivered it (empty when whole)."""

    name: str
    arguments: Any
    id: str | None = None
    fragments: tuple[str, ...] = ()


@attrs.frozen
class Answer:
    """``text_chunks`` holds the text as it arrived (one piece when not streamed); ``events`` counts a
    stream's content events (what ``disconnect after N chunks`` counts)."""

    text_chunks: tuple[str, ...] = ()
    thinking: str = ""
    refusal: str = ""
    calls: tuple[Call, ...] = ()
    finish: FinishReason | None = None
    usage: tuple[int, int] | None = None
    response_id: str | None = None
    error: str | None = None  # an in-band stream error's message
    events: int = 0
    vectors: tuple[tuple[float, ...], ...] = ()  # an embedding answer's vectors, one per input
    media: tuple[tuple[str, bytes], ...] = ()  # pictures and sound in the answer: (media type, bytes)

    @property
    def text(self) -> str:
        return "".join(self.text_chunks)


#: every provider's finish word (lower-cased) → the script's finish reason; a word one provider uses
#: means the same wherever another uses it
_FINISH_WORDS: dict[str, FinishReason] = {
    **dict.fromkeys(("stop", "end_turn", "stop_sequence", "pause_turn", "complete"), "stop"),
    **dict.fromkeys(("length", "max_tokens", "model_length"), "length"),
    **dict.fromkeys(("tool_calls", "function_call", "tool_use", "tool_call"), "tool_calls"),
    **dict.fromkeys(
        ("content_filter", "guardrail_intervened", "safety", "prohibited_content", "blocklist", "spii", "recitation"),
        "content_filter",
    ),
}


def finish_for(word: Any, default: FinishReason | None = None) -> FinishReason | None:
    """The finish reason a provider's stop word means (``"end_turn"``, ``"MAX_TOKENS"`` …), else ``default``."""
    return _FINISH_WORDS.get(str(word).lower(), default) if word else default


@attrs.define
class Parts:
    """What a reader collects from an answer as it reads it, in order; :meth:`answer` freezes it. Each
    piece of text, thinking or tool call counts as one event of a stream."""

    chunks: list[str] = attrs.Factory(list)
    thinking: list[str] = attrs.Factory(list)
    calls: list[Call] = attrs.Factory(list)
    finish: FinishReason | None = None
    usage: tuple[int, int] | None = None
    response_id: Any = None
    error: str | None = None
    events: int = 0
    media: list[tuple[str, bytes]] = attrs.Factory(list)

    def text(self, piece: Any) -> None:
        self.chunks.append(str(piece))
        self.events += 1

    def think(self, piece: Any) -> None:
        self.thinking.append(str(piece))
        self.events += 1

    def call(self, name: Any, arguments: Any, call_id: Any = None) -> None:
        self.calls.append(Call(str(name or ""), parse_arguments(arguments), call_id))
        self.events += 1

    def answer(self, calls: tuple[Call, ...] | None = None, stop_calls: bool = False) -> Answer:
        """The answer (``calls``: the tool calls when collected elsewhere, by a :class:`StreamedCalls`).
        ``stop_calls``: the provider says "stop" after tool calls (Gemini, Ollama), which a script's
        default (tool_calls) reproduces."""
        found = tuple(self.calls) if calls is None else calls
        return Answer(
            text_chunks=tuple(c for c in self.chunks if c),
            thinking="".join(self.thinking),
            calls=found,
            finish="tool_calls" if stop_calls and found and self.finish == "stop" else self.finish,
            usage=self.usage,
            response_id=self.response_id,
            error=self.error,
            events=self.events,
            media=tuple(self.media),
        )


class StreamedCalls:
    """Tool calls as a stream delivers them, by index: a name and an id (when the event carries them),
    then argument fragments."""

    def __init__(self) -> None:
        self._slots: dict[int, list[Any]] = {}  # index → [name, id, fragments]

    def start(self, index: int, name: Any = None, call_id: Any = None) -> None:
        slot = self._slots.setdefault(index, [None, None, []])
        slot[0], slot[1] = name or slot[0], call_id or slot[1]

    def add(self, index: int, fragment: Any) -> None:
        if fragment:
            self._slots.setdefault(index, [None, None, []])[2].append(str(fragment))

    def calls(self, arguments: Callable[[str], Any] | None = None) -> tuple[Call, ...]:
        """The calls in index order; ``arguments`` reads the joined fragments (default: as JSON)."""
        read = arguments or parse_arguments
        return tuple(
            Call(str(name or ""), read("".join(parts)), call_id, tuple(parts))
            for name, call_id, parts in (self._slots[i] for i in sorted(self._slots))
        )


def parse_arguments(raw: Any) -> Any:
    """Tool arguments as JSON: a string that parses is parsed (OpenAI sends them as text)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw if raw is not None else {}


def load_json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return None


def sse_events(body: bytes) -> list[tuple[str | None, Any]]:
    """The events of an SSE body, in order: (event name or None, parsed data). ``[DONE]`` and data
    that is not JSON are left out."""
    out: list[tuple[str | None, Any]] = []
    event: str | None = None
    data: list[str] = []
    for line in [*body.decode("utf-8", "replace").splitlines(), ""]:
        if not line:
            if data:
                text = "\n".join(data)
                if text.strip() != "[DONE]":
                    try:
                        out.append((event, json.loads(text)))
                    except ValueError:
                        pass
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return out


def objects(values: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The values that are JSON objects; a reader passes over anything else in a recorded body."""
    return (v for v in values if isinstance(v, dict))


def sse_objects(body: bytes) -> Iterator[dict[str, Any]]:
    """The data of each SSE event of ``body`` that is a JSON object."""
    return objects(data for _, data in sse_events(body))


def ndjson(body: bytes) -> list[Any]:
    out = []
    for line in body.decode("utf-8", "replace").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def error_message(body: bytes) -> str:
    """The message of an error body, whatever the provider's shape; the raw text when it is not JSON."""
    data = load_json(body)
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if isinstance(data.get("message"), str):
            return str(data["message"])
    text = body.decode("utf-8", "replace").strip()
    return text[:500] if text else "error"


def number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
