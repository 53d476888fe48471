"""The JSON-RPC side of an MCP tool server, as values: which message arrived, what ``initialize``,
``tools/list`` and ``ping`` answer, the provider-neutral request a ``tools/call`` becomes, and what
the engine's plan for it sends back (a result, a JSON-RPC error, a hang or a dropped connection).

The transports (``server/mcp/``) only read and write bytes around these: HTTP and stdio share every
decision. Versions and error codes are those of the ``mcp`` 2.3 SDK (handshake era; the stateless
``server/discover`` probe is answered "method not found", on which the SDK client falls back to
``initialize``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from mockllm.dsl.tree.nodes import McpServer, McpTool
from mockllm.runtime.engine.conversations import CONVERSATION_HEADER
from mockllm.runtime.jsonout import compact_encoder
from mockllm.runtime.mcp.results import argument_error, call_result_text, unknown_tool
from mockllm.runtime.reply.plan import ErrorPlan, HangPlan, MessagePlan, Plan, RawPlan
from mockllm.runtime.request import ChatRequest, Provider
from mockllm.runtime.values import fast_frozen

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = PROTOCOL_VERSIONS[-1]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: the journal's provider name for MCP calls (they come from no provider's API)
MCP_PROVIDER = cast(Provider, "mcp")


def rpc_error(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def rpc_result(msg_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


@fast_frozen
class Message:
    """One JSON-RPC message: a request (``id`` and ``method``), a notification (``method``, no id) or
    a response from the client (``result`` or ``error``: acknowledged, nothing else)."""

    kind: str  # "request", "notification", "response"
    id: Any
    method: str
    params: Mapping[str, Any]
    size: int | None = None  # the length of the JSON text it was read from, when known


def read_message(obj: Any, size: int | None = None) -> Message | dict[str, Any]:
    """The message ``obj`` holds, or the JSON-RPC error answering it (-32600 for anything that is not
    one message: a batch, a bare value, a missing ``jsonrpc``). ``size``: the length of the JSON text
    ``obj`` was parsed from (the journal's bound on a call's arguments: ``ChatRequest.body_size``)."""
    if isinstance(obj, list):
        return rpc_error(None, INVALID_REQUEST, "Invalid Request: batches are not supported; send one message")
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        return rpc_error(None, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 message")
    msg_id = obj.get("id")
    if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int))):
        return rpc_error(None, INVALID_REQUEST, "Invalid Request: the id must be a string or an integer")
    method = obj.get("method")
    if method is None:
        if "id" in obj and ("result" in obj or "error" in obj):
            return Message("response", msg_id, "", {})
        return rpc_error(msg_id, INVALID_REQUEST, "Invalid Request: no method")
    if not isinstance(method, str):
        return rpc_error(msg_id, INVALID_REQUEST, "Invalid Request: the method must be a string")
    params = obj.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return rpc_error(msg_id, INVALID_PARAMS, "Invalid request parameters")
    return Message("request" if "id" in obj else "notification", msg_id, method, params, size)


def negotiate(params: Mapping[str, Any]) -> str:
    """The version a server answers ``initialize`` with: the client's when known, else the latest."""
    requested = params.get("protocolVersion")
    return requested if isinstance(requested, str) and requested in PROTOCOL_VERSIONS else LATEST_VERSION


def capabilities(server: McpServer) -> dict[str, Any]:
    """What ``initialize`` advertises: tools always, resources and prompts when the block declares some."""
    out: dict[str, Any] = {"tools": {"listChanged": False}}
    if server.resources:
        out["resources"] = {"subscribe": False, "listChanged": False}
    if server.prompts:
        out["prompts"] = {"listChanged": False}
    return out


def initialize_result(server: McpServer, version: str, software: str = "") -> dict[str, Any]:
    """``initialize``'s result: the negotiated ``version``; ``software`` is mockllm's own version."""
    return {
        "protocolVersion": version,
        "capabilities": capabilities(server),
        "serverInfo": {"name": server.name, "version": software},
    }


def tool_listing(tool: McpTool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["inputSchema"] = tool.input_schema
    if tool.output_schema is not None:
        out["outputSchema"] = tool.output_schema
    return out


def tools_list(server: McpServer) -> dict[str, Any]:
    return {"tools": [tool_listing(t) for t in server.tools]}


def find_tool(server: McpServer, name: str) -> McpTool | None:
    for tool in server.tools:
        if tool.name == name:
            return tool
    return None


@fast_frozen
class Call:
    """A ``tools/call`` ready for the engine (``chat``), or answered at once (``immediate``: an unknown
    tool, arguments the schema refuses, malformed params as a JSON-RPC error)."""

    chat: ChatRequest | None = None
    tool: McpTool | None = None
    immediate: dict[str, Any] | None = None  # a result (isError) or, with ``rpc_error``, an error object
    rpc_error: bool = False
    rejected: str | None = None  # why, for the journal, when the call is refused before matching


def prepare_call(server: McpServer, msg: Message, conversation: str, headers: Mapping[str, str] | None = None) -> Call:
    """The engine request for a ``tools/call``. ``conversation`` is the session's own key; a client's
    ``x-mockllm-conversation`` header (in ``headers``, lower-cased names) wins over it."""
    name = msg.params.get("name")
    arguments = msg.params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return Call(immediate=rpc_error(msg.id, INVALID_PARAMS, "Invalid request parameters"), rpc_error=True)
    sent = dict(headers or {})
    if not sent.get(CONVERSATION_HEADER):
        sent[CONVERSATION_HEADER] = conversation
    # the five fields every request has, positionally (each keyword costs some 30 ns to match by name)
    chat = ChatRequest(
        MCP_PROVIDER,  # provider
        f"/mcp/{server.name}",  # endpoint
        server.name,  # model
        False,  # stream
        (),  # messages
        headers=sent,
        body=msg.params,
        body_size=msg.size,  # the params are part of the message: its length bounds theirs
        operation="mcp",
        tool=name,
        arguments=arguments,
    )
    tool = find_tool(server, name)
    if tool is None:
        return Call(chat=chat, immediate=unknown_tool(name), rejected=f"Unknown tool: {name}")
    problem = argument_error(tool, arguments)
    if problem is not None:
        return Call(chat=chat, tool=tool, immediate=problem, rejected=problem["content"][0]["text"])
    return Call(chat, tool)


@fast_frozen
class Answer:
    """What a tools/call sends, from the engine's plan: after ``latency_s``, the JSON-RPC ``message``
    (with ``status`` on HTTP), or nothing at all (``hang``), or a dropped connection (``drop``)."""

    message: dict[str, Any] | None
    status: int = 200
    latency_s: float = 0.0
    hang: bool = False
    drop: bool = False
    raw: Any = None  # a `status`/`body` reply: this body exactly as written
    has_raw: bool = False
    result_text: str | None = None  # a result's compact JSON text (``message`` is then that result)

    def message_text(self) -> str:
        """``message`` as compact JSON text (a result's written once: see :func:`call_result_text`)."""
        if self.result_text is not None and self.message is not None:
            msg_id = self.message["id"]  # an integer as json writes one (its repr), without the encoder
            shown = int.__repr__(msg_id) if type(msg_id) is int else _compact(msg_id)
            return f'{{"jsonrpc":"2.0","id":{shown},"result":{self.result_text}}}'
        return _compact(self.message)


_compact = compact_encoder()


def answer(msg_id: Any, plan: Plan | None, tool: McpTool, arguments: Mapping[str, Any]) -> Answer:
    """The answer to a tools/call the engine planned (``plan`` None: nothing matched and no default)."""
    if plan is None:
        result, text = call_result_text(MessagePlan(model=""), tool, arguments)
        return Answer(rpc_result(msg_id, result), result_text=text)
    if isinstance(plan, HangPlan):
        return Answer(None, hang=True)
    if isinstance(plan, ErrorPlan):
        data = {"status": plan.status}
        return Answer(rpc_error(msg_id, INTERNAL_ERROR, plan.message, data), plan.status, plan.latency_s)
    if isinstance(plan, RawPlan):
        return Answer(None, plan.status, plan.latency_s, raw=plan.body, has_raw=plan.has_body)
    if plan.disconnect_after is not None:
        return Answer(None, latency_s=plan.latency_s, drop=True)
    result, text = call_result_text(plan, tool, arguments)
    return Answer(rpc_result(msg_id, result), latency_s=plan.latency_s, result_text=text)
