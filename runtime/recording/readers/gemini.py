"""Gemini answers: ``candidates[0].content.parts``, or a stream of such responses (SSE); an
``inlineData`` part (a picture, or sound) is kept as its media type and bytes."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mockllm.runtime.recording.answer import Answer, Parts, finish_for, load_json, number, objects, sse_events

PROVIDER = "gemini"


def _b64(text: Any) -> bytes | None:
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def read(body: bytes, stream: bool) -> Answer:
    pieces: list[Any] = [d for _, d in sse_events(body)] if stream else [load_json(body)]
    got = Parts()
    for data in objects(pieces):
        if isinstance(data.get("error"), dict):
            got.error = str(data["error"].get("message", "error"))
            continue
        got.response_id = got.response_id or data.get("responseId")
        u = data.get("usageMetadata")
        if isinstance(u, dict):
            got.usage = (number(u.get("promptTokenCount")), number(u.get("candidatesTokenCount")))
        for cand in (data.get("candidates") or ())[:1]:
            for part in (cand.get("content") or {}).get("parts") or ():
                if "functionCall" in part:
                    fc = part["functionCall"] or {}
                    got.call(fc.get("name", ""), fc.get("args"))
                elif part.get("thought") and "text" in part:
                    got.think(part["text"])
                elif "text" in part:
                    got.text(part["text"])
                else:  # a picture or sound (responseModalities IMAGE or AUDIO): kept as a file beside the script
                    inline = part.get("inlineData") or part.get("inline_data")
                    if isinstance(inline, dict):
                        mime = inline.get("mimeType") or inline.get("mime_type") or ""
                        picture = _b64(inline.get("data"))
                        if picture:
                            got.media.append((str(mime), picture))
            got.finish = finish_for(cand.get("finishReason"), got.finish)
    return got.answer(stop_calls=True)  # Gemini says STOP after a call; the script's default reads the same
