"""The reply plan: a step's reply resolved for one request (templates rendered, echo answered,
text and arguments split for streaming, usage estimated). Adapters render it; nothing in it is
provider-specific."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs

FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


@attrs.frozen
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


@attrs.frozen
class Plan:
    """What to send. Exactly one of these shapes applies, checked in this order:
    ``hang``; ``error_status`` (an error response in the provider's shape);
    ``raw_status``/``raw_body`` (sent as written); otherwise a normal message."""

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
    # errors and faults
    error_status: int | None = None
    error_message: str | None = None
    retry_after_s: float | None = None
    raw_status: int | None = None
    raw_body: Any = None
    has_raw_body: bool = False
    disconnect_after: int | None = None  # content chunks sent before the connection is cut
    stream_error: str | None = None
    stream_error_after: int | None = None
    hang: bool = False
    # `interleave calls`: when streaming, adapters that stream arguments in fragments send the calls'
    # fragments round-robin (call 0's first, call 1's first, …, call 0's second, …), not call by call
    interleave_calls: bool = False
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers (header, echo header, retry after)
    # embedding and moderation answers (runtime/embed_plan.py): one vector per input, in order; the
    # moderation categories flagged for every input
    vectors: tuple[Sequence[float], ...] = ()
    flags: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.error_status is not None

    @property
    def is_raw(self) -> bool:
        return self.raw_status is not None or self.has_raw_body
