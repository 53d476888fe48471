"""OpenAI ``POST /v1/audio/speech``: the JSON body checked as the real API checks it, and the answer as
audio bytes in the requested ``response_format`` (mp3, opus, aac, flac, wav, pcm) or, with
``stream_format: "sse"``, as ``speech.audio.delta`` events carrying base64 pieces of it and a closing
``speech.audio.done`` with the usage. The audio is :func:`~mockllm.runtime.media.audio.speak`'s: it
says the plan's text (which a transcription of it gives back) for as long as the text takes at
``speed``, or for the scripted length; a scripted ``audio "PATH"`` file is sent as it is."""

from __future__ import annotations

import base64
from typing import Any, cast

from mockllm.runtime.media.audio import FORMATS, MEDIA_TYPES, SPEEDS, AudioFormat, speak
from mockllm.runtime.providers.base import Frame, RenderContext, Rendered
from mockllm.runtime.providers.common import (
    FieldPath,
    invalid_value,
    load_json_object,
    one_of,
    optional_str,
    require,
    require_str,
    sse_frame,
    stream_response,
    wrong_type,
)
from mockllm.runtime.providers.pairs import inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest, Provider

MAX_INPUT = 4096  # characters: the real API's limit on `input`
DELTA_BYTES = 8192  # raw audio bytes per speech.audio.delta event
_ROOT = FieldPath()
_FORMAT_OR_NONE = (None, *FORMATS)


def _voice(value: Any) -> None:
    if isinstance(value, str) and value:
        return
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return
    raise wrong_type(_ROOT.key("voice"), "a voice name or an object with an id", value)


def _speed(body: dict[str, Any]) -> float:
    value = body.get("speed")
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type(_ROOT.key("speed"), "a number", value)
    if not SPEEDS[0] <= value <= SPEEDS[1]:
        raise invalid_value(_ROOT.key("speed"), f"must be between {SPEEDS[0]} and {SPEEDS[1]}, got {value}")
    return float(value)


def speech_request(http: HttpRequest, provider: Provider = "openai", model: str | None = None) -> ChatRequest:
    """The provider-neutral request of a speech call (``model`` given: Azure's deployment)."""
    body = load_json_object(http.body)
    named = require_str(body, "model", _ROOT) if model is None else model
    text = require_str(body, "input", _ROOT)
    if not text:
        raise invalid_value(_ROOT.key("input"), "must not be empty")
    if len(text) > MAX_INPUT:
        raise invalid_value(_ROOT.key("input"), f"must be at most {MAX_INPUT} characters, got {len(text)}")
    _voice(require(body, "voice", _ROOT))
    # (a known value is passed without building its field's path, which only an error needs)
    if body.get("response_format") not in _FORMAT_OR_NONE:
        one_of(body["response_format"], FORMATS, _ROOT.key("response_format"))
    if body.get("stream_format") not in (None, "audio", "sse"):
        one_of(body["stream_format"], ("audio", "sse"), _ROOT.key("stream_format"))
    _speed(body)
    optional_str(body, "instructions", _ROOT)
    return inputs_request(provider, "speech", http, named, (text,), body, body_size=len(http.body))


def parse_speech(http: HttpRequest) -> ChatRequest:
    return speech_request(http)


def audio_for(plan: MessagePlan, chat: ChatRequest) -> tuple[AudioFormat, bytes]:
    """The requested format and the audio of ``plan`` in it."""
    body = chat.body if isinstance(chat.body, dict) else {}
    fmt = cast(AudioFormat, body.get("response_format") or "mp3")
    if plan.audio is not None:
        return fmt, plan.audio
    return fmt, speak(plan.text, fmt, seconds=plan.audio_seconds, speed=_speed(body))


def render_speech(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    fmt, audio = audio_for(plan, chat)
    headers = (("x-request-id", ctx.request_id),)
    if not (isinstance(chat.body, dict) and chat.body.get("stream_format") == "sse"):
        return Rendered(200, MEDIA_TYPES[fmt], headers=headers, body=audio)
    frames: list[Frame] = [
        sse_frame(
            {"type": "speech.audio.delta", "audio": base64.b64encode(audio[i : i + DELTA_BYTES]).decode()},
            content=True,
        )
        for i in range(0, len(audio), DELTA_BYTES)
    ]
    usage = {
        "input_tokens": plan.input_tokens,
        "output_tokens": plan.output_tokens,
        "total_tokens": plan.input_tokens + plan.output_tokens,
    }
    frames.append(sse_frame({"type": "speech.audio.done", "usage": usage}))
    return stream_response(frames, headers=headers)
