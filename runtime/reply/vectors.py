"""The vectors and moderation flags of a plan, for an embedding or moderation request.

The planner resolves a reply's common parts (latency, errors, faults, headers, usage); this adds what
only these requests have. Scripted ``vector`` lines answer the inputs in order, rounded to float32 as
the real APIs send them; every input beyond them gets the default embedder's vector at the same
dimension (so one batch never mixes lengths). Without scripted vectors the dimension is the request's
own, else the model's usual one. A moderation answer flags the scripted categories for every input."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mockllm.dsl.operations import MEDIA_OPERATIONS
from mockllm.dsl.tree import nodes
from mockllm.runtime.embed.embedder import embed_sparse, to_float32
from mockllm.runtime.embed.models import model_dimensions
from mockllm.runtime.reply.media import plan_media
from mockllm.runtime.reply.plan import MessagePlan, Plan
from mockllm.runtime.reply.tokens import estimate
from mockllm.runtime.request import ChatRequest


def input_tokens(chat: ChatRequest) -> int:
    """The prompt-token estimate of an embedding or moderation request: each input's, summed."""
    return max(1, sum(estimate(t) for t in chat.inputs))


def dimensions_for(chat: ChatRequest) -> int:
    return chat.dimensions if chat.dimensions is not None else model_dimensions(chat.model)


def plan_inputs(plan: Plan, block: nodes.ReplyBlock | None, chat: ChatRequest) -> Plan:
    """``plan`` completed for ``chat``'s inputs (errors, raw bodies and hangs are left as they are; an
    MCP call's plan is complete: its result is read by :mod:`mockllm.runtime.mcp`)."""
    if not isinstance(plan, MessagePlan) or chat.operation == "mcp":
        return plan
    if chat.operation in MEDIA_OPERATIONS:
        return plan_media(plan, block, chat)
    elements: Sequence[nodes.ReplyElement] = block.elements if block is not None else ()
    scripted_usage = any(isinstance(el, nodes.Usage) for el in elements)
    tokens = plan.input_tokens if scripted_usage else input_tokens(chat)
    if chat.operation == "moderations":
        flags: list[str] = []
        for el in elements:
            if isinstance(el, nodes.Flag):
                flags.extend(c for c in el.categories if c not in flags)
        return attrs.evolve(plan, flags=tuple(flags), input_tokens=tokens, output_tokens=0)
    scripted = [to_float32(el.values) for el in elements if isinstance(el, nodes.Vector)]
    dims = len(scripted[0]) if scripted else dimensions_for(chat)
    vectors: list[Sequence[float]] = list(scripted[: len(chat.inputs)])
    vectors.extend(embed_sparse(text, dims) for text in chat.inputs[len(vectors) :])
    return attrs.evolve(plan, vectors=tuple(vectors), input_tokens=tokens, output_tokens=0)


def default_plan(chat: ChatRequest) -> Plan:
    """What the echo double answers an embedding or moderation request: the default embedder's vectors,
    nothing flagged. For an MCP call: a plan without a result (the declared tool's default answers).
    For speech, a transcription or images: the plan made whole (:func:`plan_media` without a plan)."""
    if chat.operation in MEDIA_OPERATIONS:
        return plan_media(None, None, chat)
    return plan_inputs(MessagePlan(model=chat.model), None, chat)
