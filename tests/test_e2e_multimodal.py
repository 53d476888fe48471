"""Multimodal input on every provider, through each official SDK: images, audio and files in a chat
message are read into the provider-neutral request, so `attachments include "image"` picks the step,
and the journal shows each part's kind, media type and size (never its payload). Gemini's
``responseModalities`` IMAGE and AUDIO answers come back as ``inlineData`` parts."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from conftest import _serve
from google.genai import types
from PIL import Image
from sdk_clients import bedrock, cohere_v2, gm, mistral, oa, ol, opened

from mockllm.runtime.media.audio import listen, speak
from mockllm.server.background import BackgroundServer

SCRIPT = """
scenario "Looks and listens":
    order any

    step picture:
        always
        when:
            attachments include "image"
        reply:
            text "I see a picture."

    step sound:
        always
        when:
            attachments include "audio"
        reply:
            text "I hear you."

    step document:
        always
        when:
            attachments include "file"
        reply:
            text "I read the file."

    step plain:
        always
        when:
            attachments is absent
            last user message contains "plain"
        reply:
            text "Just words."
"""


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 200, 30)).save(out, format="PNG")
    return out.getvalue()


PNG = _png()
PNG64 = base64.b64encode(PNG).decode()
DATA_URL = "data:image/png;base64," + PNG64
WAV = speak("hello", "wav")
PDF = b"%PDF-1.4\n% a tiny file\n"


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with _serve(SCRIPT) as s:
        yield s


def _last_attachments(server: BackgroundServer) -> list[dict[str, Any]]:
    entries = httpx.get(server.url + "/_mockllm/requests", params={"limit": 1000}).json()
    found: list[dict[str, Any]] = entries[-1]["attachments"]
    return found


def test_openai_chat_image_audio_and_file_parts(server: BackgroundServer) -> None:
    """image_url, input_audio and file parts each pick their step; the journal shows kind, type, size."""
    client = oa(server.url)

    def ask(part: dict[str, Any]) -> str | None:
        content = [{"type": "text", "text": "what is this?"}, part]
        out = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": content}])  # type: ignore[misc,list-item]
        return out.choices[0].message.content

    assert ask({"type": "image_url", "image_url": {"url": DATA_URL}}) == "I see a picture."
    assert _last_attachments(server) == [{"kind": "image", "media_type": "image/png", "size": len(PNG)}]
    wav64 = base64.b64encode(WAV).decode()
    assert ask({"type": "input_audio", "input_audio": {"data": wav64, "format": "wav"}}) == "I hear you."
    assert _last_attachments(server) == [{"kind": "audio", "media_type": "audio/wav", "size": len(WAV)}]
    pdf = "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    assert ask({"type": "file", "file": {"file_data": pdf, "filename": "a.pdf"}}) == "I read the file."
    assert _last_attachments(server) == [{"kind": "file", "media_type": "application/pdf", "size": len(PDF)}]
    plain = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "plain words"}])
    assert plain.choices[0].message.content == "Just words."
    journal = httpx.get(server.url + "/_mockllm/requests").text
    assert PNG64[:40] not in journal and "JVBERi0" not in journal  # never the payload


def test_responses_input_image(server: BackgroundServer) -> None:
    """Responses `input_image` parts."""
    out = oa(server.url).responses.create(
        model="gpt-4o",
        input=[
            {
                "role": "user",
                "content": [{"type": "input_text", "text": "?"}, {"type": "input_image", "image_url": DATA_URL}],
            }
        ],  # type: ignore[list-item]
    )
    assert out.output_text == "I see a picture."


def test_anthropic_image_and_document_blocks(server: BackgroundServer) -> None:
    """Anthropic `image` (base64) and `document` (PDF) blocks."""
    client = opened(anthropic.Anthropic(base_url=server.url, api_key="test"))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}}
    out = client.messages.create(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [image]}])  # type: ignore[list-item]
    assert out.content[0].text == "I see a picture."  # type: ignore[union-attr]
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(PDF).decode()},
    }
    out = client.messages.create(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [document]}])  # type: ignore[list-item]
    assert out.content[0].text == "I read the file."  # type: ignore[union-attr]
    assert _last_attachments(server) == [{"kind": "file", "media_type": "application/pdf", "size": len(PDF)}]


def test_gemini_inline_data_in_and_out(server: BackgroundServer) -> None:
    """inlineData parts in; responseModalities IMAGE and AUDIO answered with inlineData parts."""
    client = gm(server.url)
    out = client.models.generate_content(
        model="gemini-2.0-flash", contents=[types.Part.from_bytes(data=PNG, mime_type="image/png"), "what?"]
    )
    assert out.text == "I see a picture."
    assert _last_attachments(server) == [{"kind": "image", "media_type": "image/png", "size": len(PNG)}]
    drawn = client.models.generate_content(
        model="gemini-2.5-flash-image",
        contents="plain: draw a red fox",
        config=types.GenerateContentConfig(response_modalities=["TEXT", "IMAGE"]),
    )
    parts = drawn.candidates[0].content.parts  # type: ignore[index,union-attr]
    assert parts[0].text == "Just words."  # type: ignore[index]
    picture = parts[-1].inline_data  # type: ignore[index]
    assert picture.mime_type == "image/png" and Image.open(io.BytesIO(picture.data)).size == (1024, 1024)  # type: ignore[union-attr,arg-type]
    spoken = client.models.generate_content(
        model="gemini-2.5-flash-preview-tts",
        contents="plain: read this aloud",
        config=types.GenerateContentConfig(response_modalities=["AUDIO"]),
    )
    audio = spoken.candidates[0].content.parts[0].inline_data  # type: ignore[index,union-attr]
    assert audio.mime_type == "audio/L16;codec=pcm;rate=24000"  # type: ignore[union-attr]
    assert listen(audio.data).text == "Just words."  # type: ignore[arg-type,union-attr]


def test_ollama_images(server: BackgroundServer) -> None:
    """Ollama's `images` field (bare base64)."""
    out = ol(server.url).chat(model="llava", messages=[{"role": "user", "content": "?", "images": [PNG64]}])
    assert out.message.content == "I see a picture."
    assert _last_attachments(server) == [{"kind": "image", "media_type": "image/png", "size": len(PNG)}]


def test_bedrock_converse_image_block(server: BackgroundServer) -> None:
    """Bedrock Converse `image` blocks (botocore base64-encodes the bytes)."""
    out = bedrock(server.url).converse(
        modelId="anthropic.claude-3-5-sonnet-20240620-v1:0",
        messages=[{"role": "user", "content": [{"text": "?"}, {"image": {"format": "png", "source": {"bytes": PNG}}}]}],
    )
    assert out["output"]["message"]["content"][0]["text"] == "I see a picture."
    assert _last_attachments(server) == [{"kind": "image", "media_type": "image/png", "size": len(PNG)}]


def test_cohere_and_mistral_image_url_parts(server: BackgroundServer) -> None:
    """Cohere v2 and Mistral `image_url` parts (Mistral's as a bare string)."""
    cohere_out = cohere_v2(server.url).chat(
        model="command-a-vision",
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "?"}, {"type": "image_url", "image_url": {"url": DATA_URL}}],
            }
        ],  # type: ignore[list-item]
    )
    assert cohere_out.message.content[0].text == "I see a picture."  # type: ignore[index,union-attr]
    mistral_out = mistral(server.url).chat.complete(
        model="pixtral-12b",
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "?"}, {"type": "image_url", "image_url": DATA_URL}]}
        ],  # type: ignore[list-item]
    )
    assert mistral_out.choices[0].message.content == "I see a picture."  # type: ignore[index,union-attr]


def test_an_image_where_openai_takes_none_is_refused(server: BackgroundServer) -> None:
    """An image part in a system or assistant message: OpenAI's 400 naming the part and the types allowed."""
    image = {"type": "image_url", "image_url": {"url": DATA_URL}}
    for role, allowed in (("system", "'text'"), ("assistant", "'text' and 'refusal'")):
        messages = [{"role": role, "content": [image]}, {"role": "user", "content": "plain"}]
        with pytest.raises(openai.BadRequestError) as caught:
            oa(server.url).chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
        assert caught.value.body["message"] == f"Invalid value: 'image_url'. Supported values are: {allowed}."  # type: ignore[index]
        assert caught.value.param == "messages[0].content[0].type"  # type: ignore[attr-defined]


def test_audio_openai_cannot_read_is_refused(server: BackgroundServer) -> None:
    """An `input_audio` part in a format other than wav or mp3: OpenAI's 400 on the format's path."""
    part = {"type": "input_audio", "input_audio": {"data": base64.b64encode(WAV).decode(), "format": "webm"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "?"}, part]}]
    with pytest.raises(openai.BadRequestError) as caught:
        oa(server.url).chat.completions.create(model="gpt-4o-audio-preview", messages=messages)  # type: ignore[arg-type]
    assert caught.value.body["message"] == "Invalid value: 'webm'. Supported values are: 'wav' and 'mp3'."  # type: ignore[index]
    assert caught.value.param == "messages[0].content[1].input_audio.format"  # type: ignore[attr-defined]
    assert caught.value.code == "invalid_value"


def test_an_image_in_a_responses_assistant_message_is_refused(server: BackgroundServer) -> None:
    """Responses: an assistant message holds what the model said; an `input_image` there is refused."""
    history = [
        {"role": "user", "content": "draw"},
        {"role": "assistant", "content": [{"type": "input_image", "image_url": DATA_URL}]},
        {"role": "user", "content": "again"},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        oa(server.url).responses.create(model="gpt-4o", input=history)  # type: ignore[arg-type]
    message = "Invalid value: 'input_image'. Supported values are: 'output_text' and 'refusal'."
    assert caught.value.body["message"] == message  # type: ignore[index]
    assert caught.value.param == "input[1].content[0]"  # type: ignore[attr-defined]


def test_anthropic_refuses_pictures_in_assistant_turns_and_unknown_media_types(server: BackgroundServer) -> None:
    """Anthropic's own rules and words: no `image` or `document` block in an assistant turn; a base64
    image only as JPEG, PNG, GIF or WebP, a base64 document only as PDF (in a tool result too)."""
    client = opened(anthropic.Anthropic(base_url=server.url, api_key="test"))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}}
    bmp = {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": PNG64}}
    text = {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": "aGk="}}
    cases: list[tuple[list[dict[str, Any]], str]] = [
        (
            [
                {"role": "user", "content": "draw"},
                {"role": "assistant", "content": [image]},
                {"role": "user", "content": "more"},
            ],
            "messages.1.content: 'image' blocks are not permitted within assistant turns",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": "?"}, bmp]}],
            "messages.0.content.1.image.source.base64.media_type: "
            "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
        ),
        (
            [{"role": "user", "content": [text]}],
            "messages.0.content.0.document.source.base64.media_type: Input should be 'application/pdf'",
        ),
        (
            [
                {"role": "user", "content": "look"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [bmp]}]},
            ],
            "messages.2.content.0.tool_result.content.0.image.source.base64.media_type: "
            "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
        ),
    ]
    for messages, said in cases:
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(model="claude-x", max_tokens=50, messages=messages)  # type: ignore[arg-type]
        assert caught.value.body["error"] == {"type": "invalid_request_error", "message": said}  # type: ignore[index]
    out = client.messages.create(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [image]}])  # type: ignore[list-item]
    assert out.content[0].text == "I see a picture."  # type: ignore[union-attr]  # the server still answers
