"""langchain-anthropic against a real server: streamed usage reports the input tokens (it reads them
from ``message_delta.usage``, as the real API sends them there; issue 11)."""

from __future__ import annotations

from conftest import ServeText
from langchain_anthropic import ChatAnthropic

SCRIPT = """
scenario "Hello":
    step hello:
        reply:
            text "Hello from the mock."
            usage 42 in, 7 out
        always
"""


def model(url: str) -> ChatAnthropic:
    return ChatAnthropic(
        model_name="claude-sonnet-4-5", base_url=url, api_key="test", max_retries=0, timeout=30, stop=None
    )


def test_streamed_usage_has_the_input_tokens(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        chat = model(url)
        total = None
        for chunk in chat.stream("hi"):
            total = chunk if total is None else total + chunk
        assert total is not None and total.content == "Hello from the mock."
        usage = total.usage_metadata
        assert usage is not None
        assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (42, 7, 49)


def test_invoke_usage_matches_the_stream(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        reply = model(url).invoke("hi")
        assert reply.content == "Hello from the mock."
        assert reply.usage_metadata is not None
        assert reply.usage_metadata["input_tokens"] == 42 and reply.usage_metadata["output_tokens"] == 7
