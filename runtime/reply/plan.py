"""The reply plan: a step's reply resolved for one request (templates rendered, echo answered,
text and arguments split for streaming, usage estimated). Adapters render it; nothing in it is
provider-specific."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs

from mockllm.runtime.values import fast_frozen

FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


@fast_frozen
class PlannedToolCall:
    name: str
    arguments: Any  # the JSON value
    arguments_json: str  # its exact JSON text, as streamed and as OpenAI's `arguments` string
    argument_chunks: tuple[str, ...]  # arguments_json split by the stream policy; joins to it exactly
    key: str  # 24 letters and digits, per conversation and turn; adapters build ids as prefix + key
    explicit_id: str | None = None  # `id "call_x"` in the script wins over prefix + key

    def id_for(self, prefix: str, length: int = 24) -> str:
        """``prefix`` + the first ``length`` characters of the key (``call_…``, ``toolu_01…``)."""
        return self.explicit_id if self.explicit_id is not None else prefix + self.key[:length]


@fast_frozen
class MessagePlan:
    """A normal answer -- text, thinking, a refusal, tool calls -- sent whole or streamed, with the
    stream's faults. The only shape adapters render (``Adapter.render``)."""

    model: str
    text: str = ""
    text_chunks: tuple[str, ...] = ()  # joins exactly to `text`
    thinking: str | None = None
    thinking_chunks: tuple[str, ...] = ()
    refusal: str | None = None
    tool_calls: tuple[PlannedToolCall, ...] = ()
    finish: FinishReason = "stop"
    input_tokens: int = 1
    output_tokens: int = 1
    # timing
    latency_s: float = 0.0
    chunk_interval_s: float = 0.0
    # stream faults
    disconnect_after: int | None = None  # content chunks sent before the connection is cut
    stream_error: str | None = None
    stream_error_after: int | None = None
    # `interleave calls`: when streaming, adapters that stream arguments in fragments send the calls'
    # fragments round-robin (call 0's first, call 1's first, …, call 0's second, …), not call by call
    interleave_calls: bool = False
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers (header, echo header, retry after)
    # embedding and moderation answers (runtime/embed_plan.py): one vector per input, in order; the
    # moderation categories flagged for every input
    vectors: tuple[Sequence[float], ...] = ()
    flags: tuple[str, ...] = ()
    # an MCP tool's answer (runtime/mcp/results.py): each `result` line rendered, in order, as
    # (a str for text or a dict for structured content, whether it is `result error`)
    results: tuple[tuple[Any, bool], ...] = ()
    # speech, transcription and images (runtime/reply/media.py): a scripted audio file's bytes, or the
    # length asked for (`audio 2.5s`); each scripted picture's bytes (`image "PATH"`)
    audio: bytes | None = None
    audio_seconds: float | None = None
    images: tuple[bytes, ...] = ()


@attrs.frozen
class ErrorPlan:
    """``error 429 "…"`` (or an error of mockllm's own, such as a failed ``expect:``): an error response
    in the provider's own shape, rendered by ``Adapter.render_error``."""

    model: str
    status: int
    message: str
    retry_after_s: float | None = None
    latency_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    code: str | None = None  # a machine-readable code for the error body (Anthropic `thread_not_found`)


@attrs.frozen
class RawPlan:
    """``status N`` and/or ``body {…}``: sent as written, in no provider's shape."""

    model: str
    status: int = 200
    body: Any = None  # a JSON value, or a string sent as text
    has_body: bool = False  # `body null` sends the JSON null; no `body` line sends an empty body
    latency_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class HangPlan:
    """``hang``: send nothing until the client leaves, the server stops or its hang limit passes."""

    model: str


#: What to send for one request: exactly one of four shapes. When a reply block holds elements of
#: several (the checks reject that, but a plan is built anyway), the planner decides in this order:
#: hang, error, raw, message (:func:`mockllm.runtime.reply.planner.shape`).
Plan = HangPlan | ErrorPlan | RawPlan | MessagePlan
