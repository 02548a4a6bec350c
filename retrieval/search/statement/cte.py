"""A CTE of the read statement: its name, a one-line note of what it holds, and its SQL.

Every template module renders its CTEs as text and names each one's note in a ``NOTES`` table
beside them (:func:`noted`); the statement joins their SQL, and its file in docs/statements/
prints each note above its CTE, with the parameters the CTE binds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_HEAD = re.compile(r"^(\w+) AS (?:MATERIALIZED )?\(")
_INLINED = re.compile(r"^(\w+) AS \(")
PARAMETER = re.compile(r"%\((\w+)\)s")


@dataclass(frozen=True)
class Cte:
    """One CTE: ``sql`` is ``name AS [MATERIALIZED] (...)``."""

    name: str
    note: str
    sql: str

    @property
    def binds(self) -> tuple[str, ...]:
        """The parameters the CTE binds, in alphabetical order."""
        return tuple(sorted(set(PARAMETER.findall(self.sql))))


def noted(texts: Iterable[str], notes: Mapping[str, str]) -> list[Cte]:
    """The CTEs of ``texts`` (each ``name AS (...)``) with their notes from ``notes`` by name
    (a ``{prefix}_`` name by the part after its prefix); a CTE without a note is an error."""
    found = []
    for text in texts:
        head = _HEAD.match(text)
        if head is None:
            raise ValueError(f"not a CTE: {text[:60]!r}")
        name = head[1]
        note = notes.get(name) or notes.get(name.split("_", 1)[-1])
        if note is None:
            raise KeyError(f"the CTE {name} has no note: say what it holds in its NOTES")
        found.append(Cte(name, note, text))
    return found


def materialized(cte: Cte) -> Cte:
    """``cte`` written ``AS MATERIALIZED``: PostgreSQL plans it apart rather than inline it
    into the query that reads it once (the same rows; planned in less where it is long)."""
    return Cte(cte.name, cte.note, _INLINED.sub(r"\1 AS MATERIALIZED (", cte.sql, count=1))
