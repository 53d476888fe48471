"""``--passthrough`` / ``--record-missing`` as a value (:class:`PassthroughOptions`): what
``ServerOptions`` holds. It imports nothing of the server, so the options may name it without a cycle."""

from __future__ import annotations

from collections.abc import Mapping

import attrs


@attrs.frozen
class PassthroughOptions:
    """Where each provider's unmatched requests go, and where to write them (None: nowhere)."""

    upstreams: Mapping[str, str]
    record_dir: str | None = None
    timeout_s: float = 600.0
    keep_timing: bool = False
