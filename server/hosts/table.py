"""Which ASGI host serves the app, decided in one place: the table of hosts ``mockllm serve --server``
offers (the CLI's choices, why a host cannot run here, its default event loop, the function that
serves it), and the one call every host answers (:class:`Serve`).

The table holds names, not modules: a host's module is imported when it serves, so building the
CLI's parser imports no server."""

from __future__ import annotations

import importlib
import importlib.util
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs

if TYPE_CHECKING:
    from mockllm.server.tls.files import TlsFiles


@attrs.frozen
class Stopping:
    """How a host stops: once ``trigger()`` returns it stops accepting, gives open responses ``grace_s``
    seconds, calls ``finish`` (responses end at once, the provider's way), and cancels what still runs
    a moment later."""

    trigger: Callable[[], Awaitable[None]]
    grace_s: float = 1.0
    finish: Callable[[], None] | None = None


class Serve(Protocol):
    """What every host does: serve ``app`` (ASGI) on the bound ``sock`` until it stops as ``stopping``
    says; over TLS with ``tls``'s certificate when given (``mockllm serve --tls``)."""

    def __call__(
        self, app: Any, sock: socket.socket, stopping: Stopping, tls: TlsFiles | None = None
    ) -> Awaitable[None]: ...


@attrs.frozen
class Host:
    """One ASGI host: its ``--server`` name, the module and function that serve it, the extra that
    installs it (None: a dependency of mockllm), the modules it needs, and whether it runs on uvloop
    where uvloop is installed."""

    name: str
    module: str
    function: str
    extra: str | None = None
    needs: tuple[str, ...] = ()
    uvloop: bool = False

    @property
    def install_hint(self) -> str:
        """What ``mockllm serve --server NAME`` says when the host's extra is missing."""
        return f"mockllm: --server {self.name} needs the '{self.extra}' extra: pip install 'mockllm[{self.extra}]'"

    def missing(self) -> str | None:
        """Why this host cannot run here (its extra is not installed), else None."""
        try:
            for module in self.needs:
                importlib.import_module(module)
        except ImportError:
            return self.install_hint
        return None

    def default_loop(self) -> str:
        """uvloop for a host that prefers it, where it is installed, else asyncio."""
        if self.uvloop and sys.platform != "win32" and importlib.util.find_spec("uvloop") is not None:
            return "uvloop"
        return "asyncio"

    def serve(self) -> Serve:
        """The function that serves this host (importing its module)."""
        return cast(Serve, getattr(importlib.import_module(self.module), self.function))


_UVLOOP = () if sys.platform == "win32" else ("uvloop",)  # the fast extra installs uvloop everywhere but Windows

HOSTS: dict[str, Host] = {
    host.name: host
    for host in (
        Host("hypercorn", "mockllm.server.hosts.hypercorn_server", "serve_hypercorn"),
        Host(
            "uvicorn",
            "mockllm.server.hosts.uvicorn_server",
            "serve_uvicorn",
            extra="fast",
            needs=(*_UVLOOP, "httptools", "uvicorn"),
            uvloop=True,
        ),
        Host(
            "granian",
            "mockllm.server.hosts.granian_server",
            "serve_granian",
            extra="granian",
            needs=("granian.server.embed",),
            uvloop=True,
        ),
    )
}
DEFAULT_HOST = "hypercorn"
HOST_NAMES = tuple(HOSTS)  # `mockllm serve --server`'s choices
