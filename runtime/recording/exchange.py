"""One recorded HTTP exchange, with credentials already stripped.

Everything that reaches a script passes through :func:`redact` first: auth headers, cookies and key
parameters never leave this module, so no recording path can write them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

#: Request headers that carry credentials (names lower-cased). Any header whose name says key, token,
#: secret, auth or cookie is dropped too.
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie", "set-cookie"}
)
_SECRET_WORDS = ("key", "token", "secret", "auth", "cookie", "password")
#: Query parameters that carry credentials.
SECRET_PARAMS = frozenset(
    {"key", "api_key", "apikey", "access_token", "token", "x-amz-security-token", "x-amz-credential", "x-amz-signature"}
)


def is_secret_header(name: str) -> bool:
    """Whether a header may carry a credential: by name, or by a word in it (but a count, such as
    Bedrock's ``x-amzn-bedrock-input-token-count``, is no secret)."""
    low = name.lower()
    return low in SECRET_HEADERS or (any(word in low for word in _SECRET_WORDS) and not low.endswith("-count"))


def redact(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The headers without credentials, names lower-cased."""
    return {k.lower(): v for k, v in headers if not is_secret_header(k)}


def redact_query(query: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in query.items() if k.lower() not in SECRET_PARAMS}


@attrs.frozen
class Timing:
    """What the recorder measured: time to the first byte, and the gaps between streamed events."""

    first_byte_ms: float
    gaps_ms: tuple[float, ...] = ()


@attrs.frozen
class Exchange:
    """A request and its answer. ``body`` is the whole response body (for a stream, its SSE or NDJSON
    text); ``disconnected`` says the upstream closed a stream before its end."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]  # request headers, lower-cased, credentials removed
    request_body: bytes
    status: int
    response_headers: Mapping[str, str]  # lower-cased, credentials removed
    body: bytes
    timing: Timing | None = None
    disconnected: bool = False

    @classmethod
    def of(
        cls,
        method: str,
        path_and_query: str,
        headers: Iterable[tuple[str, str]],
        request_body: bytes,
        status: int,
        response_headers: Iterable[tuple[str, str]],
        body: bytes,
        timing: Timing | None = None,
        disconnected: bool = False,
    ) -> Exchange:
        """An exchange from raw parts, credentials removed (``path_and_query`` may hold a query)."""
        from urllib.parse import parse_qsl, urlsplit

        parts = urlsplit(path_and_query)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        return cls(
            method.upper(),
            parts.path or "/",
            redact_query(query),
            redact(headers),
            request_body,
            status,
            redact(response_headers),
            body,
            timing,
            disconnected,
        )
