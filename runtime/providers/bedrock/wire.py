"""What every AWS Bedrock Runtime route shares (docs/providers/bedrock.md): the SigV4 presence check,
errors as Bedrock exceptions, request ids, and event-stream messages' padding.

Errors are ``x-amzn-errortype: <Exception>:<namespace>`` plus ``{"message": …}``: botocore reads the
exception name from that header and raises its modelled class (``ThrottlingException`` …). A fault
mid-stream is an event-stream ``exception`` message (``modelStreamErrorException`` …), which botocore
raises as ``EventStreamError`` and the anthropic SDK as ``APIStatusError``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from mockllm.runtime.providers.base import Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.bedrock import eventstream
from mockllm.runtime.providers.common import json_bytes, lower_headers, stream_response
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import HttpRequest

JSON_MEDIA = "application/json"
NAMESPACE = "http://internal.amazon.com/coral/com.amazon.bedrock/"

#: The exception botocore raises for each status (the service model's `httpStatusCode`s).
EXCEPTIONS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    413: "ValidationException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
    504: "ModelTimeoutException",
}
#: Exceptions a script may name at the start of a message (`error 429 "ModelNotReadyException: …"`).
NAMED = frozenset(
    {
        *EXCEPTIONS.values(),
        "ModelNotReadyException",
        "ServiceQuotaExceededException",
        "ModelStreamErrorException",
        "MissingAuthenticationTokenException",
        "UnknownOperationException",
    }
)
#: What a mid-stream fault is sent as, by default and when the message names one (`ThrottlingException: …`).
STREAM_EXCEPTION = "modelStreamErrorException"
_STREAM_NAMED = {
    "ModelStreamErrorException": "modelStreamErrorException",
    "ThrottlingException": "throttlingException",
    "ValidationException": "validationException",
    "InternalServerException": "internalServerException",
    "ServiceUnavailableException": "serviceUnavailableException",
    "ModelTimeoutException": "modelTimeoutException",
}
MISSING_AUTH = ProviderError(403, "Missing Authentication Token", code="MissingAuthenticationTokenException")

# ---------------------------------------------------------------- shared by every Bedrock route


def request_id(ctx: RenderContext) -> str:
    """``x-amzn-requestid``: a UUID, from the server's request id."""
    digits = ctx.request_id.removeprefix("req_")
    try:
        return str(uuid.UUID(digits, version=4))
    except ValueError:
        return str(uuid.uuid5(uuid.NAMESPACE_OID, ctx.request_id))


def check_auth(http: HttpRequest) -> ProviderError | None:
    """SigV4 (``Authorization: AWS4-HMAC-SHA256 …``) or a Bedrock API key (``Bearer``): present is enough."""
    return None if lower_headers(http.headers).get("authorization", "").strip() else MISSING_AUTH


def named(message: str, names: frozenset[str] | dict[str, str] = NAMED) -> tuple[str | None, str]:
    """``"ThrottlingException: Too many tokens"`` → ``("ThrottlingException", "Too many tokens")``; a message
    that names no Bedrock exception → ``(None, message)``."""
    head, sep, rest = message.partition(":")
    if sep and head.strip() in names:
        return head.strip(), rest.strip()
    return None, message


def error_response(status: int, message: str, ctx: RenderContext, code: str | None = None) -> Rendered:
    """A Bedrock exception: ``x-amzn-errortype`` names it, the body is ``{"message": …}``."""
    name, text = named(message)
    if name is None:
        name = code if code in NAMED else EXCEPTIONS.get(status)
    if name is None:
        name = "InternalServerException" if status >= 500 else "ValidationException"
    headers = (("x-amzn-requestid", request_id(ctx)), ("x-amzn-errortype", f"{name}:{NAMESPACE}"))
    return Rendered(status=status, media_type=JSON_MEDIA, headers=headers, body=json_bytes({"message": text}))


def stream_exception(message: str) -> bytes:
    """A mid-stream fault: a ``modelStreamErrorException`` message, or the exception the message names."""
    name, text = named(message, _STREAM_NAMED)
    kind = _STREAM_NAMED[name] if name is not None else STREAM_EXCEPTION
    payload: dict[str, Any] = {"message": text}
    if kind == STREAM_EXCEPTION:
        payload |= {"originalStatusCode": 500, "originalMessage": text}
    return eventstream.exception(kind, json_bytes(payload))


_PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def padded(payload: dict[str, Any], n: int) -> bytes:
    """The event's JSON with Bedrock's ``p`` field (letters that vary the message's length, which
    clients ignore); deterministic: the ``n``-th event of a stream always gets the same padding."""
    return json_bytes(payload | {"p": _PADDING[: 1 + (n * 7) % len(_PADDING)]})


def event_frame(kind: str, payload: dict[str, Any], n: int, content: bool = False) -> Frame:
    """The ``n``-th message of a stream: an ``event`` of type ``kind`` carrying ``payload`` (padded)."""
    return Frame(eventstream.event(kind, padded(payload, n)), content=content)


def event_stream(frames: Iterable[Frame], headers: tuple[tuple[str, str], ...]) -> Rendered:
    return stream_response(frames, media_type=eventstream.MEDIA_TYPE, headers=headers)


def latency_ms(plan: MessagePlan) -> int:
    return max(1, round(plan.latency_s * 1000))
