"""What the providers' end-to-end tests share: the weather tool as OpenAI-shaped SDKs describe it, and
the scripts every provider is put through (the weather tool loop, two calls at once, 429s and 5xx
before an answer, faults mid-stream)."""

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


def limited_then(message: str, answer: str, status: int = 429, after: str = "200ms") -> str:
    """Two errors ``status`` with ``message`` (``retry after`` ``after``), then ``answer``."""
    return f"""
scenario "s":
    step limited:
        repeat 2
        reply:
            error {status} "{message}"
            retry after {after}
    step ok:
        reply:
            text "{answer}"
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
