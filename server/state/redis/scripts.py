"""The Lua scripts the Redis store runs, read from the ``.lua`` files beside this module (package data):
each file says its keys, arguments and answer. deliveries.lua is a function written into two of them
(``${deliveries}``): Redis scripts include nothing. The commit script has the store's settings written in
(``${ttl}``, ``${cap}``, ``${prefix}``), which costs Redis a little less than arguments would."""

from __future__ import annotations

import functools
from importlib import resources
from string import Template

PREFIX = "mockllm:"  # every key the store writes starts with it


@functools.cache
def lua(name: str) -> str:
    """The text of the script ``name`` (``commit``, ``append`` …)."""
    return resources.files(__package__).joinpath(f"{name}.lua").read_text(encoding="utf-8")


def commit_script(ttl: int, cap: int) -> str:
    """The commit of one or more turns of one conversation (commit.lua) for a store that forgets
    conversations idle for ``ttl`` seconds and keeps about ``cap`` journal entries."""
    return Template(lua("commit")).substitute(ttl=int(ttl), cap=int(cap), prefix=PREFIX, deliveries=lua("deliveries"))


def settle_script() -> str:
    """The writing of deliveries no commit carried (settle.lua); its work is deliveries.lua's, shared
    with the commit script."""
    return Template(lua("settle")).substitute(deliveries=lua("deliveries"))
