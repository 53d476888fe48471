"""Checks of speech, transcription and image replies: ``audio`` and ``image`` lines that fit the
operation the step names (a speech step answers with audio, an images step with pictures, a
transcription with its ``text``), and audio lengths that can be played."""

from __future__ import annotations

from collections.abc import Sequence

from mockllm.dsl.check.common import Reporter
from mockllm.dsl.tree.nodes import Audio, Condition, Image, ReplyElement

#: the reply elements that answer each operation besides `text`, and what answers it
_FITS = {
    "speech": ((Audio,), 'audio: `text` says what it speaks, `audio 2.5s` or `audio "FILE"` gives the sound'),
    "transcription": ((), "its transcript: a `text` line"),
    "translation": ((), "its transcript: a `text` line"),
    "images": ((Image,), 'pictures: `image "FILE"` (each of `n`)'),
    "embeddings": ((), "vectors: `vector [...]` lines"),
    "moderations": ((), 'flags: `flag "..."`'),
}


def _operation(conditions: Sequence[Condition]) -> str | None:
    for c in conditions:
        if c.subject.kind == "endpoint" and c.predicate.op == "is" and isinstance(c.predicate.value, str):
            if not c.predicate.value.startswith("/"):
                return c.predicate.value
    return None


def check_media_step(r: Reporter, elements: Sequence[ReplyElement], conditions: Sequence[Condition], file: str) -> None:
    """`audio` and `image` lines where the step's operation cannot use them; unplayable lengths."""
    operation = _operation(conditions)
    fits = _FITS.get(operation or "")
    for el in elements:
        if isinstance(el, Audio) and el.length is not None and el.length.seconds <= 0:
            r.err(
                "bad-audio",
                "`audio` needs a length above zero",
                r.at(el.span, file),
                hint="write a length such as `audio 2.5s`",
            )
        if not isinstance(el, Audio | Image) or fits is None or isinstance(el, fits[0]):
            continue
        word = "audio" if isinstance(el, Audio) else "image"
        r.err(
            "misplaced-media",
            f'`{word}` cannot answer `endpoint is "{operation}"` requests',
            r.at(el.span, file),
            hint=f"{operation} requests are answered with {fits[1]}; `audio` answers speech (and Gemini audio), "
            "`image` answers images (and Gemini pictures): give each its own step",
        )
