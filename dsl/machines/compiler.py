"""The compiler: a checked library becomes state-machine tables (:mod:`mockllm.dsl.machines.compiled`).

One :class:`~mockllm.dsl.machines.compiled.Machine` per scenario, in selection order (priority, higher first;
ties in load order). A scenario that a later file redefines takes the later definition but keeps the
earlier one's place in load order. Each step gets its predecessor (``START``, the previous step in
file order, or its ``after`` target), its use limit, its conditions (the scenario's, then its own) and
its reply with ``reply like`` resolved and the file's ``defaults:`` applied. Pure: no I/O.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from mockllm.dsl.check.checks import check
from mockllm.dsl.diagnostics import Diagnostic, has_errors
from mockllm.dsl.machines.compiled import START, CompiledLibrary, CompiledStep, Machine
from mockllm.dsl.parse.loader import Library, load_paths
from mockllm.dsl.span import NO_SPAN, Span
from mockllm.dsl.tree.nodes import (
    Audio,
    Defaults,
    Hang,
    Header,
    Image,
    Latency,
    McpServer,
    Reply,
    ReplyBlock,
    ReplyElement,
    Scenario,
    ScriptFile,
    Vector,
    VectorsFrom,
)


def apply_defaults(block: ReplyBlock, defaults: Defaults | None) -> ReplyBlock:
    """The block with each default element added unless the block sets that element itself
    (headers are compared by name, case-insensitively). A ``hang`` takes only a default latency."""
    if defaults is None or not defaults.elements:
        return block
    hangs = any(isinstance(el, Hang) for el in block.elements)
    have_types = {type(el) for el in block.elements}
    have_headers = {el.name.lower() for el in block.elements if isinstance(el, Header)}
    added: list[ReplyElement] = []
    for el in defaults.elements:
        if hangs and not isinstance(el, Latency):
            continue
        if isinstance(el, Header):
            if el.name.lower() in have_headers:
                continue
            have_headers.add(el.name.lower())
        elif type(el) in have_types:
            continue
        else:
            have_types.add(type(el))
        added.append(el)
    if not added:
        return block
    return attrs.evolve(block, elements=(*block.elements, *added))


def resolve_reply(library: Library, file: str, reply: Reply) -> ReplyBlock | None:
    """A step's or fallback's reply as a block: ``reply like`` looked up through ``file``'s imports,
    ``vectors from`` replaced by the file's vectors as ``vector`` elements."""
    if isinstance(reply, ReplyBlock):
        return _inline_vectors(library, reply)
    named = library.named_reply(file, reply)
    if named is None:
        return None
    return _inline_vectors(library, ReplyBlock(named.elements, span=reply.span))


def _inline_vectors(library: Library, block: ReplyBlock) -> ReplyBlock:
    """``vectors from`` as ``vector`` lines, and the bytes of ``audio``/``image`` files in their nodes."""
    if not any(isinstance(el, VectorsFrom | Audio | Image) for el in block.elements):
        return block
    elements: list[ReplyElement] = []
    for el in block.elements:
        if isinstance(el, VectorsFrom):
            vectors = library.vectors.get((el.span.file, el.path), ())
            elements.extend(Vector(v, span=el.span) for v in vectors)
        elif isinstance(el, Audio | Image) and el.path is not None:
            elements.append(attrs.evolve(el, data=library.media.get((el.span.file, el.path))))
        else:
            elements.append(el)
    return attrs.evolve(block, elements=tuple(elements))


def _machine(library: Library, script: ScriptFile, sc: Scenario, load_order: int) -> Machine:
    index: dict[str, int] = {}
    for i, step in enumerate(sc.steps):
        index.setdefault(step.name, i)
    steps: list[CompiledStep] = []
    for i, step in enumerate(sc.steps):
        if step.after is not None and step.after.step in index:
            predecessor = index[step.after.step]
        else:
            predecessor = START if i == 0 else i - 1
        block = resolve_reply(library, script.path, step.reply) if step.reply is not None else None
        if block is None:  # only reachable for an unchecked library
            block = ReplyBlock(())
        steps.append(
            CompiledStep(
                index=i,
                name=step.name,
                predecessor=predecessor,
                max_uses=step.consumption.max_uses,
                conditions=(*sc.conditions, *step.conditions),
                captures=step.captures,
                expects=step.expects,
                reply=apply_defaults(block, script.defaults),
                span=step.span,
            )
        )
    return Machine(
        name=sc.name,
        priority=sc.priority,
        load_order=load_order,
        order_any=sc.order_any,
        steps=tuple(steps),
        lets=sc.lets,
        tags=sc.tags,
        file=script.path,
        span=sc.span,
    )


def selection_order(machines: Sequence[Machine]) -> tuple[Machine, ...]:
    """Priority first (higher wins), then load order."""
    return tuple(sorted(machines, key=lambda m: (-m.priority, m.load_order)))


def build(library: Library) -> CompiledLibrary:
    """The tables for a library, without checking it (use :func:`compile_library`)."""
    slots: dict[str, int] = {}
    machines: list[Machine] = []
    for script in library.files:
        for sc in script.scenarios:
            if sc.name in slots:  # a later definition replaces the earlier, in its place
                slot = slots[sc.name]
                machines[slot] = _machine(library, script, sc, slot)
            else:
                slots[sc.name] = len(machines)
                machines.append(_machine(library, script, sc, len(machines)))
    fallback: ReplyBlock | None = None
    fallback_span: Span = NO_SPAN
    for script in library.files:
        if script.defaults is None or script.defaults.fallback is None:
            continue
        block = resolve_reply(library, script.path, script.defaults.fallback)
        if block is not None:
            fallback = apply_defaults(block, script.defaults)
            fallback_span = script.defaults.fallback.span
            break
    servers: dict[str, McpServer] = {}
    for script in library.files:
        servers.update((s.name, s) for s in script.mcp_servers)
    return CompiledLibrary(
        machines=selection_order(machines),
        fallback=fallback,
        fallback_span=fallback_span,
        files=tuple(f.path for f in library.files),
        mcp_servers=tuple(servers.values()),
    )


def compile_library(library: Library) -> tuple[CompiledLibrary | None, list[Diagnostic]]:
    """Check and compile. With any error (loading, syntax or semantic) the result is None and the
    diagnostics say why; warnings come back either way."""
    diagnostics = [*library.diagnostics, *check(library)]
    if has_errors(diagnostics):
        return None, diagnostics
    return build(library), diagnostics


def merge(base: CompiledLibrary, added: CompiledLibrary) -> CompiledLibrary:
    """``added`` loaded on top of ``base``: same-named scenarios are replaced in their place, new ones
    come after base's in load order; ``added``'s fallback wins when it has one."""
    by_order = sorted(base.machines, key=lambda m: m.load_order)
    slots = {m.name: i for i, m in enumerate(by_order)}
    machines = [attrs.evolve(m, load_order=i) for i, m in enumerate(by_order)]
    for m in sorted(added.machines, key=lambda m: m.load_order):
        if m.name in slots:
            machines[slots[m.name]] = attrs.evolve(m, load_order=slots[m.name])
        else:
            slots[m.name] = len(machines)
            machines.append(attrs.evolve(m, load_order=len(machines)))
    files = (*base.files, *(f for f in added.files if f not in base.files))
    servers = {s.name: s for s in (*base.mcp_servers, *added.mcp_servers)}
    if added.fallback is not None:
        return CompiledLibrary(
            selection_order(machines), added.fallback, added.fallback_span, files, tuple(servers.values())
        )
    return CompiledLibrary(selection_order(machines), base.fallback, base.fallback_span, files, tuple(servers.values()))


def load_and_compile(
    paths: Sequence[str | os.PathLike[str]],
) -> tuple[CompiledLibrary | None, Library, list[Diagnostic]]:
    """Load files and directories, check and compile them."""
    library = load_paths(paths)
    compiled, diagnostics = compile_library(library)
    return compiled, library, diagnostics
