"""Every OpenAI route answered by its own parse/render pair, in one ``ROUTES`` (the OpenAI registry
entry's ``pairs``): embeddings and moderations (``openai_embed``), speech (``openai_speech``),
transcriptions and translations (``openai_transcribe``) and images (``openai_images``)."""

from __future__ import annotations

from mockllm.runtime.providers import openai_embed
from mockllm.runtime.providers.openai_images import parse_edit, parse_generation, parse_variation, render_images
from mockllm.runtime.providers.openai_speech import parse_speech, render_speech
from mockllm.runtime.providers.openai_transcribe import parse_transcription, parse_translation, render_transcript
from mockllm.runtime.providers.pairs import Parse, Render

ROUTES: dict[str, tuple[Parse, Render]] = {
    **openai_embed.ROUTES,
    "openai.speech": (parse_speech, render_speech),
    "openai.transcriptions": (parse_transcription, render_transcript),
    "openai.translations": (parse_translation, render_transcript),
    "openai.images.generations": (parse_generation, render_images),
    "openai.images.edits": (parse_edit, render_images),
    "openai.images.variations": (parse_variation, render_images),
}
