"""``fast_frozen``: the class decorator of the values built on every request (the parsed request, its
messages, the selection, the outcome, the reply plan, the rendered reply, a stream's events and frames).

To the type checker it is ``attrs.frozen``: mypy refuses any assignment to a field, as for every other
value in mockllm. At run time it builds the same class (slots, fields, ``__eq__``, ``__hash__``,
``__repr__``, ``attrs.evolve``) without the setattr guard. A frozen attrs class sets each field through
``object.__setattr__`` in its ``__init__``, about 840 instructions per field on CPython 3.11; a plain
slotted class stores it with one specialised bytecode instead. A request builds some 60 such fields:
the guard cost about a tenth of the whole server's work per request (``docs/performance.md``, row 7).
Some of these values are cached and shared between requests (a static reply's plan): that nothing
assigns to them rests on mypy alone, which checks every module of the package.

Only the values built per request use it; the script's syntax tree, the compiled machines, the
options and the interned field paths stay ``attrs.frozen``, whose guard costs nothing after loading."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from attrs import frozen as fast_frozen
else:

    def fast_frozen(maybe_cls: Any = None, **options: Any) -> Any:
        """``attrs.frozen`` for mypy; at run time ``attrs.define`` with equality and a hash made from the
        fields, as ``attrs.frozen`` makes them. The class is marked ``__fast_frozen__``."""
        if "frozen" in options:
            raise TypeError("fast_frozen takes no frozen= option: it is frozen to mypy and plain at run time")

        def build(cls: type) -> type:
            if "__eq__" in cls.__dict__ or "__hash__" in cls.__dict__:
                # attrs.frozen would keep such a class unhashable (or its own hash): declare it attrs.frozen
                raise TypeError(f"{cls.__qualname__} defines __eq__ or __hash__: declare it @attrs.frozen")
            eq = options.get("eq", True) is not False
            made: type = attrs.define(cls, frozen=False, unsafe_hash=eq, on_setattr=attrs.setters.NO_OP, **options)
            made.__fast_frozen__ = True  # type: ignore[attr-defined]
            return made

        return build if maybe_cls is None else build(maybe_cls)


__all__ = ["fast_frozen"]
