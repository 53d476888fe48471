"""Loading a library: files and directories, their ``use`` imports, in load order.

A library is every file given (directories searched recursively for ``*.mockllm`` and ``*.json``,
sorted), plus every file they import. Imports load before the file that imports them, and a file
loads once however often it is imported. Loading never raises for a user's mistake: a missing file,
an unreadable one, an import cycle or a syntax error becomes a :class:`Diagnostic` in
:attr:`Library.diagnostics`. This module is the only part of ``mockllm.dsl`` that reads files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from mockllm.dsl.diagnostics import Diagnostic, error
from mockllm.dsl.span import Span
from mockllm.dsl.tree.nodes import Audio, Image, NamedReply, ReplyBlock, ReplyRef, ScriptFile, VectorsFrom

SCRIPT_SUFFIXES = (".mockllm", ".json")


@attrs.frozen
class Library:
    """The files of a library in load order, with what loading them reported.

    ``aliases`` maps a file's name to its imports (alias → the imported file's name); an alias whose
    file could not be loaded maps to a name that is not in ``files``."""

    files: tuple[ScriptFile, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    sources: Mapping[str, str] = attrs.field(factory=dict)
    aliases: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    # `vectors from "PATH"` files, read: (the script's name, PATH as written) → the vectors
    vectors: Mapping[tuple[str, str], tuple[tuple[float, ...], ...]] = attrs.field(factory=dict)
    # `audio "PATH"` and `image "PATH"` files, read: (the script's name, PATH as written) → their bytes
    media: Mapping[tuple[str, str], bytes] = attrs.field(factory=dict, repr=False)

    def file(self, name: str) -> ScriptFile | None:
        for f in self.files:
            if f.path == name:
                return f
        return None

    def named_reply(self, file: str, ref: ReplyRef) -> NamedReply | None:
        """The named reply ``reply like NAME`` / ``reply like ALIAS.NAME`` refers to from ``file``."""
        target = file
        if ref.alias is not None:
            target_name = self.aliases.get(file, {}).get(ref.alias)
            if target_name is None:
                return None
            target = target_name
        script = self.file(target)
        if script is None:
            return None
        for reply in script.replies:
            if reply.name == ref.name:
                return reply
        return None


def display_name(path: str | os.PathLike[str]) -> str:
    """A file's name in spans: relative to the working directory when it lies below it."""
    absolute = os.path.abspath(os.fspath(path))
    try:
        rel = os.path.relpath(absolute)
    except ValueError:  # another drive on Windows
        return absolute
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return absolute
    return rel


def _parse(text: str, name: str, is_json: bool | None = None) -> tuple[ScriptFile | None, list[Diagnostic]]:
    if is_json is None:
        is_json = name.endswith(".json") or text.lstrip().startswith("{")
    if is_json:
        from mockllm.dsl.tree.jsonform import from_json_text

        return from_json_text(text, name)
    from mockllm.dsl.parse.parser import parse_text

    return parse_text(text, name)


@attrs.define
class _Loader:
    files: list[ScriptFile] = attrs.field(factory=list)
    diagnostics: list[Diagnostic] = attrs.field(factory=list)
    sources: dict[str, str] = attrs.field(factory=dict)
    aliases: dict[str, dict[str, str]] = attrs.field(factory=dict)
    loaded: dict[str, str] = attrs.field(factory=dict)  # real path -> display name
    vectors: dict[tuple[str, str], tuple[tuple[float, ...], ...]] = attrs.field(factory=dict)
    media: dict[tuple[str, str], bytes] = attrs.field(factory=dict)
    stack: list[tuple[str, str]] = attrs.field(factory=list)  # (real path, display name) being loaded
    root: str | None = None  # when set (a real path), imports resolve only to scripts below it

    def library(self) -> Library:
        return Library(
            files=tuple(self.files),
            diagnostics=tuple(self.diagnostics),
            sources=dict(self.sources),
            aliases={k: dict(v) for k, v in self.aliases.items()},
            vectors=dict(self.vectors),
            media=dict(self.media),
        )

    def load_file(self, path: str, name: str) -> None:
        """Read, parse and add one file (and, first, its imports)."""
        real = os.path.realpath(path)
        if real in self.loaded:
            return
        self.loaded[real] = name
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except UnicodeDecodeError as exc:
            self.diagnostics.append(
                error("read-error", f"cannot read {name}: not UTF-8 text ({exc.reason})", Span(name, 0, 0, 0, 0))
            )
            return
        except OSError as exc:
            self.diagnostics.append(
                error("read-error", f"cannot read {name}: {exc.strerror or exc}", Span(name, 0, 0, 0, 0))
            )
            return
        self.add_text(text, name, os.path.dirname(os.path.abspath(path)), real)

    def add_text(self, text: str, name: str, base_dir: str, real: str, is_json: bool | None = None) -> None:
        self.sources[name] = text
        try:
            script, diags = _parse(text, name, is_json)
        except Exception as exc:  # a parser bug must not take the loader down with it
            script, diags = None, [error("internal", f"cannot parse {name}: {exc}", Span(name, 0, 0, 0, 0))]
        self.diagnostics.extend(diags)
        if script is None:
            return
        if script.path != name:
            script = attrs.evolve(script, path=name)
        self.stack.append((real, name))
        self.aliases[name] = {}
        for use in script.uses:
            self.load_import(name, base_dir, use.path, use.alias, use.span)
        self.stack.pop()
        for el in _vector_files(script):
            self.load_vectors(name, base_dir, el)
        for media in _media_files(script):
            self.load_media(name, base_dir, media)
        self.files.append(script)

    def load_vectors(self, name: str, base_dir: str, el: VectorsFrom) -> None:
        """Read the file of a `vectors from` line (relative to the script), or report why it cannot be used."""
        key = (name, el.path)
        if key in self.vectors:
            return
        target = os.path.normpath(os.path.join(base_dir, el.path))
        at = el.span if el.span.line > 0 else Span(name, 0, 0, 0, 0)
        hint = "the file holds a JSON array of vectors, e.g. [[0.1, 0.2], [0.3, 0.4]], at a path relative to the script"
        if self.root is not None and not _inside(os.path.realpath(target), self.root):
            message = f'vectors file "{el.path}" is not inside the scenario base ({self.root})'
            self.diagnostics.append(error("vectors-file", message, at, hint=hint))
            return
        try:
            with open(target, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.diagnostics.append(
                error("vectors-file", f'cannot read vectors file "{el.path}": {why}', at, hint=hint)
            )
            return
        vectors, problem = parse_vectors(text)
        if problem is not None:
            self.diagnostics.append(error("vectors-file", f'vectors file "{el.path}": {problem}', at, hint=hint))
            return
        self.vectors[key] = vectors

    def load_media(self, name: str, base_dir: str, el: Audio | Image) -> None:
        """Read the file of an `audio "PATH"` or `image "PATH"` line (relative to the script), or report why
        it cannot be used."""
        path = el.path or ""
        key = (name, path)
        if key in self.media:
            return
        word = "audio" if isinstance(el, Audio) else "image"
        target = os.path.normpath(os.path.join(base_dir, path))
        at = el.span if el.span.line > 0 else Span(name, 0, 0, 0, 0)
        hint = f'`{word} "PATH"` names a file beside the script (a path relative to it)'
        if self.root is not None and not _inside(os.path.realpath(target), self.root):
            message = f'{word} file "{path}" is not inside the scenario base ({self.root})'
            self.diagnostics.append(error("media-file", message, at, hint=hint))
            return
        try:
            with open(target, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            why = exc.strerror or str(exc)
            self.diagnostics.append(error("media-file", f'cannot read {word} file "{path}": {why}', at, hint=hint))
            return
        self.media[key] = data

    def load_import(self, importer: str, base_dir: str, rel: str, alias: str, span: Span) -> None:
        target = os.path.normpath(os.path.join(base_dir, rel))
        target_name = display_name(target)
        at = span if span.line > 0 else Span(importer, 0, 0, 0, 0)
        if alias not in self.aliases[importer]:
            self.aliases[importer][alias] = target_name
        real = os.path.realpath(target)
        if self.root is not None and not _confined(real, self.root):
            self.diagnostics.append(
                error(
                    "import-outside-base",
                    f'imported file "{rel}" is not a script inside the scenario base ({self.root})',
                    at,
                    hint="a script sent to a server can import only .mockllm and .json files below its "
                    "scenario base (mockllm serve --scenario-base)",
                )
            )
            return
        chain = [r for r, _ in self.stack]
        if real in chain:
            names = [n for _, n in self.stack[chain.index(real) :]] + [target_name]
            self.diagnostics.append(
                error(
                    "import-cycle",
                    "import cycle: " + " → ".join(names),
                    at,
                    hint="move the shared replies into a file that neither imports",
                )
            )
            return
        if real in self.loaded:
            self.aliases[importer][alias] = self.loaded[real]
            return
        if not os.path.isfile(target):
            what = "is a directory, not a file" if os.path.isdir(target) else "was not found"
            if os.path.normpath(rel) != target_name:
                what += f" (looked for {target_name})"
            self.diagnostics.append(
                error(
                    "not-found",
                    f'imported file "{rel}" {what}',
                    at,
                    hint=(
                        f"paths in `use` in script text resolve against its base directory, here {base_dir} "
                        + (
                            "(this server's scenario base, or the ?base= directory below it; servers sharing "
                            "their state each read imports from their own)"
                            if self.root is not None
                            else "(the Python API takes `base=`)"
                        )
                        if "\0" in self.stack[-1][0]
                        else f"paths in `use` are relative to the importing file ({importer})"
                    ),
                )
            )
            return
        self.load_file(target, target_name)


def _inside(real: str, root: str) -> bool:
    """Whether ``real`` (a resolved path) lies below ``root`` (links already followed, so a link out of
    the base does not count as inside it)."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _confined(real: str, root: str) -> bool:
    """Whether ``real`` (a resolved path) names a script file below ``root``."""
    return _inside(real, root) and os.path.splitext(real)[1] in SCRIPT_SUFFIXES


def _vector_files(script: ScriptFile) -> list[VectorsFrom]:
    """Every `vectors from` line of a script (named replies, steps, the fallback)."""
    blocks = [r.elements for r in script.replies]
    for sc in script.scenarios:
        blocks.extend(st.reply.elements for st in sc.steps if isinstance(st.reply, ReplyBlock))
    if script.defaults is not None and isinstance(script.defaults.fallback, ReplyBlock):
        blocks.append(script.defaults.fallback.elements)
    return [el for elements in blocks for el in elements if isinstance(el, VectorsFrom)]


def _media_files(script: ScriptFile) -> list[Audio | Image]:
    """Every `audio "PATH"` and `image "PATH"` line of a script (named replies, steps, the fallback)."""
    blocks = [r.elements for r in script.replies]
    for sc in script.scenarios:
        blocks.extend(st.reply.elements for st in sc.steps if isinstance(st.reply, ReplyBlock))
    if script.defaults is not None and isinstance(script.defaults.fallback, ReplyBlock):
        blocks.append(script.defaults.fallback.elements)
    return [el for elements in blocks for el in elements if isinstance(el, Audio | Image) and el.path is not None]


def parse_vectors(text: str) -> tuple[tuple[tuple[float, ...], ...], str | None]:
    """The vectors of a vectors file (a JSON array of equally long arrays of numbers), or the problem."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return (), f"not valid JSON ({exc})"
    if not isinstance(data, list) or not data:
        return (), "expected a non-empty JSON array of vectors"
    out: list[tuple[float, ...]] = []
    for i, row in enumerate(data):
        if not isinstance(row, list) or not row:
            return (), f"item {i} is not a non-empty array of numbers"
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in row):
            return (), f"vector {i} holds something that is not a number"
        if out and len(row) != len(out[0]):
            return (), f"vector {i} has {len(row)} numbers, vector 0 has {len(out[0])}: all must be as long"
        out.append(tuple(float(v) for v in row))
    return tuple(out), None


def _expand(path: str | os.PathLike[str]) -> list[Path] | None:
    p = Path(path)
    if p.is_dir():
        found = [f for f in p.rglob("*") if f.is_file() and f.suffix in SCRIPT_SUFFIXES]
        return sorted(found, key=lambda f: f.relative_to(p).as_posix())
    if p.is_file():
        return [p]
    return None


def load_paths(paths: Sequence[str | os.PathLike[str]]) -> Library:
    """Load files and directories in the order given (a directory's files sorted by path)."""
    loader = _Loader()
    for path in paths:
        found = _expand(path)
        if found is None:
            shown = os.fspath(path)
            loader.diagnostics.append(
                error(
                    "not-found",
                    f"{shown}: no such file or directory",
                    Span(shown, 0, 0, 0, 0),
                    hint="give a .mockllm or .json file, or a directory holding them",
                )
            )
            continue
        for f in found:
            loader.load_file(str(f), display_name(f))
    return loader.library()


def load_text(
    text: str,
    file: str = "<text>",
    base_dir: str | os.PathLike[str] | None = None,
    is_json: bool | None = None,
    root: str | os.PathLike[str] | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Library:
    """Load one script given as text (``.mockllm`` syntax, or the JSON form when it starts with ``{``
    or ``is_json`` says so).

    ``path`` names the file on disk the text stands for (an editor's unsaved buffer): an import of
    that file is then this text (or an import cycle), never a second copy read from disk.

    Its imports resolve against ``base_dir`` (default: the working directory). With ``root``, every
    import -- and every import of an imported file -- must be a ``.mockllm`` or ``.json`` file inside
    ``root`` (after following links); anything else is an ``import-outside-base`` error and is not
    read, so no other file's content can reach an error message."""
    loader = _Loader(root=os.path.realpath(root) if root is not None else None)
    base = os.path.abspath(base_dir) if base_dir is not None else os.getcwd()
    real = os.path.realpath(path) if path is not None else os.path.join(base, f"\0{file}")
    loader.loaded[real] = file
    loader.add_text(text, file, base, real, is_json)
    return loader.library()
