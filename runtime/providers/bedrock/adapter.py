"""AWS Bedrock Runtime (docs/providers/bedrock.md): one adapter for the operations under
``/model/{modelId}/``, each handled by its module -- ``converse`` and ``converse-stream``
(``converse``); ``invoke`` and ``invoke-with-response-stream`` with Anthropic bodies
(``invoke``); ``invoke`` with Titan or Cohere embedding bodies (``embed``); and
``count-tokens`` of a Converse or an InvokeModel body, here. Auth and errors are the same for all
(``wire``).

The model id is the path segment between ``/model/`` and the operation, as the server decoded it:
boto3 sends ``anthropic.claude-3-5-sonnet-20240620-v1%3A0`` and the scenario sees
``anthropic.claude-3-5-sonnet-20240620-v1:0`` (an ARN's ``%2F`` becomes ``/``)."""

from __future__ import annotations

import base64
import binascii

import attrs

from mockllm.runtime.providers.anthropic import input_text
from mockllm.runtime.providers.base import BaseAdapter, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.bedrock.converse import parse_converse, render_converse, validate_converse
from mockllm.runtime.providers.bedrock.embed import is_embedding, parse_embed, render_embed
from mockllm.runtime.providers.bedrock.invoke import parse_invoke, render_invoke, validate_invoke
from mockllm.runtime.providers.bedrock.wire import check_auth, error_response, request_id, stream_exception
from mockllm.runtime.providers.common import JSON_MEDIA, json_bytes, load_json_object
from mockllm.runtime.reply import tokens
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest, Provider

PREFIX = "/model/"
OPERATIONS = ("converse", "converse-stream", "invoke", "invoke-with-response-stream")
STREAMED = frozenset({"converse-stream", "invoke-with-response-stream"})
COUNT_TOKENS = "/count-tokens"
NO_INPUT = (
    "1 validation error detected: Value at 'input' failed to satisfy constraint: Member must be an object "
    "with exactly one of 'converse' (a Converse body) or 'invokeModel' (an InvokeModel body, base64)"
)


def split_path(path: str) -> tuple[str, str]:
    """``/model/{modelId}/{operation}`` → ``(modelId, operation)``; raises a 404 for any other path."""
    model, _, operation = path.removeprefix(PREFIX).rpartition("/")
    if not path.startswith(PREFIX) or not model or operation not in OPERATIONS:
        raise ProviderError(
            404,
            f"mockllm: unknown operation {path}: expected /model/{{modelId}}/ and one of {', '.join(OPERATIONS)}",
            code="UnknownOperationException",
        )
    return model, operation


def _converse(chat: ChatRequest) -> bool:
    return chat.endpoint.rpartition("/")[2].startswith("converse")


class BedrockAdapter(BaseAdapter):
    provider: Provider = "bedrock"

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        return check_auth(http)

    def parse(self, http: HttpRequest) -> ChatRequest:
        model, operation = split_path(http.path)
        streamed = operation in STREAMED
        if operation.startswith("converse"):
            return parse_converse(http, model, streamed)
        if b'"anthropic_version"' not in http.body:  # Titan and Cohere embedding bodies
            body = load_json_object(http.body)
            if is_embedding(body, model):
                if streamed:
                    raise ProviderError(400, "The model is unsupported for streaming.")
                return parse_embed(http, model, body)
        return parse_invoke(http, model, streamed)

    def validate_history(self, chat: ChatRequest) -> None:
        if chat.operation != "chat":
            return
        if _converse(chat):
            validate_converse(chat)
        else:
            validate_invoke(chat)

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        if chat.operation != "chat":
            return render_embed(plan, chat, ctx)
        if _converse(chat):
            return render_converse(plan, chat, ctx)
        return render_invoke(plan, chat, ctx)

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        return error_response(status, message, ctx, code)

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        return stream_exception(message)

    def count_tokens(self, http: HttpRequest, ctx: RenderContext) -> Rendered:
        """``POST /model/{modelId}/count-tokens``: ``{"inputTokens": N}`` for ``input.converse`` (a Converse
        body) or ``input.invokeModel.body`` (an Anthropic InvokeModel body, base64), each read and checked
        as its operation reads it; about one token per four characters, as Anthropic's count."""
        model = http.path.removeprefix(PREFIX).removesuffix(COUNT_TOKENS)
        given = load_json_object(http.body).get("input")
        if not isinstance(given, dict) or len(given) != 1 or not isinstance(next(iter(given.values())), dict):
            raise ProviderError(400, NO_INPUT)
        if "converse" in given:
            chat = parse_converse(attrs.evolve(http, body=json_bytes(given["converse"])), model, stream=False)
        elif "invokeModel" in given and isinstance(given["invokeModel"].get("body"), str):
            try:
                body = base64.b64decode(given["invokeModel"]["body"], validate=True)
            except binascii.Error:
                raise ProviderError(400, "input.invokeModel.body: not base64") from None
            chat = parse_invoke(attrs.evolve(http, body=body), model, stream=False)
        else:
            raise ProviderError(400, NO_INPUT)
        counted = {"inputTokens": tokens.estimate(input_text(chat))}
        return Rendered(200, JSON_MEDIA, headers=(("x-amzn-requestid", request_id(ctx)),), body=json_bytes(counted))


__all__ = ["OPERATIONS", "PREFIX", "BedrockAdapter", "split_path"]
