"""Hypothesis strategies for syntax trees that the text syntax can express.

Every tree drawn here has a canonical text: blocks are never empty (a ``reply:``, ``when:`` or
``chunks:`` block needs a line), names are NAME-shaped, regexes hold no newline, numbers are finite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockllm.dsl.tree import nodes as n
from mockllm.dsl.tree.describe import PROVIDERS

FILE = "gen.mockllm"

_FIRST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
names = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(_FIRST),
    st.text(alphabet=_FIRST + "0123456789-", max_size=8),
)
texts = st.text(max_size=20)
multiline_texts = st.one_of(
    texts,
    st.lists(st.text(alphabet=st.characters(exclude_characters="\n"), max_size=12), min_size=2, max_size=4).map(
        "\n".join
    ),
)
ints = st.integers(min_value=0, max_value=10**6)
numbers = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)
durations = st.one_of(
    st.integers(min_value=0, max_value=100_000).map(lambda ms: n.Duration(float(ms))),
    st.integers(min_value=0, max_value=1999).map(lambda half: n.Duration(half / 2)),
    st.integers(min_value=1, max_value=120).map(lambda s: n.Duration(s * 1000.0)),
    st.floats(min_value=0, max_value=1e7, allow_nan=False).map(n.Duration),  # any float prints exactly
)

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(texts, json_values, max_size=3)

_regex_pieces = st.sampled_from(
    ["a", "b", "Z", "0", "(", ")", "\\w", "\\d", "\\.", "\\\\", "/", ".", "*", "+", "?", "^", "$", " ", "é", "[a-z]"]
)
regexes = st.builds(
    n.Regex,
    st.lists(_regex_pieces, max_size=6).map("".join),
    st.sets(st.sampled_from("imsx")).map(lambda fs: "".join(c for c in "imsx" if c in fs)),
)

#: The subjects that take an argument: any_message a role, the others a name or a path.
WITH_ARGUMENT = ("any_message", "tool_result", "header", "field", "argument")
#: Every other subject (``provider``, ``model`` … ``input``).
PLAIN_SUBJECTS = [kind for kind in get_args(n.SubjectKind) if kind not in WITH_ARGUMENT]
ROLES = ["user", "assistant", "system", "tool"]

subjects = st.one_of(
    st.sampled_from(PLAIN_SUBJECTS).map(lambda k: n.Subject(k)),
    st.builds(lambda role: n.Subject("any_message", role), st.sampled_from(ROLES)),
    st.builds(lambda a: n.Subject("tool_result", a), texts),
    st.builds(lambda a: n.Subject("header", a), texts),
    st.builds(lambda a: n.Subject("field", a), texts),
    st.builds(lambda a: n.Subject("argument", a), texts),
)

literal_values = st.one_of(
    texts,
    st.sampled_from(PROVIDERS),
    numbers,
    st.booleans(),
    st.none(),
    json_objects,
    st.lists(json_values, max_size=3),
)

predicates = st.one_of(
    st.builds(n.Predicate, st.sampled_from(["is", "is_not"]), literal_values),
    st.builds(n.Predicate, st.sampled_from(["contains", "not_contains", "glob", "include", "exclude"]), texts),
    st.builds(n.Predicate, st.sampled_from(["matches", "not_matches"]), regexes),
    st.builds(n.Predicate, st.sampled_from(["present", "absent", "error"])),
    st.builds(n.Predicate, st.sampled_from(["at_least", "at_most"]), numbers),
)

conditions = st.builds(n.Condition, subjects, predicates, st.booleans())

reply_elements: st.SearchStrategy[n.ReplyElement] = st.one_of(
    st.builds(n.Text, multiline_texts),
    st.builds(n.ToolCall, names, json_objects | st.none(), st.none() | texts),
    st.builds(n.Thinking, multiline_texts),
    st.builds(n.Refusal, multiline_texts),
    st.builds(n.Finish, st.sampled_from(["stop", "length", "tool_calls", "content_filter"])),
    st.builds(n.Usage, ints, ints),
    st.builds(n.Stream, st.just("word"), st.none(), st.none() | durations),
    st.builds(n.Stream, st.sampled_from(["chunks", "characters"]), ints, st.none() | durations),
    st.builds(n.Chunks, st.lists(multiline_texts, min_size=1, max_size=3).map(tuple)),
    st.builds(n.Latency, durations),
    st.builds(n.Error, st.integers(min_value=100, max_value=599), texts),
    st.builds(n.RetryAfter, durations),
    st.builds(n.Header, texts, texts),
    st.builds(n.EchoHeader, texts),
    st.builds(n.Status, st.integers(min_value=100, max_value=599)),
    st.builds(n.Body, json_values),
    st.builds(n.Disconnect, ints),
    st.builds(n.StreamError, texts, ints),
    st.builds(n.Hang),
    st.builds(n.Echo),
    st.builds(n.Vector, st.lists(numbers, min_size=1, max_size=4).map(tuple)),
    st.builds(n.VectorsFrom, texts),
    st.builds(n.Flag, st.lists(texts, min_size=1, max_size=3).map(tuple)),
    st.builds(n.Result, multiline_texts, st.booleans()),
    st.builds(n.Result, json_objects),
)


def _place_interleave(elements: tuple[n.ReplyElement, ...], at: int | None) -> tuple[n.ReplyElement, ...]:
    """``elements`` with ``interleave calls`` (when ``at`` is not None) where the formatter writes it:
    after the last ``stream`` line, else after the last ``tool call``, else at position ``at``."""
    if at is None:
        return elements
    for kind in (n.Stream, n.ToolCall):
        found = [i for i, e in enumerate(elements) if isinstance(e, kind)]
        if found:
            at = found[-1] + 1
            break
    else:
        at %= len(elements) + 1
    return (*elements[:at], n.InterleaveCalls(), *elements[at:])


element_tuples = st.builds(
    _place_interleave,
    st.lists(reply_elements, min_size=1, max_size=4).map(tuple),
    st.none() | st.integers(min_value=0, max_value=4),
)

reply_refs = st.builds(n.ReplyRef, names, st.none() | names)
replies: st.SearchStrategy[n.Reply] = st.one_of(
    st.builds(n.ReplyBlock, element_tuples),
    reply_refs,
    st.just(n.ReplyBlock((n.Echo(),))),
)

consumptions = st.one_of(
    st.just(n.Consumption()),
    st.builds(lambda c: n.Consumption("repeat", c), ints),
    st.just(n.Consumption("always")),
)

_condition_tuples = st.lists(conditions, max_size=3).map(tuple)


def _non_empty_step(step: n.Step) -> n.Step:
    empty = not (step.conditions or step.after or step.captures or step.expects or step.reply)
    if empty and step.consumption.kind == "once":
        return n.Step(step.name, reply=n.ReplyBlock((n.Echo(),)))
    return step


steps = st.builds(
    n.Step,
    names,
    _condition_tuples,
    st.none() | st.builds(n.After, names),
    st.lists(st.builds(n.Capture, names, subjects, regexes), max_size=2).map(tuple),
    _condition_tuples,
    consumptions,
    st.none() | replies,
).map(_non_empty_step)

scenarios = st.builds(
    n.Scenario,
    texts,
    st.integers(min_value=-1000, max_value=1000),
    st.lists(st.one_of(names, texts), max_size=3).map(tuple),
    st.booleans(),
    st.lists(st.builds(n.Let, names, multiline_texts), max_size=2).map(tuple),
    _condition_tuples,
    st.lists(steps, min_size=1, max_size=3).map(tuple),
)

_defaultable = st.one_of(
    st.builds(n.Latency, durations),
    st.builds(n.Stream, st.just("word"), st.none(), st.none() | durations),
    st.builds(n.Stream, st.sampled_from(["chunks", "characters"]), ints, st.none() | durations),
    st.builds(n.Header, texts, texts),
)


def _non_empty_defaults(d: n.Defaults) -> n.Defaults:
    if not d.elements and d.fallback is None:
        return n.Defaults((), n.ReplyBlock((n.Echo(),)))
    return d


defaults = st.builds(n.Defaults, st.lists(_defaultable, max_size=3).map(tuple), st.none() | replies).map(
    _non_empty_defaults
)

script_files = st.builds(
    n.ScriptFile,
    st.just(FILE),
    st.none() | st.just(1),
    st.lists(st.builds(n.Use, texts, names), max_size=2).map(tuple),
    st.lists(st.builds(n.NamedReply, names, element_tuples), max_size=2).map(tuple),
    st.none() | defaults,
    st.lists(scenarios, max_size=3).map(tuple),
    st.lists(
        st.builds(
            n.McpServer,
            texts,
            st.lists(
                st.builds(n.McpTool, names, texts, json_objects, st.none() | json_objects), min_size=1, max_size=2
            ).map(tuple),
            st.lists(
                st.builds(n.McpResource, texts, texts, multiline_texts, st.sampled_from(["text/plain", "text/csv"])),
                max_size=2,
            ).map(tuple),
            st.lists(
                st.builds(
                    n.McpPrompt,
                    names,
                    texts,
                    st.lists(st.builds(n.McpArgument, names, texts, st.booleans()), max_size=2).map(tuple),
                    st.lists(
                        st.builds(n.McpMessage, st.sampled_from(["user", "assistant"]), multiline_texts),
                        min_size=1,
                        max_size=2,
                    ).map(tuple),
                ),
                max_size=2,
            ).map(tuple),
        ),
        max_size=2,
    ).map(tuple),
)


def json_bodies(vocab: list[str]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON built from a provider's own field names, for "never crash on any body" tests."""
    scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "user", "model", *vocab])
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(vocab), inner, max_size=6),
        max_leaves=40,
    )


def any_json_test(
    adapter: Any, parse: Callable[[Any], Any], wrap: Callable[[Any], Any], vocab: list[str], plan: Any, ctx: Any
) -> Any:
    """The "never crash on any body" test of an adapter: arbitrary JSON from the provider's own field
    names (a value that is no object goes in ``wrap``'s place for the body) is parsed and rendered,
    or refused with a ProviderError with a 4xx status and a message; ``plan`` renders with a 200."""
    from mockllm.errors import ProviderError

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(json_bodies(vocab))
    def test(body: Any) -> None:
        """Whatever JSON arrives, the adapter answers a ProviderError or a request it can render."""
        try:
            chat = parse(body if isinstance(body, dict) else wrap(body))
            adapter.validate_history(chat)
        except ProviderError as e:
            assert 400 <= e.status < 500 and e.message
            return
        assert adapter.render(plan, chat, ctx).status == 200

    return test


def any_messages_test(
    adapter: Any, parse_messages: Callable[[list[Any]], Any], words: list[str], keys: list[str]
) -> Any:
    """The "never crash on any history" test of an adapter: up to four messages, each an object over
    the provider's message ``keys`` (or any JSON), their values built from ``words``: the history is
    refused with a 400 and a message, or accepted."""
    from mockllm.errors import ProviderError

    leaf = st.none() | st.booleans() | st.integers() | st.sampled_from(words)
    key = st.sampled_from(keys)
    value = st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(key, c, max_size=4), max_leaves=15)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.dictionaries(key, value, max_size=4) | value, max_size=4))
    def test(messages: list[Any]) -> None:
        try:
            adapter.validate_history(parse_messages(messages))
        except ProviderError as err:
            assert err.status == 400 and err.message

    return test
