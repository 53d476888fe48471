"""``mockllm lsp``: the language server, a thin pygls adapter over the pure editor functions.

Everything an editor asks is answered by :mod:`mockllm.lsp.document` (diagnostics as ``check``
gives them), :mod:`~mockllm.lsp.completion`, :mod:`~mockllm.lsp.navigation` and
:mod:`~mockllm.lsp.edits`; this module only converts positions (the client's UTF-16 units to
characters and back), URIs to paths, and our values to LSP types, and debounces diagnostics while
the user types. pygls comes with the ``lsp`` extra.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from mockllm.lsp import completion, document, edits, navigation
from mockllm.version import installed_version

#: How long the text must stay unchanged before it is checked again.
DEBOUNCE_SECONDS = 0.25

_ITEM_KINDS = {
    "keyword": t.CompletionItemKind.Keyword,
    "subject": t.CompletionItemKind.Property,
    "predicate": t.CompletionItemKind.Operator,
    "value": t.CompletionItemKind.EnumMember,
    "step": t.CompletionItemKind.Method,
    "reply": t.CompletionItemKind.Function,
    "file": t.CompletionItemKind.File,
    "folder": t.CompletionItemKind.Folder,
}
_SYMBOL_KINDS = {
    "scenario": t.SymbolKind.Class,
    "step": t.SymbolKind.Method,
    "reply": t.SymbolKind.Function,
    "defaults": t.SymbolKind.Object,
    "import": t.SymbolKind.Module,
}
_SEVERITY = {"error": t.DiagnosticSeverity.Error, "warning": t.DiagnosticSeverity.Warning}


class MockllmServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("mockllm", installed_version(), text_document_sync_kind=t.TextDocumentSyncKind.Incremental)
        self.pending: dict[str, asyncio.Task[None]] = {}


def _path(uri: str) -> str:
    return to_fs_path(uri) or os.path.join(os.getcwd(), "untitled.mockllm")


def _analyse(ls: MockllmServer, uri: str) -> tuple[document.Document, TextDocument]:
    text_doc = ls.workspace.get_text_document(uri)
    return document.analyse(_path(uri), text_doc.source), text_doc


def _pos(text_doc: TextDocument, pos: t.Position) -> document.Position:
    lines = text_doc.lines
    if pos.line >= len(lines):  # the empty last line after a final newline: nothing to convert
        return document.Position(pos.line, pos.character)
    p = text_doc.position_codec.position_from_client_units(lines, t.Position(pos.line, pos.character))
    return document.Position(p.line, p.character)


def _lines_of(path: str, ls: MockllmServer, text_doc: TextDocument | None) -> Sequence[str]:
    open_docs = [text_doc] if text_doc is not None else []
    open_docs += ls.workspace.text_documents.values()
    for other in open_docs:
        if _path(other.uri) == path:
            lines: Sequence[str] = other.lines
            return lines
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):
        return []


def _range(r: document.Range, lines: Sequence[str], text_doc: TextDocument | None = None) -> t.Range:
    server = t.Range(t.Position(r.start.line, r.start.character), t.Position(r.end.line, r.end.character))
    codec = text_doc.position_codec if text_doc is not None else None
    if codec is None or not lines:
        return server
    return codec.range_to_client_units(list(lines), server)


def _location(loc: document.Location, ls: MockllmServer, text_doc: TextDocument | None) -> t.Location:
    lines = _lines_of(loc.path, ls, text_doc)
    return t.Location(from_fs_path(loc.path) or loc.path, _range(loc.range, lines, text_doc))


def _publish(ls: MockllmServer, uri: str) -> None:
    doc, text_doc = _analyse(ls, uri)
    out = [
        t.Diagnostic(
            range=_range(p.range, text_doc.lines, text_doc),
            message=p.message,
            severity=_SEVERITY[p.severity],
            code=p.code,
            source="mockllm",
            related_information=[
                t.DiagnosticRelatedInformation(_location(r.location, ls, text_doc), r.message) for r in p.related
            ]
            or None,
        )
        for p in document.problems(doc)
    ]
    ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri, out, text_doc.version))


async def _publish_later(ls: MockllmServer, uri: str, version: int | None) -> None:
    await asyncio.sleep(DEBOUNCE_SECONDS)
    text_doc = ls.workspace.get_text_document(uri)
    if text_doc.version == version:
        _publish(ls, uri)


def build() -> MockllmServer:
    ls = MockllmServer()

    @ls.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MockllmServer, params: t.DidOpenTextDocumentParams) -> None:
        _publish(ls, params.text_document.uri)

    @ls.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MockllmServer, params: t.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if (old := ls.pending.pop(uri, None)) is not None:
            old.cancel()
        ls.pending[uri] = asyncio.ensure_future(_publish_later(ls, uri, params.text_document.version))

    @ls.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MockllmServer, params: t.DidSaveTextDocumentParams) -> None:
        _publish(ls, params.text_document.uri)

    @ls.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MockllmServer, params: t.DidCloseTextDocumentParams) -> None:
        if (old := ls.pending.pop(params.text_document.uri, None)) is not None:
            old.cancel()
        ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(params.text_document.uri, []))

    @ls.feature(t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=['"', "/", "."]))
    def complete(ls: MockllmServer, params: t.CompletionParams) -> t.CompletionList:
        doc, text_doc = _analyse(ls, params.text_document.uri)
        items = [
            t.CompletionItem(
                label=item.label,
                kind=_ITEM_KINDS[item.kind],
                detail=item.detail or None,
                documentation=t.MarkupContent(t.MarkupKind.Markdown, item.doc) if item.doc else None,
                text_edit=t.TextEdit(_range(item.range, text_doc.lines, text_doc), item.insert),
                filter_text=item.label,
                insert_text_format=t.InsertTextFormat.Snippet if item.snippet else t.InsertTextFormat.PlainText,
            )
            for item in completion.complete(doc, _pos(text_doc, params.position))
        ]
        return t.CompletionList(is_incomplete=False, items=items)

    @ls.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(ls: MockllmServer, params: t.HoverParams) -> t.Hover | None:
        doc, text_doc = _analyse(ls, params.text_document.uri)
        found = navigation.hover(doc, _pos(text_doc, params.position))
        if found is None:
            return None
        text, rng = found
        return t.Hover(t.MarkupContent(t.MarkupKind.Markdown, text), _range(rng, text_doc.lines, text_doc))

    @ls.feature(t.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: MockllmServer, params: t.DefinitionParams) -> t.Location | None:
        doc, text_doc = _analyse(ls, params.text_document.uri)
        loc = navigation.definition(doc, _pos(text_doc, params.position))
        return _location(loc, ls, text_doc) if loc is not None else None

    @ls.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls: MockllmServer, params: t.DocumentSymbolParams) -> list[t.DocumentSymbol]:
        doc, text_doc = _analyse(ls, params.text_document.uri)

        def convert(s: navigation.Symbol) -> t.DocumentSymbol:
            return t.DocumentSymbol(
                name=s.name,
                kind=_SYMBOL_KINDS[s.kind],
                range=_range(s.range, text_doc.lines, text_doc),
                selection_range=_range(s.selection, text_doc.lines, text_doc),
                children=[convert(c) for c in s.children] or None,
            )

        return [convert(s) for s in navigation.symbols(doc)]

    def _edits(uri: str, within: t.Range | None) -> list[t.TextEdit] | None:
        doc, text_doc = _analyse(ls, uri)
        rng = None
        if within is not None:
            rng = document.Range(_pos(text_doc, within.start), _pos(text_doc, within.end))
        found = edits.format_edits(doc, rng)
        if found is None:
            return None
        return [t.TextEdit(_range(e.range, text_doc.lines, text_doc), e.new_text) for e in found]

    @ls.feature(t.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: MockllmServer, params: t.DocumentFormattingParams) -> list[t.TextEdit] | None:
        return _edits(params.text_document.uri, None)

    @ls.feature(t.TEXT_DOCUMENT_RANGE_FORMATTING)
    def range_formatting(ls: MockllmServer, params: t.DocumentRangeFormattingParams) -> list[t.TextEdit] | None:
        return _edits(params.text_document.uri, params.range)

    return ls


def serve_stdio() -> int:
    """Serve one editor on stdin/stdout until it says exit."""
    build().start_io()
    return 0
