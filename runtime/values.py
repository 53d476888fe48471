"""``fast_frozen``: the class decorator of the values built on every request (the parsed request, its
messages, the selection, the outcome, the reply plan, the rendered reply, a stream's events and frames).

To the type checker it is ``attrs.frozen``: mypy refuses any assignment to a field, as for every other
value in mockllm. At run time it builds the same class (slots, fields, ``__eq__``, ``__hash__``,
``__repr__``, ``attrs.evolve``) without the setattr guard. A frozen attrs class sets each field through
``object.__setattr__`` in its ``__init__``, about 840 instructions per field on CPython 3.11; a plain
slotted class stores it with one specialised bytecode instead. A request builds some 60 such fields:
the guard cost about a tenth of the whole server's work per request (``docs/performance.md``, row 7).

Only the values of the request path use it; the script's syntax tree, the compiled machines and the
options stay ``attrs.frozen``, whose guard costs nothing after loading."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from attrs import frozen as fast_frozen
else:

    def fast_frozen(maybe_cls: Any = None, **options: Any) -> Any:
        """``attrs.frozen`` for mypy; at run time ``attrs.define`` with the same equality and hash."""
        options.setdefault("unsafe_hash", options.get("eq", True) is not False)
        options.setdefault("on_setattr", attrs.setters.NO_OP)
        return attrs.define(maybe_cls, frozen=False, **options)


__all__ = ["fast_frozen"]
