"""What the providers' end-to-end tests share: the weather tool as OpenAI-shaped SDKs describe it, and
the scripts every provider is put through (the weather tool loop, two calls at once, 429s and 5xx
before an answer, faults mid-stream)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WEATHER: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


CITY_CALL = 'tool call get_weather {"city": "{{city}}"}'
CELSIUS_CALL = 'tool call get_weather {"city": "{{city}}", "unit": "celsius"}'
SUNNY = ('text "It is sunny in {{city}}."', "stream by word", "usage 50 in, 6 out")
SUNNY_BY_MODEL = ('text "Sunny in {{city}}, says {{request.model}}."', "usage 40 in, 7 out")


def tool_loop(
    provider: str | None,
    ask: Sequence[str] = (CITY_CALL, "usage 30 in, 12 out"),
    answer: Sequence[str] = SUNNY,
    *,
    tools_include: bool = False,
    result: str = 'contains "sunny"',
    name: str | None = None,
) -> str:
    """The weather tool loop, for ``provider`` only when named: step ``ask`` captures the city the
    user names ("weather in CITY", and, with ``tools_include``, when get_weather is offered) and
    replies with the ``ask`` lines (by default a call to get_weather for the city); step ``answer``,
    once the get_weather result ``result``, with the ``answer`` lines (by default a streamed "sunny").
    The scenario is ``name``, by default "PROVIDER weather"."""
    only = f"\n    when:\n        provider is {provider}" if provider else ""
    offered = '\n            tools include "get_weather"' if tools_include else ""
    return f"""
scenario "{name or f"{provider or 'any'} weather"}":{only}
    step ask:
        when:
            last user message contains "weather in"{offered}
        capture city from last user message /weather in (\\w+)/
        reply:{_lines(ask)}

    step answer:
        when:
            tool result for "get_weather" {result}
        reply:{_lines(answer)}
"""


def _lines(lines: Sequence[str]) -> str:
    return "".join(f"\n            {line}" for line in lines)


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def one_reply(*lines: str) -> str:
    """A script whose one step answers every request with the reply ``lines``."""
    return f'\nscenario "s":\n    step a:\n        reply:{_lines(lines)}\n'


def limited_then(message: str, answer: str, status: int = 429, after: str | None = "200ms", *, times: int = 2) -> str:
    """``times`` errors ``status`` with ``message`` (``retry after`` ``after``, when given), then
    ``answer``."""
    repeat = f"\n        repeat {times}" if times != 1 else ""
    retry = f"\n            retry after {after}" if after else ""
    return f"""
scenario "s":
    step limited:{repeat}
        reply:
            error {status} "{message}"{retry}
    step ok:
        reply:
            text "{answer}"
"""


def scripted_vector(provider: str, model: str | None = None) -> str:
    """A script whose one step answers ``provider``'s embedding requests (for ``model``, when given)
    with the vector [0.6, 0.8]."""
    for_model = f'\n            model is "{model}"' if model else ""
    return f"""
scenario "Vectors":
    step embed:
        when:
            provider is {provider}
            endpoint is "embeddings"{for_model}
        reply:
            vector [0.6, 0.8]
"""


#: two tool calls in one answer: get_weather for Oslo and get_time without arguments
TWO_AT_ONCE = """
scenario "Two calls in one answer":
    step both:
        always
        when:
            last user message contains "both"
        reply:
            usage 21 in, 8 out
            tool call get_weather {"city": "Oslo"}
            tool call get_time {}
"""

#: "break it": a stream error after "one two"; "cut it": the connection cut after "one two"
FAULTS = """
scenario "Faults":
    step broken:
        when:
            last user message contains "break"
        reply:
            stream error "exploded mid-stream" after 2 chunks
            text "one two three four five"
    step cut:
        when:
            last user message contains "cut"
        reply:
            disconnect after 2 chunks
            text "one two three four five"
"""
