"""The audio and pictures of recorded speech and images answers, as files a script names.

A recorded speech answer is kept as the audio the API sent (the body, or a stream's
``speech.audio.delta`` pieces joined) and a recorded images answer as each picture it gave (a
``b64_json`` decoded, a ``url`` fetched by whoever recorded it): each becomes an :class:`Asset`, a
file beside the script that its step's ``audio "PATH"`` or ``image "PATH"`` line names. A file's name
is its step's name and the first hex digits of its content's sha256, so the same answer always gets
the same name and two different answers never share one (a file once written is never replaced by
other bytes). Plain code over bytes: the writers put the files on disk."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from typing import Any

import attrs

from mockllm.runtime.recording.answer import load_json, sse_objects

__all__ = ["Asset", "asset", "audio_extension", "folder_for", "picture_extension", "picture_sources", "speech_audio"]

#: the event types whose ``b64_json`` is a finished picture of a streamed images answer
_PICTURE_DONE = frozenset({"image_generation.completed", "image_edit.completed"})


@attrs.frozen
class Asset:
    """A file a script refers to: ``path`` relative to the script's folder, and its bytes."""

    path: str
    data: bytes = attrs.field(repr=lambda d: f"<{len(d)} bytes>")


def folder_for(filename: str) -> str:
    """The folder beside the script ``filename`` that holds its files: ``NAME.assets``."""
    return filename.removesuffix(".mockllm") + ".assets"


def asset(folder: str, step: str, data: bytes, extension: str) -> Asset:
    """``data`` as ``FOLDER/STEP_DIGEST.EXT``: named by its content, so never clobbered."""
    digest = hashlib.sha256(data).hexdigest()[:10]
    return Asset(f"{folder}/{step}_{digest}.{extension}", data)


def _is_stream(body: bytes, headers: Mapping[str, str]) -> bool:
    return "text/event-stream" in headers.get("content-type", "") or body.lstrip().startswith((b"data:", b"event:"))


def _b64(text: Any) -> bytes | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def speech_audio(body: bytes, headers: Mapping[str, str]) -> bytes | None:
    """The audio of a speech answer: the body itself, or its stream's deltas joined (None when empty)."""
    if not _is_stream(body, headers):
        return body or None
    pieces = [_b64(e.get("audio")) for e in sse_objects(body) if e.get("type") == "speech.audio.delta"]
    joined = b"".join(p for p in pieces if p)
    return joined or None


def picture_sources(body: bytes, headers: Mapping[str, str]) -> list[bytes | str]:
    """Each picture of an images answer, in order: its bytes (``b64_json``) or its ``url`` to fetch."""
    if _is_stream(body, headers):
        done = (e for e in sse_objects(body) if e.get("type") in _PICTURE_DONE)
        return [data for data in (_b64(e.get("b64_json")) for e in done) if data]
    doc = load_json(body)
    items = doc.get("data") if isinstance(doc, dict) else None
    out: list[bytes | str] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        data = _b64(item.get("b64_json"))
        if data:
            out.append(data)
        elif isinstance(item.get("url"), str) and item["url"]:
            out.append(str(item["url"]))
    return out


_AUDIO_EXTENSIONS = {"mp3": "mp3", "opus": "opus", "aac": "aac", "flac": "flac", "wav": "wav", "pcm": "pcm"}


def audio_extension(request_body: Any) -> str:
    """The file extension of the audio a speech request asked for (``response_format``, mp3 by default)."""
    fmt = request_body.get("response_format") if isinstance(request_body, dict) else None
    return _AUDIO_EXTENSIONS.get(str(fmt), "mp3") if fmt else "mp3"


def picture_extension(data: bytes) -> str:
    """The file extension of a picture, told by its first bytes (png when unknown)."""
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    return "png"
