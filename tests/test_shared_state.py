"""Servers sharing one Redis (``--state redis://…``) and ``--workers``: turns of one conversation
served by different processes behave exactly like one server. Every test talks to real
``mockllm serve`` processes and a real ``redis-server`` (tests/redis_server.py) through the SDKs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from redis_server import RedisServer
from reliability import serve_process
from sdk_clients import opened

from mockllm.errors import ServerError
from mockllm.server.runner import WORKERS_NEED_STATE

AGENT = Path(__file__).resolve().parent.parent / "scenarios" / "examples" / "agent_loop.mockllm"
QUESTION = "Please research mockllm for me."
ANSWER = "mockllm scripts are ordered steps that answer like a real model."
TOOLS: list[Any] = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("web_search", "read_page")
]


def openai_client(url: str, conversation: str) -> openai.OpenAI:
    headers = {"x-mockllm-conversation": conversation}
    return opened(openai.OpenAI(base_url=url + "/v1", api_key="test", default_headers=headers, max_retries=0))


def agent_loop(urls: list[str], conversation: str) -> list[Any]:
    """The OpenAI agent loop of agent_loop.mockllm, turn i sent to ``urls[i % len(urls)]``: what each
    turn answered (tool calls, or the text)."""
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    transcript: list[Any] = []
    for turn in range(6):
        with openai_client(urls[turn % len(urls)], conversation) as client:
            message = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            transcript.append(message.content)
            return transcript
        transcript.append([(c.function.name, c.function.arguments) for c in message.tool_calls])
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"{call.function.name} output"})
    raise AssertionError(f"the agent loop never ended: {transcript}")


def requests(url: str) -> list[dict[str, Any]]:
    """The whole journal, every page."""
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        page = httpx.get(f"{url}/_mockllm/requests?limit=1000&after={after}", timeout=30).json()
        out.extend(page)
        if len(page) < 1000:
            return out
        after = page[-1]["id"]


@pytest.fixture
def pair(redis_url: str) -> Iterator[tuple[str, str]]:
    """Two `mockllm serve` processes on different ports sharing one Redis."""
    with (
        serve_process("--state", redis_url, str(AGENT)) as (_, first, _),
        serve_process("--state", redis_url, str(AGENT)) as (_, second, _),
    ):
        yield first, second


def test_a_tool_loop_alternating_between_two_servers_proceeds_like_one_server(pair: tuple[str, str]) -> None:
    first, second = pair
    with serve_process(str(AGENT)) as (_, alone, _):  # the reference: one server, state in memory
        expected = agent_loop([alone], "reference")
        expected_steps = [e["matched"]["step"] for e in requests(alone)]
    assert expected[-1] == ANSWER and expected_steps == ["search", "read", "answer"]

    conversation = uuid.uuid4().hex
    assert agent_loop([first, second], conversation) == expected
    for url in pair:  # either server reports the one journal, ids in order
        journal = requests(url)
        assert [(e["id"], e["matched"]["step"], e["conversation"]) for e in journal] == [
            (1, "search", conversation),
            (2, "read", conversation),
            (3, "answer", conversation),
        ]
        [record] = httpx.get(url + "/_mockllm/conversations").json()
        assert record["conversation"] == conversation
        assert record["machines"][0]["position"] == "answer"
        assert record["machines"][0]["uses"] == {"search": 1, "read": 1, "answer": 1}
        verdict = httpx.get(url + "/_mockllm/verify").json()
        assert verdict["ok"] and verdict["unused_steps"] == []

    # the steps are used up in the shared state: a fourth turn on either server matches nothing
    with openai_client(second, conversation) as client, pytest.raises(openai.NotFoundError) as no_match:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert "no step matched" in str(no_match.value)

    # a reset on one server resets the fleet; the same conversation then starts over on both
    assert httpx.post(first + "/_mockllm/reset").json() == {"reset": "all"}
    assert requests(second) == [] and httpx.get(second + "/_mockllm/conversations").json() == []
    assert agent_loop([second, first], conversation) == expected
    assert [e["matched"]["step"] for e in requests(first)] == ["search", "read", "answer"]


def test_previous_response_id_and_resetting_one_conversation_across_servers(pair: tuple[str, str]) -> None:
    first, second = pair
    conversation = uuid.uuid4().hex
    tools: list[Any] = [
        {"type": "function", "name": n, "parameters": {"type": "object"}} for n in ("web_search", "read_page")
    ]
    calls: list[str] = []
    previous: str | None = None
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    for turn in range(3):  # the Responses API continues from the stored response, on the other server
        with openai_client((first, second)[turn % 2], conversation) as client:
            kwargs: dict[str, Any] = {"previous_response_id": previous} if previous else {}
            response = client.responses.create(model="gpt-4.1", input=items, tools=tools, **kwargs)
        previous = response.id
        called = [item for item in response.output if item.type == "function_call"]
        calls += [c.name for c in called]
        items = [{"type": "function_call_output", "call_id": c.call_id, "output": "done"} for c in called]
    assert calls == ["web_search", "read_page"]
    assert response.output_text == ANSWER

    other = uuid.uuid4().hex
    assert agent_loop([first], other)[-1] == ANSWER
    reset = httpx.post(second + "/_mockllm/reset", params={"conversation": conversation}).json()
    assert reset == {"reset": conversation}
    assert {e["conversation"] for e in requests(first)} == {other}
    assert [c["conversation"] for c in httpx.get(first + "/_mockllm/conversations").json()] == [other]
    with openai_client(first, conversation) as client, pytest.raises(openai.BadRequestError) as gone:
        client.responses.create(model="gpt-4.1", input="go on", previous_response_id=previous)
    assert f"Previous response with id '{previous}' not found." in str(gone.value)


def test_200_concurrent_conversations_over_two_workers(redis_url: str) -> None:
    count = 200

    async def conversation(client: openai.AsyncOpenAI, number: int) -> list[str]:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        headers = {"x-mockllm-conversation": f"conversation-{number}"}
        seen: list[str] = []
        for _ in range(6):
            completion = await client.chat.completions.create(
                model="gpt-4o", messages=messages, tools=TOOLS, extra_headers=headers
            )
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                seen.append(str(message.content))
                return seen
            for call in message.tool_calls:
                seen.append(call.function.name)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "output"})
        return seen

    async def run_all(url: str) -> list[list[str]]:
        # all 200 conversations are open at once, their turns interleaved; at most 50 requests are on
        # the wire at a time, each on a new connection (on a loaded machine, more connections than
        # the servers can read within their idle timeout are closed unanswered, by any server)
        limits = httpx.Limits(max_connections=50, max_keepalive_connections=0)
        async with httpx.AsyncClient(limits=limits, timeout=60) as http:
            # retries: on an overloaded machine a server may close a new connection before it reads the
            # request (its idle timeout), the memory server as well; a request the server did read and
            # answer is never retried silently: its retry would find the step used up and fail the test
            client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="test", http_client=http, max_retries=3)
            return await asyncio.gather(*(conversation(client, n) for n in range(count)))

    with serve_process("--workers", "2", "--state", redis_url, str(AGENT)) as (_, url, _):
        results = asyncio.run(run_all(url))
        assert results == [["web_search", "read_page", ANSWER]] * count  # no cross-talk
        journal = requests(url)
        assert len(journal) == 3 * count
        assert sorted(e["id"] for e in journal) == list(range(1, 3 * count + 1))  # every request once
        by_conversation: dict[str, list[str]] = {}
        for entry in journal:
            by_conversation.setdefault(entry["conversation"], []).append(entry["matched"]["step"])
        assert by_conversation == {f"conversation-{n}": ["search", "read", "answer"] for n in range(count)}
        assert len(httpx.get(url + "/_mockllm/conversations").json()) == count
        assert httpx.get(url + "/_mockllm/verify").json()["ok"]
        assert len(asyncio.run(answering_pids(url))) == 2  # both workers answer on the one port


async def answering_pids(url: str) -> set[int]:
    """The processes that answer ``/_mockllm/health`` over many simultaneous new connections (the
    kernel hands each to whichever worker accepts first: a few rounds, on a busy machine)."""
    pids: set[int] = set()
    for _ in range(10):
        async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0), timeout=60) as http:
            asked = (http.get(url + "/_mockllm/health") for _ in range(50))
            replies = await asyncio.gather(*asked, return_exceptions=True)
        pids |= {r.json()["pid"] for r in replies if isinstance(r, httpx.Response)}  # only the answers count
        if len(pids) > 1:
            break
    return pids


def test_redis_restarted_mid_run_gives_clear_errors_then_recovers(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path).start()
    try:
        with serve_process("--state", redis.url, str(AGENT)) as (_, url, _):
            assert agent_loop([url], "before")[-1] == ANSWER
            assert httpx.post(url + "/_mockllm/scenarios", content=GREETER).json()["loaded"] == ["Greeter"]
            redis.stop()
            with openai_client(url, "during") as client, pytest.raises(openai.APIStatusError) as down:
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
            assert down.value.status_code == 503
            assert "the shared state store is unreachable (Redis at redis://127.0.0.1:" in down.value.message
            claude = anthropic.Anthropic(base_url=url, api_key="test", max_retries=0)
            with claude, pytest.raises(anthropic.APIStatusError) as down_too:
                claude.messages.create(
                    model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": QUESTION}]
                )
            assert down_too.value.status_code == 503
            body: Any = down_too.value.body
            assert body["type"] == "error" and "unreachable" in body["error"]["message"]
            admin = httpx.get(url + "/_mockllm/requests")
            assert admin.status_code == 503 and "unreachable" in admin.json()["error"]

            redis.start()  # an empty Redis again on the same port: the server carries on
            assert agent_loop([url], "after")[-1] == ANSWER
            assert [e["conversation"] for e in requests(url)] == ["after"] * 3
            # what Redis lost is lost: the posted scenario too; the server serves the files it started with
            assert [s["name"] for s in httpx.get(url + "/_mockllm/scenarios").json()] == ["Three-round agent loop"]
    finally:
        redis.stop()


def test_workers_without_state_are_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mockllm", "serve", "--port", "0", "--workers", "2", str(AGENT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == WORKERS_NEED_STATE
    assert done.stdout == ""


def test_state_url_that_is_not_redis_or_unreachable_is_refused() -> None:
    for url, code, message in [
        ("http://localhost:6379", 2, "mockllm: --state http://localhost:6379: expected redis://HOST:PORT/DB"),
        ("redis://127.0.0.1:1/0", 1, "mockllm: cannot reach Redis at redis://127.0.0.1:1/0 (--state)"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "mockllm", "serve", "--port", "0", "--state", url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == code
        assert done.stderr.startswith(message) and done.stderr.count("\n") == 1


def test_python_api_and_pytest_plugin_handle_on_servers_sharing_redis(redis_url: str) -> None:
    import mockllm
    from mockllm.pytest_plugin import MockLLM

    with mockllm.serve(AGENT, state=redis_url) as first, mockllm.serve(AGENT, state=redis_url) as second:
        assert agent_loop([first.url, second.url], "api")[-1] == ANSWER
        assert [(e.id, e.step) for e in second.requests()] == [(1, "search"), (2, "read"), (3, "answer")]
        [record] = first.conversations()
        assert record.conversation == "api" and record.machines[0].position == "answer"
        assert first.verify().ok and second.verify().unused_steps == ()

        handle = MockLLM(first, None, AGENT.parent)  # the `mockllm` fixture's handle, on one of the pair
        with openai_client(second.url, "api") as client, pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
        assert "no step matched" in handle.problems()

        second.restore()  # what the fixture does before each test: the shared state is emptied
        assert first.requests() == [] and first.conversations() == [] and handle.problems() == ""

    with pytest.raises(ServerError, match=r"cannot reach Redis at redis://127\.0\.0\.1:1/0"):
        mockllm.serve(state="redis://127.0.0.1:1/0").start()


DELIVERIES = """
scenario "Deliveries":
    order any
    step fine:
        when:
            last user message contains "fine"
        reply:
            text "ok"
    step down:
        when:
            last user message contains "down"
        reply:
            error 503 "down"
    step cut:
        when:
            last user message contains "cut"
        reply:
            text "one two three"
            stream by word
            disconnect after 1 chunks
    step wait:
        when:
            last user message contains "wait"
        reply:
            hang
"""


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "redis"])
def test_how_each_answer_went_is_journalled_once_as_in_memory(redis_url: str, shared: bool) -> None:
    """The status the client received, whether it went away and what happened on the way: the same
    from a shared Redis as from memory, including the answers that went otherwise than planned."""
    import mockllm

    expected = [
        ("fine", 200, False, None),
        ("down", 503, False, None),
        ("cut", 200, False, "disconnect after 1 chunks"),
        ("wait", 0, True, "hang: the client gave up"),
    ]
    with mockllm.serve(DELIVERIES, state=redis_url if shared else None) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0, timeout=2)
        with client:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "fine"}])
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "down"}])
            with pytest.raises(openai.APIError):
                for _ in client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "cut"}], stream=True
                ):
                    pass
            with pytest.raises(openai.APITimeoutError):
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "wait"}])
        for _ in range(300):  # the server settles a hang once it sees the client leave, a moment later
            went = [(e.step, e.status, e.client_gone, e.note) for e in server.requests()]
            if went == expected:
                break
            time.sleep(0.1)
        assert went == expected


COUNTER = """mockllm 1
scenario "Counter":
    step first:
        when:
            last user message contains "count"
        reply:
            text "{version} first"
    step second:
        when:
            last user message contains "count"
        reply:
            text "{version} second"
    step third:
        when:
            last user message contains "count"
        reply:
            text "{version} third"
"""
GREETER = """mockllm 1
scenario "Greeter":
    step hello:
        when:
            last user message contains "hello"
        reply:
            text "hello from a posted scenario"
"""


def admin_and_turns(urls: list[str]) -> list[Any]:
    """Scenarios posted, replaced and deleted, resets and conversation turns (Anthropic's SDK), each
    sent to the next of ``urls`` in turn: what each answered."""
    sent = 0

    def url() -> str:
        nonlocal sent
        sent += 1
        return urls[(sent - 1) % len(urls)]

    def post(text: str) -> Any:
        return httpx.post(url() + "/_mockllm/scenarios", content=text).json()

    def say(conversation: str, text: str) -> str:
        headers = {"x-mockllm-conversation": conversation}
        with anthropic.Anthropic(base_url=url(), api_key="test", max_retries=0, default_headers=headers) as claude:
            try:
                message = claude.messages.create(
                    model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": text}]
                )
            except anthropic.APIStatusError as exc:
                return f"HTTP {exc.status_code}"
        block = message.content[0]
        return block.text if block.type == "text" else block.type

    def names() -> list[str]:
        return [s["name"] for s in httpx.get(url() + "/_mockllm/scenarios").json()]

    def health() -> tuple[int, str]:
        data = httpx.get(url() + "/_mockllm/health").json()
        return data["scenarios"], data["loaded"]

    return [
        post(COUNTER.format(version="v1"))["loaded"],
        say("a", "count"),
        say("a", "count"),
        say("b", "count"),
        post(GREETER)["loaded"],
        names(),
        say("a", "hello"),
        say("a", "count"),  # the counter is used up in "a": its third step, then nothing
        say("a", "count"),
        post(COUNTER.format(version="v2"))["replaced"],  # a changed scenario starts afresh everywhere
        say("a", "count"),
        say("b", "count"),
        [(c["conversation"], c["machines"]) for c in httpx.get(url() + "/_mockllm/conversations").json()],
        httpx.post(url() + "/_mockllm/reset", params={"conversation": "a"}).json(),
        say("a", "count"),
        say("b", "count"),
        httpx.delete(url() + "/_mockllm/scenarios").json(),
        health(),
        say("a", "count"),  # the echo responder
        post(COUNTER.format(version="v2"))["replaced"],  # deleted, then posted again: afresh
        say("b", "count"),
        health(),
        httpx.post(url() + "/_mockllm/reset").json(),  # the scenarios stay
        names(),
        say("a", "count"),
        [(e["conversation"], e["status"], (e.get("matched") or {}).get("step")) for e in requests(url())],
    ]


EXPECTED_ADMIN_AND_TURNS: list[Any] = [
    ["Counter"],
    "v1 first",
    "v1 second",
    "v1 first",
    ["Greeter"],
    ["Counter", "Greeter"],
    "hello from a posted scenario",
    "v1 third",
    "HTTP 404",
    ["Counter"],
    "v2 first",
    "v2 first",
    [
        (
            "a",
            [
                {"scenario": "Counter", "position": "first", "uses": {"first": 1}, "captures": {}},
                {"scenario": "Greeter", "position": "hello", "uses": {"hello": 1}, "captures": {}},
            ],
        ),
        ("b", [{"scenario": "Counter", "position": "first", "uses": {"first": 1}, "captures": {}}]),
    ],
    {"reset": "a"},
    "v2 first",
    "v2 second",
    {"cleared": True},
    (0, "no scenarios loaded: the echo responder answers every request"),
    "count",
    [],
    "v2 first",
    (
        1,
        "1 scenario (3 steps) from POST /_mockllm/scenarios; when no step matches, the answer is a 404 with the "
        "no-match report. Steps are used up per conversation until POST /_mockllm/reset",
    ),
    {"reset": "all"},
    ["Counter"],
    "v2 first",
    [("a", 200, "first")],
]


def test_scenarios_posted_through_one_server_are_served_by_every_server(redis_url: str) -> None:
    with serve_process() as (_, alone, _):  # the reference: one server, state in memory
        expected = admin_and_turns([alone])
    with serve_process("--state", redis_url) as (_, first, _), serve_process("--state", redis_url) as (_, second, _):
        assert admin_and_turns([first, second]) == expected
        assert admin_and_turns([second, first]) == expected  # the other way round: afresh, same answers
    assert expected == EXPECTED_ADMIN_AND_TURNS


async def health_everywhere(url: str) -> dict[int, set[int]]:
    """Per answering process, the scenario counts its ``/_mockllm/health`` reported, over many new
    connections at once (rounds until two processes answered)."""
    seen: dict[int, set[int]] = {}
    for _ in range(10):
        async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0), timeout=60) as http:
            replies = await asyncio.gather(*(http.get(url + "/_mockllm/health") for _ in range(50)))
        for reply in replies:
            data = reply.json()
            seen.setdefault(data["pid"], set()).add(data["scenarios"])
        if len(seen) > 1:
            break
    return seen


async def one_chat(url: str, text: str, conversation: str) -> str:
    """The text of one chat completion of ``conversation``, asked on a new connection."""
    async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0), timeout=60) as http:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="test", http_client=http, max_retries=0)
        completion = await client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": text}],
            extra_headers={"x-mockllm-conversation": conversation},
        )
        return str(completion.choices[0].message.content)


@pytest.mark.parametrize("server", ["hypercorn", "granian"])
def test_workers_serve_posted_scenarios_and_one_conversation_as_one_server(redis_url: str, server: str) -> None:
    with serve_process("--workers", "2", "--server", server, "--state", redis_url, str(AGENT)) as (_, url, _):
        assert agent_loop([url], "loop")[-1] == ANSWER  # a client per turn: a new connection each time

        posted = httpx.post(url + "/_mockllm/scenarios", content=GREETER).json()
        assert posted["loaded"] == ["Greeter"]
        counts = asyncio.run(health_everywhere(url))
        assert len(counts) == 2 and all(c == {2} for c in counts.values()), counts  # both workers serve it

        async def greet_all() -> list[str]:
            return await asyncio.gather(*(one_chat(url, "hello", f"greet-{n}") for n in range(40)))

        assert asyncio.run(greet_all()) == ["hello from a posted scenario"] * 40

        assert httpx.delete(url + "/_mockllm/scenarios").json() == {"cleared": True}
        counts = asyncio.run(health_everywhere(url))
        assert len(counts) == 2 and all(c == {0} for c in counts.values()), counts
        journal = requests(url)
        assert [e["matched"]["step"] for e in journal[:3]] == ["search", "read", "answer"]
        greeted = [e for e in journal[3:] if (e.get("matched") or {}).get("step") == "hello"]
        assert len(journal) == 43 and len(greeted) == 40


TICKETS = """mockllm 1
scenario "Tickets":
    step ticket:
        reply:
            text "ticket"
        repeat 30
    step sold_out:
        reply:
            text "sold out"
        always
"""


def test_simultaneous_turns_of_one_conversation_on_two_servers_are_taken_one_at_a_time(
    redis_url: str, tmp_path: Path
) -> None:
    script = tmp_path / "tickets.mockllm"
    script.write_text(TICKETS)

    async def rush(urls: list[str]) -> list[str]:
        return await asyncio.gather(*(one_chat(urls[n % 2], "one ticket, please", "queue") for n in range(64)))

    with (
        serve_process("--state", redis_url, str(script)) as (_, first, _),
        serve_process("--state", redis_url, str(script)) as (_, second, _),
    ):
        answers = asyncio.run(rush([first, second]))
        assert sorted(answers) == ["sold out"] * 34 + ["ticket"] * 30  # exactly as many tickets as one server sells
        journal = requests(second)
        assert sorted(e["id"] for e in journal) == list(range(1, 65))
        assert [e["matched"]["step"] for e in journal] == ["ticket"] * 30 + ["sold_out"] * 34  # in id order
        [record] = httpx.get(first + "/_mockllm/conversations").json()
        assert record["machines"][0]["uses"] == {"ticket": 30, "sold_out": 34}


def test_scenarios_loaded_from_python_are_served_by_every_server_until_restore(redis_url: str, tmp_path: Path) -> None:
    import mockllm

    script = tmp_path / "greeter.mockllm"
    script.write_text(GREETER)
    with (
        mockllm.serve(AGENT, state=redis_url, base=tmp_path) as first,
        mockllm.serve(AGENT, state=redis_url, base=tmp_path) as second,
    ):
        assert first.load(script).scenarios == ("Greeter",)  # a path: each server reads the file
        assert first.load(mockllm.scenario("Hi").step("hi").always().reply(mockllm.text("Hi there."))).scenarios == (
            "Hi",
        )
        assert [s["name"] for s in second.scenarios()] == ["Three-round agent loop", "Greeter", "Hi"]
        with openai_client(second.url, "python") as client:
            for text, answer in [("hello", "hello from a posted scenario"), ("hi", "Hi there.")]:
                messages: list[Any] = [{"role": "user", "content": text}]
                completion = client.chat.completions.create(model="gpt-4o", messages=messages)
                assert completion.choices[0].message.content == answer
        assert first.requests()[0].location == f"{script}:3:5"  # the real file, on either server

        first.restore()  # both servers go back to the library they started with
        assert [s["name"] for s in second.scenarios()] == ["Three-round agent loop"]
        assert second.requests() == []
