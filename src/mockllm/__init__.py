"""mockllm: a mock LLM server for end-to-end tests, driven by `.mockllm` scenario scripts.

The public API (``__all__`` lists every name)::

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

from mockllm import builder as _builder
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
from mockllm.builder import *  # noqa: F403 -- the builder's public names (its __all__), below
from mockllm.dsl.diagnostics import Diagnostic
from mockllm.errors import DiagnosticsError, MockllmError
from mockllm.runtime.engine.conversations import ConversationRecord, MachineRecord
from mockllm.runtime.engine.journal import JournalEntry
from mockllm.runtime.engine.outcome import NoMatchReport

__version__ = "0.1.0"

# The public API: loading and serving and the records the server reports; then the builder's names.
__all__ = [
    "ConversationRecord",
    "Diagnostic",
    "DiagnosticsError",
    "JournalEntry",
    "LoadResult",
    "Loaded",
    "MachineRecord",
    "MockServer",
    "MockllmError",
    "NoMatchReport",
    "Source",
    "Verification",
    "__version__",
    "is_script_text",
    "load",
    "load_or_raise",
    "serve",
]
__all__ += _builder.__all__  # the builder: scenario(), text(), tool_call() …
