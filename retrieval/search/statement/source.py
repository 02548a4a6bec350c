"""A source's part of the read statement, through one interface.

Each source module (:mod:`~retrieval.search.statement.semantic`,
:mod:`~retrieval.search.statement.episodic`, :mod:`~retrieval.search.statement.documents`)
gives a :class:`StatementSource`: its CTEs for a shape (none when the shape leaves the source
out) and the CTEs whose rows are its candidates, in the columns every source selects
(:data:`~retrieval.search.statement.common.SELECT_LIST`). The statement
(:mod:`~retrieval.search.statement.render`) joins the sources in order; each source's CTEs of
the default shape are on file by themselves too (docs/statements/sources/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from retrieval.search.plan.shape import StatementShape
from retrieval.search.statement.cte import Cte


@dataclass(frozen=True)
class StatementSource:
    """A source's part of the statement: ``ctes(schema, shape)`` (``[]`` when ``shape`` leaves
    it out) and ``rows(shape)``, the names of the CTEs whose rows are its candidates."""

    name: str
    ctes: Callable[[str, StatementShape], list[Cte]]
    rows: Callable[[StatementShape], list[str]]
