"""What every provider adapter offers the server. Adapters are pure: bytes in, bytes out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mockllm.errors import ProviderError as ProviderError  # what adapters raise; re-exported for them
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest, Provider
from mockllm.runtime.values import fast_frozen


@fast_frozen
class Frame:
    """One streamed event (SSE event or NDJSON line), exact bytes. ``content`` frames carry a piece of
    text, thinking or tool arguments: they are what `N chunks` counts and what spacing separates."""

    data: bytes
    content: bool = False


@fast_frozen
class Rendered:
    status: int
    media_type: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""  # the whole body when not streamed
    frames: tuple[Frame, ...] | None = None  # set when streamed

    @property
    def streamed(self) -> bool:
        return self.frames is not None


@fast_frozen
class RenderContext:
    """Per-response values the adapter must not invent itself (so output is deterministic)."""

    response_id: str  # unique per response, 50 hex digits; adapters shape it (mockllm.runtime.reply.ids)
    created: int  # unix seconds, from the server's clock
    request_id: str  # for x-request-id / request-id headers


class Adapter(Protocol):
    provider: Provider

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        """None when the credentials the real API requires are present, else the error to answer
        (status and message as the real API gives them: OpenAI 401, Anthropic 401, Gemini 403...)."""
        ...

    def parse(self, http: HttpRequest) -> ChatRequest:
        """Parse and validate the body (raises :class:`ProviderError` for anything the API rejects)."""
        ...

    def validate_history(self, chat: ChatRequest) -> None:
        """Raise :class:`ProviderError` (400) when tool results/calls or roles break the API's rules."""
        ...

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        """A normal reply, streamed when ``chat.stream``. Not called for error/raw/hang plans."""
        ...

    def render_error(
        self,
        status: int,
        message: str,
        ctx: RenderContext,
        code: str | None = None,
        param: str | None = None,
    ) -> Rendered:
        """The provider's own error body and type for ``status`` (``param`` where the shape has one)."""
        ...

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        """The in-band error event sent mid-stream (`stream error "…" after N chunks`); ``sequence`` is
        the number of events sent before it (for APIs that number their events)."""
        ...

    def models(self, model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
        """The API's model listing naming ``model_ids`` (``GET /v1/models``, Gemini's ``models``,
        Ollama's ``/api/tags``); raises :class:`ProviderError` where the API has none."""
        ...

    def count_tokens(self, http: HttpRequest, ctx: RenderContext) -> Rendered:
        """The API's token count of the request body (Anthropic ``count_tokens``, Gemini
        ``countTokens``); raises :class:`ProviderError` for a bad body, or where the API has none."""
        ...

    def model(self, model_id: str, ctx: RenderContext) -> Rendered:
        """One model's object (``GET /v1/models/{id}``)."""
        ...

    def version(self, ctx: RenderContext) -> Rendered:
        """The server's version (Ollama's ``GET /api/version``); raises :class:`ProviderError` where the
        API has none."""
        ...

    def banner(self, ctx: RenderContext) -> Rendered:
        """What ``GET /`` answers (Ollama's "Ollama is running"); raises :class:`ProviderError` where the
        API has none."""
        ...


class BaseAdapter:
    """What most adapters share: subclass it and write ``check_auth``, ``parse``, ``render``,
    ``render_error`` and ``stream_error_frame``; override the rest where the API has them."""

    provider: Provider

    def validate_history(self, chat: ChatRequest) -> None:
        """Accept any history (override to enforce the API's rules on roles and tool results)."""
        return None

    def models(self, model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
        raise ProviderError(404, f"mockllm: the {self.provider} API has no model listing")

    def count_tokens(self, http: HttpRequest, ctx: RenderContext) -> Rendered:
        raise ProviderError(404, f"mockllm: the {self.provider} API has no token count")

    def model(self, model_id: str, ctx: RenderContext) -> Rendered:
        """In OpenAI's shape: what every API's ``GET /v1/models/{id}`` answers here."""
        from mockllm.runtime.providers import openai_chat

        return openai_chat.model_response(model_id, ctx)

    def version(self, ctx: RenderContext) -> Rendered:
        raise ProviderError(404, f"mockllm: the {self.provider} API has no version route")

    def banner(self, ctx: RenderContext) -> Rendered:
        raise ProviderError(404, f"mockllm: the {self.provider} API has no banner")
