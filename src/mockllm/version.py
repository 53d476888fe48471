"""mockllm's installed version, said the same way everywhere it is shown (``mockllm --version``, the
admin API's ``GET /_mockllm/version``, the language server's hello). Imports nothing of mockllm, so
every layer may use it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    """The installed distribution's version, "unknown" when mockllm runs from a checkout it was never
    installed from."""
    try:
        return version("mockllm")
    except PackageNotFoundError:
        return "unknown"
