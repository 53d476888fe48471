"""The pictures mockllm draws, judged by Pillow: each format decodes to the requested size, the same
prompt gives the same picture and different prompts different ones."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from mockllm.runtime.media import images


@pytest.mark.parametrize("fmt", images.FORMATS)
def test_each_format_decodes_at_the_requested_size(fmt: images.ImageFormat) -> None:
    """PNG (written by mockllm), JPEG and WebP (by Pillow) open at the size asked for."""
    picture = Image.open(io.BytesIO(images.draw("a red bicycle", 300, 200, fmt)))
    picture.load()
    assert (picture.format, picture.size) == ({"jpeg": "JPEG", "png": "PNG", "webp": "WEBP"}[fmt], (300, 200))


def test_prompts_give_their_own_pictures() -> None:
    """Same prompt, same pixels; another prompt, other pixels."""

    def pixels(prompt: str) -> bytes:
        return Image.open(io.BytesIO(images.draw(prompt, 64, 48))).convert("RGB").tobytes()

    assert pixels("a cat") == pixels("a cat")
    assert pixels("a cat") != pixels("a dog")


def test_a_partial_image_is_the_picture_with_its_lower_part_grey() -> None:
    """A preview shows the top of the final picture and grey below."""
    final = Image.open(io.BytesIO(images.draw("a boat", 40, 40))).convert("RGB")
    half = Image.open(io.BytesIO(images.draw("a boat", 40, 40, reveal=0.5))).convert("RGB")
    assert half.crop((0, 0, 40, 20)).tobytes() == final.crop((0, 0, 40, 20)).tobytes()
    assert set(half.crop((0, 20, 40, 40)).getdata()) == {(128, 128, 128)}


@pytest.mark.parametrize(
    ("size", "parsed"), [("1024x1536", (1024, 1536)), ("auto", (1024, 1024)), ("big", None), ("0x5", None)]
)
def test_sizes_are_read_or_refused(size: str, parsed: tuple[int, int] | None) -> None:
    """WxH sizes parse; auto is the default; anything else is refused (None)."""
    assert images.parse_size(size) == parsed
