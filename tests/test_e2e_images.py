"""Images through the official openai SDK against a real server, judged by Pillow: generations in
every output format at the requested size, ``n`` different pictures, ``b64_json`` and ``url`` (served
by mockllm and fetched), streamed partial images, edits and variations (multipart), a scripted
picture, Azure's deployment route, and bad uploads in OpenAI's error shape."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from PIL import Image
from sdk_clients import azure, oa

from mockllm.api import load_or_raise
from mockllm.runtime.media import images
from mockllm.server.background import BackgroundServer

SCRIPT = """
scenario "Logo":
    step logo:
        always
        when:
            endpoint is "images"
            input contains "logo"
        reply:
            image "logo.png"
"""


@pytest.fixture(scope="module")
def logo(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (32, 16), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, logo: bytes) -> Iterator[BackgroundServer]:
    folder: Path = tmp_path_factory.mktemp("images")
    (folder / "logo.png").write_bytes(logo)
    (folder / "test.mockllm").write_text(SCRIPT)
    with BackgroundServer(load_or_raise(folder)) as s:
        yield s


def _picture(data: bytes) -> Image.Image:
    picture = Image.open(io.BytesIO(data))
    picture.load()
    return picture


@pytest.mark.parametrize("fmt", images.FORMATS)
def test_generations_in_each_format_at_the_requested_size(server: BackgroundServer, fmt: str) -> None:
    """gpt-image-1: b64_json pictures Pillow opens as the format asked for, at the size asked for, with usage."""
    out = oa(server.url).images.generate(
        model="gpt-image-1",
        prompt="a lighthouse at dusk",
        size="1536x1024",
        output_format=fmt,  # type: ignore[arg-type]
    )
    picture = _picture(base64.b64decode(out.data[0].b64_json or ""))
    assert (picture.format, picture.size) == ({"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}[fmt], (1536, 1024))
    assert out.output_format == fmt and out.usage is not None and out.usage.total_tokens > 0


def test_n_pictures_differ_and_prompts_differ(server: BackgroundServer) -> None:
    """n=3 gives three different pictures; the same prompt gives the same ones again; another prompt others."""
    client = oa(server.url)

    def draw(prompt: str) -> list[bytes]:
        out = client.images.generate(model="gpt-image-1", prompt=prompt, n=3, size="64x64")
        return [base64.b64decode(d.b64_json or "") for d in out.data or []]

    first = draw("a red bicycle")
    assert len(set(first)) == 3
    assert draw("a red bicycle") == first
    assert set(draw("a blue boat")).isdisjoint(first)


def test_urls_are_served_by_mockllm(server: BackgroundServer) -> None:
    """response_format url (DALL·E's default): each URL fetches a PNG of the size asked for."""
    out = oa(server.url).images.generate(model="dall-e-2", prompt="a quiet harbour", size="256x256", n=2)
    urls = [d.url or "" for d in out.data or []]
    assert all(u.startswith(server.url + "/mockllm/images/") for u in urls)
    with httpx.Client() as http:
        fetched = [http.get(u) for u in urls]
        missing = http.get(server.url + "/mockllm/images/nothing-here.png")
    assert [(r.status_code, r.headers["content-type"]) for r in fetched] == [(200, "image/png")] * 2
    assert {_picture(r.content).size for r in fetched} == {(256, 256)}
    assert fetched[0].content != fetched[1].content
    assert missing.status_code == 404


def test_streamed_partial_images_then_the_picture(server: BackgroundServer) -> None:
    """stream with partial_images=2: two previews then the completed picture, as the SDK's events."""
    events = list(
        oa(server.url).images.generate(
            model="gpt-image-1", prompt="a mountain", size="64x64", stream=True, partial_images=2
        )
    )
    assert [e.type for e in events] == [
        "image_generation.partial_image",
        "image_generation.partial_image",
        "image_generation.completed",
    ]
    assert [e.partial_image_index for e in events[:2]] == [0, 1]  # type: ignore[union-attr]
    assert _picture(base64.b64decode(events[-1].b64_json)).size == (64, 64)


def test_edits_and_variations_take_uploads(server: BackgroundServer, logo: bytes) -> None:
    """edit (one image, then two as image[]) and variation (deprecated, still answered) read their uploads."""
    client = oa(server.url)
    one = client.images.edit(model="gpt-image-1", image=("in.png", logo, "image/png"), prompt="add a hat", size="64x64")
    two = client.images.edit(
        model="gpt-image-1", image=[("a.png", logo, "image/png"), ("b.png", logo, "image/png")], prompt="merge"
    )
    variation = client.images.create_variation(image=("in.png", logo, "image/png"), n=2, size="256x256")
    assert _picture(base64.b64decode(one.data[0].b64_json or "")).size == (64, 64)  # type: ignore[index]
    assert two.data and two.data[0].b64_json
    assert len(variation.data or []) == 2 and all(d.url for d in variation.data or [])
    entries = httpx.get(server.url + "/_mockllm/requests").json()
    assert entries[-2]["attachments"] == [{"kind": "image", "media_type": "image/png", "size": len(logo)}] * 2


def test_a_scripted_picture_is_each_image_and_its_url_serves_it(server: BackgroundServer, logo: bytes) -> None:
    """image "logo.png" in a step: the file's bytes as b64_json, and at the URL when a URL is asked for."""
    client = oa(server.url)
    out = client.images.generate(model="gpt-image-1", prompt="our logo", n=2)
    assert [base64.b64decode(d.b64_json or "") for d in out.data or []] == [logo, logo]
    url = (client.images.generate(model="dall-e-3", prompt="the logo again").data or [])[0].url or ""
    assert httpx.get(url).content == logo


def test_azure_deployment_route_draws(server: BackgroundServer) -> None:
    """AzureOpenAI's images.generate goes to /openai/deployments/{model}/images/generations."""
    out = azure(server.url).images.generate(model="gpt-image-1", prompt="a fox", size="32x32")
    assert _picture(base64.b64decode((out.data or [])[0].b64_json or "")).size == (32, 32)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"size": "huge"}, "is not a size"),
        ({"n": 11}, "at most 10"),
        ({"output_format": "gif"}, "'gif' is not one of"),
    ],
)
def test_bad_generation_requests_get_400(server: BackgroundServer, kwargs: dict[str, object], says: str) -> None:
    """Sizes, counts and formats the API refuses: 400 invalid_request_error saying why."""
    with pytest.raises(openai.BadRequestError) as caught:
        oa(server.url).images.generate(model="gpt-image-1", prompt="x", **kwargs)  # type: ignore[arg-type]
    assert says in caught.value.message


def test_an_upload_that_is_no_picture_gets_400(server: BackgroundServer) -> None:
    """An edit whose image is not PNG, JPEG or WebP: OpenAI's invalid_image_file 400."""
    with pytest.raises(openai.BadRequestError) as caught:
        oa(server.url).images.edit(image=("x.png", b"not a picture", "image/png"), prompt="x")
    assert caught.value.code == "invalid_image_file"


def test_a_prompt_beyond_ascii_comes_back_as_valid_json(server: BackgroundServer) -> None:
    """dall-e-3's `revised_prompt` repeats the prompt: non-ASCII characters arrive as themselves."""
    prompt = "un café ☕ à Paris"
    out = oa(server.url).images.generate(model="dall-e-3", prompt=prompt, response_format="b64_json", size="1024x1024")
    assert out.data is not None and out.data[0].revised_prompt == prompt
    assert _picture(base64.b64decode(out.data[0].b64_json or "")).size == (1024, 1024)
