"""Name checks: names defined twice, references to names that do not exist (with a did-you-mean),
and scenarios replaced by a later file's scenario of the same name."""

from __future__ import annotations

from mockllm.dsl.check.common import Reporter, did_you_mean, with_first, word_list
from mockllm.dsl.diagnostics import Related
from mockllm.dsl.tree.nodes import NamedReply, ReplyRef, Scenario, ScriptFile


def check_file_names(r: Reporter, f: ScriptFile) -> None:
    """Import aliases, named replies and scenarios defined twice in one file."""
    file = f.path
    for use, first_use in with_first(f.uses, lambda u: u.alias):
        if first_use is not None:
            r.duplicate(
                f'alias `{use.alias}` is already used for "{first_use.path}"',
                r.name_span(use.span, use.alias, file, last=True),
                first_use.span,
                file,
                hint="give each import its own alias",
                first_label="the first import with this alias",
            )
    for nr, first_nr in with_first(f.replies, lambda nr: nr.name):
        if first_nr is not None:
            r.duplicate(
                f"reply `{nr.name}` is already defined",
                r.name_span(nr.span, nr.name, file, skip=len("reply")),
                first_nr.span,
                file,
                hint="rename one of the two replies",
                first_label="the first definition",
            )
    for sc, first_sc in with_first(f.scenarios, lambda sc: sc.name):
        if first_sc is not None:
            r.duplicate(
                f'scenario "{sc.name}" is already defined in this file',
                r.name_span(sc.span, f'"{sc.name}"', file),
                first_sc.span,
                file,
                hint="scenario names are unique within a file; rename one of them",
                first_label="the first scenario with this name",
            )


def check_scenario_names(r: Reporter, sc: Scenario, file: str) -> None:
    """``let`` names and step names defined twice in one scenario."""
    for let, first_let in with_first(sc.lets, lambda let: let.name):
        if first_let is not None:
            r.duplicate(
                f"`{let.name}` is already set by `let`",
                r.name_span(let.span, let.name, file, skip=len("let")),
                first_let.span,
                file,
                hint="keep one `let` per name",
                first_label="the first `let`",
            )
    for step, first_step in with_first(sc.steps, lambda step: step.name):
        if first_step is not None:
            r.duplicate(
                f'step `{step.name}` is already defined in scenario "{sc.name}"',
                r.name_span(step.span, step.name, file, skip=len("step")),
                first_step.span,
                file,
                hint="step names are unique within a scenario; rename one of them",
                first_label="the first step with this name",
            )


def check_ref(r: Reporter, ref: ReplyRef, file: str, words: str) -> NamedReply | None:
    """The named reply ``ref`` points at, reporting an unknown alias or reply name."""
    span = r.name_span(ref.span, ref.qualified, file, last=True)
    aliases = r.library.aliases.get(file, {})
    script = r.library.file(file)
    declared = {u.alias for u in script.uses} if script is not None else set(aliases)
    if ref.alias is not None:
        if ref.alias not in declared:
            r.err(
                "unknown-alias",
                f"`{words} {ref.qualified}`: no import is named `{ref.alias}`",
                span,
                hint=did_you_mean(ref.alias, declared) or f'import the file first: `use "PATH" as {ref.alias}`',
            )
            return None
        target = aliases.get(ref.alias, "")
        if target not in r.loaded:
            return None  # the import itself failed and is reported
    else:
        target = file
    named = r.library.named_reply(file, ref)
    if named is None:
        target_script = r.library.file(target)
        names = [nr.name for nr in target_script.replies] if target_script else []
        where = "this file" if ref.alias is None else f"{target} (imported as `{ref.alias}`)"
        suggestion = did_you_mean(ref.name, names, "`" + (f"{ref.alias}." if ref.alias else "") + "{}`")
        r.err(
            "unknown-reply",
            f"`{words} {ref.qualified}`: {where} defines no reply `{ref.name}`",
            span,
            hint=suggestion
            or (f"its replies are {word_list(names, 'and')}" if names else "define it with `reply NAME:`"),
        )
    return named


def check_replacements(r: Reporter) -> None:
    """A warning for each scenario that replaces one of the same name from an earlier file."""
    seen: dict[str, tuple[Scenario, str]] = {}
    for f in r.library.files:
        names_here: set[str] = set()
        for sc in f.scenarios:
            if sc.name in names_here:
                continue
            names_here.add(sc.name)
            if sc.name in seen:
                old, old_file = seen[sc.name]
                old_span = r.at(old.span, old_file)
                where = old_span.location() if old_span.line else old_file
                r.warn(
                    "replaced-scenario",
                    f'scenario "{sc.name}" replaces the scenario of the same name in {where}',
                    r.name_span(sc.span, f'"{sc.name}"', f.path),
                    hint="rename one of them if both should run",
                    related=[Related(old_span, "the replaced scenario")],
                )
            seen[sc.name] = (sc, f.path)
