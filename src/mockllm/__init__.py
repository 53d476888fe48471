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
from mockllm.builder import (
    ConditionBuilder,
    ScenarioBuilder,
    ScriptBuilder,
    SubjectBuilder,
    any_assistant_message,
    any_message,
    any_system_message,
    any_tool_message,
    any_user_message,
    body,
    chunks,
    defaults,
    disconnect,
    duration,
    echo,
    echo_header,
    endpoint,
    error,
    field,
    finish,
    flag,
    hang,
    header,
    interleave_calls,
    last_message,
    last_user_message,
    latency,
    model,
    named_reply,
    provider,
    refusal,
    request_header,
    request_input,
    retry_after,
    scenario,
    script,
    status,
    stream,
    stream_error,
    streaming,
    system_prompt,
    text,
    thinking,
    tool_call,
    tool_result,
    tools,
    turn,
    usage,
    use,
    vector,
    vectors_from,
)
from mockllm.dsl.diagnostics import Diagnostic
from mockllm.errors import BuilderError, DiagnosticsError, MockllmError
from mockllm.runtime.engine.conversations import ConversationRecord, MachineRecord
from mockllm.runtime.engine.journal import JournalEntry
from mockllm.runtime.engine.outcome import NoMatchReport

__version__ = "0.1.0"

# The public API, spelled out: loading and serving, the records the server reports, and the builder.
__all__ = [
    "BuilderError",
    "ConditionBuilder",
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
    "ScenarioBuilder",
    "ScriptBuilder",
    "Source",
    "SubjectBuilder",
    "Verification",
    "__version__",
    "any_assistant_message",
    "any_message",
    "any_system_message",
    "any_tool_message",
    "any_user_message",
    "body",
    "chunks",
    "defaults",
    "disconnect",
    "duration",
    "echo",
    "echo_header",
    "endpoint",
    "error",
    "field",
    "finish",
    "flag",
    "hang",
    "header",
    "interleave_calls",
    "is_script_text",
    "last_message",
    "last_user_message",
    "latency",
    "load",
    "load_or_raise",
    "model",
    "named_reply",
    "provider",
    "refusal",
    "request_header",
    "request_input",
    "retry_after",
    "scenario",
    "script",
    "serve",
    "status",
    "stream",
    "stream_error",
    "streaming",
    "system_prompt",
    "text",
    "thinking",
    "tool_call",
    "tool_result",
    "tools",
    "turn",
    "usage",
    "use",
    "vector",
    "vectors_from",
]
