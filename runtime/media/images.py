"""Pictures made from a prompt: deterministic (the same prompt gives the same picture, different prompts
different ones), at any size, in PNG without any library and in JPEG or WebP through Pillow.

A picture is an 8 by 8 grid of flat colour cells, its colours and layout taken from the SHA-256 of the
prompt. A partial image (a streamed preview) is the same picture with its lower part grey. PNG is
written here with ``zlib``; JPEG and WebP need real encoders, so they come from Pillow, an optional
extra (``pip install 'mockllm[images]'``), rather than hand-written compressors."""

from __future__ import annotations

import functools
import hashlib
import io
from typing import Literal

from mockllm.errors import MockllmError
from mockllm.runtime.media import png

ImageFormat = Literal["png", "jpeg", "webp"]
FORMATS: tuple[ImageFormat, ...] = ("png", "jpeg", "webp")
MEDIA_TYPES: dict[str, str] = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
GRID = 8
MAX_SIDE = 4096
_GREY = bytes((128, 128, 128))


class ImagesExtraMissing(MockllmError):
    """JPEG or WebP asked for without Pillow installed."""


def _colours(prompt: str) -> list[list[bytes]]:
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    palette = [digest[i : i + 3] for i in range(0, 12, 3)]  # four colours
    layout = int.from_bytes(digest[12:28], "big")  # two bits per cell: 64 cells
    return [[palette[(layout >> (2 * (r * GRID + c))) & 3] for c in range(GRID)] for r in range(GRID)]


def _spans(total: int) -> list[int]:
    base, extra = divmod(total, GRID)
    return [base + (1 if i < extra else 0) for i in range(GRID)]


def rows(prompt: str, width: int, height: int, reveal: float = 1.0) -> list[bytes]:
    """The picture for ``prompt`` as ``height`` rows of RGB bytes; rows below ``reveal`` (0 to 1) grey."""
    colours, widths = _colours(prompt), _spans(width)
    shown = round(height * reveal)
    grey = _GREY * width
    out: list[bytes] = []
    for r, cell_height in enumerate(_spans(height)):
        line = b"".join(colour * w for colour, w in zip(colours[r], widths, strict=True))
        for _ in range(cell_height):
            out.append(line if len(out) < shown else grey)
    return out


@functools.lru_cache(maxsize=64)  # the same prompt and size are asked for again and again in a test run
def draw(prompt: str, width: int, height: int, fmt: ImageFormat = "png", *, reveal: float = 1.0) -> bytes:
    """The picture for ``prompt``, ``width`` by ``height``, encoded as ``fmt``."""
    picture = rows(prompt, width, height, reveal)
    if fmt == "png":
        return png.write(picture, width)
    try:
        from PIL import Image
    except ImportError as e:
        raise ImagesExtraMissing(
            f"output_format {fmt!r} needs Pillow, which is not installed: pip install 'mockllm[images]' "
            "(png needs nothing)"
        ) from e
    out = io.BytesIO()
    Image.frombytes("RGB", (width, height), b"".join(picture)).save(out, format=fmt.upper(), quality=80)
    return out.getvalue()


def parse_size(size: str, default: tuple[int, int] = (1024, 1024)) -> tuple[int, int] | None:
    """``"WxH"`` (or ``"auto"``/empty: ``default``) as a width and height, None when malformed or
    outside 1 to MAX_SIDE. (Asked twice a request, of the few sizes clients send: the answers for short
    ones are kept, which saves most of a microsecond a request.)"""
    return _size(size, default) if len(size) <= 16 else _size.__wrapped__(size, default)


@functools.lru_cache(maxsize=64)
def _size(size: str, default: tuple[int, int]) -> tuple[int, int] | None:
    if size in ("", "auto"):
        return default
    w, sep, h = size.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit():
        return None
    width, height = int(w), int(h)
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        return None
    return width, height
