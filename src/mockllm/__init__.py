"""mockllm: a mock LLM server for end-to-end tests, driven by `.mockllm` scenario scripts.

The public API::

    import mockllm

    result = mockllm.load("scenarios/")            # diagnostics as data: result.ok, result.render()
    library = mockllm.load_or_raise("scenarios/")  # or DiagnosticsError
    with mockllm.serve("scenarios/") as server:    # a real server on a free loopback port
        client = OpenAI(base_url=server.openai_base_url, api_key="test")

    weather = mockllm.scenario("Weather").step("ask").when(...).reply(mockllm.text("Sunny"))

The pytest plugin (fixtures ``mockllm``, ``mockllm_server``, ``mockllm_env``) lives in
:mod:`mockllm.pytest_plugin` and is registered automatically.
"""

from __future__ import annotations

from mockllm import builder
from mockllm.api import (
    Loaded,
    LoadResult,
    MockServer,
    Source,
    Verification,
    is_script_text,
    load,
    load_or_raise,
    serve,
)
from mockllm.builder import *  # noqa: F403  (the builder functions; `builder.__all__` lists them)
from mockllm.dsl.diagnostics import Diagnostic
from mockllm.errors import DiagnosticsError, MockllmError

__version__ = "0.1.0"

__all__ = [
    "Diagnostic",
    "DiagnosticsError",
    "LoadResult",
    "Loaded",
    "MockServer",
    "MockllmError",
    "Source",
    "Verification",
    "__version__",
    "is_script_text",
    "load",
    "load_or_raise",
    "serve",
]
__all__ += builder.__all__
