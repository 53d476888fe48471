"""``mockllm explain LIBRARY [EARLIER.json …] REQUEST.json``: which step a recorded request would
match in its real position in its conversation, or why each candidate step fails. Exit 0 when a step
matches, 1 when none does or the library or request is broken.

A request is explained where it happened, not as the start of a conversation: its conversation's
earlier requests are answered first. They are the files given before it; or, for a journal export
(``GET /_mockllm/requests``, a list of entries), the same conversation's earlier entries that kept a
body; and otherwise the request's own history, cut before each assistant turn (every request of a
chat repeats its history, so one saved request is enough). ``--no-replay`` explains it alone.

REQUEST.json holds the request body as the client sent it. It may instead hold a wrapper
``{"provider": …, "endpoint": …, "headers": {…}, "body": {…}}`` (the shape of a recorded request);
``--provider`` and ``--endpoint`` override it, and without either the provider is guessed from the
body's shape."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mockllm.dsl.providers import PROVIDERS
from mockllm.dsl.span import NO_SPAN
from mockllm.errors import ExplainError
from mockllm.runtime.engine.outcome import Outcome
from mockllm.runtime.providers import registry
from mockllm.runtime.providers.pairs import InputsAdapter, route_for_path, route_functions
from mockllm.runtime.reply.plan import ErrorPlan, HangPlan, MessagePlan, Plan, RawPlan
from mockllm.runtime.request import ChatRequest, HttpRequest

if TYPE_CHECKING:
    from mockllm.runtime.engine.engine import Engine


def guess_provider(body: Any) -> str:
    """The API a body was written for, from its shape (the provider registry's sniffers: every
    provider whose bodies differ from another's), else openai."""
    return registry.guess_provider(body)


def default_endpoint(provider: str, body: Any) -> str:
    return registry.chat_path(provider, body)


def _read_request(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ExplainError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ExplainError(f"{path} is not JSON: {exc}") from None


def _unwrap(data: Any) -> tuple[Any, str | None, str | None, dict[str, str]]:
    """(body, provider, endpoint, headers) from a bare body or a recorded-request wrapper."""
    if isinstance(data, dict) and isinstance(data.get("body"), dict) and ("endpoint" in data or "provider" in data):
        headers = data.get("headers")
        hdrs = {str(k).lower(): str(v) for k, v in headers.items()} if isinstance(headers, Mapping) else {}
        provider = data.get("provider")
        endpoint = data.get("endpoint") or data.get("path")
        return (
            data["body"],
            provider if isinstance(provider, str) else None,
            endpoint if isinstance(endpoint, str) else None,
            hdrs,
        )
    return data, None, None, {}


def _embedding_endpoint(body: Any) -> str | None:
    """``/v1/embeddings`` or ``/v1/moderations`` for an OpenAI-style body naming such a model."""
    if not isinstance(body, dict) or "input" not in body or "messages" in body:
        return None
    model = body.get("model")
    name = model.lower() if isinstance(model, str) else ""
    if "moderation" in name:
        return "/v1/moderations"
    return "/v1/embeddings" if "embed" in name else None


def parse_request(data: Any, provider: str | None, endpoint: str | None) -> ChatRequest:
    body, wrapped_provider, wrapped_endpoint, headers = _unwrap(data)
    endpoint = endpoint or wrapped_endpoint
    if endpoint is None and provider in (None, "openai"):
        endpoint = _embedding_endpoint(body)
    route = route_for_path(endpoint) if endpoint is not None else None
    if route is not None:  # an embedding or moderation request: its path says whose
        provider = provider or route.partition(".")[0]
    if provider is None and wrapped_provider is None and endpoint is not None and registry.route_at(endpoint):
        provider = registry.provider_for(endpoint, headers)  # the path says whose (Azure's, Vertex's …)
    provider = provider or wrapped_provider or guess_provider(body)
    if provider not in registry.BY_NAME:
        raise ExplainError(f"unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}")
    endpoint = endpoint or default_endpoint(provider, body)
    try:
        adapter = registry.adapter_for(provider)
    except ModuleNotFoundError:
        raise ExplainError(f"the {provider} provider is not available in this installation") from None
    if route is not None:
        adapter = InputsAdapter(adapter, *route_functions(route))
    http = HttpRequest(
        method="POST",
        path=endpoint,
        query={},
        headers=headers,
        body=json.dumps(body).encode("utf-8"),
    )
    from mockllm.runtime.providers.base import ProviderError

    try:
        chat: ChatRequest = adapter.parse(http)
    except ProviderError as exc:
        raise ExplainError(f"the request is not a valid {provider} request: {exc.message}") from None
    return chat


def _paths(library: Any) -> list[str]:
    if isinstance(library, str | os.PathLike):
        return [os.fspath(library)]
    return [os.fspath(p) for p in library]


def _summary(outcome: Outcome) -> list[str]:
    plan = outcome.plan
    if plan is None:
        return []
    if isinstance(plan, HangPlan):
        return ["reply: hang (never answers)"]
    if isinstance(plan, ErrorPlan):
        return [f"reply: error {plan.status} {json.dumps(plan.message, ensure_ascii=False)}"]
    if isinstance(plan, RawPlan):
        return [f"reply: raw status {plan.status}"]
    lines = []
    if plan.text:
        lines.append(f"reply: text {json.dumps(plan.text, ensure_ascii=False)}")
    for call in plan.tool_calls:
        lines.append(f"reply: tool call {call.name} {call.arguments_json}")
    if plan.refusal:
        lines.append(f"reply: refusal {json.dumps(plan.refusal, ensure_ascii=False)}")
    return lines


def _to_json(outcome: Outcome, chat: ChatRequest) -> dict[str, Any]:
    plan = outcome.plan
    return {
        "matched": outcome.step is not None,
        "provider": chat.provider,
        "conversation": outcome.conversation,
        "scenario": outcome.scenario,
        "step": outcome.step,
        "location": outcome.step_span.location() if outcome.step_span != NO_SPAN else None,
        "fallback": outcome.fallback,
        "expectation_failed": outcome.expectation_failed,
        "reply": None if plan is None else _reply_json(plan),
        "no_match": outcome.no_match.to_json() if outcome.no_match is not None else None,
    }


def _reply_json(plan: Plan) -> dict[str, Any]:
    message = plan if isinstance(plan, MessagePlan) else None
    error = plan if isinstance(plan, ErrorPlan) else None
    return {
        "text": message.text if message is not None else "",
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls] if message else [],
        "error_status": error.status if error is not None else None,
        "error_message": error.message if error is not None else None,
    }


def _print_text(outcome: Outcome) -> None:
    out = sys.stdout
    if outcome.step is not None:
        out.write(f'matches scenario "{outcome.scenario}", step `{outcome.step}` ({outcome.step_span.location()})\n')
        if outcome.expectation_failed is not None:
            out.write(f"but an expectation fails: {outcome.expectation_failed}\n")
        for line in _summary(outcome):
            out.write(line + "\n")
        return
    if outcome.fallback:
        out.write("no step matches; the fallback answers\n")
        for line in _summary(outcome):
            out.write(line + "\n")
    if outcome.no_match is not None:
        out.write(outcome.no_match.message + "\n")
    elif outcome.plan is not None:  # no library scenarios: the echo responder answers
        out.write("no scenario applies; the echo responder answers\n")


@attrs.frozen
class Replay:
    """What ``explain`` runs: the conversation's earlier requests, then the one to explain."""

    earlier: tuple[ChatRequest, ...]
    target: ChatRequest
    source: str  # how the earlier requests were found, for the report's first line


def _journal_entries(data: Any) -> list[dict[str, Any]] | None:
    """The entries of a journal export (a list, or ``{"requests": [...]}``), else None."""
    if isinstance(data, dict) and isinstance(data.get("requests"), list):
        data = data["requests"]
    if isinstance(data, list) and all(isinstance(e, dict) and "conversation" in e for e in data):
        return list(data)
    return None


def _from_journal(entries: list[dict[str, Any]], entry_id: int | None, path: str) -> tuple[list[Any], Any]:
    """(earlier wrapped requests, the wrapped request to explain) from a journal export."""
    with_body = [e for e in entries if isinstance(e.get("body"), dict)]
    if entry_id is not None:
        chosen = next((e for e in entries if e.get("id") == entry_id), None)
        if chosen is None:
            raise ExplainError(f"{path} has no entry {entry_id}")
        if not isinstance(chosen.get("body"), dict):
            raise ExplainError(
                f"entry {entry_id} of {path} kept no request body (refused unread, or too long to keep whole)"
            )
    else:
        failed = [e for e in with_body if e.get("no_match") or e.get("expectation_failed")]
        if not failed:
            raise ExplainError(f"{path} has no entry that matched no step or failed an expectation")
        chosen = failed[-1]
    earlier = [
        e
        for e in with_body
        if e.get("conversation") == chosen.get("conversation") and int(e.get("id", 0)) < int(chosen.get("id", 0))
    ]

    def wrapped(e: dict[str, Any]) -> dict[str, Any]:
        headers = {"x-mockllm-conversation": str(e["conversation"])} if e.get("conversation") else {}
        return {"provider": e.get("provider"), "endpoint": e.get("endpoint"), "headers": headers, "body": e["body"]}

    return [wrapped(e) for e in earlier], wrapped(chosen)


def history_prefixes(chat: ChatRequest) -> tuple[ChatRequest, ...]:
    """The requests that led to ``chat``: its history cut before each assistant turn (each of those
    turns answered such a request). A chat's every request repeats the history, so one saved request
    is enough to put it back in its real position."""
    out: list[ChatRequest] = []
    messages = chat.messages
    for i, m in enumerate(messages):
        if m.role == "assistant" and i > 0 and messages[i - 1].role != "assistant":
            out.append(attrs.evolve(chat, messages=messages[:i], stream=False))
    return tuple(out)


def build_replay(
    paths: list[str], provider: str | None, endpoint: str | None, entry: int | None = None, replay: bool = True
) -> Replay:
    """The requests to run from the files given: the last is the request to explain (a body, a recorded
    request, or a journal export), the others its conversation's earlier requests."""
    *before, last = paths
    data = _read_request(last)
    entries = _journal_entries(data)
    earlier_data: list[Any] = [_read_request(p) for p in before]
    source = ""
    if entries is not None:
        from_journal, data = _from_journal(entries, entry, last)
        earlier_data.extend(from_journal)
        if from_journal:
            source = f"{len(from_journal)} earlier request{'s' if len(from_journal) != 1 else ''} from the journal"
    elif entry is not None:
        raise ExplainError("--entry needs a journal export (GET /_mockllm/requests)")
    target = parse_request(data, provider, endpoint)
    earlier = tuple(parse_request(d, provider, endpoint) for d in earlier_data)
    if before:
        source = f"{len(before)} earlier request{'s' if len(before) != 1 else ''} given"
    if not replay:
        return Replay((), target, "")
    if not earlier:
        earlier = history_prefixes(target)
        if earlier:
            source = f"{len(earlier)} earlier turn{'s' if len(earlier) != 1 else ''} from the request's own history"
    return Replay(earlier, target, source)


def run_replay(engine: Engine, replay: Replay) -> Outcome:
    """Answer every earlier request (advancing the conversation), then explain the target."""
    for chat in replay.earlier:
        engine.handle(chat)
    return engine.explain(replay.target)


def explain_command(args: Any) -> int:
    """Run ``mockllm explain``; ``args`` carries ``library``, ``request`` (one or more files),
    ``provider``, ``endpoint``, ``entry``, ``no_replay`` and ``format``."""
    from mockllm.dsl.diagnostics import render
    from mockllm.dsl.machines.compiler import load_and_compile
    from mockllm.runtime.engine.engine import Engine

    paths = _paths(args.library)
    try:
        compiled, library, diagnostics = load_and_compile(paths)
    except Exception as exc:  # the loader reports problems as diagnostics; anything else is still one line
        sys.stderr.write(f"mockllm: cannot load {', '.join(paths)}: {exc}\n")
        return 1
    if diagnostics:
        sys.stderr.write(render(diagnostics, library.sources).rstrip("\n") + "\n")
    if compiled is None:
        sys.stderr.write("mockllm: the library has errors; nothing to explain\n")
        return 1
    requests = args.request if isinstance(args.request, list) else [args.request]
    try:
        replay = build_replay(
            requests,
            getattr(args, "provider", None),
            getattr(args, "endpoint", None),
            getattr(args, "entry", None),
            not getattr(args, "no_replay", False),
        )
    except ExplainError as exc:
        sys.stderr.write(f"mockllm: {exc}\n")
        return 1
    outcome = run_replay(Engine(compiled), replay)
    chat = replay.target
    if getattr(args, "format", "text") == "json":
        data = _to_json(outcome, chat)
        data["replayed"] = len(replay.earlier)
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        if replay.earlier:
            sys.stdout.write(f"replayed {replay.source} first\n")
        _print_text(outcome)
    return 0 if outcome.step is not None else 1
