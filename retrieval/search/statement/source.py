"""A source's part of the read statement, through one interface.

Each source's ``statement.py`` (:mod:`retrieval.search.sources`) gives a
:class:`StatementSource`: its CTEs for a shape (none when the shape leaves the source out), the
CTEs whose rows are its candidates, in the columns every source selects
(:data:`~retrieval.search.statement.common.SELECT_LIST`, decoded alike into a
:class:`~retrieval.search.candidate.Candidate`), and the count its presence row reads. The
statement (:mod:`~retrieval.search.statement.render`) joins the sources in order; each source's
CTEs of the default shape are on file by themselves too (docs/statements/sources/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from retrieval.search.plan.shape import StatementShape
from retrieval.search.statement.cte import Cte


@dataclass(frozen=True)
class StatementSource:
    """A source's part of the statement: ``ctes(schema, shape)`` (``[]`` when ``shape`` leaves
    it out), ``rows(shape)``, the names of the CTEs whose rows are its candidates, and
    ``presence``, the template of the count of a tenant's rows its presence row reads (a source
    the plan probes: :class:`~retrieval.search.plan.source.PlanSource`)."""

    name: str
    ctes: Callable[[str, StatementShape], list[Cte]]
    rows: Callable[[StatementShape], list[str]]
    presence: str | None = None
