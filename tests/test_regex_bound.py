"""Regex conditions run with a time bound (issue 12: a script's catastrophic regex held every client,
health checks included, for 10 s). A search past the bound gives that request a clear error in the
provider's shape naming the step and the pattern; the conversation does not advance; the next
request is served as usual. `mockllm check` warns about nested quantifiers."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import openai
import pytest
from conftest import Serve, compile_text
from sdk_clients import opened

from mockllm.dsl.machines.compiler import compile_library
from mockllm.dsl.parse.loader import load_text
from mockllm.errors import RegexTimeout
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.reply.plan import ErrorPlan
from mockllm.runtime.request import ChatRequest, Message
from mockllm.runtime.timed_regex import compile_pattern, search

# `(a|aa)+$` on a run of a's that ends in something else: each a can start a one- or two-letter
# branch, so a backtracking search tries Fibonacci(n) splits before it gives up.
SLOW = 'scenario "slow":\n    step a:\n        when:\n            last user message matches /(a|aa)+$/\n'
SLOW += '        reply:\n            text "matched"\n'
SLOW += 'scenario "later":\n    step b:\n        when:\n            last user message contains "hello"\n'
SLOW += '        reply:\n            text "hi there"\n'
HOSTILE = "a" * 60 + "!"


def chat(text: str) -> ChatRequest:
    return ChatRequest(
        provider="openai", endpoint="/v1/chat/completions", model="m", stream=False, messages=(Message("user", text),)
    )


def test_a_search_past_the_bound_raises() -> None:
    rx = compile_pattern("(a|aa)+$")
    assert rx is not None
    with pytest.raises(RegexTimeout) as info:
        search(rx, HOSTILE)
    assert info.value.pattern == "(a|aa)+$"
    assert search(rx, "baa") is not None  # the same pattern on a short text is fine


def test_the_engine_answers_that_request_with_an_error_naming_step_and_pattern() -> None:
    engine = Engine(compile_text(SLOW))
    outcome = engine.handle(chat(HOSTILE))
    assert isinstance(outcome.plan, ErrorPlan) and outcome.plan.status == 400
    message = outcome.plan.message
    assert message.startswith('mockllm: regex timed out: /(a|aa)+$/ of scenario "slow", step `a` (test.mockllm:2')
    entry = engine.journal()[-1]
    assert entry["status"] == 400 and entry["note"] == message
    assert engine.handle(chat("hello")).plan.text == "hi there"  # type: ignore[union-attr]
    assert engine.handle(chat("baa")).plan.text == "matched"  # type: ignore[union-attr]


def test_the_server_answers_in_the_provider_shape_and_keeps_serving(serve: Serve) -> None:
    with serve(SLOW, no_auth=True) as server:
        client = opened(openai.OpenAI(base_url=server.url + "/v1", api_key="sk", max_retries=0))
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": HOSTILE}])
        assert 'regex timed out: /(a|aa)+$/ of scenario "slow", step `a`' in info.value.message
        assert httpx.get(server.url + "/_mockllm/health").status_code == 200
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
        assert reply.choices[0].message.content == "hi there"


SLOW_PATTERNS = [("(a+)+$", True), (r"^(\w+\s?)+$", True), (r"([a-z]+)*x", True), (r"weather in (\w+)", False)]
SLOW_PATTERNS += [(r"(?:\d+,)*\d+", False), ("(a++)+", False), ("(?>a+)+", False)]


@pytest.mark.parametrize(("pattern", "warned"), SLOW_PATTERNS)
def test_check_warns_about_nested_quantifiers(pattern: str, warned: bool) -> None:
    text = f'scenario "s":\n    step a:\n        when:\n            last user message matches /{pattern}/\n'
    text += '        reply:\n            text "x"\n'
    compiled, diagnostics = compile_library(load_text(text, file="s.mockllm"))
    assert compiled is not None
    warnings = [d for d in diagnostics if d.code == "slow-regex"]
    assert len(warnings) == (1 if warned else 0)
    if warned:
        assert warnings[0].message.startswith(f"regex /{pattern}/ repeats a repetition (like `(a+)+`)")
        assert (warnings[0].span.line, warnings[0].span.column) == (4, 39)


OVERLAPPING = [("(a|aa)+$", True), ("(?:x|xy|y)*", True), ("(ab|a|ba)+", True), ("(a|a)+", True), ("(cat|dog)+", False)]
OVERLAPPING += [("(a|ab)+", False), ("(a|b)+", False), ("(?>a|aa)+", False), ("(a|aa){1,3}", False)]


@pytest.mark.parametrize(("pattern", "warned"), OVERLAPPING)
def test_check_warns_about_repeated_alternatives_that_overlap(pattern: str, warned: bool) -> None:
    """`(a|aa)+` reads `aaa` as a·a·a, a·aa or aa·a: on a text it does not match, every split is tried."""
    text = f'scenario "s":\n    step a:\n        when:\n            last user message matches /{pattern}/\n'
    text += '        reply:\n            text "x"\n'
    _compiled, diagnostics = compile_library(load_text(text, file="s.mockllm"))
    messages = [d.message for d in diagnostics if d.code == "slow-regex"]
    expected = f"regex /{pattern}/ repeats alternatives that split the same text more than one way (like `(a|aa)+`)"
    assert [m.startswith(expected) for m in messages] == ([True] if warned else [])


def test_a_regex_that_unrolls_to_gigabytes_is_an_error_and_never_compiled() -> None:
    """`((a{1000}){1000}){1000}` would unroll to 10**9 nodes in the `regex` package (the process dies);
    `check` reports it, and a client's schema pattern like it is ignored."""
    text = 'scenario "s":\n    step a:\n        when:\n            last user message matches /(a{1000}){1000}/\n'
    text += '        reply:\n            text "x"\n'
    compiled, diagnostics = compile_library(load_text(text, file="s.mockllm"))
    assert compiled is None
    assert [d.message for d in diagnostics] == [
        "regex /(a{1000}){1000}/ is too large: its counted repeats unroll to more than 100,000 pieces"
    ]
    assert compile_pattern("((a{1000}){1000}){1000}") is None
    assert compile_pattern("(a{100}){100}") is not None


@contextmanager
def busy_threads(count: int) -> Iterator[None]:
    """Other threads of this process keep the CPUs busy, half of them in Python (they want the GIL),
    half in C code that runs without it, as SDK clients and the server do in a test process."""
    stop = threading.Event()
    data = b"x" * 1_000_000

    def burn(i: int) -> None:
        while not stop.is_set():
            if i % 2:
                hashlib.sha256(data).digest()
            else:
                sum(range(20_000))

    threads = [threading.Thread(target=burn, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_other_threads_work_never_times_out_a_simple_search() -> None:
    """The bound is the search's own CPU time: the process's clock, which the `regex` package reads,
    also runs for every other thread (a CI run answered `/weather in (\\w+)/` with "regex timed out"
    while fifty SDK clients ran beside the server)."""
    rx = compile_pattern(r"weather in (\w+)")
    assert rx is not None
    with busy_threads(16):
        found = [search(rx, "what is the weather in Paris today") for _ in range(150)]
        with pytest.raises(RegexTimeout):  # a catastrophic search is still stopped meanwhile
            search(compile_pattern("(a|aa)+$"), HOSTILE)  # type: ignore[arg-type]
    assert all(m is not None and m.group(1) == "Paris" for m in found)
