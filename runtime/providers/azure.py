"""Azure OpenAI (docs/providers/azure.md): OpenAI's Chat Completions and embeddings bodies on Azure's
routes, with Azure's gateway checks, error shape and content-filter annotations.

Routes: ``/openai/deployments/{deployment}/chat/completions`` and ``…/embeddings`` (``api-version``
required), and the v1 routes ``/openai/v1/chat/completions`` and ``/openai/v1/embeddings`` (no
``api-version``). On a deployment route the deployment is the model the scenario sees, whatever the
body's ``model`` says (the body may leave it out). The OpenAI adapters parse and render; this module
only adds what Azure adds:

- auth: an ``api-key`` header or a Bearer token, else 401 in Azure's gateway shape;
- ``api-version``: missing on a deployment route → 404 ``Resource not found``, not a dated version
  (``2024-10-21``, ``2025-04-01-preview``) → 400 ``API version not supported``, as Azure answers;
- errors the gateway raises (401, 403, 404, 408, 429) are ``{"error": {"code": "429", "message"}}``;
  the model's own errors (400, 5xx) keep OpenAI's shape, as Azure passes them through;
- ``prompt_filter_results`` on the answer (streamed: a first chunk of its own, with empty ``id``,
  ``model`` and ``choices``, as Azure sends it) and ``content_filter_results`` on every choice (six
  categories on a whole text answer, four on a streamed text chunk, ``{}`` on tool calls and the
  other chunks); ``finish content_filter`` reports the answer filtered for violence;
- Azure's response headers (request ids as UUIDs, deployment, region, rate limits) instead of
  OpenAI's ``openai-*`` ones; no ``service_tier``; ``model`` the dated version of a well-known model
  name (``gpt-4o-mini`` → ``gpt-4o-mini-2024-07-18``), as Azure reports the model a deployment runs;
  ``system_fingerprint`` null for the gpt-5 family, as Azure sends it.

Held against recorded Azure traffic by ``tests/test_fidelity_recordings.py``.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import attrs

from mockllm.runtime.providers import events
from mockllm.runtime.providers.base import Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import JSON_MEDIA, json_bytes, json_response, load_json_object, sse_frame
from mockllm.runtime.providers.openai_chat import (
    SYSTEM_FINGERPRINT,
    ChunkFramer,
    OpenAIChatAdapter,
    completion_payload,
)
from mockllm.runtime.providers.openai_embed import parse_embeddings, render_embeddings
from mockllm.runtime.providers.openai_images import parse_edit, parse_generation, render_images
from mockllm.runtime.providers.openai_speech import render_speech, speech_request
from mockllm.runtime.providers.openai_transcribe import audio_request, render_transcript
from mockllm.runtime.providers.pairs import Parse, Render
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest, Provider

__all__ = ["ROUTES", "AzureAdapter", "deployment_of"]

NO_KEY_MESSAGE = (
    "Access denied due to missing subscription key. Make sure to include subscription key when making "
    "requests to an API."
)
NOT_FOUND_MESSAGE = "Resource not found"
BAD_VERSION_MESSAGE = "API version not supported"
UNKNOWN_MODEL = "Unknown model:"
#: statuses Azure's gateway answers itself, in its own shape; the rest come from the model, in OpenAI's
GATEWAY_STATUSES = frozenset({401, 403, 404, 408, 429})

_DEPLOYMENT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/")
_VERSION = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})(?:-preview)?$")
_V1_VERSIONS = frozenset({"v1", "preview", "latest"})

_SAFE = {"filtered": False, "severity": "safe"}
_UNDETECTED = {"filtered": False, "detected": False}
_OUTPUT_FILTERS = {"hate": _SAFE, "self_harm": _SAFE, "sexual": _SAFE, "violence": _SAFE}
#: a whole text answer's categories: the four, and the protected-material checks Azure runs on it
_ANSWER_FILTERS = {**_OUTPUT_FILTERS, "protected_material_code": _UNDETECTED, "protected_material_text": _UNDETECTED}
_FILTERED = {**_OUTPUT_FILTERS, "violence": {"filtered": True, "severity": "medium"}}
_PROMPT_FILTERS = {**_OUTPUT_FILTERS, "jailbreak": _UNDETECTED}
PROMPT_FILTER_RESULTS = ({"prompt_index": 0, "content_filter_results": _PROMPT_FILTERS},)
# a streamed chunk's choice ends with these: on the text, on the other chunks, on a content_filter finish
_TEXT_CHOICE = {"content_filter_results": _OUTPUT_FILTERS}
_OTHER_CHOICE: dict[str, Any] = {"content_filter_results": {}}
_FILTERED_CHOICE = {"content_filter_results": _FILTERED}


def deployment_of(http: HttpRequest) -> str | None:
    """The deployment a ``/openai/deployments/{deployment}/…`` request names; None on the v1 routes."""
    found = http.path_params.get("deployment")
    if found:
        return found
    match = _DEPLOYMENT.match(http.path)
    return match["deployment"] if match else None


def _check_version(http: HttpRequest, deployment: str | None) -> None:
    """Azure's answer to a missing or malformed ``api-version``: deployment routes need a dated one;
    the v1 routes take none (or ``v1``, ``preview``, ``latest``)."""
    version = http.query.get("api-version")
    if deployment is None:
        if version is not None and version not in _V1_VERSIONS and not _VERSION.match(version):
            raise ProviderError(400, BAD_VERSION_MESSAGE, code="BadRequest")
        return
    if version is None:
        raise ProviderError(404, NOT_FOUND_MESSAGE, code="404")
    match = _VERSION.match(version)
    if match is None or not _is_date(match["date"]):
        raise ProviderError(400, BAD_VERSION_MESSAGE, code="BadRequest")


def _is_date(text: str) -> bool:
    try:
        return datetime.date.fromisoformat(text).year >= 2022
    except ValueError:
        return False


def _with_deployment(http: HttpRequest) -> tuple[HttpRequest, str | None]:
    """The request with Azure's checks made, and its body naming the deployment as its model when the
    body leaves ``model`` out (the OpenAI parsers require it; Azure's deployment routes do not)."""
    deployment = deployment_of(http)
    _check_version(http, deployment)
    if deployment is None:
        return http, None
    body = load_json_object(http.body)
    if "model" not in body:
        http = attrs.evolve(http, body=json_bytes({**body, "model": deployment}))
    return http, deployment


def _as_azure(chat: ChatRequest, deployment: str | None) -> ChatRequest:
    return attrs.evolve(chat, provider="azure", model=deployment if deployment is not None else chat.model)


#: the dated version Azure reports in ``model`` for a deployment of each well-known model; any other
#: deployment name is reported as it is (mockllm cannot know what model it runs)
MODEL_VERSIONS = {
    "gpt-4o": "gpt-4o-2024-11-20",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "gpt-4.1": "gpt-4.1-2025-04-14",
    "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
    "gpt-4.1-nano": "gpt-4.1-nano-2025-04-14",
    "gpt-5": "gpt-5-2025-08-07",
    "gpt-5-mini": "gpt-5-mini-2025-08-07",
    "gpt-5-nano": "gpt-5-nano-2025-08-07",
    "o3-mini": "o3-mini-2025-01-31",
    "o4-mini": "o4-mini-2025-04-16",
}
RATE_LIMIT_REQUESTS = 1000
RATE_LIMIT_TOKENS = 1_000_000
REGION = "East US"


def reported_model(model: str) -> str:
    return MODEL_VERSIONS.get(model, model)


def _fingerprint(model: str) -> str | None:
    """gpt-5 models answer on Azure with ``system_fingerprint: null``, the others with a fingerprint."""
    return None if model.startswith("gpt-5") else SYSTEM_FINGERPRINT


def _headers(ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    """What every Azure answer carries: the request ids Azure's gateway gives (UUIDs; the ``openai`` SDK
    reads ``x-request-id``) and the region."""
    return (
        ("apim-request-id", _uuid(ctx.request_id)),
        ("x-request-id", _uuid(ctx.request_id[::-1])),
        ("x-content-type-options", "nosniff"),
        ("x-ms-region", REGION),
    )


def _answer_headers(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    """A model's answer adds the deployment, the model session, the content filter and rate limits; the v1
    route also echoes the client's ``x-ms-client-request-id`` (``Not-Set`` without one)."""
    used = plan.input_tokens + plan.output_tokens if type(plan.input_tokens) is int else 0
    headers = [
        *_headers(ctx),
        ("azureml-model-session", "d20260101000000-mockllm"),
        ("x-accel-buffering", "no"),
        ("x-ms-deployment-name", chat.model),
        ("x-ms-rai-invoked", "true"),
        ("x-ratelimit-limit-requests", str(RATE_LIMIT_REQUESTS)),
        ("x-ratelimit-limit-tokens", str(RATE_LIMIT_TOKENS)),
        ("x-ratelimit-remaining-requests", str(RATE_LIMIT_REQUESTS - 1)),
        ("x-ratelimit-remaining-tokens", str(max(RATE_LIMIT_TOKENS - used, 0))),
    ]
    if not chat.endpoint.startswith("/openai/deployments/"):
        headers.append(("x-ms-client-request-id", chat.headers.get("x-ms-client-request-id", "Not-Set")))
    return tuple(headers)


def _uuid(request_id: str) -> str:
    digits = (request_id.removeprefix("req_") + "0" * 32)[:32]
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


class AzureFramer(ChunkFramer):
    """OpenAI's chunks with Azure's additions: a first chunk of its own holding
    ``prompt_filter_results`` (empty ``id``, ``model`` and ``choices``), and ``content_filter_results``
    on every choice: the categories on a chunk that carries text, ``{}`` on the others (the role
    chunk, tool calls, the finish), the filtered categories on a ``content_filter`` finish."""

    def choice_fields(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        if finish == "content_filter":
            return _FILTERED_CHOICE
        return _TEXT_CHOICE if delta.get("content") or delta.get("refusal") else _OTHER_CHOICE

    def data(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        model = self.plan.model
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.ctx.created,
            "model": reported_model(model),
            "system_fingerprint": _fingerprint(model),
            "choices": choices,
        }

    def frame(self, event: events.Event) -> list[Frame]:
        frames = super().frame(event)
        if isinstance(event, events.Start):
            first = {"choices": [], "created": 0, "id": "", "model": "", "object": "", **_prompt()}
            return [sse_frame(first), *frames]
        return frames


class AzureAdapter(OpenAIChatAdapter):
    """Chat completions on Azure's routes: OpenAI's parsing, history rules and rendering, plus Azure's
    checks, error shape and content-filter fields."""

    provider: Provider = "azure"
    framer: type[ChunkFramer] = AzureFramer

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        if http.headers.get("api-key", "").strip() or super().check_auth(http) is None:
            return None
        return ProviderError(401, NO_KEY_MESSAGE, code="401")

    def parse(self, http: HttpRequest) -> ChatRequest:
        http, deployment = _with_deployment(http)
        return _as_azure(super().parse(http), deployment)

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        headers = _answer_headers(plan, chat, ctx)
        if chat.stream:
            return attrs.evolve(super().render(plan, chat, ctx), headers=headers)
        payload = completion_payload(plan, ctx)
        del payload["service_tier"]
        payload["model"] = reported_model(plan.model)
        payload["system_fingerprint"] = _fingerprint(plan.model)
        for choice in payload["choices"]:
            if plan.finish == "content_filter":
                choice["content_filter_results"] = _FILTERED
            else:
                choice["content_filter_results"] = {} if plan.tool_calls else _ANSWER_FILTERS
        payload.update(_prompt())
        return Rendered(200, JSON_MEDIA, headers=headers, body=json_bytes(payload))

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        """Azure's gateway shape ``{"error": {"code", "message"}}`` for what the gateway answers (auth,
        routes, versions, rate limits); OpenAI's shape for the model's own errors."""
        if message.startswith(UNKNOWN_MODEL):
            # the v1 route's own answer to a model no deployment serves (`error 400 "Unknown model: x"`)
            error = {"code": "unknown_model", "message": message, "details": message}
            headers = (*_headers(ctx)[:1], ("request-context", "appId="), *_headers(ctx)[2:])
            return Rendered(
                status, "application/json; charset=utf-8", headers=headers, body=json_bytes({"error": error})
            )
        if status in GATEWAY_STATUSES or code == "BadRequest":
            error = {"code": code if code is not None else str(status), "message": message}
            return json_response({"error": error}, status=status, headers=_headers(ctx))
        rendered = super().render_error(status, message, ctx, code, param)
        return attrs.evolve(rendered, headers=_headers(ctx))


def _prompt() -> dict[str, Any]:
    return {"prompt_filter_results": [dict(r) for r in PROMPT_FILTER_RESULTS]}


# ---------------------------------------------------------------- embeddings


def parse_embeddings_azure(http: HttpRequest) -> ChatRequest:
    http, deployment = _with_deployment(http)
    return _as_azure(parse_embeddings(http), deployment)


# ---------------------------------------------------------------- speech, transcription, images


def parse_speech_azure(http: HttpRequest) -> ChatRequest:
    deployment = deployment_of(http)
    _check_version(http, deployment)
    return _as_azure(speech_request(http, "azure", deployment), deployment)


def parse_transcription_azure(http: HttpRequest) -> ChatRequest:
    deployment = deployment_of(http)
    _check_version(http, deployment)
    return _as_azure(audio_request(http, "transcription", "azure", deployment), deployment)


def parse_translation_azure(http: HttpRequest) -> ChatRequest:
    deployment = deployment_of(http)
    _check_version(http, deployment)
    return _as_azure(audio_request(http, "translation", "azure", deployment), deployment)


def parse_generation_azure(http: HttpRequest) -> ChatRequest:
    deployment = deployment_of(http)
    _check_version(http, deployment)
    return _as_azure(parse_generation(http, "azure", deployment), deployment)


def parse_edit_azure(http: HttpRequest) -> ChatRequest:
    deployment = deployment_of(http)
    _check_version(http, deployment)
    return _as_azure(parse_edit(http, "azure", deployment), deployment)


ROUTES: dict[str, tuple[Parse, Render]] = {
    "azure.embeddings": (parse_embeddings_azure, render_embeddings),
    "azure.speech": (parse_speech_azure, render_speech),
    "azure.transcriptions": (parse_transcription_azure, render_transcript),
    "azure.translations": (parse_translation_azure, render_transcript),
    "azure.images.generations": (parse_generation_azure, render_images),
    "azure.images.edits": (parse_edit_azure, render_images),
}
