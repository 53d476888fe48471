"""Forwarding to the real APIs, shared by ``mockllm record`` and ``mockllm serve --passthrough``; and
writing what was forwarded back into a library (``--record-missing``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mockllm.server.passthrough.passthrough import Passthrough
    from mockllm.server.passthrough.settings import PassthroughOptions


def passthrough_for(options: PassthroughOptions | None) -> Passthrough | None:
    """The server's passthrough when ``--passthrough`` asked for one (imported only then)."""
    if options is None:
        return None
    from mockllm.server.passthrough.passthrough import Passthrough

    return Passthrough(options)
