"""The echo responder's content: what text to answer and which tools to call (docs/architecture.md).

Rules, all deterministic (the same request always gets the same answer):

- **Text** is the last user message, exactly (``""`` when there is none). That holds on every
  path, including when tools are called and after a tool result.
- **Loop end.** When the last message of the history is a tool result, nothing is called: the
  answer is the text alone, so an agent loop that feeds results back ends after one round.
- **Tool selection.** Only offered tools can be called, and only user messages name them (the
  last user message is echoed, every user message feeds matching).
  A tool is named by its name in any casing or separator style, or by the words of its name
  (see :mod:`mockllm.runtime.echo.naming`). For each tool take the *latest* user message naming it;
  the tool is called unless an assistant message after that user message already called it.
  So a tool named in the last user message is called; one named only in an earlier message is
  called once (if it was never called since) and not again on later turns.
- **Order.** Calls are ordered by that latest naming: by message, then by the position in the
  message where the name is completed; ties keep the order the tools were offered in. Each tool
  is called at most once per answer.
- **Arguments** come from the tool's JSON Schema (:func:`mockllm.runtime.echo.schema_args.generate`);
  a tool without parameters, or whose schema does not describe an object, gets ``{}``.
"""

from __future__ import annotations

from typing import Any

from mockllm.runtime.echo.naming import mention, words_of
from mockllm.runtime.echo.schema_args import generate
from mockllm.runtime.request import ChatRequest, Tool
from mockllm.runtime.values import fast_frozen


@fast_frozen
class EchoAnswer:
    text: str
    tool_calls: tuple[tuple[str, Any], ...] = ()  # (tool name, arguments JSON value)


def arguments_for(tool: Tool) -> Any:
    """The generated arguments for one tool: always a JSON object."""
    params = tool.parameters
    if not params:
        return {}
    value = generate(params, root=params)
    return value if isinstance(value, dict) else {}


def selected_tools(chat: ChatRequest) -> tuple[Tool, ...]:
    """The offered tools this request names and has not yet had called (see module docs)."""
    tools: list[Tool] = []
    seen: set[str] = set()
    for t in chat.tools:
        if t.name and t.name not in seen:
            seen.add(t.name)
            tools.append(t)
    if not tools:
        return ()
    messages = chat.messages
    # latest naming of each tool: (message position, word position)
    latest: dict[str, tuple[int, int]] = {}
    for i, m in enumerate(messages):
        if m.role != "user" or not m.text:
            continue
        words = words_of(m.text)
        for t in tools:
            pos = mention(t.name, words)
            if pos is not None:
                latest[t.name] = (i, pos)
    chosen: list[tuple[tuple[int, int, int], Tool]] = []
    for order, t in enumerate(tools):
        if t.name not in latest:
            continue
        at, pos = latest[t.name]
        called = any(c.name == t.name for m in messages[at + 1 :] if m.role == "assistant" for c in m.tool_calls)
        if not called:
            chosen.append(((at, pos, order), t))
    chosen.sort(key=lambda pair: pair[0])
    return tuple(t for _, t in chosen)


def echo_answer(chat: ChatRequest) -> EchoAnswer:
    text = chat.last_user_message() or ""
    last = chat.messages[-1] if chat.messages else None
    if last is not None and (last.role == "tool" or last.tool_result is not None):
        return EchoAnswer(text)
    calls = tuple((t.name, arguments_for(t)) for t in selected_tools(chat))
    return EchoAnswer(text, calls)
