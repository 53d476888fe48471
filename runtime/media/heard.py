"""What reading an audio file finds (:class:`Heard`), and the error for bytes that are not the audio
they claim to be (:class:`UnreadableAudio`)."""

from __future__ import annotations

from mockllm.errors import MockllmError
from mockllm.runtime.values import fast_frozen


@fast_frozen  # (one per transcription)
class Heard:
    """An audio file as a listener sees it: its format, its length, and the text it carries when
    mockllm made it (None for other audio)."""

    format: str  # wav, flac, mp3, ogg, aac, mp4, webm, pcm
    seconds: float | None  # None: a container whose length is not read (WebM)
    text: str | None = None


class UnreadableAudio(MockllmError):
    """Bytes that are no audio file, or one cut short or broken: the message says which, in the user's
    terms (the server answers it as the API's 400)."""
