"""Which predicates each condition subject takes: the one table the checker (``dsl/check``), the
syntax-error hints (``dsl/parse``) and the editor's completion read, kept with the tree so the
parser need not import the checker."""

from __future__ import annotations

PRESENCE_SUBJECTS = frozenset({"header", "field", "tool_result", "last_user_message", "tools", "input", "argument"})
STRING_OPS = ("is", "is_not", "contains", "not_contains", "matches", "not_matches", "glob")


def allowed_ops(kind: str) -> tuple[str, ...]:
    """The predicates a subject takes, in the order a hint lists them."""
    if kind == "provider":
        return ("is", "is_not", "matches", "not_matches", "glob")
    if kind in ("tools", "attachments"):
        return ("include", "exclude", "present", "absent")
    if kind == "stream":
        return ("is", "is_not")
    if kind == "turn":
        return ("is", "is_not", "at_least", "at_most")
    ops: tuple[str, ...] = STRING_OPS
    if kind in PRESENCE_SUBJECTS:
        ops += ("present", "absent")
    if kind == "tool_result":
        ops += ("error",)
    if kind in ("field", "argument"):
        ops += ("at_least", "at_most")
    return ops
