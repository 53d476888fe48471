"""One tool loop per provider, driven through the official SDKs, summarised as what the client sees:
per call, the text, the tool calls (name, arguments), the finish reason and the usage. The recording
tests compare these summaries between the recorded upstream and the replayed script."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import boto3
import botocore.config
import cohere
import httpx
import httpx2
import ollama
import openai
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials
from mistralai.client import Mistral
from sdk_clients import opened

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
QUESTION = "What is the weather in Lima?"
KEY = "sk-secret-do-not-write-0123456789"
SECRET = "aws-secret-never-sent-0123456789"
BEDROCK_MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"

#: The upstream's script: a tool call, then an answer; both provider-neutral.
UPSTREAM = """
scenario "Weather":
    step ask:
        when:
            last user message contains "weather in"
        reply:
            tool call get_weather {"city": "Lima"}
            usage 31 in, 7 out
            stream 3 chunks

    step answer:
        when:
            tool result for "get_weather" is present
        reply:
            text "It is sunny in Lima today, with a light breeze from the sea."
            usage 52 in, 15 out
            stream by word
"""

Summary = list[tuple[str, list[tuple[str, Any]], str, Any]]


def openai_chat(url: str, stream: bool) -> Summary:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
        return openai_chat_loop(c, "gpt-4o", stream)


def azure_chat(url: str, stream: bool) -> Summary:
    """openai.AzureOpenAI: a deployment route with api-version, the key in the `api-key` header."""
    with openai.AzureOpenAI(azure_endpoint=url, api_version="2024-10-21", api_key=KEY, max_retries=0) as c:
        return openai_chat_loop(c, "weather-deployment", stream)


def openai_chat_loop(c: Any, model: str, stream: bool) -> Summary:
    tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    out: Summary = []
    for _ in range(2):
        if stream:
            opts: Any = {"stream_options": {"include_usage": True}}
            with c.chat.completions.stream(model=model, messages=messages, tools=tools, **opts) as s:
                done = s.get_final_completion()
        else:
            done = c.chat.completions.create(model=model, messages=messages, tools=tools)
        choice = done.choices[0]
        calls = [(t.function.name, json.loads(t.function.arguments)) for t in choice.message.tool_calls or []]  # type: ignore[union-attr]
        usage = (done.usage.prompt_tokens, done.usage.completion_tokens) if done.usage else None
        out.append((choice.message.content or "", calls, choice.finish_reason, usage))
        if not calls:
            break
        messages.append(choice.message.model_dump(exclude_none=True))
        messages += [
            {"role": "tool", "tool_call_id": t.id, "content": "sunny"} for t in choice.message.tool_calls or []
        ]
    return out


def openai_responses(url: str, stream: bool) -> Summary:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
        tools: Any = [{"type": "function", "name": "get_weather", "parameters": SCHEMA}]
        out: Summary = []
        kwargs: dict[str, Any] = {"input": QUESTION}
        for _ in range(2):
            if stream:
                with c.responses.stream(model="gpt-4.1", tools=tools, **kwargs) as s:
                    r = s.get_final_response()
            else:
                r = c.responses.create(model="gpt-4.1", tools=tools, **kwargs)
            calls = [(i.name, json.loads(i.arguments)) for i in r.output if i.type == "function_call"]
            usage = (r.usage.input_tokens, r.usage.output_tokens) if r.usage else None
            out.append((r.output_text, calls, r.status or "", usage))
            if not calls:
                break
            ids = [i.call_id for i in r.output if i.type == "function_call"]
            kwargs = {
                "input": [{"type": "function_call_output", "call_id": i, "output": "sunny"} for i in ids],
                "previous_response_id": r.id,
            }
        return out


def anthropic_messages(url: str, stream: bool) -> Summary:
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0) as c:
        return anthropic_loop(c, "claude-x", stream)


def anthropic_bedrock(url: str, stream: bool) -> Summary:
    """Bedrock's invoke and invoke-with-response-stream, with Anthropic bodies."""
    client = anthropic.AnthropicBedrock(
        base_url=url, aws_access_key=KEY, aws_secret_key=SECRET, aws_session_token=KEY, aws_region="us-east-1"
    )
    with client as c:
        return anthropic_loop(c, BEDROCK_MODEL, stream)


def anthropic_loop(c: Any, model: str, stream: bool) -> Summary:
    tools: Any = [{"name": "get_weather", "input_schema": SCHEMA}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    out: Summary = []
    for _ in range(2):
        if stream:
            with c.messages.stream(model=model, max_tokens=200, messages=messages, tools=tools) as s:
                m = s.get_final_message()
        else:
            m = c.messages.create(model=model, max_tokens=200, messages=messages, tools=tools)
        uses = [b for b in m.content if b.type == "tool_use"]
        text = "".join(b.text for b in m.content if b.type == "text")
        out.append(
            (
                text,
                [(b.name, b.input) for b in uses],
                m.stop_reason or "",
                (m.usage.input_tokens, m.usage.output_tokens),
            )
        )
        if not uses:
            break
        messages.append({"role": "assistant", "content": [b.model_dump() for b in m.content]})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": b.id, "content": "sunny"} for b in uses],
            }
        )
    return out


def gemini(url: str, stream: bool) -> Summary:
    with genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=url)) as c:
        return gemini_loop(c, stream)


def vertex_client(url: str) -> genai.Client:
    """google-genai with vertexai=True: project and location routes, an OAuth bearer token."""
    return opened(
        genai.Client(
            vertexai=True,
            project="my-project",
            location="us-central1",
            credentials=Credentials(token=KEY),
            http_options=types.HttpOptions(base_url=url),
        )
    )


def vertex(url: str, stream: bool) -> Summary:
    with vertex_client(url) as c:
        return gemini_loop(c, stream)


def gemini_loop(c: Any, stream: bool) -> Summary:
    decl = types.FunctionDeclaration(name="get_weather", parameters_json_schema=SCHEMA)
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[decl])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=QUESTION)])]
    out: Summary = []
    for _ in range(2):
        if stream:
            pieces = list(c.models.generate_content_stream(model="gemini-2.5-flash", contents=contents, config=config))
        else:
            pieces = [c.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)]
        text = "".join(p.text or "" for p in pieces)
        calls = [(fc.name or "", fc.args) for p in pieces for fc in p.function_calls or []]
        last = pieces[-1]
        finish = str(last.candidates[0].finish_reason) if last.candidates else ""
        u = last.usage_metadata
        out.append((text, calls, finish, (u.prompt_token_count, u.candidates_token_count) if u else None))
        if not calls:
            break
        contents.append(
            types.Content(
                role="model", parts=[types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in calls]
            )
        )
        contents.append(
            types.Content(
                role="user",
                parts=[types.Part.from_function_response(name=n, response={"r": "sunny"}) for n, _ in calls],
            )
        )
    return out


def ollama_chat(url: str, stream: bool) -> Summary:
    with ollama.Client(host=url) as c:
        tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        out: Summary = []
        for _ in range(2):
            if stream:
                parts = list(c.chat(model="llama3.2", messages=messages, tools=tools, stream=True))
            else:
                parts = [c.chat(model="llama3.2", messages=messages, tools=tools)]
            text = "".join(p.message.content or "" for p in parts)
            calls = [(t.function.name, dict(t.function.arguments)) for p in parts for t in p.message.tool_calls or []]
            last = parts[-1]
            out.append((text, calls, last.done_reason or "", (last.prompt_eval_count, last.eval_count)))
            if not calls:
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in calls],
                }
            )
            messages += [{"role": "tool", "tool_name": n, "content": "sunny"} for n, _ in calls]
        return out


def cohere_chat(url: str, stream: bool) -> Summary:
    co = cohere.ClientV2(base_url=url, api_key=KEY, httpx_client=opened(httpx.Client(timeout=60)))
    tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    out: Summary = []
    for _ in range(2):
        if stream:
            events = list(co.chat_stream(model="command-a-03-2025", messages=messages, tools=tools))
            text = "".join(
                e.delta.message.tool_plan if e.type == "tool-plan-delta" else e.delta.message.content.text
                for e in events
                if e.type in ("tool-plan-delta", "content-delta")
            )
            starts = {e.index: e.delta.message.tool_calls for e in events if e.type == "tool-call-start"}
            arguments = {i: "" for i in starts}
            for e in events:
                if e.type == "tool-call-delta":
                    arguments[e.index] += e.delta.message.tool_calls.function.arguments
            calls = [(c.id, c.function.name, arguments[i]) for i, c in starts.items()]
            end = events[-1].delta
            finish, tokens = end.finish_reason, end.usage.tokens
        else:
            r = co.chat(model="command-a-03-2025", messages=messages, tools=tools)
            text = r.message.tool_plan or "".join(c.text for c in r.message.content or [] if c.type == "text")
            calls = [(c.id, c.function.name, c.function.arguments) for c in r.message.tool_calls or []]
            finish, tokens = r.finish_reason, r.usage.tokens
        said = [(name, json.loads(arguments)) for _, name, arguments in calls]
        out.append((text, said, finish, (tokens.input_tokens, tokens.output_tokens)))
        if not calls:
            break
        wire = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]
        messages.append({"role": "assistant", "tool_plan": text, "tool_calls": wire})
        messages += [{"role": "tool", "tool_call_id": i, "content": "sunny"} for i, _, _ in calls]
    return out


def mistral_chat(url: str, stream: bool) -> Summary:
    m = Mistral(server_url=url, api_key=KEY, client=opened(httpx2.Client()))
    tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    out: Summary = []
    for _ in range(2):
        if stream:
            with m.chat.stream(model="mistral-small-latest", messages=messages, tools=tools) as s:
                events = [e.data for e in s]
            text = "".join(str(e.choices[0].delta.content or "") for e in events if e.choices)
            calls = [tc for e in events if e.choices for tc in e.choices[0].delta.tool_calls or []]
            finish, usage = events[-1].choices[0].finish_reason, events[-1].usage
        else:
            r = m.chat.complete(model="mistral-small-latest", messages=messages, tools=tools)
            text, calls = str(r.choices[0].message.content or ""), r.choices[0].message.tool_calls or []
            finish, usage = r.choices[0].finish_reason, r.usage
        said = [(c.function.name, json.loads(str(c.function.arguments))) for c in calls]
        out.append((text, said, finish, (usage.prompt_tokens, usage.completion_tokens)))
        if not calls:
            break
        messages.append({"role": "assistant", "content": text, "tool_calls": [c.model_dump() for c in calls]})
        messages += [{"role": "tool", "tool_call_id": c.id, "name": c.function.name, "content": "sunny"} for c in calls]
    return out


def bedrock_client(url: str) -> Any:
    """boto3's bedrock-runtime client (SigV4-signed: the key id and session token are on the wire)."""
    return opened(
        boto3.client(
            "bedrock-runtime",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            aws_session_token=KEY,
            config=botocore.config.Config(retries={"max_attempts": 1}),
        )
    )


def bedrock_converse(url: str, stream: bool) -> Summary:
    """boto3's converse and converse_stream."""
    client = bedrock_client(url)
    tool_config: Any = {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": SCHEMA}}}]}
    messages: list[Any] = [{"role": "user", "content": [{"text": QUESTION}]}]
    out: Summary = []
    for _ in range(2):
        if stream:
            events = client.converse_stream(modelId=BEDROCK_MODEL, messages=messages, toolConfig=tool_config)
            content, stop, usage = _converse_events(events["stream"])
        else:
            r = client.converse(modelId=BEDROCK_MODEL, messages=messages, toolConfig=tool_config)
            content, stop, usage = r["output"]["message"]["content"], r["stopReason"], r["usage"]
        uses = [b["toolUse"] for b in content if "toolUse" in b]
        text = "".join(b.get("text", "") for b in content)
        out.append((text, [(u["name"], u["input"]) for u in uses], stop, (usage["inputTokens"], usage["outputTokens"])))
        if not uses:
            break
        messages.append({"role": "assistant", "content": content})
        results = [{"toolResult": {"toolUseId": u["toolUseId"], "content": [{"text": "sunny"}]}} for u in uses]
        messages.append({"role": "user", "content": results})
    return out


def _converse_events(stream: Any) -> tuple[list[Any], str, Any]:
    """A ConverseStream rebuilt as Converse's content blocks, stop reason and usage."""
    blocks: dict[int, dict[str, Any]] = {}
    stop, usage = "", None
    for event in stream:
        (kind, body) = next(iter(event.items()))
        i = body.get("contentBlockIndex", 0)
        if kind == "contentBlockStart":
            blocks[i] = {"toolUse": {**body["start"]["toolUse"], "input": ""}}
        elif kind == "contentBlockDelta" and "text" in body["delta"]:
            blocks.setdefault(i, {"text": ""})["text"] += body["delta"]["text"]
        elif kind == "contentBlockDelta" and "toolUse" in body["delta"]:
            blocks[i]["toolUse"]["input"] += body["delta"]["toolUse"]["input"]
        elif kind == "messageStop":
            stop = body["stopReason"]
        elif kind == "metadata":
            usage = body["usage"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    return [blocks[i] for i in sorted(blocks)], stop, usage


CLIENTS: dict[str, Callable[[str, bool], Summary]] = {
    "openai": openai_chat,
    "responses": openai_responses,
    "anthropic": anthropic_messages,
    "gemini": gemini,
    "ollama": ollama_chat,
    "cohere": cohere_chat,
    "mistral": mistral_chat,
    "azure": azure_chat,
    "vertex": vertex,
    "bedrock": bedrock_converse,
    "bedrock-invoke": anthropic_bedrock,
}
