"""What the end-to-end tests of the providers added through the registry (Cohere, Mistral) share: the
weather tool as their SDKs describe it (OpenAI's function shape) and the weather tool loop script."""

from __future__ import annotations

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


def tool_loop(provider: str, plan: str = "", first_usage: str = "usage 30 in, 12 out") -> str:
    """A two-step weather loop for ``provider``: a call to get_weather for the city the user names
    (after ``plan`` text, when given), then a streamed answer once the result says "sunny"."""
    said = f'\n            text "{plan}"' if plan else ""
    return f"""
scenario "{provider} weather":
    when:
        provider is {provider}
    step ask:
        when:
            last user message contains "weather in"
        capture city from last user message /weather in (\\w+)/
        reply:{said}
            tool call get_weather {{"city": "{{{{city}}}}"}}
            {first_usage}

    step answer:
        when:
            tool result for "get_weather" contains "sunny"
        reply:
            text "It is sunny in {{{{city}}}}."
            stream by word
            usage 50 in, 6 out
"""


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def one_reply(*lines: str) -> str:
    """A script whose one step answers every request with the reply ``lines``."""
    body = "".join(f"\n            {line}" for line in lines)
    return f'\nscenario "s":\n    step a:\n        reply:{body}\n'


def limited_then(message: str, answer: str) -> str:
    """Two 429s with ``message`` (``retry after 200ms``), then ``answer``."""
    return f"""
scenario "s":
    step limited:
        repeat 2
        reply:
            error 429 "{message}"
            retry after 200ms
    step ok:
        reply:
            text "{answer}"
"""
