"""OpenAI ``POST /v1/audio/transcriptions`` and ``/v1/audio/translations``: the multipart upload read
and its audio heard (:func:`~mockllm.runtime.media.audio.listen`: its length, and the text audio that
mockllm made carries), and the transcript answered in the requested ``response_format``: ``json``,
``text``, ``srt``, ``vtt`` or ``verbose_json`` (segments, and words when
``timestamp_granularities[]`` asks for them, with times spread over the audio's length by their
characters), or streamed as ``transcript.text.delta`` events and a ``transcript.text.done``.

Bytes that are no audio get the real API's "Invalid file format" 400; audio cut short or broken, its
"could not be decoded" 400."""

from __future__ import annotations

import math
import re
from typing import Any

from mockllm.runtime.media.audio import CONTAINER_TYPES, listen, seconds_for
from mockllm.runtime.media.heard import UnreadableAudio
from mockllm.runtime.providers.base import ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import (
    JSON_MEDIA,
    FieldPath,
    invalid_value,
    json_response,
    json_text,
    missing,
    one_of,
    sse_frame,
    stream_response,
    utf8_json,
    utf8_text,
)
from mockllm.runtime.providers.multipart import Form, parse_form
from mockllm.runtime.providers.pairs import inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import Attachment, ChatRequest, HttpRequest, Operation, Provider

TRANSCRIPT_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
_ROOT = FieldPath()
_SENTENCE = re.compile(r"[^.!?]+[.!?]*\s*|\S+\s*")
_TEXT_MEDIA = "text/plain; charset=utf-8"


def form_body(form: Form) -> dict[str, Any]:
    """A form's text fields as a JSON-like body (for `field "NAME"` conditions): a field sent once is a
    string, a list field (``include[]``) the list of its values, under its name without brackets."""
    out: dict[str, Any] = {}
    for name, values in form.fields.items():
        if name.endswith("[]"):
            out[name[:-2]] = list(values)
        else:
            out[name] = values[-1]
    return out


def audio_request(
    http: HttpRequest, operation: Operation, provider: Provider = "openai", model: str | None = None
) -> ChatRequest:
    """The provider-neutral request of a transcription or translation upload (``model`` given: Azure's
    deployment)."""
    form = parse_form(http.headers.get("content-type", ""), http.body)
    upload = form.file("file")
    if upload is None:
        raise missing(_ROOT.key("file"))
    named = form.value("model") if model is None else model
    if not named:
        raise missing(_ROOT.key("model"))
    fmt = form.value("response_format")
    if fmt is not None and fmt not in TRANSCRIPT_FORMATS:  # (the path built only for the error)
        one_of(fmt, TRANSCRIPT_FORMATS, _ROOT.key("response_format"))
    stream = form.value("stream")
    if stream not in (None, "true", "false"):
        raise invalid_value(_ROOT.key("stream"), f"'{stream}' is not a boolean")
    if stream == "true" and fmt not in (None, "json", "text"):
        raise invalid_value(_ROOT.key("response_format"), f"'{fmt}' cannot be streamed: use json or text")
    try:
        heard = listen(upload.data)
    except UnreadableAudio as e:
        message = str(e)
        if not message.startswith("Invalid file format"):
            message = f"The audio file could not be decoded or its format is not supported ({message})."
        raise ProviderError(400, message, code="invalid_value", param="file") from None
    body = form_body(form)
    attachment = Attachment("audio", CONTAINER_TYPES.get(heard.format, upload.content_type), len(upload.data))
    return inputs_request(
        provider,
        operation,
        http,
        named,
        (heard.text or "",),
        body,
        stream=stream == "true",
        attachments=(attachment,),
        audio_seconds=heard.seconds,
    )


def parse_transcription(http: HttpRequest) -> ChatRequest:
    return audio_request(http, "transcription")


def parse_translation(http: HttpRequest) -> ChatRequest:
    return audio_request(http, "translation")


# ---------------------------------------------------------------- rendering


def _spread(pieces: list[str], seconds: float) -> list[tuple[str, float, float]]:
    """Each piece with its start and end, the length shared by characters."""
    total = sum(len(p) for p in pieces) or 1
    out, at = [], 0.0
    for p in pieces:
        end = at + seconds * len(p) / total
        out.append((p, round(at, 3), round(end, 3)))
        at = end
    return out


def segments(text: str, seconds: float) -> list[dict[str, Any]]:
    """The transcript's sentences as verbose_json segments."""
    sentences = [s for s in _SENTENCE.findall(text) if s.strip()] or [text]
    return [
        {
            "id": i,
            "seek": 0,
            "start": start,
            "end": end,
            "text": " " + piece.strip(),
            "tokens": [],
            "temperature": 0.0,
            "avg_logprob": -0.1,
            "compression_ratio": 1.0,
            "no_speech_prob": 0.0,
        }
        for i, (piece, start, end) in enumerate(_spread(sentences, seconds))
    ]


def words(text: str, seconds: float) -> list[dict[str, Any]]:
    """The transcript's words with their times."""
    return [{"word": w, "start": s, "end": e} for w, s, e in _spread(text.split(), seconds)]


def _clock(t: float, mark: str) -> str:
    ms = round(t * 1000)
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}{mark}{ms % 1000:03d}"


def cues(text: str, seconds: float, vtt: bool) -> str:
    """The transcript as SubRip (``srt``) or WebVTT (``vtt``) cues, one per sentence."""
    mark = "." if vtt else ","
    out = ["WEBVTT\n"] if vtt else []
    for seg in segments(text, seconds):
        times = f"{_clock(seg['start'], mark)} --> {_clock(seg['end'], mark)}"
        out.append(("" if vtt else f"{seg['id'] + 1}\n") + f"{times}\n{seg['text'].strip()}\n")
    return "\n".join(out)


def render_transcript(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    body = chat.body if isinstance(chat.body, dict) else {}
    fmt = body.get("response_format") or "json"
    text = plan.text
    seconds = chat.audio_seconds if chat.audio_seconds is not None else seconds_for(text)
    headers = (("x-request-id", ctx.request_id),)
    usage = {"type": "duration", "seconds": math.ceil(seconds)}
    if chat.stream:
        tokens = {
            "type": "tokens",
            "input_tokens": plan.input_tokens,
            "output_tokens": plan.output_tokens,
            "total_tokens": plan.input_tokens + plan.output_tokens,
        }
        frames = [sse_frame({"type": "transcript.text.delta", "delta": c}, content=True) for c in plan.text_chunks]
        frames.append(sse_frame({"type": "transcript.text.done", "text": text, "usage": tokens}))
        return stream_response(frames, headers=headers)
    if fmt == "json":  # (written out: encoding the two objects took half of rendering it)
        answer = f'{{"text":{json_text(text)},"usage":{{"type":"duration","seconds":{usage["seconds"]}}}}}'
        return Rendered(200, JSON_MEDIA, headers=headers, body=utf8_json(answer))
    if fmt == "text":
        return Rendered(200, _TEXT_MEDIA, headers=headers, body=utf8_text(text))
    if fmt in ("srt", "vtt"):
        return Rendered(200, _TEXT_MEDIA, headers=headers, body=utf8_text(cues(text, seconds, fmt == "vtt")))
    granularities = body.get("timestamp_granularities") or ["segment"]
    translating = chat.operation == "translation"
    payload: dict[str, Any] = {
        "task": "translate" if translating else "transcribe",
        "language": "english" if translating else str(body.get("language") or "english"),
        "duration": round(seconds, 3),
        "text": text,
    }
    if "segment" in granularities:
        payload["segments"] = segments(text, seconds)
    if "word" in granularities:
        payload["words"] = words(text, seconds)
    payload["usage"] = usage
    return json_response(payload, headers=headers)
