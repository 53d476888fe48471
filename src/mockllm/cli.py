"""The ``mockllm`` command: check, fmt, graph, convert, serve, explain, lsp, import, record.

Every command returns an exit code: 0 success, 1 the user's files or request have problems (reported
as diagnostics), 2 bad usage or an internal error. Without ``--debug`` no traceback ever reaches the
user: an unexpected exception prints one line and exits 2."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO, TypeVar

from mockllm.dsl.providers import PROVIDERS
from mockllm.errors import FileError, MockllmError, UsageError
from mockllm.server.hosts.table import DEFAULT_HOST, HOST_NAMES
from mockllm.server.passthrough.arguments import passthrough_arguments
from mockllm.server.state.poll_window import DEFAULT_POLL_S, MAX_POLL_S
from mockllm.version import installed_version

if TYPE_CHECKING:
    from mockllm.dsl.tree.nodes import ScriptFile

__all__ = ["build_parser", "main"]

PROG = "mockllm"
_N = TypeVar("_N", int, float)
DEFAULT_MAX_CONVERSATIONS = 10_000
DEFAULT_IDLE_SECONDS = 3600.0


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FileError(f"cannot read {path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise FileError(f"cannot read {path}: {exc.strerror or exc}") from None


def _existing_file(raw: str) -> Path:
    path = Path(raw)
    if path.is_dir():
        raise UsageError(f"{raw} is a directory; give a file")
    if not path.is_file():
        raise UsageError(f"{raw}: no such file")
    return path


def _out(text: str, stream: TextIO | None = None) -> None:
    target = stream if stream is not None else sys.stdout
    target.write(text if text.endswith("\n") else text + "\n")


def _err(text: str) -> None:
    _out(text, sys.stderr)


# ---------------------------------------------------------------------------------------------------------
# check


def _cmd_check(args: argparse.Namespace) -> int:
    from mockllm.dsl.diagnostics import has_errors, render, render_json, sort_key, summary
    from mockllm.dsl.machines.compiler import load_and_compile

    _, library, diagnostics = load_and_compile(args.paths)
    diagnostics = sorted(diagnostics, key=sort_key)
    files = len(library.sources)
    if files == 0 and not diagnostics:
        raise FileError(f"no .mockllm or .json files found in {', '.join(args.paths)}")
    if args.format == "json":  # the diagnostics as one JSON array (the shared renderer); the exit code says ok
        _out(render_json(diagnostics))
    else:
        if diagnostics:
            _out(render(diagnostics, library.sources) + "\n")
        _out(summary(diagnostics, files))
    return 1 if has_errors(diagnostics) else 0


# ---------------------------------------------------------------------------------------------------------
# fmt


def _mockllm_files(paths: Sequence[str]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(sorted(f for f in p.rglob("*.mockllm") if f.is_file()))
        elif p.is_file():
            if p.suffix != ".mockllm":
                _err(f"mockllm: skipping {raw}: fmt only rewrites .mockllm files")
                continue
            found.append(p)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return found


def _cmd_fmt(args: argparse.Namespace) -> int:
    from mockllm.dsl.diagnostics import render
    from mockllm.dsl.format.formatter import reformat
    from mockllm.dsl.parse.loader import display_name

    files = _mockllm_files(args.paths)
    changed: list[Path] = []
    refused: list[Path] = []
    for path in files:
        try:
            text = _read(path)
        except FileError as exc:
            _err(f"{PROG}: {exc}")
            refused.append(path)
            continue
        name = str(path)
        result = reformat(text, display_name(path))
        if result.errors:
            _err(render(result.errors, {d.span.file: text for d in result.errors}))
            _err(f"mockllm: not formatting {name}: it has syntax errors (fix them first; `mockllm check {name}`)\n")
            refused.append(path)
            continue
        if result.unsafe or result.text is None:
            _err(
                f"mockllm: not formatting {name}: the canonical layout would change its meaning or lose a comment"
                " (a formatter bug; please report it)"
            )
            refused.append(path)
            continue
        new = result.text
        if new == text:
            continue
        changed.append(path)
        if args.check:
            _out(f"would reformat {name}")
        else:
            path.write_text(new, encoding="utf-8")
            _out(f"reformatted {name}")
    unchanged = len(files) - len(changed) - len(refused)
    verb = "would be reformatted" if args.check else "reformatted"
    parts = [f"{len(changed)} file{'s' if len(changed) != 1 else ''} {verb}", f"{unchanged} unchanged"]
    if refused:
        parts.append(f"{len(refused)} left alone (see above)")
    _out(", ".join(parts))
    if refused:
        return 1
    return 1 if args.check and changed else 0


# ---------------------------------------------------------------------------------------------------------
# graph


def _cmd_graph(args: argparse.Namespace) -> int:
    from mockllm.dsl.diagnostics import has_errors, render
    from mockllm.dsl.machines.compiler import load_and_compile
    from mockllm.dsl.machines.graph import to_dot, to_mermaid_document
    from mockllm.dsl.parse.loader import display_name

    _existing_file(args.file)
    compiled, library, diagnostics = load_and_compile([args.file])
    if compiled is None or has_errors(diagnostics):
        _err(render(diagnostics, library.sources))
        _err(f"mockllm: cannot draw {args.file}: it has errors")
        return 1
    own = display_name(args.file)
    machines = [m for m in compiled.machines if m.file == own] or list(compiled.machines)
    machines.sort(key=lambda m: m.load_order)
    if args.scenario is not None:
        names = [m.name for m in machines]
        machines = [m for m in machines if m.name == args.scenario]
        if not machines:
            close = difflib.get_close_matches(args.scenario, names, n=1)
            hint = f'; did you mean "{close[0]}"?' if close else f" (scenarios: {', '.join(names) or 'none'})"
            raise UsageError(f'no scenario named "{args.scenario}" in {args.file}{hint}')
    if not machines:
        _err(f"mockllm: {args.file} holds no scenario")
        return 1
    if args.format == "dot":
        _out("\n".join(to_dot(m) for m in machines))
    else:
        _out(to_mermaid_document(machines))
    return 0


# ---------------------------------------------------------------------------------------------------------
# convert


def _cmd_convert(args: argparse.Namespace) -> int:
    from mockllm.dsl.diagnostics import has_errors, render
    from mockllm.dsl.parse.loader import display_name

    source = Path(args.file)
    if source.suffix not in (".mockllm", ".json"):
        raise UsageError(f"{args.file}: convert takes a .mockllm or a .json file")
    _existing_file(args.file)
    text = _read(source)
    name = display_name(source)
    if source.suffix == ".mockllm":
        from mockllm.dsl.parse.parser import parse_text
        from mockllm.dsl.tree.jsonform import to_json_text

        tree, diagnostics = parse_text(text, name)
        render_tree: Callable[[ScriptFile], str] = to_json_text
    else:
        from mockllm.dsl.format.formatter import format_file
        from mockllm.dsl.tree.jsonform import from_json_text

        tree, diagnostics = from_json_text(text, name)
        render_tree = format_file
    if tree is None or has_errors(diagnostics):
        _err(render(diagnostics, {name: text}))
        _err(f"mockllm: cannot convert {args.file}: it has errors")
        return 1
    # what parses may still be wrong (a regex that does not compile, an unknown subject …): convert
    # writes only a script that `mockllm check` accepts, never a broken file in the other form
    from mockllm.dsl.machines.compiler import load_and_compile

    _compiled, library, checked = load_and_compile([args.file])
    errors = [d for d in checked if d.is_error]
    if errors:
        _err(render(errors, library.sources))
        _err(f"mockllm: cannot convert {args.file}: it has errors")
        return 1
    result = render_tree(tree)
    if args.output is None or args.output == "-":
        sys.stdout.write(result)
    else:
        Path(args.output).write_text(result, encoding="utf-8")
        _err(f"wrote {args.output}")
    return 0


# ---------------------------------------------------------------------------------------------------------
# serve and explain (implemented elsewhere, loaded on use)


def _delegate(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        import importlib

        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module.startswith(exc.name):
                raise UsageError(f"the {args.command} command is not available in this installation") from exc
            raise
        result: int = getattr(mod, function)(args)
        return result

    return run


def _cmd_serve(args: argparse.Namespace) -> int:
    # the server's limits are read only when serving, so other commands skip importing the server
    from mockllm.server.options import DEFAULT_HANG_LIMIT_S, DEFAULT_MAX_BODY_BYTES, DEFAULT_SHUTDOWN_GRACE_S

    if args.shutdown_grace is None:
        args.shutdown_grace = DEFAULT_SHUTDOWN_GRACE_S
    if args.max_body_bytes is None:
        args.max_body_bytes = DEFAULT_MAX_BODY_BYTES
    if args.hang_limit is None:
        args.hang_limit = DEFAULT_HANG_LIMIT_S
    return _delegate("mockllm.server.runner", "serve_command")(args)


def _cmd_lsp(args: argparse.Namespace) -> int:
    try:
        import pygls  # noqa: F401
    except ModuleNotFoundError:
        raise MockllmError("the language server needs pygls: pip install 'mockllm[lsp]'") from None
    from mockllm.lsp.server import serve_stdio

    return serve_stdio()


# ---------------------------------------------------------------------------------------------------------
# Parser


def _number(parse: Callable[[str], _N], what: str, ok: Callable[[_N], bool], within: str) -> Callable[[str], _N]:
    """An argparse type: the text read by ``parse`` (else "expected {what}"), kept when ``ok`` (else
    "expected {within}")."""

    def convert(text: str) -> _N:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {within}, got {text}")
        return value

    return convert


_positive_int = _number(int, "a whole number", lambda v: v >= 1, "a number above 0")
_poll_microseconds = _number(
    int, "a whole number of microseconds", lambda v: 0 <= v <= MAX_POLL_S * 1e6, f"0 to {round(MAX_POLL_S * 1e6)}"
)
_port = _number(int, "a port number", lambda v: 0 <= v <= 65535, "a port between 0 and 65535")
_seconds = _number(float, "a number of seconds", lambda v: v > 0, "a number of seconds above 0")
_seconds_or_zero = _number(
    float, "a number of seconds", lambda v: 0 <= v < float("inf"), "a number of seconds, 0 or more"
)


def _listen(p: argparse.ArgumentParser) -> None:
    """Where a server command listens."""
    p.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    p.add_argument("--port", type=_port, default=8080, help="default: 8080; 0 picks a free port")


class Command(NamedTuple):
    """One command of ``mockllm``: its name, what it runs, its one-line summary (``mockllm --help``), its
    description (``mockllm NAME --help``) and what adds its arguments (None: it takes none)."""

    name: str
    run: Callable[[argparse.Namespace], int]
    summary: str
    description: str
    arguments: Callable[[argparse.ArgumentParser], None] | None = None


def _check_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help=".mockllm/.json files or directories")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def _fmt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--check", action="store_true", help="only list files that would change; exit 1 if any")


def _graph_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("--scenario", metavar="NAME", help="only this scenario")
    p.add_argument("--format", choices=("mermaid", "dot"), default="mermaid", help="default: mermaid")


def _convert_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")


def _mcp_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the name of the `mcp server` block")
    p.add_argument("paths", nargs="*", metavar="PATH", help=".mockllm/.json files or directories")
    p.add_argument(
        "--url",
        metavar="URL",
        help="relay to a running server's /mcp/NAME instead of serving PATH here (its library, "
        "conversations and journal)",
    )
    p.add_argument(
        "--conversation", metavar="KEY", help="with --url: the conversation the calls belong to (the chat's key)"
    )


def _tls_arguments(p: argparse.ArgumentParser) -> None:
    """Serving HTTPS and WSS (docs/tls.md)."""
    p.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS and WSS with a certificate mockllm makes for localhost, 127.0.0.1 and ::1 (kept in "
        "your cache; the 'tls' extra); start-up says which file clients trust",
    )
    p.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS and WSS with this certificate (PEM; with --tls-key)")
    p.add_argument("--tls-key", metavar="FILE", help="the private key of --tls-cert (PEM)")


def _state_arguments(p: argparse.ArgumentParser) -> None:
    """Where conversation state lives, and the processes that share it."""
    p.add_argument(
        "--state",
        metavar="URL",
        help="keep conversation state and the journal in Redis (redis://HOST:PORT/DB), shared by every "
        "server given the same URL (the 'redis' extra); default: in this process's memory",
    )
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="serve from N processes on one port (above 1 needs --state; default: 1)",
    )
    p.add_argument(
        "--state-poll",
        type=_poll_microseconds,
        metavar="MICROSECONDS",
        help="with --state: how long a request waiting for Redis's answer keeps its process polling before "
        f"it lets the core sleep, 0 to {round(MAX_POLL_S * 1e6)} (0: never; default: {round(DEFAULT_POLL_S * 1e6)})",
    )


def _admin_arguments(p: argparse.ArgumentParser) -> None:
    """Who may use the admin API, and what scripts posted to it may import."""
    p.add_argument(
        "--admin-token",
        metavar="TOKEN",
        help="require this bearer token for the admin API (visible in `ps`: prefer $MOCKLLM_ADMIN_TOKEN "
        "or --admin-token-file)",
    )
    p.add_argument("--admin-token-file", metavar="FILE", help="read the admin token from this file's first line")
    p.add_argument(
        "--scenario-base",
        metavar="DIR",
        help="where `use` in scripts posted to the admin API resolves; they may import nothing outside it "
        "(default: the first PATH's directory, else the working directory)",
    )


def _limit_arguments(p: argparse.ArgumentParser) -> None:
    """The limits on a request: its body, a hang."""
    p.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        metavar="N",
        help="largest request body accepted, in bytes (default: the server's built-in limit, 10 MiB)",
    )
    p.add_argument(
        "--hang-limit",
        type=_seconds,
        metavar="SECONDS",
        help="longest a `hang` reply holds a connection (default: the server's built-in limit, 300)",
    )


def _watch_arguments(p: argparse.ArgumentParser) -> None:
    """Reloading the library when its files change."""
    p.add_argument(
        "--watch",
        action="store_true",
        help="reload the library when its files change; a broken edit keeps the previous library serving",
    )
    p.add_argument(
        "--openai-prefix",
        action="append",
        metavar="PATH",
        help="also serve OpenAI's chat, embedding and model routes under this base path (repeatable): "
        "/groq/openai/v1 for a Groq client with base_url …/groq",
    )
    p.add_argument(
        "--cors",
        nargs="+",
        metavar="ORIGIN",
        help="let pages of these browser origins call the mock (`*`: any; default: none); the admin API only "
        "with --admin-token",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="at start-up, list every file of the library and its scenarios (by default: how many from how many files)",
    )
    p.add_argument(
        "--watch-interval",
        type=_seconds,
        default=0.5,
        metavar="SECONDS",
        help="how often --watch looks at the files (default: 0.5)",
    )


def _conversation_arguments(p: argparse.ArgumentParser) -> None:
    """How many conversations are kept, and for how long."""
    p.add_argument(
        "--max-conversations",
        type=_positive_int,
        default=DEFAULT_MAX_CONVERSATIONS,
        metavar="N",
        help=f"conversations kept before the least recently used is evicted (default: {DEFAULT_MAX_CONVERSATIONS})",
    )
    p.add_argument(
        "--idle-seconds",
        type=_seconds,
        default=DEFAULT_IDLE_SECONDS,
        metavar="S",
        help=f"evict a conversation idle this long (default: {DEFAULT_IDLE_SECONDS:g})",
    )
    passthrough_arguments(p)


def _serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH")
    _listen(p)
    p.add_argument("--server", choices=HOST_NAMES, default=DEFAULT_HOST, help=f"default: {DEFAULT_HOST}")
    _tls_arguments(p)
    _state_arguments(p)
    p.add_argument("--no-auth", action="store_true", help="do not check provider credentials")
    p.add_argument("--lenient", action="store_true", help="do not validate conversation histories")
    _admin_arguments(p)
    _limit_arguments(p)
    _watch_arguments(p)
    p.add_argument(
        "--shutdown-grace",
        type=_seconds_or_zero,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, how long open streams may run on before they end at once "
        "(default: the server's built-in grace, 5)",
    )
    _conversation_arguments(p)


def _explain_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("library", metavar="LIBRARY", help="a .mockllm/.json file or a directory")
    p.add_argument(
        "request",
        metavar="REQUEST_JSON",
        nargs="+",
        help="the request to explain (a body, a recorded request, or a journal export: GET /_mockllm/requests); "
        "files before it are the conversation's earlier requests, replayed first",
    )
    p.add_argument(
        "--entry",
        type=int,
        metavar="ID",
        help="with a journal export: the id of the entry to explain (default: the last that matched no step "
        "or failed an expectation)",
    )
    p.add_argument(
        "--no-replay",
        action="store_true",
        help="explain the request as the start of a conversation, without replaying its history",
    )
    p.add_argument(
        "--provider",
        choices=PROVIDERS,
        help="the API the request was sent to (default: guessed from the body)",
    )
    p.add_argument("--endpoint", metavar="PATH", help="the request path, e.g. /v1/chat/completions")
    p.add_argument("--format", choices=("text", "json"), default="text", help="default: text")


def _import_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="cassette files or directories of them")
    p.add_argument("--out", required=True, metavar="DIR", help="where to write the scripts")


def _record_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, metavar="DIR", help="where to write the scripts")
    p.add_argument(
        "--upstream",
        action="append",
        default=[],
        metavar="URL|PROVIDER=URL",
        help="where to forward: one base URL for every provider, or PROVIDER=URL (repeatable; "
        f"providers: {', '.join(PROVIDERS)}); default: each provider's public API",
    )
    _listen(p)
    p.add_argument("--keep-timing", action="store_true", help="write the measured latency and chunk spacing")
    p.add_argument("--timeout", type=_seconds, default=600.0, help="upstream read timeout in seconds; default: 600")


#: every command, in the order `mockllm --help` lists them: each adds its parser and its arguments
COMMANDS: tuple[Command, ...] = (
    Command(
        "check",
        _cmd_check,
        "validate scripts and report every problem",
        "Load files and directories as one library and report every problem.",
        _check_arguments,
    ),
    Command(
        "fmt",
        _cmd_fmt,
        "rewrite .mockllm files in canonical layout",
        "Rewrite .mockllm files (directories: recursively) in canonical layout.",
        _fmt_arguments,
    ),
    Command(
        "graph",
        _cmd_graph,
        "draw each scenario's state machine",
        "Print each scenario's state machine as a Mermaid flowchart or Graphviz DOT.",
        _graph_arguments,
    ),
    Command(
        "convert",
        _cmd_convert,
        "convert between .mockllm text and the JSON form",
        "Convert a .mockllm file to the JSON form, or a .json file to .mockllm text.",
        _convert_arguments,
    ),
    Command(
        "mcp",
        _delegate("mockllm.server.mcp.stdio", "mcp_command"),
        "serve one `mcp server` block over stdio",
        'Serve the `mcp server "NAME"` block of a library over stdio (one JSON-RPC message per line), '
        "for MCP clients that spawn their tool servers. Without PATH: $MOCKLLM_SCENARIOS.",
        _mcp_arguments,
    ),
    Command(
        "serve",
        _cmd_serve,
        "serve a library over HTTP",
        "Load a library and serve it. Without PATH: $MOCKLLM_SCENARIOS, else echo only.",
        _serve_arguments,
    ),
    Command(
        "explain",
        _delegate("mockllm.explain", "explain_command"),
        "say which step a recorded request would match",
        "Say which step a recorded request would match in its real position, or why each "
        "candidate fails. The conversation's earlier turns (the other files given, the journal's earlier "
        "entries, and the turns in the request's own history) are replayed first.",
        _explain_arguments,
    ),
    Command(
        "lsp",
        _cmd_lsp,
        "run the language server for editors (stdio)",
        "Speak the Language Server Protocol on stdin/stdout: diagnostics, completion, hover, "
        "go to definition, symbols and formatting for .mockllm files. Needs the `lsp` extra.",
    ),
    Command(
        "import",
        _delegate("mockllm.recording", "import_command"),
        "turn VCR cassettes, HAR files and JSON pairs into .mockllm scripts",
        "Turn recorded HTTP traffic (VCR.py / pytest-recording YAML cassettes, HAR 1.2 files, "
        "JSON request/response pairs) into readable .mockllm scripts, one per conversation.",
        _import_arguments,
    ),
    Command(
        "record",
        _delegate("mockllm.server.record.recorder", "record_command"),
        "a recording proxy: forward to the real APIs, write each conversation as a script",
        "Serve every provider route on one port, forward each request to the provider's API "
        "and stream its answer back, writing each completed exchange into a .mockllm script per conversation.",
        _record_arguments,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show full tracebacks for internal errors"
    )
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="A mock LLM server for end-to-end tests, driven by .mockllm scenario scripts.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {installed_version()}")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for command in COMMANDS:
        p = sub.add_parser(command.name, parents=[debug], help=command.summary, description=command.description)
        p.set_defaults(func=command.run)
        if command.arguments is not None:
            command.arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: argparse already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    debug = bool(getattr(args, "debug", False))
    try:
        code: int = args.func(args)
        return code
    except MockllmError as exc:  # a mistake of the user's, said in one line (UsageError, FileError …)
        _err(f"{PROG}: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 1
    except Exception as exc:
        if debug:
            raise
        _err(f"{PROG}: internal error: {type(exc).__name__}: {exc}; rerun with --debug for details")
        return 2


def _quiet_broken_pipe() -> None:
    """The reader went away (``mockllm graph … | head``): stop writing without a second error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
