"""How a running server behaves: the knobs of `mockllm serve` and the seams tests replace."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import attrs

from mockllm.runtime.clock import Clock, SystemClock
from mockllm.server.http.body_deadline import DEFAULT_BODY_TIMEOUT_S
from mockllm.server.state.poll_window import DEFAULT_POLL_S

if TYPE_CHECKING:
    from mockllm.server.passthrough.settings import PassthroughOptions
    from mockllm.server.tls.files import TlsFiles

Sleep = Callable[[float], Awaitable[None]]


def _absolute(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_HANG_LIMIT_S = 300.0
DEFAULT_SHUTDOWN_GRACE_S = 5.0


@attrs.frozen
class ServerOptions:
    no_auth: bool = False  # skip the per-provider credential checks
    lenient: bool = False  # skip history validation (tool results answering calls, role order)
    admin_token: str | None = None  # when set, /_mockllm/ needs `Authorization: Bearer TOKEN`, from anywhere
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    hang_limit_s: float = DEFAULT_HANG_LIMIT_S  # how long a `hang` reply holds the connection at most
    # On stop, how long open streams may run on before they send the rest of their frames at once
    shutdown_grace_s: float = DEFAULT_SHUTDOWN_GRACE_S
    # The scenario base: the absolute directory that `use "…"` in script text posted to the admin API
    # resolves against, and the only directory (with its subdirectories) such imports may read.
    # `mockllm serve PATH` sets it to PATH's directory; the default is the working directory when
    # the options are made.
    scenario_base: str = attrs.field(factory=os.getcwd, converter=_absolute)
    # A request body that has not fully arrived this long after the request began gets 408
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    # Where conversation state and the journal are kept: None in this process's memory; a
    # redis://HOST:PORT/DB URL in Redis, shared by every server given the same URL (server/state/store.py)
    state: str | None = None
    # How long a request waiting for the shared store's answer polls before its process may sleep
    # (server/state/poll_window.py; 0: never); `mockllm serve --state-poll MICROSECONDS`
    state_poll_s: float = DEFAULT_POLL_S
    # `--passthrough` / `--record-missing`: where unmatched requests are forwarded and written (server/passthrough/)
    passthrough: PassthroughOptions | None = None
    # `--openai-prefix PATH`: base paths under which OpenAI's chat, embedding and model routes are served
    # again, for OpenAI-compatible services' clients (Groq's `/openai/v1`, vLLM's, a LiteLLM proxy's)
    openai_prefixes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    # `--cors ORIGIN …`: browser origins whose pages may call the mock (`*`: any); empty: no CORS (server/http/cors.py)
    cors: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    # `--tls`: serve HTTPS and WSS with these certificate files (server/tls/); None: plain HTTP
    tls: TlsFiles | None = None
    sleep: Sleep = attrs.field(default=asyncio.sleep, eq=False)  # latency and chunk spacing go through it
    clock: Clock = attrs.field(factory=SystemClock, eq=False)
