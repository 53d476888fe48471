"""Checks of embedding and moderation replies: ``vector`` lines that hold numbers and agree on their
length, ``flag`` categories that exist, and a warning for a step that answers with vectors or flags
although no embedding or moderation request can reach it (those requests only match steps whose
conditions name `endpoint` or `input`, so a chat scenario's steps are never used up by them), and
one for a step that names an embedding model (``model is "text-embedding-3-small"``) without
`endpoint` or `input`: the rule makes it never apply to the embedding calls it was written for."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mockllm.dsl.check.common import Reporter, did_you_mean, line_of
from mockllm.dsl.diagnostics import Related
from mockllm.dsl.tree.nodes import MODERATION_CATEGORIES, Condition, Flag, ReplyElement, Vector, VectorsFrom


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def check_input_elements(r: Reporter, elements: Sequence[ReplyElement], file: str) -> None:
    first: Vector | None = None
    for el in elements:
        if isinstance(el, Vector):
            span = r.at(el.span, file)
            if not el.values:
                r.err("bad-vector", "a vector needs at least one number", span, hint="write `vector [0.1, -0.2, 0.3]`")
                continue
            bad = next((v for v in el.values if not _is_number(v)), None)
            if bad is not None:
                r.err(
                    "bad-vector",
                    f"a vector holds numbers only, not {json.dumps(bad)}",
                    span,
                    hint="write `vector [0.1, -0.2, 0.3]`",
                )
                continue
            if first is None:
                first = el
            elif len(el.values) != len(first.values):
                other = r.at(first.span, file)
                r.err(
                    "bad-vector",
                    f"this vector has {len(el.values)} numbers, the first{line_of(other)} has {len(first.values)}",
                    span,
                    hint="every vector of one answer has the same length (the embedding's dimension)",
                    related=[Related(other, "the first vector")],
                )
        elif isinstance(el, Flag):
            for category in el.categories:
                if category not in MODERATION_CATEGORIES:
                    r.err(
                        "bad-flag",
                        f"unknown moderation category `{category}`",
                        r.loc.narrow(r.at(el.span, file), f'"{category}"'),
                        hint=did_you_mean(category, MODERATION_CATEGORIES, '`"{}"`')
                        or "categories are " + ", ".join(f'"{c}"' for c in MODERATION_CATEGORIES),
                    )


def _embedding_model(c: Condition) -> str | None:
    """The embedding model a `model` condition names (every provider's embedding models say "embed":
    text-embedding-3-small, embed-v4.0, nomic-embed-text, mistral-embed, gemini-embedding-001,
    amazon.titan-embed-text-v2:0), else None."""
    if c.subject.kind != "model" or c.predicate.op == "is_not" or not isinstance(c.predicate.value, str):
        return None
    return c.predicate.value if "embed" in c.predicate.value.lower() else None


def check_reaches_inputs(
    r: Reporter, elements: Sequence[ReplyElement], conditions: Sequence[Condition], file: str
) -> None:
    """Warn when a step answers with vectors or flags, or names an embedding model, but names neither
    `endpoint` nor `input`."""
    if any(c.subject.kind in ("endpoint", "input") for c in conditions):
        return
    el = next((e for e in elements if isinstance(e, Vector | VectorsFrom | Flag)), None)
    if el is None:
        named = next(((c, m) for c in conditions if (m := _embedding_model(c)) is not None), None)
        if named is not None:
            condition, model = named
            r.warn(
                "embedding-model-on-chat",
                f'this step names the embedding model "{model}", but embedding requests never match it',
                r.at(condition.span, file),
                hint="embedding requests match only steps whose conditions name `endpoint` or `input`; "
                'add `endpoint is "embeddings"`',
            )
        return
    what, noun = ("flags", "moderation") if isinstance(el, Flag) else ("vectors", "embedding")
    r.warn(
        "unreachable-" + what,
        f"this step answers with {what}, but no {noun} request can match it",
        r.at(el.span, file),
        hint=f"{noun} requests match only steps whose conditions name `endpoint` or `input`; "
        f'add `endpoint is "{noun}s"`',
    )
