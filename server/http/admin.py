"""The admin API under ``/_mockllm/`` (docs/admin-api.md): JSON in and out, for test harnesses.

Answers loopback clients only, unless an admin token is set; then it needs
``Authorization: Bearer TOKEN`` from every client."""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import os
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from mockllm.dsl.machines.compiled import CompiledLibrary
from mockllm.errors import StateUnavailable
from mockllm.runtime.engine.journal import DEFAULT_PAGE, MAX_PAGE
from mockllm.runtime.providers.common import utf8_json
from mockllm.server.memory import release_memory
from mockllm.server.options import ServerOptions
from mockllm.server.state.posted import Posted
from mockllm.version import installed_version

if TYPE_CHECKING:
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.state.store import StateStore

ADMIN_PREFIX = "/_mockllm"

Endpoint = Callable[[Request], Awaitable[Response]]


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = utf8_json(json.dumps(data, ensure_ascii=False, default=str))
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _relayed_for(request: Request) -> str | None:
    """The first client that a proxy on this machine says it relays for (``X-Forwarded-For``,
    ``X-Real-IP``, or ``for=`` of ``Forwarded``) and that is not this machine, else None. (Every
    server option reads these the same way: only a loopback peer is asked, and only to refuse.)"""
    named: list[str] = []
    for value in request.headers.getlist("x-forwarded-for") + request.headers.getlist("x-real-ip"):
        named += value.split(",")
    for value in request.headers.getlist("forwarded"):
        for element in value.split(","):
            for pair in element.split(";"):
                key, _, given = pair.strip().partition("=")
                if key.strip().lower() == "for":
                    named.append(given)
    for raw in named:
        host = raw.strip().strip('"')
        if host.startswith("["):  # [v6] or [v6]:port
            host = host[1:].split("]", 1)[0]
        elif host.count(":") == 1:  # v4:port
            host = host.split(":", 1)[0]
        if not _is_loopback(host):
            return host or raw.strip() or "an unnamed client"
    return None


def _local_name(host: str, request: Request) -> bool:
    """Whether ``host`` (a ``Host`` header's or an origin's host, without the port) names this
    machine's loopback interface or the address the request came in on."""
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost" or name.endswith(".localhost") or _is_loopback(name):
        return True
    server = request.scope.get("server")
    if server and name == str(server[0]).lower():
        return True
    return name == socket.gethostname().lower()


def _host_of(authority: str) -> str:
    """The host of ``host[:port]`` or ``[v6]:port``."""
    if authority.startswith("["):
        return authority.split("]", 1)[0] + "]"
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _foreign(request: Request) -> str | None:
    """Why a request from a loopback client still looks like a web page's doing (a cross-site form or
    script, or DNS rebinding), else None: its ``Host`` must name this machine and its ``Origin``, when
    it has one, must be a page served from this machine."""
    host = request.headers.get("host")
    if host is not None and not _local_name(_host_of(host), request):
        return f"the Host header {host!r} does not name this machine"
    origin = request.headers.get("origin")
    if origin is not None:
        parsed = urlsplit(origin.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname or not _local_name(parsed.hostname, request):
            return f"it comes from a web page on another origin ({origin!r})"
    return None


def _refusal(request: Request, options: ServerOptions) -> Response | None:
    """None when the caller may use the admin API, else the 401/403 to answer.

    Without a token: loopback clients only, and not on behalf of a web page from elsewhere (``Host``
    and ``Origin`` checked). With a token: any client that sends it (a page cannot send it)."""
    token = options.admin_token
    if token:
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if not given:
            return json_response({"error": "mockllm: the admin API needs 'Authorization: Bearer TOKEN'"}, 401)
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            return json_response({"error": "mockllm: wrong admin token"}, 403)
        return None
    host = request.client.host if request.client is not None else None
    local = _is_loopback(host)
    relayed = _relayed_for(request) if local else None
    if not local or relayed is not None:
        who = host if relayed is None else f"{relayed}, relayed by a proxy on this machine"
        message = (
            f"mockllm: the admin API answers only loopback clients (this one is {who}); "
            "start the server with --admin-token to allow others"
        )
        return json_response({"error": message}, 403)
    foreign = _foreign(request)
    if foreign is not None:
        return json_response({"error": f"mockllm: the admin API refused this request: {foreign}"}, 403)
    return None


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None past ``limit`` bytes. Raises Starlette's ``ClientDisconnect`` when the
    client hangs up before the end of the body: a half-sent script is never loaded."""
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


def _int_param(request: Request, name: str, default: int, least: int) -> int | Response:
    """An integer query parameter, or the 400 that says what is wrong with it."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 18 or int(text) < least:
        shown = json.dumps(raw[:40], ensure_ascii=False)
        return json_response({"error": f"mockllm: ?{name}= must be an integer of at least {least}, got {shown}"}, 400)
    return int(text)


def scenario_summary(library: CompiledLibrary | None) -> list[dict[str, Any]]:
    if library is None:
        return []
    out = []
    for m in library.machines:
        span = m.span
        out.append(
            {
                "name": m.name,
                "file": m.file or span.file,
                "line": span.line,
                "location": span.location() if span.line > 0 else (m.file or span.file),
                "priority": m.priority,
                "tags": list(m.tags),
                "order": "any" if m.order_any else "file",
                "steps": [s.name for s in m.steps],
            }
        )
    return out


def library_description(library: CompiledLibrary | None) -> str:
    """One line saying what the server answers with: the startup banner's second line and the
    ``loaded`` field of ``/_mockllm/health``."""
    if library is None or (not library.machines and library.fallback is None):
        return "no scenarios loaded: the echo responder answers every request"
    count = len(library.machines)
    steps = library.step_count()
    if len(library.files) > 1:
        files = f"{len(library.files)} files"  # `mockllm serve --verbose` lists them, scenario by scenario
    else:
        files = library.files[0] if library.files else "code"
    text = f"{count} scenario{'s' if count != 1 else ''} ({steps} step{'s' if steps != 1 else ''}) from {files}"
    if library.fallback is not None:
        where = library.fallback_span.location()
        text += f"; when no step matches, the fallback ({where}) answers"
    else:
        text += "; when no step matches, the answer is a 404 with the no-match report"
    return text + ". Steps are used up per conversation until POST /_mockllm/reset"


def library_listing(library: CompiledLibrary) -> str:
    """``mockllm serve --verbose``'s list: each file with the number of its scenarios, then each scenario
    with its steps and where it is, one per line."""
    lines: list[str] = []
    for file in library.files or ("code",):
        machines = [m for m in library.machines if (m.file or "code") == file]
        lines.append(f"  {file}: {len(machines)} scenario{'s' if len(machines) != 1 else ''}")
        for m in sorted(machines, key=lambda m: m.load_order):
            steps = len(m.steps)
            lines.append(f'    scenario "{m.name}" ({steps} step{"s" if steps != 1 else ""}) at {m.span.location()}')
    return "\n".join(lines)


def admin_mount(engine: Engine, options: ServerOptions, store: StateStore) -> Mount:
    """The admin API over ``engine`` (the library) and ``store`` (conversations and the journal)."""
    from mockllm.dsl.diagnostics import render, to_json

    version = installed_version()
    root = os.path.realpath(options.scenario_base)

    def guarded(endpoint: Endpoint) -> Endpoint:
        async def wrapper(request: Request) -> Response:
            refused = _refusal(request, options)
            if refused is not None:
                return refused
            try:
                return await endpoint(request)
            except StateUnavailable as exc:
                return json_response({"error": str(exc)}, 503)

        return wrapper

    async def health(request: Request) -> Response:
        await store.sync_library()
        library = engine.library
        loaded = library_description(library)
        for report in store.unloaded_here():
            loaded += f". Posted text {report['post']} ({report['file']}) does not load on this server: see not_loaded"
        return json_response(
            {
                "status": "ok",
                "version": version,
                "scenarios": len(library.machines) if library is not None else 0,
                "steps": library.step_count() if library is not None else 0,
                "files": list(library.files) if library is not None else [],
                "fallback": library is not None and library.fallback is not None,
                "echo": library is None,
                "loaded": loaded,
                "state": store.description,
                "pid": os.getpid(),
                "not_loaded": await store.not_loaded(),
            }
        )

    async def scenarios(request: Request) -> Response:
        if request.method == "DELETE":
            await store.clear_library()  # no scenarios: the echo responder answers everything
            return json_response({"cleared": True})
        if request.method == "POST":
            return await _load(request)
        await store.sync_library()
        return json_response(scenario_summary(engine.library))

    async def _load(request: Request) -> Response:
        try:
            raw = await _read_limited(request, options.max_body_bytes)
        except ClientDisconnect:
            return Response(status_code=400)  # nobody reads it: the client is gone
        if raw is None:
            return json_response({"error": f"mockllm: body larger than {options.max_body_bytes} bytes"}, 413)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return json_response(
                {"error": f"mockllm: the body is not UTF-8 text ({exc.reason} at byte {exc.start})"}, 400
            )
        is_json = request.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
        posted = Posted(text, is_json, request.query_params.get("base", ""))
        compiled, diagnostics, sources = await asyncio.to_thread(posted.compile, root)
        errors = [d for d in diagnostics if d.is_error]
        if errors or compiled is None:
            return json_response({"errors": [to_json(d) for d in errors], "text": render(errors, sources)}, 400)
        await store.sync_library()
        base = engine.library
        names = [m.name for m in compiled.machines]
        replaced = [m.name for m in base.machines if m.name in set(names)] if base is not None else []
        # an empty text changes nothing (a file of tool servers alone does)
        if compiled.machines or compiled.fallback is not None or compiled.mcp_servers:
            await store.post_library(posted, compiled)
        warnings = [d for d in diagnostics if not d.is_error]
        return json_response(
            {
                "loaded": names,
                "replaced": replaced,
                "warnings": [to_json(d) for d in warnings],
                "text": render(warnings, sources),
            }
        )

    async def reset(request: Request) -> Response:
        conversation = request.query_params.get("conversation")
        await store.reset(conversation)
        if conversation is None:
            release_memory()
        return json_response({"reset": conversation if conversation is not None else "all"})

    async def requests(request: Request) -> Response:
        """One page of the journal: ``?limit=`` entries (default 100, at most 1,000) with ids above
        ``?after=``, oldest first; ``x-mockllm-next-after`` gives the ``after`` of the next page."""
        limit = _int_param(request, "limit", DEFAULT_PAGE, 1)
        after = _int_param(request, "after", 0, 0)
        if isinstance(limit, Response):
            return limit
        if isinstance(after, Response):
            return after
        entries, next_after = await store.journal_page(min(limit, MAX_PAGE), after)
        headers = {"x-mockllm-next-after": str(next_after)} if next_after is not None else None
        return json_response(entries, headers=headers)

    async def conversations(request: Request) -> Response:
        return json_response(await store.conversations())

    async def verify(request: Request) -> Response:
        return json_response(await store.verdict())

    return Mount(
        ADMIN_PREFIX,
        routes=[
            Route("/health", guarded(health), methods=["GET"]),
            Route("/scenarios", guarded(scenarios), methods=["GET", "POST", "DELETE"]),
            Route("/reset", guarded(reset), methods=["POST"]),
            Route("/requests", guarded(requests), methods=["GET"]),
            Route("/conversations", guarded(conversations), methods=["GET"]),
            Route("/verify", guarded(verify), methods=["GET"]),
        ],
    )
