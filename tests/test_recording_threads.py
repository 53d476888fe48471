"""Anthropic message threads through the recorder: the official SDK's tool runner (default
settings) sends the opening with ``thread: {"type": "create"}`` and each later turn with only its new
messages and ``thread: {"type": "continue", "previous_message_id": …}``. The recorder groups those
turns into the conversation that produced the message they continue — one file, one scenario, the
steps in order — and serving it answers the same tool runner with the same messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import pytest
from recording_clients import KEY
from test_e2e_anthropic_threads import SCRIPT, weather_runner
from test_recording import check_clean, recorder, replay

UPSTREAM = SCRIPT  # a weather call, a time call, then the answer

Summary = list[tuple[str, list[tuple[str, Any]], str | None, tuple[int, int]]]


def tool_runner(url: str, stream: bool) -> tuple[Summary, list[bool]]:
    """What the runner's client saw, message by message; and for each request, whether it continued a
    thread (so the test knows the threads were really used)."""
    threaded: list[bool] = []

    def note(request: Any) -> None:
        threaded.append(b'"continue"' in request.read())

    http = anthropic.DefaultHttpxClient(event_hooks={"request": [note]})
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0, http_client=http) as client:
        runner = weather_runner(client, stream)
        out: Summary = []
        for item in runner:
            message = item.get_final_message() if stream else item  # type: ignore[union-attr]
            out.append(
                (
                    "".join(b.text for b in message.content if b.type == "text"),
                    [(b.name, b.input) for b in message.content if b.type == "tool_use"],
                    message.stop_reason,
                    (message.usage.input_tokens, message.usage.output_tokens),
                )
            )
    return out, threaded


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_threaded_tool_loop_records_as_one_scenario_and_replays(
    tmp_path: Path, serve_text: Any, stream: bool
) -> None:
    with serve_text(UPSTREAM) as upstream, recorder(upstream, tmp_path) as (url, _):
        recorded, threaded = tool_runner(url, stream)
    assert [len(calls) for _, calls, _, _ in recorded] == [1, 1, 0]
    assert threaded == [False, True, True]  # created, then continued twice
    [script] = check_clean(tmp_path)
    text = script.read_text(encoding="utf-8")
    assert text.count("    step ") == 3 and text.count("scenario ") == 1
    assert 'tool result for "get_weather" is present' in text and 'tool result for "get_time" is present' in text
    assert KEY not in text
    with replay(tmp_path) as server:
        replayed, threaded_again = tool_runner(server.url, stream)
    assert replayed == recorded
    assert threaded_again == threaded
