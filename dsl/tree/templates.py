"""``{{name}}`` templates in reply strings: parsed once, rendered per request.

Names: ``let`` variables, captures, ``request.model``, ``request.last_user_message``,
``tool_result.NAME``. ``{{"{{"}}`` writes a literal ``{{``; inside the braces, any quoted string is
written as is."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import attrs

from mockllm.errors import TemplateError

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)?\Z")
BUILTIN_NAMES = frozenset({"request.model", "request.last_user_message"})


@attrs.frozen
class Ref:
    name: str
    offset: int  # where `{{` starts in the source string


@attrs.frozen
class Template:
    parts: tuple[str | Ref, ...]

    @property
    def names(self) -> tuple[Ref, ...]:
        return tuple(p for p in self.parts if isinstance(p, Ref))

    @property
    def is_plain(self) -> bool:
        return all(isinstance(p, str) for p in self.parts)

    def render(self, env: Mapping[str, str]) -> str:
        return "".join(p if isinstance(p, str) else env.get(p.name, "") for p in self.parts)


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Template:
    """Parse a template; raises :class:`TemplateError` for an unclosed or malformed ``{{ }}``."""
    if "{{" not in text:
        return Template((text,) if text else ())
    parts: list[str | Ref] = []
    buf: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        start = text.find("{{", i)
        if start < 0:
            buf.append(text[i:])
            break
        buf.append(text[i:start])
        end = text.find("}}", start + 2)
        if end < 0:
            raise TemplateError("unclosed '{{' in template: add the closing '}}'", start)
        inner = text[start + 2 : end].strip()
        # a quoted literal such as {{"{{"}}: its closing '}}' may be inside the quotes
        if inner.startswith('"'):
            close = text.find('"', text.find('"', start + 2) + 1)
            end2 = text.find("}}", close + 1) if close >= 0 else -1
            if close < 0 or end2 < 0:
                raise TemplateError("unterminated quoted literal in template", start)
            buf.append(text[text.find('"', start + 2) + 1 : close])
            i = end2 + 2
            continue
        if not NAME_RE.match(inner):
            raise TemplateError(f"'{{{{{inner}}}}}' is not a template name such as '{{{{city}}}}'", start)
        if buf:
            parts.append("".join(buf))
            buf = []
        parts.append(Ref(inner, start))
        i = end + 2
    if buf and "".join(buf):
        parts.append("".join(buf))
    return Template(tuple(parts))


def strings_in(value: Any) -> list[str]:
    """Every string inside a JSON value (keys excluded), for checking and rendering tool arguments."""
    out: list[str] = []
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            out.extend(strings_in(v))
    elif isinstance(value, list):
        for v in value:
            out.extend(strings_in(v))
    return out


def render_json(value: Any, env: Mapping[str, str]) -> Any:
    """A JSON value with every string rendered as a template."""
    if isinstance(value, str):
        return parse(value).render(env)
    if isinstance(value, dict):
        return {k: render_json(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [render_json(v, env) for v in value]
    return value
