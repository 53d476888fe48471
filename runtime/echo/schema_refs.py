"""Local ``$ref`` resolution: JSON pointers (``#/$defs/…``, ``#/definitions/…``, ``#``) and
``$anchor`` names within one root document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote


class Resolver:
    """Local ``$ref`` resolution against one root document."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self._anchors: dict[str, Any] | None = None

    def resolve(self, ref: str) -> Any:
        """The target schema, or None when the reference cannot be followed."""
        fragment = ref.split("#", 1)[1] if "#" in ref else None
        if fragment is None:
            return None
        if fragment == "":
            return self.root
        if not fragment.startswith("/"):
            return self.anchors().get(unquote(fragment))
        node = self.root
        for raw in fragment[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def anchors(self) -> dict[str, Any]:
        if self._anchors is None:
            found: dict[str, Any] = {}
            stack: list[Any] = [self.root]
            seen = 0
            while stack and seen < 10_000:
                seen += 1
                node = stack.pop()
                if isinstance(node, Mapping):
                    anchor = node.get("$anchor")
                    if isinstance(anchor, str):
                        found.setdefault(anchor, node)
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
            self._anchors = found
        return self._anchors
