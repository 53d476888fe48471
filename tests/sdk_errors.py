"""Which exception each official SDK raises for an HTTP error status: one table per SDK, walked by
the adapter tests (a fake server) and the end-to-end tests (a scripted `error N`)."""

from __future__ import annotations

import anthropic
import openai
from google.genai import errors

OPENAI: list[tuple[int, type[openai.APIStatusError]]] = [
    (400, openai.BadRequestError),
    (401, openai.AuthenticationError),
    (403, openai.PermissionDeniedError),
    (404, openai.NotFoundError),
    (409, openai.ConflictError),
    (422, openai.UnprocessableEntityError),
    (429, openai.RateLimitError),
    (500, openai.InternalServerError),
    (503, openai.InternalServerError),
    (529, openai.InternalServerError),
]

ANTHROPIC: list[tuple[int, type[anthropic.APIStatusError]]] = [
    (400, anthropic.BadRequestError),
    (401, anthropic.AuthenticationError),
    (403, anthropic.PermissionDeniedError),
    (404, anthropic.NotFoundError),
    (409, anthropic.ConflictError),
    (413, anthropic.RequestTooLargeError),
    (422, anthropic.UnprocessableEntityError),
    (429, anthropic.RateLimitError),
    (500, anthropic.InternalServerError),
    (503, anthropic.InternalServerError),
    (529, anthropic.OverloadedError),
]

GEMINI: list[tuple[int, type[errors.APIError]]] = [
    (400, errors.ClientError),
    (404, errors.ClientError),
    (429, errors.ClientError),
    (500, errors.ServerError),
    (503, errors.ServerError),
]


def error_script(status: int) -> str:
    """A script whose one step answers every request with ``error STATUS "boom STATUS"``."""
    return f'scenario "e":\n    step a:\n        always\n        reply:\n            error {status} "boom {status}"\n'


def check_scripted(
    error: BaseException, status: int, base: type[openai.APIStatusError | anthropic.APIStatusError]
) -> None:
    """The SDK's exception for :func:`error_script`'s answer: its status, message and request id."""
    assert isinstance(error, base)
    assert error.status_code == status
    assert f"boom {status}" in str(error)
    assert error.request_id
