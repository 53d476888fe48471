"""The options of ``mockllm serve`` that turn passthrough on, and reading them back (kept apart from
the forwarding itself, so building the command line imports nothing heavy)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mockllm.dsl.providers import PROVIDERS

if TYPE_CHECKING:
    from mockllm.server.passthrough.settings import PassthroughOptions

__all__ = ["passthrough_arguments", "passthrough_options"]


def passthrough_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--passthrough",
        nargs="*",
        metavar="PROVIDER=URL",
        help="forward a request no step matches to the real API (with its own credentials) and stream its "
        "answer back, instead of the no-match 404: to each provider's public API, or PROVIDER=URL "
        f"(providers: {', '.join(PROVIDERS)}), or one URL for all (the 'record' extra)",
    )
    p.add_argument(
        "--record-missing",
        metavar="DIR",
        help="write each passed-through exchange into DIR as .mockllm steps, appended to its conversation's "
        "file (a request's x-mockllm-record-to: NAME picks a folder, or a file ending in .mockllm); "
        "implies --passthrough",
    )
    p.add_argument(
        "--passthrough-timeout",
        type=_seconds,
        default=600.0,
        metavar="SECONDS",
        help="how long to wait for the upstream's next bytes before answering 504 (default: 600)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text}")
    return value


def passthrough_options(args: argparse.Namespace) -> PassthroughOptions | None:
    """What the options say; None when passthrough is off."""
    upstreams = getattr(args, "passthrough", None)
    record_dir = getattr(args, "record_missing", None)
    if upstreams is None and record_dir is None:
        return None
    from mockllm.server.passthrough.passthrough import options_from

    return options_from(upstreams, record_dir, float(getattr(args, "passthrough_timeout", 600.0)))
