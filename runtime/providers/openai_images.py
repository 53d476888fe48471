"""OpenAI ``POST /v1/images/generations`` (JSON), ``/v1/images/edits`` and ``/v1/images/variations``
(multipart): the request checked as the real API checks it, and ``data[]`` of ``n`` pictures answered
as ``b64_json`` or as a ``url`` that mockllm itself serves (``/mockllm/images/…``, see
:func:`image_path`), in ``output_format`` png, jpeg or webp, at ``size``; streamed (``stream``) as
``partial_images`` previews and a completed event per picture.

The pictures are :func:`~mockllm.runtime.media.images.draw`'s (deterministic, different for each
prompt: picture ``i`` of ``n`` is drawn from the prompt and its index), or the scripted ``image "PATH"``
files. A URL names what to draw (or, for a scripted picture, its digest in the library), so any process
serving the same library can answer it. GPT image
models answer ``b64_json`` and ``usage`` by default; DALL·E models a URL, as the real API does."""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
from typing import Any

from mockllm.runtime.media import images
from mockllm.runtime.providers.base import Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import (
    JSON_MEDIA,
    FieldPath,
    as_int,
    invalid_value,
    json_text,
    load_json_object,
    missing,
    one_of,
    optional_str,
    require_str,
    sse_frame,
    stream_response,
    utf8_json,
    wrong_type,
)
from mockllm.runtime.providers.multipart import Form, UploadedFile, parse_form
from mockllm.runtime.providers.openai_transcribe import form_body
from mockllm.runtime.providers.pairs import inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import Attachment, ChatRequest, HttpRequest, Provider
from mockllm.runtime.values import fast_frozen

MAX_PROMPT = 32000
MAX_N = 10
URL_PREFIX = "/mockllm/images/"  # beside the API's paths, outside the admin API (no admin token needed)
FILE_PREFIX = URL_PREFIX + "file/"  # a scripted picture: by the SHA-256 of its bytes
DEFAULT_MODEL = "dall-e-2"
_ROOT = FieldPath()
_IMAGE_TYPES = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"RIFF": "image/webp", b"GIF8": "image/gif"}


def _pillow() -> bool:
    return importlib.util.find_spec("PIL") is not None


def _checked(body: dict[str, Any], partial: bool = True) -> None:
    """The fields every image route shares, checked as the real API checks them."""
    n = body.get("n")
    if n is not None:
        count = as_int(n, _ROOT.key("n"), minimum=1)
        if count > MAX_N:
            raise invalid_value(_ROOT.key("n"), f"must be at most {MAX_N}, got {count}")
    size = body.get("size")
    if size is not None and (not isinstance(size, str) or images.parse_size(size) is None):
        raise invalid_value(_ROOT.key("size"), f"{size!r} is not a size: use 'auto' or WIDTHxHEIGHT, e.g. '1024x1024'")
    if body.get("response_format") is not None:
        one_of(body["response_format"], ("url", "b64_json"), _ROOT.key("response_format"))
    fmt = body.get("output_format")
    if fmt is not None:
        one_of(fmt, images.FORMATS, _ROOT.key("output_format"))
        if fmt != "png" and not _pillow():
            raise ProviderError(
                400,
                f"mockllm: output_format '{fmt}' needs Pillow, which is not installed on the mock server: "
                "pip install 'mockllm[images]' (png needs nothing)",
                code="invalid_value",
                param="output_format",
            )
    if partial and body.get("partial_images") is not None:
        count = as_int(body["partial_images"], _ROOT.key("partial_images"), minimum=0)
        if count > 3:
            raise invalid_value(_ROOT.key("partial_images"), f"must be at most 3, got {count}")


def _image_kind(upload: UploadedFile, field: str) -> Attachment:
    media = next((t for magic, t in _IMAGE_TYPES.items() if upload.data.startswith(magic)), None)
    if media is None or media == "image/gif" or (media == "image/webp" and upload.data[8:12] != b"WEBP"):
        raise ProviderError(
            400,
            f"Invalid file '{field}': unsupported mimetype ('{upload.content_type}'). Supported file formats are "
            "'image/jpeg', 'image/png', and 'image/webp'.",
            code="invalid_image_file",
            param=field,
        )
    return Attachment("image", media, len(upload.data))


def _prompt(value: str | None) -> str:
    if value is None:
        raise missing(_ROOT.key("prompt"))
    if not value:
        raise invalid_value(_ROOT.key("prompt"), "must not be empty")
    if len(value) > MAX_PROMPT:
        raise invalid_value(_ROOT.key("prompt"), f"must be at most {MAX_PROMPT} characters, got {len(value)}")
    return value


def _typed_form(form: Form) -> dict[str, Any]:
    """A form's fields with the numbers and booleans of the image routes as JSON would give them."""
    body = form_body(form)
    for name in ("n", "partial_images", "output_compression"):
        value = body.get(name)
        if isinstance(value, str):
            if not value.lstrip("-").isdigit():
                raise wrong_type(_ROOT.key(name), "an integer", value)
            body[name] = int(value)
    if isinstance(body.get("stream"), str):
        if body["stream"] not in ("true", "false"):
            raise wrong_type(_ROOT.key("stream"), "a boolean", body["stream"])
        body["stream"] = body["stream"] == "true"
    return body


def parse_generation(http: HttpRequest, provider: Provider = "openai", model: str | None = None) -> ChatRequest:
    body = load_json_object(http.body)
    prompt = _prompt(require_str(body, "prompt", _ROOT))
    named = model or optional_str(body, "model", _ROOT) or DEFAULT_MODEL
    _checked(body)
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise wrong_type(_ROOT.key("stream"), "a boolean", stream)
    return inputs_request(
        provider, "images", http, named, (prompt,), body, stream=bool(stream), body_size=len(http.body)
    )


def parse_edit(http: HttpRequest, provider: Provider = "openai", model: str | None = None) -> ChatRequest:
    form = parse_form(http.headers.get("content-type", ""), http.body)
    body = _typed_form(form)
    prompt = _prompt(form.value("prompt"))
    uploads = [f for f in form.files if f.field in ("image", "image[]")]
    if not uploads:
        raise missing(_ROOT.key("image"))
    attachments = [_image_kind(f, f.field) for f in uploads]
    mask = form.file("mask")
    if mask is not None:
        attachments.append(_image_kind(mask, "mask"))
    _checked(body)
    named = model or form.value("model") or DEFAULT_MODEL
    stream = body.get("stream") is True
    return inputs_request(
        provider, "images", http, named, (prompt,), body, stream=stream, attachments=tuple(attachments)
    )


def parse_variation(http: HttpRequest) -> ChatRequest:
    form = parse_form(http.headers.get("content-type", ""), http.body)
    body = _typed_form(form)
    upload = form.file("image")
    if upload is None:
        raise missing(_ROOT.key("image"))
    attachment = _image_kind(upload, "image")
    _checked(body, partial=False)
    body["variation_of"] = hashlib.sha256(upload.data).hexdigest()[:16]  # what the pictures are drawn from
    named = form.value("model") or DEFAULT_MODEL
    return inputs_request("openai", "images", http, named, ("",), body, attachments=(attachment,))


# ---------------------------------------------------------------- rendering


def _b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def image_path(seed: str, width: int, height: int, fmt: str) -> str:
    """The path mockllm serves a drawn picture at: everything needed to draw it again is in it."""
    return f"{URL_PREFIX}{width}x{height}/{_b64url(seed)}.{fmt}"


def file_path(data: bytes) -> str:
    """The path mockllm serves a scripted picture at (the server finds it in the library by digest)."""
    return f"{FILE_PREFIX}{hashlib.sha256(data).hexdigest()}"


def read_image_path(path: str) -> tuple[str, int, int, images.ImageFormat] | None:
    """What :func:`image_path` wrote into ``path`` (seed, width, height, format), None for any other path."""
    size, _, rest = path.removeprefix(URL_PREFIX).partition("/")
    token, _, fmt = rest.rpartition(".")
    parsed = images.parse_size(size, (0, 0))
    if not path.startswith(URL_PREFIX) or parsed is None or parsed == (0, 0) or fmt not in images.FORMATS:
        return None
    try:
        seed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return seed, parsed[0], parsed[1], fmt


def _base_url(chat: ChatRequest) -> str:
    host = chat.headers.get("host", "localhost")
    scheme = chat.headers.get("x-forwarded-proto", "http")
    return f"{scheme}://{host}"


def _gpt_image(model: str) -> bool:
    return not model.startswith("dall-e")


@fast_frozen
class _Picture:
    seed: str
    data: bytes


def pictures(plan: MessagePlan, chat: ChatRequest) -> tuple[list[_Picture], int, int, images.ImageFormat]:
    """The pictures of ``plan`` for ``chat``, with their size and format."""
    body = chat.body if isinstance(chat.body, dict) else {}
    width, height = images.parse_size(str(body.get("size") or "auto")) or (1024, 1024)
    fmt: images.ImageFormat = body.get("output_format") or "png"
    count = int(body.get("n") or 1)
    base = str(body.get("variation_of") or (chat.inputs[0] if chat.inputs else ""))
    out = []
    for i in range(count):
        seed = base if i == 0 else f"{base}\n#{i + 1}"
        data = plan.images[i % len(plan.images)] if plan.images else images.draw(seed, width, height, fmt)
        out.append(_Picture(seed, data))
    return out, width, height, fmt


def _usage(plan: MessagePlan, count: int) -> dict[str, Any]:
    return _usage_of(plan.input_tokens, count)


def _usage_of(input_tokens: int, count: int) -> dict[str, Any]:
    output = 272 * count
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"image_tokens": 0, "text_tokens": input_tokens},
        "output_tokens": output,
        "total_tokens": input_tokens + output,
        "output_tokens_details": {"image_tokens": output, "text_tokens": 0},
    }


@functools.lru_cache(maxsize=256)  # (two numbers: a prompt's tokens and how many pictures)
def _usage_text(input_tokens: int, count: int) -> str:
    """The JSON text of a whole answer's ``usage``: the same for every request of a prompt's length,
    and encoding its nested objects took 1.7 µs of the 9 µs of rendering an answer."""
    return json_text(_usage_of(input_tokens, count))


def render_images(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    body = chat.body if isinstance(chat.body, dict) else {}
    shown, width, height, fmt = pictures(plan, chat)
    gpt = _gpt_image(chat.model)
    as_url = body.get("response_format") == "url" or (body.get("response_format") is None and not gpt)
    echo = {
        "background": body.get("background") or "opaque",
        "output_format": fmt,
        "quality": body.get("quality") or "auto",
        "size": f"{width}x{height}",
    }
    headers = (("x-request-id", ctx.request_id),)
    if chat.stream:
        return stream_response(_stream(plan, chat, ctx, shown, width, height, echo), headers=headers)
    data: list[dict[str, Any]] = []
    for picture in shown:
        item: dict[str, Any] = {}
        if as_url and plan.images:
            item["url"] = _base_url(chat) + file_path(picture.data)
        elif as_url:
            item["url"] = _base_url(chat) + image_path(picture.seed, width, height, fmt)
        else:
            item["b64_json"] = _B64  # spliced in below: base64 needs no escaping, and is most of the body
        if chat.model == "dall-e-3":
            item["revised_prompt"] = chat.inputs[0] if chat.inputs else ""
        data.append(item)
    payload: dict[str, Any] = {"created": ctx.created, "data": data, **(echo if gpt else {})}
    text = json_text(payload)
    if gpt:  # the usage last: its text spliced in before the closing brace
        text = f'{text[:-1]},"usage":{_usage_text(plan.input_tokens, len(shown))}}}'
    pieces = [utf8_json(p) for p in text.split(_B64_TEXT)]  # (a prompt's é as UTF-8)
    parts = [pieces[0]]
    if len(pieces) > 1:
        for picture, rest in zip(shown, pieces[1:], strict=True):
            parts += (_quoted_base64(picture.data), rest)
    return Rendered(200, JSON_MEDIA, headers=headers, body=b"".join(parts))  # (the pictures copied once)


@functools.lru_cache(maxsize=64)  # a drawn picture is the same bytes object while images.draw keeps it
def _quoted_base64(data: bytes) -> bytes:
    """A picture's base64 as a JSON string, ready to splice into the body."""
    return b'"' + base64.b64encode(data) + b'"'


_B64 = "\x00mockllm-b64\x00"  # a marker no field of the payload holds (the client's prompt aside: NULs)
_B64_TEXT = json_text(_B64)  # ... as it is written in the payload's JSON text


def _stream(
    plan: MessagePlan,
    chat: ChatRequest,
    ctx: RenderContext,
    shown: list[_Picture],
    width: int,
    height: int,
    echo: dict[str, Any],
) -> list[Frame]:
    body = chat.body if isinstance(chat.body, dict) else {}
    kind = "image_edit" if chat.endpoint.endswith("/edits") else "image_generation"
    partial = int(body.get("partial_images") or 0)
    frames = []
    for picture in shown:
        for j in range(partial):
            reveal = (j + 1) / (partial + 1)
            preview = images.draw(picture.seed, width, height, echo["output_format"], reveal=reveal)
            if plan.images:  # a scripted picture's preview: itself (mockllm does not decode it)
                preview = picture.data
            event: dict[str, Any] = {"type": f"{kind}.partial_image", "b64_json": base64.b64encode(preview).decode()}
            event.update(partial_image_index=j, created_at=ctx.created, **echo)
            frames.append(sse_frame(event, event=f"{kind}.partial_image", content=True))
        done: dict[str, Any] = {"type": f"{kind}.completed", "b64_json": base64.b64encode(picture.data).decode()}
        done.update(created_at=ctx.created, **echo, usage=_usage(plan, 1))
        frames.append(sse_frame(done, event=f"{kind}.completed", content=True))
    return frames


def served_image(path: str) -> tuple[str, bytes] | None:
    """The media type and bytes of the picture at a URL :func:`render_images` gave, None for a path it
    never gives (the server answers 404)."""
    found = read_image_path(path)
    if found is None:
        return None
    seed, width, height, fmt = found
    if fmt != "png" and not _pillow():
        return None
    return images.MEDIA_TYPES[fmt], images.draw(seed, width, height, fmt)
