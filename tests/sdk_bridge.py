"""A transport that lets an official SDK talk to one adapter in-process: each real SDK request is
checked, parsed and validated as the server would, and answered with the adapter's rendered bytes.
The adapter tests use it (and :class:`AdapterServer`, for plans, errors and streams cut by one) to
prove their bytes; the end-to-end tests use a real server instead."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx2
from sdk_clients import opened

from mockllm.runtime.providers.base import Adapter, ProviderError, RenderContext, Rendered
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest


def adapter_client(
    adapter: Adapter, reply: Callable[[ChatRequest], Rendered]
) -> tuple[httpx2.Client, list[ChatRequest]]:
    """An HTTP client for an SDK (closed when the test ends) whose every request ``adapter`` checks,
    parses and validates, answered by ``reply``; and the list of the chats it parsed."""
    seen: list[ChatRequest] = []

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

    return opened(httpx2.Client(transport=httpx2.MockTransport(handler))), seen


class AdapterServer:
    """The handler of an httpx (or httpx2: ``http``) MockTransport that answers each request as the
    server would with ``adapter``: checked and parsed (a :class:`ProviderError` answered in the
    provider's shape), then ``error`` (status, message) when set, else the next of ``plans``. With
    ``mid_stream_error`` set, a stream ends after its first ``frames_before_error`` frames with that
    error's frame. A subclass answers the routes besides chat in :meth:`other`."""

    frames_before_error = 1

    def __init__(
        self,
        adapter: Adapter,
        ctx: RenderContext,
        http: ModuleType,
        plans: list[MessagePlan] | None = None,
        error: tuple[int, str] | None = None,
    ) -> None:
        self.adapter, self.ctx, self.http = adapter, ctx, http
        self.plans = list(plans or [])
        self.error = error
        self.chats: list[ChatRequest] = []
        self.mid_stream_error: str | None = None

    def path_params(self, path: str) -> dict[str, str]:
        return {}

    def other(self, req: HttpRequest) -> Rendered | None:
        """The answer to a request that is not a chat (a listing, a count), or None for a chat."""
        return None

    def __call__(self, request: Any) -> Any:
        path, query, headers = request.url.path, dict(request.url.params), dict(request.headers)
        req = HttpRequest(request.method, path, query, headers, request.content, self.path_params(path))
        adapter, ctx = self.adapter, self.ctx
        try:
            if (auth := adapter.check_auth(req)) is not None:
                raise auth
            if (answer := self.other(req)) is not None:
                return self.respond(answer)
            chat = adapter.parse(req)
            adapter.validate_history(chat)
        except ProviderError as e:
            return self.respond(adapter.render_error(e.status, e.message, ctx, e.code))
        self.chats.append(chat)
        if self.error is not None:
            return self.respond(adapter.render_error(self.error[0], self.error[1], ctx))
        rendered = adapter.render(self.plans.pop(0), chat, ctx)
        if self.mid_stream_error is not None and rendered.frames is not None:
            frames = [f.data for f in rendered.frames[: self.frames_before_error]]
            frames.append(adapter.stream_error_frame(self.mid_stream_error, ctx))
            return self.http.Response(200, headers={"content-type": rendered.media_type}, content=iter(frames))
        return self.respond(rendered)

    def respond(self, rendered: Rendered) -> Any:
        headers = [("content-type", rendered.media_type), *rendered.headers]
        if rendered.frames is not None:
            content = iter([f.data for f in rendered.frames])
            return self.http.Response(rendered.status, headers=headers, content=content)
        return self.http.Response(rendered.status, headers=headers, content=rendered.body)
