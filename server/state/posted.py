"""Scenarios posted to a running server (``POST /_mockllm/scenarios``) as a value: the text, how to
read it and the directory its ``use`` imports resolve against. A server whose state is in Redis
(server/state/redis/store.py) shares each post with every process as this value's JSON, and each process
compiles it against its own scenario base, so every process serves the same library."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from mockllm.dsl.diagnostics import Diagnostic
    from mockllm.dsl.machines.compiled import CompiledLibrary

POSTED_FILE = "POST /_mockllm/scenarios"  # the name diagnostics and reports give posted script text


@attrs.frozen
class Posted:
    """Script text (or its JSON form, ``is_json``) whose imports resolve against ``base``, a directory
    below the server's scenario base (the ``?base=`` of the post; "" for the scenario base itself),
    its reports naming it ``file``. Or, from the Python API's ``MockServer.load``, a script file or
    directory below the scenario base (``path``), which each process reads."""

    text: str
    is_json: bool = False
    base: str = ""
    file: str = POSTED_FILE
    path: str = ""

    def compile(self, root: str) -> tuple[CompiledLibrary | None, list[Diagnostic], dict[str, str]]:
        """(library or None, diagnostics, sources), its files and imports confined to scripts inside
        ``root``, the server's scenario base (see ``load_text``)."""
        from mockllm.dsl.diagnostics import error
        from mockllm.dsl.machines.compiler import compile_library
        from mockllm.dsl.parse.loader import load_paths, load_text
        from mockllm.dsl.span import Span

        root = os.path.realpath(root)
        if self.path:
            real = os.path.realpath(os.path.join(root, self.path))
            if os.path.commonpath([real, root]) != root:
                message = f"{self.path}: not below the scenario base {root}"
                return None, [error("import-outside-base", message, Span(self.path, 0, 0, 0, 0))], {}
            library = load_paths([real])
        else:
            base_dir = os.path.join(root, self.base)
            library = load_text(self.text, file=self.file, base_dir=base_dir, is_json=self.is_json, root=root)
        compiled, diagnostics = compile_library(library)
        sources = dict(library.sources)
        if not self.path:
            sources.setdefault(self.file, self.text)
        return compiled, list(diagnostics), sources

    def to_json(self) -> str:
        fields = [self.text, self.is_json, self.base, self.file, self.path]
        return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str) -> Posted:
        text, is_json, base, file, path = json.loads(raw)
        return cls(str(text), bool(is_json), str(base), str(file), str(path))


def merged(library: CompiledLibrary | None, posted: CompiledLibrary) -> CompiledLibrary:
    """``library`` with ``posted`` loaded on top: same-named scenarios replaced, new ones added."""
    from mockllm.dsl.machines.compiler import merge

    return merge(library, posted) if library is not None else posted


__all__ = ["POSTED_FILE", "Posted", "merged"]
