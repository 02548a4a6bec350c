"""A statement's named placeholders as PostgreSQL's own: ``%(name)s`` becomes ``$n``.

psycopg converts a query with named placeholders on every call once it is longer than 4,096
characters (it caches only shorter ones), and the read path's statements are several times
longer; converted once and kept (:mod:`retrieval.db.read_pool`), a statement is sent through a
:class:`psycopg.RawCursor` with its values in order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%|%")


@dataclass(frozen=True)
class PositionalQuery:
    """A statement in PostgreSQL's ``$n`` form, and the parameter name of each ``$n``."""

    text: bytes
    names: tuple[str, ...]

    def values(self, params: Mapping[str, Any]) -> list[Any]:
        """The parameters in ``$n`` order; a missing one is a ``KeyError`` naming it."""
        return [params[name] for name in self.names]


def positional(query: str) -> PositionalQuery:
    """Convert ``%(name)s`` placeholders to ``$1, $2, ...`` (a repeated name keeps its number)
    and ``%%`` to ``%``; any other ``%`` is a ``ValueError``."""
    numbers: dict[str, int] = {}

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        name = match.group(1)
        if name is None:
            raise ValueError(
                f"unsupported placeholder at offset {match.start()} of the statement: "
                "use %(name)s, or %% for a literal %"
            )
        return f"${numbers.setdefault(name, len(numbers) + 1)}"

    converted = _PLACEHOLDER.sub(replace, query)
    return PositionalQuery(converted.encode(), tuple(numbers))
