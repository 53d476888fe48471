"""Resources and prompts of an MCP server, answered from its declaration alone: ``resources/list``,
``resources/read``, ``prompts/list`` and ``prompts/get``. They are not scripted by steps (a
resource's text and a prompt's messages are written in the ``mcp server`` block), so they are plain
functions from the declaration and the request's params to a JSON-RPC result or error, with the
error codes and messages of a server built on the official ``mcp`` SDK (``MCPServer``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockllm.dsl.tree import templates
from mockllm.dsl.tree.nodes import McpPrompt, McpResource, McpServer
from mockllm.errors import TemplateError
from mockllm.runtime.mcp.protocol import INVALID_PARAMS, rpc_error, rpc_result

#: the code the official server's dispatcher gives an exception of a prompt handler (``code=0``,
#: kept there for compatibility with older servers): an unknown prompt, a missing argument
HANDLER_ERROR = 0


def resource_listing(res: McpResource) -> dict[str, Any]:
    out: dict[str, Any] = {"uri": res.uri, "name": res.uri}
    if res.description:
        out["description"] = res.description
    out["mimeType"] = res.mime
    return out


def resources_list(server: McpServer) -> dict[str, Any]:
    return {"resources": [resource_listing(r) for r in server.resources]}


def resources_read(server: McpServer, msg_id: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to ``resources/read``: the resource's text, or -32602 ``Unknown resource: URI``."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        return rpc_error(msg_id, INVALID_PARAMS, "Invalid request parameters", "")
    for res in server.resources:
        if res.uri == uri:
            return rpc_result(msg_id, {"contents": [{"uri": uri, "mimeType": res.mime, "text": res.text}]})
    return rpc_error(msg_id, INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})


def prompt_listing(prompt: McpPrompt) -> dict[str, Any]:
    out: dict[str, Any] = {"name": prompt.name}
    if prompt.description:
        out["description"] = prompt.description
    arguments = []
    for arg in prompt.arguments:
        item: dict[str, Any] = {"name": arg.name}
        if arg.description:
            item["description"] = arg.description
        item["required"] = arg.required
        arguments.append(item)
    out["arguments"] = arguments
    return out


def prompts_list(server: McpServer) -> dict[str, Any]:
    return {"prompts": [prompt_listing(p) for p in server.prompts]}


def prompts_get(server: McpServer, msg_id: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to ``prompts/get``: the prompt's messages with its arguments filled in; an unknown
    prompt or a missing required argument gets the official server's error."""
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return rpc_error(msg_id, INVALID_PARAMS, "Invalid request parameters", "")
    if not all(isinstance(v, str) for v in arguments.values()):  # the SDK's params: dict[str, str]
        return rpc_error(msg_id, INVALID_PARAMS, "Invalid request parameters", "")
    prompt = next((p for p in server.prompts if p.name == name), None)
    if prompt is None:
        return rpc_error(msg_id, HANDLER_ERROR, f"Unknown prompt: {name}")
    missing = sorted(a.name for a in prompt.arguments if a.required and a.name not in arguments)
    if missing:
        shown = "{" + ", ".join(repr(m) for m in missing) + "}"  # the official server shows a Python set
        return rpc_error(msg_id, HANDLER_ERROR, f"Missing required arguments: {shown}")
    env = {a.name: str(arguments.get(a.name, "")) for a in prompt.arguments}
    messages = []
    for message in prompt.messages:
        try:
            text = templates.parse(message.text).render(env)
        except TemplateError:  # `check` reports it; the text is then sent as written
            text = message.text
        messages.append({"role": message.role, "content": {"type": "text", "text": text}})
    out: dict[str, Any] = {}
    if prompt.description:
        out["description"] = prompt.description
    out["messages"] = messages
    return rpc_result(msg_id, out)
