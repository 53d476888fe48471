"""Ollama's completion endpoint, ``POST /api/generate`` (docs/providers/ollama.md), read as a chat turn.

The ``prompt`` is the last user message, ``system`` the system text, ``images`` (base64) its
attachments; ``raw`` sends the prompt unformatted (nothing changes here: there is no template to skip).
The conversation so far travels in ``context``: the real server sends its token ids back with every
final answer, for the client to send with its next prompt. mockllm's ``context`` is the system text and
the turns themselves, each character of their JSON as its code point, so the next request is matched as the
next turn of the same chat (a ``context`` mockllm did not write, real token ids, is ignored). The answer
is ``response`` (and ``thinking``), whole or streamed as NDJSON, the final line ``done`` with the
durations and ``context``. A request without ``prompt`` loads the model: an empty ``response`` with
``done_reason: "load"``, as Ollama answers it, without a scenario."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mockllm.runtime.providers import common, events
from mockllm.runtime.providers.base import Frame, Rendered
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import Attachment, ChatRequest, HttpRequest, Message, Provider, Role

__all__ = ["GENERATE_PATH", "decode_context", "encode_context", "parse_generate", "render_generate"]

GENERATE_PATH = "/api/generate"
_NDJSON = "application/x-ndjson"
_JSON = "application/json; charset=utf-8"
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant"}
_MAGIC = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif", b"RIFF": "image/webp"}


def encode_context(messages: list[tuple[str, str]]) -> list[int]:
    """The turns as ``context``: the code points of their compact JSON."""
    return [ord(ch) for ch in json.dumps(messages, ensure_ascii=False, separators=(",", ":"))]


def decode_context(value: Any) -> list[tuple[str, str]]:
    """The turns a ``context`` of :func:`encode_context` holds; [] for any other (real token ids)."""
    if not isinstance(value, list) or not value or not all(isinstance(v, int) and 0 <= v < 0x110000 for v in value):
        return []
    try:
        turns = json.loads("".join(map(chr, value)))
    except ValueError:
        return []
    if not isinstance(turns, list):
        return []
    out = []
    for turn in turns:
        if not (isinstance(turn, list) and len(turn) == 2 and turn[0] in ("system", "user", "assistant")):
            return []
        out.append((str(turn[0]), str(turn[1])))
    return out


def _images(value: Any, fields: common.BodyReader) -> tuple[Attachment, ...]:
    out = []
    for i, raw in enumerate(fields.array(value, "images")):
        if not isinstance(raw, str):
            raise fields.wrong_type(f"images[{i}]", "a string", raw)
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise fields.bad(f"invalid request: images[{i}] is not base64-encoded image data") from None
        media = next((m for magic, m in _MAGIC.items() if data.startswith(magic)), "image/png")
        out.append(Attachment("image", media, len(data)))
    return tuple(out)


def parse_generate(http: HttpRequest, provider: Provider, fields: common.BodyReader) -> ChatRequest:
    """A generate request as a chat turn: the ``context``'s turns, then the prompt as a user message."""
    data = fields.load_body(http.body)
    model = data.get("model")
    if model is None or model == "":
        raise fields.bad("model is required")
    if not isinstance(model, str):
        raise fields.wrong_type("model", "a string", model)
    stream = data.get("stream", True)
    if stream is None:
        stream = True
    if not isinstance(stream, bool):
        raise fields.wrong_type("stream", "a boolean", stream)
    prompt = fields.opt_str(data, "prompt", "") or ""
    system = fields.opt_str(data, "system", "") or ""
    raw = data.get("raw")
    if raw is not None and not isinstance(raw, bool):
        raise fields.wrong_type("raw", "a boolean", raw)
    images = _images(data["images"], fields) if data.get("images") is not None else ()
    turns = decode_context(data.get("context"))
    system = system or "".join(text for role, text in turns if role == "system")  # it is in Ollama's context too
    messages = [
        Message(role=_ROLES[role], text=text, index=i) for i, (role, text) in enumerate(turns) if role != "system"
    ]
    if prompt or images:
        messages.append(Message(role="user", text=prompt, index=len(messages), attachments=images))
    return ChatRequest(
        provider=provider,
        endpoint=http.path,
        model=model,
        stream=stream,
        messages=tuple(messages),
        system=system,
        headers=dict(http.headers),
        body=data,
    )


def _context(plan: MessagePlan, chat: ChatRequest) -> list[int]:
    turns = [("system", chat.system)] if chat.system else []
    turns += [(m.role, m.text) for m in chat.messages if m.role in ("user", "assistant")]
    return encode_context([*turns, ("assistant", plan.text + (plan.refusal or ""))])


def render_generate(plan: MessagePlan, chat: ChatRequest, created_at: Any, done: dict[str, Any]) -> Rendered:
    """The answer: whole (``response``, ``thinking``, the durations, ``context``) or NDJSON pieces then
    the ``done`` line. ``created_at(nanoseconds)`` stamps a line; ``done`` is the final line's counts."""
    context = _context(plan, chat)
    if chat.stream:
        return Rendered(200, _NDJSON, frames=events.stream_frames(plan, _Framer(plan, created_at, done, context)))
    body: dict[str, Any] = {
        "model": plan.model,
        "created_at": created_at(-1),
        "response": plan.text + (plan.refusal or ""),
    }
    if plan.thinking:
        body["thinking"] = plan.thinking
    return Rendered(200, _JSON, body=common.json_bytes({**body, **done, "context": context}))


class _Framer:
    """One line a piece of thinking or text, then the ``done`` line with the durations and ``context``."""

    def __init__(self, plan: MessagePlan, created_at: Any, done: dict[str, Any], context: list[int]) -> None:
        self.plan = plan
        self.created_at = created_at
        self.done = done
        self.context = context
        self.lines: list[dict[str, Any]] = []

    def frame(self, event: events.Event) -> list[Frame]:
        match event:
            case events.ThinkingDelta(text=piece):
                self.lines.append({"response": "", "thinking": piece})
            case events.TextDelta(text=piece):
                self.lines.append({"response": piece})
            case events.Refusal(text=refusal) if refusal:
                self.lines.append({"response": refusal})
            case events.End():
                return self._frames()
        return []

    def _frames(self) -> list[Frame]:
        model = self.plan.model
        frames = [
            common.ndjson_frame({"model": model, "created_at": self.created_at(n), **line, "done": False}, content=True)
            for n, line in enumerate(self.lines)
        ]
        final = {
            "model": model,
            "created_at": self.created_at(-1),
            "response": "",
            **self.done,
            "context": self.context,
        }
        frames.append(common.ndjson_frame(final))
        return frames
