"""A transport that lets an official SDK talk to one adapter in-process: each real SDK request is
checked, parsed and validated as the server would, and answered with the adapter's rendered bytes.
The adapter tests use it to prove their bytes; the end-to-end tests use a real server instead."""

from __future__ import annotations

from collections.abc import Callable

import httpx2

from mockllm.runtime.providers.base import Adapter, Rendered
from mockllm.runtime.request import ChatRequest, HttpRequest


def adapter_transport(
    adapter: Adapter, reply: Callable[[ChatRequest], Rendered], seen: list[ChatRequest]
) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        incoming = HttpRequest(
            request.method, request.url.path, {}, {k.lower(): v for k, v in request.headers.items()}, request.read()
        )
        assert adapter.check_auth(incoming) is None
        chat = adapter.parse(incoming)
        adapter.validate_history(chat)
        seen.append(chat)
        out = reply(chat)
        body = out.body if out.frames is None else b"".join(f.data for f in out.frames)
        return httpx2.Response(out.status, headers=[("content-type", out.media_type), *out.headers], content=body)

    return httpx2.MockTransport(handler)
