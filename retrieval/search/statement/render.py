"""The read path's one statement, rendered from the plan's shape.

:func:`build_statement` joins the CTEs of each source the shape holds (:data:`SOURCES`, each
through one interface: :mod:`~retrieval.search.statement.source`), their rows in one
``UNION ALL``, a presence row for each source probed
(:mod:`~retrieval.search.statement.presence`) and the context turns of the semantic candidates
(:mod:`~retrieval.search.statement.context`). A :class:`~retrieval.search.plan.shape.StatementShape`
says which; :class:`Statements` renders each shape once. The statement of each pinned shape is
on file in docs/statements/.
"""

from __future__ import annotations

import threading

from retrieval.search.candidate import COLUMN_TYPES
from retrieval.search.modes import Mode
from retrieval.search.plan.shape import StatementShape
from retrieval.search.sources.documents import statement as documents
from retrieval.search.sources.episodic import statement as episodic
from retrieval.search.sources.semantic import statement as semantic
from retrieval.search.statement.common import SELECT_LIST
from retrieval.search.statement.context import (
    CONTEXT_COLUMN_TYPES,
    CONTEXT_COLUMNS,
    NO_CONTEXT,
    context_statement,
    statement_context_ctes,
)
from retrieval.search.statement.cte import Cte, materialized, noted
from retrieval.search.statement.presence import NOTES as PRESENCE_NOTES
from retrieval.search.statement.presence import presence_cte
from retrieval.search.statement.source import StatementSource
from retrieval.search.statement.template import template

# The sources of the statement, in the order their CTEs and rows come.
SOURCES: tuple[StatementSource, ...] = (semantic.STATEMENT, episodic.STATEMENT, documents.STATEMENT)
# The template of each probed source's count, for its presence row.
_COUNTED = {source.name: source.presence for source in SOURCES if source.presence is not None}


def statement_parts(schema: str, shape: StatementShape) -> tuple[list[Cte], str]:
    """The CTEs of ``shape``'s statement over ``schema``'s tables, and its final select."""
    ctes: list[Cte] = []
    selects: list[str] = []
    for source in SOURCES:
        ctes += source.ctes(schema, shape)
        selects += source.rows(shape)
    if shape.presence:
        ctes += noted([presence_cte(schema, shape.presence, _COUNTED)], PRESENCE_NOTES)
        selects.append("source_presence")
    columns = {name: SELECT_LIST for name in selects}
    if shape.context and shape.semantic is not None:
        ctes += statement_context_ctes(schema, shape.semantic.mode, shape.filter)
        columns = {name: f"{SELECT_LIST}, {NO_CONTEXT}" for name in selects}
        columns["context"] = f"{SELECT_LIST}, {CONTEXT_COLUMNS}"
    union = "\nUNION ALL\n".join(
        template("read_statement.select", columns=listed, cte=name)
        for name, listed in columns.items()
    )
    if shape.materialized:
        ctes = [materialized(cte) for cte in ctes]
    return ctes, union


def result_columns(shape: StatementShape) -> tuple[tuple[str, str], ...]:
    """The columns of ``shape``'s statement and their SQL types, in order: a candidate's, and
    where it reads the context turns, the two a context row adds."""
    if shape.context and shape.semantic is not None:
        return COLUMN_TYPES + CONTEXT_COLUMN_TYPES
    return COLUMN_TYPES


def build_statement(schema: str, shape: StatementShape) -> str:
    """The one statement of ``shape`` over ``schema``'s tables."""
    ctes, select = statement_parts(schema, shape)
    return template(
        "read_statement.statement", ctes=",\n".join(cte.sql for cte in ctes), selects=select
    )


class Statements:
    """The statements of one schema, each shape rendered once (thread-safe)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._rendered: dict[StatementShape, str] = {}
        self._context: dict[tuple[Mode, tuple[str, ...]], str] = {}
        self._lock = threading.Lock()

    def of(self, shape: StatementShape) -> str:
        """The statement of ``shape``."""
        text = self._rendered.get(shape)
        if text is None:
            text = build_statement(self.schema, shape)
            with self._lock:
                self._rendered[shape] = text
        return text

    def context(self, mode: Mode, filter_operators: tuple[str, ...] = ()) -> str:
        """The statement of the context turns of bound hits, in ``mode``'s kinds, meeting a
        metadata filter of ``filter_operators``."""
        key = (mode, filter_operators)
        text = self._context.get(key)
        if text is None:
            text = context_statement(self.schema, mode, filter_operators)
            with self._lock:
                self._context[key] = text
        return text

    def __len__(self) -> int:
        return len(self._rendered)
