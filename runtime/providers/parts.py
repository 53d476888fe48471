"""Multimodal input parts, as every adapter reads them: an image, audio or file part of a message becomes
an :class:`~mockllm.runtime.request.Attachment` (its kind, media type and size), and its payload is
dropped. Sizes are the decoded size of base64 data (without decoding it) and 0 for a part that only
refers to a URL or a file id."""

from __future__ import annotations

from mockllm.runtime.request import Attachment, AttachmentKind


def kind_of(media_type: str, default: AttachmentKind = "file") -> AttachmentKind:
    """``image/png`` → image, ``audio/wav`` → audio, anything else → ``default``."""
    major = media_type.partition("/")[0].lower()
    if major == "image":
        return "image"
    if major == "audio":
        return "audio"
    return default


def base64_size(data: str) -> int:
    """How many bytes base64 text decodes to (padding and line breaks allowed)."""
    body = data.strip().replace("\n", "").replace("\r", "")
    return max(0, len(body) * 3 // 4 - body[-2:].count("="))


def from_url(url: str, kind: AttachmentKind, media_type: str = "") -> Attachment:
    """A part given as a URL: a ``data:`` URL's media type and size, else the URL's own (size 0)."""
    if url.startswith("data:"):
        head, _, data = url[5:].partition(",")
        found = head.split(";")[0] or media_type
        return Attachment(kind if found == "" else kind_of(found, kind), found, base64_size(data))
    return Attachment(kind, media_type, 0)


def from_base64(data: str, kind: AttachmentKind, media_type: str = "") -> Attachment:
    """A part given as base64 data with its media type (Anthropic, Gemini, Bedrock, Ollama, audio parts)."""
    return Attachment(kind_of(media_type, kind) if media_type else kind, media_type, base64_size(data))
