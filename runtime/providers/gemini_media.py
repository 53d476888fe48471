"""Gemini's picture and audio answers: with ``generationConfig.responseModalities`` naming ``IMAGE``, an
answer carries an ``inlineData`` PNG part beside its text; naming ``AUDIO`` (text-to-speech models), it
is one ``inlineData`` part of raw 16-bit PCM at 24 kHz (``audio/L16;codec=pcm;rate=24000``) that says the
text (and carries it, so transcribing it gives it back). A step's ``image "PATH"`` or ``audio …`` line
gives them instead."""

from __future__ import annotations

import base64
from typing import Any

from mockllm.runtime.media import images
from mockllm.runtime.media.audio import speak
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest

AUDIO_TYPE = "audio/L16;codec=pcm;rate=24000"
PICTURE_SIDE = 1024


def modalities(chat: ChatRequest) -> set[str]:
    """The ``responseModalities`` the request asks for, upper-cased (empty: text only)."""
    body = chat.body if isinstance(chat.body, dict) else {}
    config = body.get("generationConfig") or body.get("generation_config") or {}
    if not isinstance(config, dict):
        return set()
    asked = config.get("responseModalities") or config.get("response_modalities") or []
    return {str(m).upper() for m in asked} if isinstance(asked, list) else set()


def media_parts(plan: MessagePlan, chat: ChatRequest) -> tuple[list[dict[str, Any]], bool]:
    """The ``inlineData`` parts of the answer, and whether they replace its text (audio does)."""
    asked = modalities(chat)
    parts: list[dict[str, Any]] = []
    if "IMAGE" in asked or plan.images:
        picture = plan.images[0] if plan.images else _drawn(plan, chat)
        parts.append({"inlineData": {"mimeType": _image_type(picture), "data": base64.b64encode(picture).decode()}})
    if "AUDIO" in asked or plan.audio is not None or plan.audio_seconds is not None:
        text = plan.text or chat.last_user_message() or ""
        sound = plan.audio if plan.audio is not None else speak(text, "pcm", seconds=plan.audio_seconds)
        parts.append({"inlineData": {"mimeType": AUDIO_TYPE, "data": base64.b64encode(sound).decode()}})
        return parts, True
    return parts, False


def _drawn(plan: MessagePlan, chat: ChatRequest) -> bytes:
    prompt = chat.last_user_message() or plan.text
    return images.draw(prompt, PICTURE_SIDE, PICTURE_SIDE)


def _image_type(data: bytes) -> str:
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"
