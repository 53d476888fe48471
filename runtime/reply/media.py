"""The audio, transcript and pictures of a plan, for a speech, transcription, translation or image
request.

The planner resolves a reply's common parts (text, latency, errors, faults, headers, usage); this adds
what only these requests have. Speech says the reply's ``text`` (or, without one, the request's
``input``), from a scripted ``audio "PATH"`` file or as generated audio (``audio 2.5s`` sets its length).
A transcript is the reply's ``text``, else the text mockllm-made audio carries, else a placeholder
naming the audio's length. Pictures are the scripted ``image "PATH"`` files, else drawn from the prompt
when rendered. Nothing here encodes: the provider's render function does, in the requested format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mockllm.dsl.tree import nodes
from mockllm.runtime.reply.plan import MessagePlan, Plan
from mockllm.runtime.reply.planner import split_words
from mockllm.runtime.reply.tokens import estimate
from mockllm.runtime.request import ChatRequest


def placeholder(seconds: float | None) -> str:
    """The transcript of audio mockllm did not make: deterministic, naming how long the audio lasts."""
    if seconds is None:
        return "[audio of unknown length]"
    return f"[{seconds:.1f} seconds of audio]"


def default_transcript(chat: ChatRequest) -> str:
    """What audio says when no step scripts it: the text mockllm-made audio carries, else a placeholder."""
    carried = chat.inputs[0] if chat.inputs else ""
    return carried if carried else placeholder(chat.audio_seconds)


_UNSCRIPTED = MessagePlan(model="")  # what plan_media reads of the plan when nothing is scripted


def plan_media(plan: Plan | None, block: nodes.ReplyBlock | None, chat: ChatRequest) -> Plan:
    """``plan`` completed for ``chat``'s operation (errors, raw bodies and hangs are left as they are);
    ``plan`` None: nothing scripted (``block`` None too), the plan is made here whole. (Making it costs
    a tenth of making a bare plan and copying it with ``attrs.evolve``, about 3 µs of a request.)"""
    if plan is not None and not isinstance(plan, MessagePlan):
        return plan
    base = plan if plan is not None else _UNSCRIPTED
    elements: Sequence[nodes.ReplyElement] = block.elements if block is not None else ()
    scripted_usage = bool(elements) and any(isinstance(el, nodes.Usage) for el in elements)
    prompt = chat.inputs[0] if chat.inputs else ""
    input_tokens = base.input_tokens if scripted_usage else max(1, estimate(prompt))
    changes: dict[str, Any]
    if chat.operation == "images":
        images = (
            tuple(el.data for el in elements if isinstance(el, nodes.Image) and el.data is not None) if elements else ()
        )
        changes = {"images": images, "input_tokens": input_tokens}
    elif chat.operation == "speech":
        text = base.text or prompt
        audio = next((el for el in elements if isinstance(el, nodes.Audio)), None) if elements else None
        changes = {
            "text": text,
            "text_chunks": (text,) if text else (),  # (speech is sent as audio: its text is never split)
            "audio": audio.data if audio is not None else None,
            "audio_seconds": audio.length.seconds if audio is not None and audio.length is not None else None,
            "input_tokens": input_tokens,
            "output_tokens": base.output_tokens if scripted_usage else max(1, estimate(text)),
        }
    else:  # a transcription or translation
        text = base.text or default_transcript(chat)
        if base.text:
            chunks = base.text_chunks
        else:  # streamed, the transcript comes word by word; whole, it is never split
            chunks = split_words(text) if chat.stream else (text,)
        output_tokens = base.output_tokens if scripted_usage else max(1, estimate(text))
        seconds_tokens = max(1, round((chat.audio_seconds or 0.0) * 10))  # audio tokens: about 10 a second
        tokens = base.input_tokens if scripted_usage else seconds_tokens
        changes = {"text": text, "text_chunks": chunks, "input_tokens": tokens, "output_tokens": output_tokens}
    if plan is None:
        return MessagePlan(model=chat.model, **changes)
    return attrs.evolve(plan, **changes)
