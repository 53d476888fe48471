"""Name checks: names defined twice, references to names that do not exist (with a did-you-mean),
and scenarios replaced by a later file's scenario of the same name."""

from __future__ import annotations

from mockllm.dsl.check.common import Reporter, did_you_mean, repeats, word_list
from mockllm.dsl.diagnostics import Related
from mockllm.dsl.tree.nodes import NamedReply, ReplyRef, Scenario, ScriptFile


def check_file_names(r: Reporter, f: ScriptFile) -> None:
    """Import aliases, named replies and scenarios defined twice in one file."""
    file = f.path
    for use, first_use in repeats(f.uses, lambda u: u.alias):
        message = f'alias `{use.alias}` is already used for "{first_use.path}"'
        at = r.name_span(use.span, use.alias, file, last=True)
        r.duplicate(
            message, at, first_use.span, file, "give each import its own alias", "the first import with this alias"
        )
    for nr, first_nr in repeats(f.replies, lambda nr: nr.name):
        at = r.name_span(nr.span, nr.name, file, skip=len("reply"))
        hint = "rename one of the two replies"
        r.duplicate(f"reply `{nr.name}` is already defined", at, first_nr.span, file, hint, "the first definition")
    for sc, first_sc in repeats(f.scenarios, lambda sc: sc.name):
        message = f'scenario "{sc.name}" is already defined in this file'
        at = r.name_span(sc.span, f'"{sc.name}"', file)
        hint = "scenario names are unique within a file; rename one of them"
        r.duplicate(message, at, first_sc.span, file, hint, "the first scenario with this name")


def check_scenario_names(r: Reporter, sc: Scenario, file: str) -> None:
    """``let`` names and step names defined twice in one scenario."""
    for let, first_let in repeats(sc.lets, lambda let: let.name):
        at = r.name_span(let.span, let.name, file, skip=len("let"))
        message = f"`{let.name}` is already set by `let`"
        r.duplicate(message, at, first_let.span, file, "keep one `let` per name", "the first `let`")
    for step, first_step in repeats(sc.steps, lambda step: step.name):
        message = f'step `{step.name}` is already defined in scenario "{sc.name}"'
        at = r.name_span(step.span, step.name, file, skip=len("step"))
        hint = "step names are unique within a scenario; rename one of them"
        r.duplicate(message, at, first_step.span, file, hint, "the first step with this name")


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
