"""Load a library in Python, and run a real server in-process: ``mockllm.load`` and ``mockllm.serve``.

``load`` never raises for a mistake in a script: it returns a :class:`LoadResult` holding the
diagnostics as data (``load_or_raise`` raises :class:`~mockllm.dsl.diagnostics.DiagnosticsError`).
``serve`` runs Hypercorn on a free loopback port in a background thread — a real socket, so streaming
timing and disconnects are real — and talks to it through the admin API (``/_mockllm/``).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import attrs

from mockllm.builder import ScenarioBuilder, ScriptBuilder, script
from mockllm.dsl.diagnostics import Diagnostic, render
from mockllm.dsl.parse.loader import Library
from mockllm.dsl.tree import nodes as n
from mockllm.errors import DiagnosticsError, ServerError

if TYPE_CHECKING:
    import ssl

    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.engine.conversations import ConversationRecord
    from mockllm.runtime.engine.journal import JournalEntry
    from mockllm.server.background import BackgroundServer
    from mockllm.server.options import ServerOptions
    from mockllm.server.state.posted import Posted
    from mockllm.server.tls.files import TlsFiles

__all__ = [
    "LoadResult",
    "Loaded",
    "MockServer",
    "Source",
    "Verification",
    "is_script_text",
    "load",
    "load_or_raise",
    "serve",
]

#: What ``load``, ``serve`` and ``MockServer.load`` accept: script text, a path (file or directory),
#: a builder, or a syntax-tree node.
Source = str | os.PathLike[str] | ScenarioBuilder | ScriptBuilder | n.Scenario | n.ScriptFile

_HTTP_TIMEOUT_S = 30.0


def is_script_text(source: str) -> bool:
    """A string is script text when it holds a newline or starts with ``{`` (the JSON form); otherwise
    it is a path."""
    return "\n" in source or source.lstrip().startswith("{")


def _as_text(source: ScenarioBuilder | ScriptBuilder | n.Scenario | n.ScriptFile) -> tuple[str, str]:
    """(script text, the name its diagnostics use) for a builder or a node."""
    if isinstance(source, ScenarioBuilder):
        return source.to_text(), f"<scenario {source.build().name}>"
    if isinstance(source, n.Scenario):
        return script(source).to_text(), f"<scenario {source.name}>"
    if isinstance(source, ScriptBuilder):
        return source.to_text(), source.file.path
    return ScriptBuilder(source).to_text(), source.path


def _combine(libraries: Sequence[Library]) -> Library:
    files: list[n.ScriptFile] = []
    seen: set[str] = set()
    diagnostics: list[Diagnostic] = []
    sources: dict[str, str] = {}
    aliases: dict[str, Mapping[str, str]] = {}
    vectors: dict[tuple[str, str], tuple[tuple[float, ...], ...]] = {}
    media: dict[tuple[str, str], bytes] = {}
    for lib in libraries:
        for f in lib.files:
            if f.path not in seen:
                seen.add(f.path)
                files.append(f)
        diagnostics.extend(lib.diagnostics)
        sources.update(lib.sources)
        aliases.update(lib.aliases)
        vectors.update(lib.vectors)  # `vectors from` and `audio`/`image` files, read by each loader
        media.update(lib.media)
    return Library(tuple(files), tuple(diagnostics), sources, aliases, vectors, media)


def _library(sources: Sequence[Source], base_dir: str | os.PathLike[str] | None) -> Library:
    from mockllm.dsl.parse.loader import load_paths, load_text

    base = os.path.abspath(base_dir) if base_dir is not None else None
    parts: list[Library] = []
    texts = 0
    for source in sources:
        if isinstance(source, ScenarioBuilder | ScriptBuilder | n.Scenario | n.ScriptFile):
            text, name = _as_text(source)
            parts.append(load_text(text, file=name, base_dir=base))
        elif isinstance(source, str) and is_script_text(source):
            texts += 1
            parts.append(load_text(source, file="<text>" if texts == 1 else f"<text {texts}>", base_dir=base))
        elif isinstance(source, str | os.PathLike):
            path = os.fspath(source)
            if base is not None and not os.path.isabs(path):
                path = os.path.join(base, path)
            parts.append(load_paths([path]))
        else:
            raise _not_a_source(source)
    return _combine(parts)


def _not_a_source(source: object) -> TypeError:
    return TypeError(
        f"mockllm.load takes script text, a path, or a builder such as mockllm.scenario(…), not {source!r}"
    )


@attrs.frozen
class LoadResult:
    """A loaded library: the syntax trees, the compiled tables (None when there are errors) and every
    diagnostic, as data."""

    library: Library
    compiled: CompiledLibrary | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return self.compiled is not None

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.is_error)

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if not d.is_error)

    @property
    def scenarios(self) -> list[str]:
        """The names of the compiled scenarios, in selection order."""
        return [m.name for m in self.compiled.machines] if self.compiled is not None else []

    def render(self) -> str:
        """Every diagnostic as ``mockllm check`` prints it (source line and caret included)."""
        return render(self.diagnostics, self.library.sources)

    def raise_for_errors(self) -> CompiledLibrary:
        """The compiled library, or :class:`DiagnosticsError` carrying every diagnostic."""
        if self.compiled is None:
            raise DiagnosticsError(self.diagnostics, self.library.sources)
        return self.compiled


def load(
    *sources: Source, base: str | os.PathLike[str] | None = None, base_dir: str | os.PathLike[str] | None = None
) -> LoadResult:
    """Load, check and compile a library from script text, paths (files or directories) and builders,
    in the order given. Never raises for a mistake in a script.

    ``base`` is the directory that relative paths, and ``use "…"`` imports inside script text and
    builders, resolve against (default: the working directory; ``base_dir`` is its older name). A
    file's own ``use`` imports always resolve beside that file."""
    from mockllm.dsl.machines.compiler import compile_library

    library = _library(sources, base if base is not None else base_dir)
    compiled, diagnostics = compile_library(library)
    return LoadResult(library, compiled, tuple(diagnostics))


def load_or_raise(
    *sources: Source, base: str | os.PathLike[str] | None = None, base_dir: str | os.PathLike[str] | None = None
) -> CompiledLibrary:
    """:func:`load`, raising :class:`DiagnosticsError` (its message is the rendered diagnostics) on errors."""
    return load(*sources, base=base, base_dir=base_dir).raise_for_errors()


# ---------------------------------------------------------------------------------------------------------
# Verification


def _unmatched_text(entry: Mapping[str, Any]) -> str:
    no_match = entry.get("no_match") or {}
    message: str = no_match.get("message") or f"mockllm: no step matched request #{entry.get('id')}"
    return message


@attrs.frozen
class Verification:
    """What ``GET /_mockllm/verify`` reports since the last reset: requests no step answered (the
    no-match report of each), requests whose ``expect:`` failed, steps never used, requests
    refused before matching (missing credentials, invalid JSON, a history the API forbids), and, on
    servers sharing their state, posted scenarios a server cannot load."""

    unmatched: tuple[dict[str, Any], ...] = ()
    expectation_failures: tuple[dict[str, Any], ...] = ()
    unused_steps: tuple[dict[str, Any], ...] = ()
    rejected: tuple[dict[str, Any], ...] = ()
    not_loaded: tuple[dict[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        """No unmatched, refused or failed-expectation request and no post a server cannot load (unused
        steps are reported apart)."""
        return not self.unmatched and not self.expectation_failures and not self.rejected and not self.not_loaded

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verification:
        return cls(
            tuple(data.get("unmatched", ())),
            tuple(data.get("expectation_failures", ())),
            tuple(data.get("unused_steps", ())),
            tuple(data.get("rejected", ())),
            tuple(data.get("not_loaded", ())),
        )

    def report(self, *, unused: bool = False) -> str:
        """The problems as text ("" when there are none); ``unused`` adds the steps never used."""
        parts: list[str] = [f"mockllm: {r.get('message')}:\n{r.get('text')}" for r in self.not_loaded]
        if self.unmatched:
            count = len(self.unmatched)
            head = f"mockllm: {count} request{'s' if count != 1 else ''} matched no step"
            parts.append("\n\n".join([head, *(_unmatched_text(e) for e in self.unmatched)]))
        if self.expectation_failures:
            lines = [f"mockllm: expectation failed: {e.get('expectation_failed')}" for e in self.expectation_failures]
            parts.append("\n".join(lines))
        if self.rejected:
            count = len(self.rejected)
            lines = [f"mockllm: {count} request{'s' if count != 1 else ''} refused before matching:"]
            lines += [f"  - {e.get('endpoint')}: {e.get('status')} {e.get('rejected')}" for e in self.rejected]
            parts.append("\n".join(lines))
        if unused and self.unused_steps:
            lines = ["mockllm: steps never used:"]
            lines += [
                f'  - scenario "{s["scenario"]}", step `{s["step"]}` ({s["location"]})' for s in self.unused_steps
            ]
            parts.append("\n".join(lines))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.report(unused=True) or "mockllm: every request matched a step"


@attrs.frozen
class Loaded:
    """What a load into a running server did."""

    scenarios: tuple[str, ...]  # the scenarios loaded, in selection order
    replaced: tuple[str, ...] = ()  # those that replaced a scenario of the same name
    warnings: tuple[Diagnostic, ...] = ()


# ---------------------------------------------------------------------------------------------------------
# The in-process server


class MockServer:
    """A mockllm server running in this process on a real loopback socket.

    Use it as a context manager (``with mockllm.serve("scenarios/") as server:``) or call
    :meth:`start` and :meth:`stop`. The admin calls go over HTTP to ``/_mockllm/``."""

    def __init__(
        self,
        library: CompiledLibrary | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        options: ServerOptions | None = None,
    ) -> None:
        from mockllm.server.options import ServerOptions

        self.library = library  # what the server starts with and :meth:`restore` goes back to
        self.options = options or ServerOptions(no_auth=True)
        self._host = host
        self._port = port
        self._server: BackgroundServer | None = None
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]  # loopback: never a proxy
        if self.options.tls is not None:  # the admin calls trust the server's certificate
            handlers.append(urllib.request.HTTPSHandler(context=self.options.tls.client_context()))
        self._opener = urllib.request.build_opener(*handlers)

    # ---- lifecycle

    def start(self) -> MockServer:
        """Bind a port and serve; returns once the server accepts connections."""
        from mockllm.server.background import BackgroundServer

        if self._server is None:
            server = BackgroundServer(self.library, host=self._host, port=self._port, options=self.options)
            server.start()
            self._server = server
        return self

    def stop(self) -> None:
        """Stop serving (open streams and hangs end); the port is released."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    def record_to(self, name: str | None) -> None:
        """Where passed-through exchanges of requests naming no place of their own (the
        ``x-mockllm-record-to`` header) are written from now on: ``name``'s folder (or file, ending in
        ``.mockllm``) under the ``record_missing`` folder of the options; None: that folder itself.
        Nothing happens when the server does not pass requests through."""
        from mockllm.server.http.server_state import server_state

        passthrough = server_state(self._background().app).passthrough
        if passthrough is not None:
            passthrough.default_target = name

    def _background(self) -> BackgroundServer:
        if self._server is None:
            raise ServerError("mockllm: the server is not running: use `with mockllm.serve(…) as server:` or .start()")
        return self._server

    # ---- where clients connect

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https://`` when serving TLS)."""
        return self._background().url

    @property
    def ca_file(self) -> str | None:
        """With ``serve(tls=True)``: the certificate authority file clients trust to reach the server
        (``SSL_CERT_FILE``, ``httpx.Client(verify=…)``); None otherwise (docs/tls.md)."""
        return self.options.tls.ca if self.options.tls is not None else None

    def ssl_context(self) -> ssl.SSLContext:
        """A client context trusting the server's certificate: ``httpx.Client(verify=server.ssl_context())``,
        google-genai's ``HttpOptions(async_client_args={"ssl": …})``. Raises :class:`ServerError` when the
        server does not serve TLS."""
        if self.options.tls is None:
            raise ServerError("mockllm: the server serves plain HTTP: start it with serve(tls=True) for TLS")
        return self.options.tls.client_context()

    @property
    def port(self) -> int:
        return self._background().port

    def base_url(self, provider: str) -> str:
        """Where provider ``provider``'s official SDK is pointed (``"openai"`` → ``url`` + ``/v1``):
        each provider's handle below, by name (the provider registry says which)."""
        from mockllm.runtime.providers.registry import base_url

        return base_url(provider, self.url)

    @property
    def openai_base_url(self) -> str:
        """For ``OpenAI(base_url=…)`` (the Chat Completions and Responses APIs): the URL plus ``/v1``."""
        return self.base_url("openai")

    @property
    def anthropic_base_url(self) -> str:
        """For ``Anthropic(base_url=…)``."""
        return self.base_url("anthropic")

    @property
    def gemini_base_url(self) -> str:
        """For ``genai.Client(http_options={"base_url": …})``."""
        return self.base_url("gemini")

    @property
    def ollama_host(self) -> str:
        """For ``ollama.Client(host=…)``."""
        return self.base_url("ollama")

    @property
    def cohere_base_url(self) -> str:
        """For ``cohere.ClientV2(base_url=…)``."""
        return self.base_url("cohere")

    @property
    def mistral_base_url(self) -> str:
        """For ``Mistral(server_url=…)``."""
        return self.base_url("mistral")

    @property
    def azure_endpoint(self) -> str:
        """For ``AzureOpenAI(azure_endpoint=…)``."""
        return self.base_url("azure")

    @property
    def vertex_base_url(self) -> str:
        """For ``genai.Client(vertexai=True, http_options={"base_url": …})``."""
        return self.base_url("vertex")

    @property
    def bedrock_endpoint_url(self) -> str:
        """For ``boto3.client("bedrock-runtime", endpoint_url=…)`` and ``AnthropicBedrock(base_url=…)``."""
        return self.base_url("bedrock")

    def mcp_url(self, name: str) -> str:
        """Where an MCP client reaches the script's `mcp server "NAME"` over Streamable HTTP."""
        return f"{self.url}/mcp/{urllib.parse.quote(name)}"

    def realtime_url(self, model: str = "gpt-realtime") -> str:
        """Where a realtime client opens an OpenAI Realtime session: ``ws://…/v1/realtime?model=MODEL``
        (the Agents SDK's ``model_config={"url": …}``; the ``openai`` SDK needs only ``openai_base_url``)."""
        ws = "wss" + self.url[5:] if self.url.startswith("https") else "ws" + self.url[4:]
        return f"{ws}/v1/realtime?model={urllib.parse.quote(model)}"

    def mcp_command(self, name: str, conversation: str | None = None) -> list[str]:
        """The command an MCP client spawns to reach `mcp server "NAME"` over stdio: ``mockllm mcp NAME
        --url …``, relaying to this server (its library, conversations and journal). ``conversation``
        ties the calls to a chat's conversation key."""
        command = [sys.executable, "-m", "mockllm", "mcp", name, "--url", self.url]
        return [*command, "--conversation", conversation] if conversation else command

    # ---- admin API

    def _call(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.options.admin_token:
            headers["Authorization"] = f"Bearer {self.options.admin_token}"
        req = urllib.request.Request(self.url + "/_mockllm" + path, data=body, method=method, headers=headers)
        try:
            with self._opener.open(req, timeout=_HTTP_TIMEOUT_S) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw or b"null")
            except ValueError:
                return exc.code, {"error": raw.decode("utf-8", "replace")}

    def _get(self, path: str) -> Any:
        status, data = self._call("GET", path)
        if status != 200:
            raise ServerError(f"mockllm: GET /_mockllm{path} answered {status}: {data}")
        return data

    def load(
        self,
        source: Source,
        *,
        base: str | os.PathLike[str] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
    ) -> Loaded:
        """Load scenarios on top of what the server has; same-named scenarios are replaced.

        Everything loads in this process, so diagnostics and no-match reports name the real file and
        line (script text is ``<text>``). ``use "…"`` inside script text and a relative path resolve
        against ``base``, by default the server's scenario base (``serve(base=…)``, else the working
        directory when the server was made). Errors raise :class:`DiagnosticsError`; nothing is loaded
        then. On a server sharing its state (``serve(state=…)``) it compiles as every server sharing it
        does: imports and paths must lie below the scenario base, where each of them reads them."""
        chosen = base if base is not None else base_dir
        where = os.fspath(chosen if chosen is not None else self.options.scenario_base)
        posted = self._posted(source, where)  # what the other servers sharing the state load
        if self.options.state:  # compiled here as every one of them compiles it (server/state/posted.py)
            compiled_here, diagnostics, sources = posted.compile(self.options.scenario_base)
            if compiled_here is None:
                raise DiagnosticsError(diagnostics, sources)
            compiled, warnings = compiled_here, tuple(d for d in diagnostics if not d.is_error)
        else:
            result = load(source, base=where)
            compiled, warnings = result.raise_for_errors(), result.warnings
        background = self._background()
        store = background.store
        background.run(store.sync_library)
        library = background.engine.library
        names = tuple(m.name for m in compiled.machines)
        replaced = tuple(m.name for m in library.machines if m.name in names) if library is not None else ()
        # shared with every server on the same state (a file of tool servers alone counts too)
        if compiled.machines or compiled.fallback is not None or compiled.mcp_servers:
            background.run(lambda: store.post_library(posted, compiled))
        return Loaded(names, replaced, warnings)

    def _posted(self, source: Source, base: str) -> Posted:
        """``source`` as the other servers sharing this one's state load it (see server/state/posted.py)."""
        from mockllm.server.state.posted import Posted

        root = os.path.realpath(self.options.scenario_base)
        below = os.path.relpath(os.path.realpath(base), root)
        if isinstance(source, ScenarioBuilder | ScriptBuilder | n.Scenario | n.ScriptFile):
            text, name = _as_text(source)
            return Posted(text, base=below, file=name)
        if isinstance(source, str) and is_script_text(source):  # the JSON form starts with `{`, as load() reads it
            return Posted(source, source.lstrip().startswith("{"), base=below, file="<text>")
        if isinstance(source, str | os.PathLike):
            return Posted("", path=os.path.relpath(os.path.realpath(os.path.join(base, os.fspath(source))), root))
        raise _not_a_source(source)

    def clear(self) -> None:
        """Remove every scenario (``DELETE /_mockllm/scenarios``): the echo responder answers."""
        status, data = self._call("DELETE", "/scenarios")
        if status != 200:
            raise ServerError(f"mockllm: clearing the scenarios answered {status}: {data}")

    def reset(self, conversation: str | None = None) -> None:
        """Forget conversation state and the journal (``POST /_mockllm/reset``), or one conversation's."""
        path = "/reset"
        if conversation is not None:
            from urllib.parse import quote

            path += "?conversation=" + quote(conversation, safe="")
        status, data = self._call("POST", path)
        if status != 200:
            raise ServerError(f"mockllm: reset answered {status}: {data}")

    def restore(self) -> None:
        """Back to the library the server started with, every conversation and the journal forgotten
        (in the shared store too, when the server keeps its state in Redis)."""
        background = self._background()
        engine = background.engine
        if self.options.state:
            background.run(background.store.restore_library)  # every server sharing the state goes back
            self.reset()
        else:
            engine.load(self.library)
            engine.reset()

    def requests(self) -> list[JournalEntry]:
        """The journal (``GET /_mockllm/requests``), oldest first: one
        :class:`~mockllm.runtime.engine.journal.JournalEntry` per request, with the step that answered it
        (``scenario``, ``step``, ``location``), or ``fallback`` / ``echo``, or its ``no_match`` report."""
        from mockllm.runtime.engine.journal import JournalEntry

        out: list[JournalEntry] = []
        after = 0
        while True:  # the admin API pages the journal (at most 1,000 entries a page): read every page
            page = self._get(f"/requests?limit=1000&after={after}")
            out.extend(JournalEntry.from_json(e) for e in page)
            if len(page) < 1000:
                return out
            after = page[-1]["id"]

    def conversations(self) -> list[ConversationRecord]:
        """Each live conversation with every scenario's position, use counts and captures in it
        (``GET /_mockllm/conversations``)."""
        from mockllm.runtime.engine.conversations import ConversationRecord

        return [ConversationRecord.from_json(c) for c in self._get("/conversations")]

    def verify(self) -> Verification:
        """Unmatched requests, failed expectations and unused steps since the last reset: what
        ``GET /_mockllm/verify`` answers, asked of the server in this process without a round trip
        (the pytest fixture asks after every test)."""
        background = self._background()
        store = background.store
        if self.options.state:  # shared: asked on the server's loop, where its connections live
            report = background.run(store.verdict)
        else:  # in memory: the engine's tables, read here as restore() resets them
            report = store.verdict_here()
        return Verification.from_json(json.loads(json.dumps(report, default=str)))  # as the admin API sends it

    def scenarios(self) -> list[dict[str, Any]]:
        """The loaded scenarios (``GET /_mockllm/scenarios``), in selection order."""
        data: list[dict[str, Any]] = self._get("/scenarios")
        return data

    def __repr__(self) -> str:
        where = self._server.url if self._server is not None else "not running"
        return f"<mockllm.MockServer {where}>"


def serve(
    *sources: Source,
    host: str = "127.0.0.1",
    port: int = 0,
    no_auth: bool = True,
    lenient: bool = False,
    admin_token: str | None = None,
    hang_limit_s: float | None = None,
    max_body_bytes: int | None = None,
    shutdown_grace_s: float | None = None,
    base: str | os.PathLike[str] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    state: str | None = None,
    tls: bool | tuple[str | os.PathLike[str], str | os.PathLike[str]] = False,
    options: ServerOptions | None = None,
) -> MockServer:
    """A server for ``sources`` (none: the echo responder), started by ``with`` or ``.start()``.

    ``port=0`` picks a free port. ``no_auth`` (default on) skips the per-provider API-key checks;
    ``lenient`` skips history validation; ``hang_limit_s`` bounds how long a ``hang`` reply holds the
    connection (default 300 s); ``max_body_bytes`` caps a request body (default 10 MiB);
    ``shutdown_grace_s`` is how long open streams may run on when the server stops before they end at
    once, the provider's way (default 5 s). ``base`` is the
    server's scenario base: what ``use "…"`` in script text (given here, to :meth:`MockServer.load` or
    posted to the admin API) resolves against; default the working directory. ``state``
    (``redis://HOST:PORT/DB``, the ``redis`` extra) keeps conversations and the journal in Redis,
    shared with every server given the same URL (``mockllm serve --state``). ``tls=True`` serves HTTPS
    and WSS with mockllm's loopback certificate (``mockllm serve --tls``; clients trust
    :attr:`MockServer.ca_file` or use :meth:`MockServer.ssl_context`), ``tls=(CERT, KEY)`` with your
    own files. ``options``
    (a full :class:`~mockllm.server.options.ServerOptions`) overrides all of those. A library with
    errors raises :class:`DiagnosticsError` here, before anything starts."""
    from mockllm.server.options import (
        DEFAULT_HANG_LIMIT_S,
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_SHUTDOWN_GRACE_S,
        ServerOptions,
    )

    chosen = os.path.abspath(base if base is not None else base_dir if base_dir is not None else os.getcwd())
    library = load_or_raise(*sources, base=chosen) if sources else None
    opts = options or ServerOptions(
        scenario_base=chosen,
        no_auth=no_auth,
        lenient=lenient,
        admin_token=admin_token,
        hang_limit_s=DEFAULT_HANG_LIMIT_S if hang_limit_s is None else hang_limit_s,
        max_body_bytes=DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes,
        shutdown_grace_s=DEFAULT_SHUTDOWN_GRACE_S if shutdown_grace_s is None else shutdown_grace_s,
        state=state,
        tls=_tls_files(tls),
    )
    return MockServer(library, host=host, port=port, options=opts)


def _tls_files(tls: bool | tuple[str | os.PathLike[str], str | os.PathLike[str]]) -> TlsFiles | None:
    """``serve(tls=…)``: None (plain HTTP), the loopback certificate, or the given (certificate, key)."""
    if tls is False:
        return None
    if tls is True:
        from mockllm.server.tls.loopback import loopback_certificate

        return loopback_certificate()
    from mockllm.server.tls.files import given_files

    cert, key = tls
    return given_files(os.fspath(cert), os.fspath(key))
