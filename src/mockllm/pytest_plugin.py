"""The pytest plugin (registered through the ``pytest11`` entry point): the mock in one line of a test.

Fixtures:

- ``mockllm_server`` (session): one in-process server per session (per xdist worker), serving the
  library named by the ini option ``mockllm_scenarios`` (or the echo responder).
- ``mockllm`` (per test): the server, set back to the session library with every conversation and
  the journal forgotten before the test; scenarios of ``@pytest.mark.mockllm("path", …)`` loaded.
  After the test body, a request that matched no step fails the test with the no-match report
  (ini ``mockllm_strict``, default true), and, with ``mockllm_require_all_used``, so does a step the
  test loaded and never used.
- ``mockllm_env``: ``mockllm`` with the SDKs' environment variables pointing at the server.

``pytest --mockllm-record`` passes requests no step matches through to the real API and writes them
into ``mockllm_record_missing``; with ``mockllm_record_per_test`` each test writes to (and, on every
run, loads) its own folder there, named from its node id (docs/recording.md).

Nothing here imports the server until a fixture is used, so the plugin costs nothing to test runs
that do not use it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import ssl

    from mockllm.api import Loaded, MockServer, Source, Verification
    from mockllm.runtime.engine.conversations import ConversationRecord
    from mockllm.runtime.engine.journal import JournalEntry

__all__ = ["MockLLM"]

MARKER = "mockllm"
INI_SCENARIOS = "mockllm_scenarios"
INI_STRICT = "mockllm_strict"
INI_REQUIRE_ALL_USED = "mockllm_require_all_used"
INI_RECORD_MISSING = "mockllm_record_missing"
INI_PASSTHROUGH = "mockllm_passthrough"
INI_RECORD_PER_TEST = "mockllm_record_per_test"
INI_TLS = "mockllm_tls"
OPTION_RECORD = "--mockllm-record"
RECORD_TO = "x-mockllm-record-to"

NO_MATCH_PREFIX = "mockllm: no step matched"  # runtime/nomatch.py PREFIX (not imported: the plugin stays light)

_HANDLE = pytest.StashKey["MockLLM"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_SCENARIOS,
        "mockllm: scenario files and directories served to every test (relative to the rootdir)",
        type="args",
        default=[],
    )
    parser.addini(
        INI_STRICT,
        "mockllm: fail a test that sent a request no step matched (default true)",
        type="bool",
        default=True,
    )
    parser.addini(
        INI_REQUIRE_ALL_USED,
        "mockllm: fail a test that loaded a step it never used (default false)",
        type="bool",
        default=False,
    )
    parser.addini(
        INI_RECORD_MISSING,
        "mockllm: with --mockllm-record, write what the real APIs answered here (relative to the rootdir)",
        default="",
    )
    parser.addini(
        INI_PASSTHROUGH,
        "mockllm: with --mockllm-record, where requests no step matches go: PROVIDER=URL … or one URL "
        "(default: each provider's public API)",
        type="args",
        default=[],
    )
    parser.addini(
        INI_RECORD_PER_TEST,
        "mockllm: each test's recorded scripts in their own folder under mockllm_record_missing, named "
        "from its node id; each test loads its folder (default false)",
        type="bool",
        default=False,
    )
    parser.addini(
        INI_TLS,
        "mockllm: the session server serves HTTPS and WSS with mockllm's loopback certificate; clients "
        "trust mockllm.ca_file (default false; docs/tls.md)",
        type="bool",
        default=False,
    )
    parser.addoption(
        OPTION_RECORD,
        action="store_true",
        default=False,
        help="mockllm: pass requests no step matches through to the real API (with the client's own "
        "credentials) and write each exchange into mockllm_record_missing",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*paths, strict=None, require_all_used=None): load these .mockllm files or directories "
        "for this test (relative to the test file, then the rootdir); strict / require_all_used override "
        "the ini options for this test",
    )


def _resolve(path: str | os.PathLike[str], test_dir: Path | None, rootdir: Path) -> str:
    """A scenario path: absolute as given; else beside the test file, then under the rootdir."""
    p = Path(path)
    if p.is_absolute():
        return str(p)
    for base in (test_dir, rootdir):
        if base is not None and (base / p).exists():
            return str(base / p)
    looked = [str(b / p) for b in (test_dir, rootdir) if b is not None]
    pytest.fail(
        f"mockllm: scenario path {os.fspath(path)!r} not found (looked for {' and '.join(looked)})", pytrace=False
    )


class MockLLM:
    """The per-test handle of the ``mockllm`` fixture."""

    def __init__(self, server: MockServer, test_dir: Path | None, rootdir: Path, test_id: str = "") -> None:
        self.server = server
        self.test_id = test_id
        self._test_dir = test_dir
        self._rootdir = rootdir
        self.loaded: list[str] = []  # scenarios this test loaded (what ``require_all_used`` checks)
        #: Where this test's passed-through exchanges are written (``mockllm_record_per_test``): its
        #: node id, a folder under ``mockllm_record_missing``; None: that folder itself
        self.record_to: str | None = None
        self.strict = True
        self.require_all_used = False

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.server.url

    def base_url(self, provider: str) -> str:
        """Where provider ``provider``'s official SDK is pointed (see :meth:`MockServer.base_url`)."""
        return self.server.base_url(provider)

    @property
    def ca_file(self) -> str | None:
        """With ``mockllm_tls``: the file clients trust to reach the server; None otherwise."""
        return self.server.ca_file

    def ssl_context(self) -> ssl.SSLContext:
        """With ``mockllm_tls``: a client context trusting the server (see :meth:`MockServer.ssl_context`)."""
        return self.server.ssl_context()

    @property
    def openai_base_url(self) -> str:
        """The URL plus ``/v1``: ``OpenAI(base_url=mockllm.openai_base_url, api_key="test")``."""
        return self.server.openai_base_url

    @property
    def anthropic_base_url(self) -> str:
        return self.server.anthropic_base_url

    @property
    def gemini_base_url(self) -> str:
        return self.server.gemini_base_url

    @property
    def ollama_host(self) -> str:
        return self.server.ollama_host

    def mcp_url(self, name: str) -> str:
        """The script's `mcp server "NAME"` over Streamable HTTP: ``Client(mockllm.mcp_url("weather"))``."""
        return self.server.mcp_url(name)

    def realtime_url(self, model: str = "gpt-realtime") -> str:
        """An OpenAI Realtime session's WebSocket URL: ``RealtimeRunner(...).run(model_config={"url":
        mockllm.realtime_url()})``."""
        return self.server.realtime_url(model)

    def mcp_command(self, name: str, conversation: str | None = None) -> list[str]:
        """The stdio command for `mcp server "NAME"` (see :meth:`MockServer.mcp_command`): spawn it with
        ``StdioServerParameters(command=cmd[0], args=cmd[1:])``."""
        return self.server.mcp_command(name, conversation)

    @property
    def cohere_base_url(self) -> str:
        return self.server.cohere_base_url

    @property
    def mistral_base_url(self) -> str:
        return self.server.mistral_base_url

    @property
    def azure_endpoint(self) -> str:
        return self.server.azure_endpoint

    @property
    def vertex_base_url(self) -> str:
        return self.server.vertex_base_url

    @property
    def bedrock_endpoint_url(self) -> str:
        return self.server.bedrock_endpoint_url

    def conversation_header(self, name: str = "") -> dict[str, str]:
        """``{"x-mockllm-conversation": KEY}`` with a key unique to this test (and to ``name``, to keep
        several chats of one test apart): pass it as the client's default headers. Without it, chats
        are told apart by their opening, so two chats opening with the same words share one state."""
        key = f"{self.test_id}::{name}" if name else self.test_id
        return {"x-mockllm-conversation": key}

    @property
    def record_header(self) -> dict[str, str]:
        """``{"x-mockllm-record-to": NAME}`` naming this test's folder, for a client of another mockllm
        server (``mockllm serve --record-missing``); the plugin's own server needs no header: it writes
        each test's exchanges to the test's folder by itself."""
        return {RECORD_TO: self.record_to or self.test_id}

    def load(self, source: Source) -> Loaded:
        """Load scenarios for this test only: script text, a builder, or a path (relative to the test
        file, then the rootdir). ``use "…"`` inside script text resolves against the test file's
        directory, wherever pytest runs from. A script with errors raises
        :class:`~mockllm.dsl.diagnostics.DiagnosticsError`."""
        from mockllm.api import is_script_text

        if isinstance(source, str | os.PathLike) and not (isinstance(source, str) and is_script_text(source)):
            source = _resolve(source, self._test_dir, self._rootdir)
        loaded = self.server.load(source, base=self._test_dir or self._rootdir)
        self.loaded.extend(name for name in loaded.scenarios if name not in self.loaded)
        return loaded

    def requests(self) -> list[JournalEntry]:
        """The journal of this test's requests, oldest first (see :meth:`MockServer.requests`)."""
        return self.server.requests()

    def conversations(self) -> list[ConversationRecord]:
        """This test's live conversations (see :meth:`MockServer.conversations`)."""
        return self.server.conversations()

    def verify(self) -> Verification:
        return self.server.verify()

    def reset(self, conversation: str | None = None) -> None:
        """Forget conversation state and the journal (or one conversation's); loaded scenarios stay."""
        self.server.reset(conversation)

    def problems(self, shown: str = "") -> str:
        """What fails the test after its body: the strict and require-all-used reports ("" if none).
        A no-match report already in ``shown`` (the test's failure, e.g. the SDK's 404 error carrying
        it) is left out, so each report is printed once."""
        import attrs

        verification = self.verify()
        parts: list[str] = []
        if self.strict:
            unmatched = tuple(e for e in verification.unmatched if not _already_shown(e, shown))
            text = attrs.evolve(verification, unmatched=unmatched).report()
            if text:
                parts.append(text)
            if verification.unmatched:  # the nearest step and its failed condition, on a page (docs/inspector.md)
                parts.append(f"mockllm: see the unmatched request in the inspector: {self.server.url}/_mockllm/ui")
        if self.require_all_used:
            mine = set(self.loaded)
            unused = tuple(s for s in verification.unused_steps if s.get("scenario") in mine)
            if unused:
                from mockllm.api import Verification

                parts.append(Verification(unused_steps=unused).report(unused=True))
        return "\n\n".join(parts)

    def __repr__(self) -> str:
        return f"<mockllm fixture {self.server.url}>"


def _already_shown(entry: dict[str, Any], shown: str) -> bool:
    message = str((entry.get("no_match") or {}).get("message") or "")
    return bool(message) and message.splitlines()[0] in shown


class _NoMatchLogFilter(logging.Filter):
    """Keeps the session server's no-match warnings out of pytest's captured log: the plugin reports
    each unmatched request itself, once, with the failing test. Only that server's: its records come
    from its own thread (``mockllm-PORT``), and another server a test starts keeps its warnings."""

    def __init__(self, thread_name: str) -> None:
        super().__init__()
        self.thread_name = thread_name

    def filter(self, record: logging.LogRecord) -> bool:
        if record.threadName != self.thread_name:
            return True
        return not str(record.msg if not record.args else record.getMessage()).startswith(NO_MATCH_PREFIX)


@pytest.fixture(scope="session")
def mockllm_server(pytestconfig: pytest.Config) -> Iterator[MockServer]:
    """One mockllm server for the session (one per xdist worker), serving ``mockllm_scenarios``."""
    from mockllm.api import MockServer, load

    rootdir = pytestconfig.rootpath
    paths = [_resolve(p, None, rootdir) for p in pytestconfig.getini(INI_SCENARIOS)]
    library = None
    if paths:
        result = load(*paths)
        if not result.ok:
            pytest.fail(f"mockllm: the library in `{INI_SCENARIOS}` has errors:\n\n{result.render()}", pytrace=False)
        library = result.compiled
    server_log = logging.getLogger("mockllm.server")
    with MockServer(library, options=_server_options(pytestconfig)) as server:
        quiet = _NoMatchLogFilter(f"mockllm-{server.port}")
        server_log.addFilter(quiet)
        try:
            yield server
        finally:
            server_log.removeFilter(quiet)


def _server_options(config: pytest.Config) -> Any:
    """The session server's options: the defaults, or with ``--mockllm-record`` passthrough on, or with
    ``mockllm_tls`` serving TLS."""
    tls = bool(config.getini(INI_TLS))
    if not config.getoption(OPTION_RECORD) and not tls:
        return None
    from mockllm.errors import MockllmError
    from mockllm.server.options import ServerOptions
    from mockllm.server.passthrough.passthrough import options_from

    files = None
    if tls:
        from mockllm.server.tls.loopback import loopback_certificate

        try:
            files = loopback_certificate()
        except MockllmError as exc:
            pytest.fail(f"mockllm: {INI_TLS}: {exc}", pytrace=False)
    if not config.getoption(OPTION_RECORD):
        return ServerOptions(no_auth=True, tls=files)

    folder = str(config.getini(INI_RECORD_MISSING) or "")
    try:
        chosen = options_from(list(config.getini(INI_PASSTHROUGH)), str(config.rootpath / folder) if folder else None)
    except MockllmError as exc:
        pytest.fail(f"mockllm: {OPTION_RECORD}: {exc}", pytrace=False)
    return ServerOptions(no_auth=True, passthrough=chosen, tls=files)


def _own_folder(config: pytest.Config, test_id: str) -> Path | None:
    """The test's own folder of recorded scripts (``mockllm_record_per_test``), or None."""
    folder = str(config.getini(INI_RECORD_MISSING) or "")
    if not folder or not config.getini(INI_RECORD_PER_TEST):
        return None
    from mockllm.server.passthrough.writer import target_for

    return target_for(config.rootpath / folder, test_id).folder


def _marker_settings(item: pytest.Item) -> tuple[list[Any], dict[str, Any]]:
    paths: list[Any] = []
    settings: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(MARKER))):  # the closest marker's settings win
        paths.extend(mark.args)
        settings.update(mark.kwargs)
    return paths, settings


@pytest.fixture
def mockllm(mockllm_server: MockServer, request: pytest.FixtureRequest) -> Iterator[MockLLM]:
    """The mock server for this test: back to the session library, conversations and journal empty,
    the test's ``@pytest.mark.mockllm`` scenarios loaded."""
    from mockllm.errors import DiagnosticsError

    config = request.config
    mockllm_server.restore()
    test_path = getattr(request.node, "path", None)
    test_dir = test_path.parent if test_path is not None else None
    handle = MockLLM(mockllm_server, test_dir, config.rootpath, request.node.nodeid)
    handle.strict = bool(config.getini(INI_STRICT))
    handle.require_all_used = bool(config.getini(INI_REQUIRE_ALL_USED))
    paths, settings = _marker_settings(request.node)
    unknown = sorted(set(settings) - {"strict", "require_all_used"})
    if unknown:
        pytest.fail(f"mockllm marker: unknown option {', '.join(unknown)} (strict, require_all_used)", pytrace=False)
    handle.strict = bool(settings.get("strict", handle.strict))
    handle.require_all_used = bool(settings.get("require_all_used", handle.require_all_used))
    own = _own_folder(config, handle.test_id)
    if own is not None:
        handle.record_to = handle.test_id
        if any(own.glob("*.mockllm")):
            paths.append(str(own))
    for path in paths:
        try:
            handle.load(path)
        except DiagnosticsError as exc:
            pytest.fail(f"mockllm: {path} has errors:\n\n{exc}", pytrace=False)
    request.node.stash[_HANDLE] = handle
    mockllm_server.record_to(handle.record_to)
    try:
        yield handle
    finally:
        mockllm_server.record_to(None)


@pytest.fixture
def mockllm_env(mockllm: MockLLM, monkeypatch: pytest.MonkeyPatch) -> MockLLM:
    """``mockllm``, with the environment variables each provider's SDK reads its base URL from
    pointing at the server (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``CO_API_URL``,
    ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` …), and the API keys, regions and versions they need set
    where unset: every provider registry entry's ``client`` says which (docs/pytest.md). With
    ``mockllm_tls``, ``SSL_CERT_FILE`` names the server's certificate authority."""
    from mockllm.runtime.providers.registry import sdk_environment

    if mockllm.ca_file is not None:
        monkeypatch.setenv("SSL_CERT_FILE", mockllm.ca_file)
    urls, defaults = sdk_environment(mockllm.url)
    for key, value in urls.items():
        monkeypatch.setenv(key, value)
    for key, value in defaults.items():
        if not os.environ.get(key):
            monkeypatch.setenv(key, value)
    return mockllm


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """After the test body: a passing test with mockllm problems fails with their report; a failing
    one gets the report as an extra section of its failure output."""
    report: pytest.TestReport = yield
    if call.when != "call" or report.skipped or hasattr(report, "wasxfail"):
        return report
    handle = item.stash.get(_HANDLE, None)
    if handle is None:
        return report
    try:
        problems = handle.problems(report.longreprtext if report.failed else "")
    except Exception as exc:  # the server is gone: say so, without hiding the test's own result
        problems = f"mockllm: could not verify the requests of this test: {exc}"
    if not problems:
        return report
    if report.passed:
        report.outcome = "failed"
        report.longrepr = problems
    else:
        report.sections.append(("mockllm", problems))
    return report
