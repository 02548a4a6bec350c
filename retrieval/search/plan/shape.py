"""The read statement's shape: which CTEs it holds, as the plan chose them.

Each source's part is its own query shape (:mod:`retrieval.search.sources`), ``None`` when the
statement leaves the source out. Equal shapes share one statement text
(:mod:`retrieval.search.statement.render` renders each once per retriever); every value of a
call is a bound parameter, never part of the shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.search.sources.documents.plan import DocumentsQuery
from retrieval.search.sources.episodic.plan import EpisodicQuery
from retrieval.search.sources.semantic.plan import SemanticQuery


@dataclass(frozen=True)
class StatementShape:
    """Which parts the statement holds.

    ``semantic``, ``episodic``, ``documents``: the shape of those sources' CTEs (``None``: left
    out), a field named as the source. ``presence``: the sources whose presence rows are asked
    for. ``context``: the context turns of the semantic candidates (with a semantic source
    only).
    """

    semantic: SemanticQuery | None
    episodic: EpisodicQuery | None
    documents: DocumentsQuery | None = None
    presence: tuple[str, ...] = ()
    # The turns around the semantic candidates that are turns, read in the same statement
    # (statement.context): its rows then carry two more columns, the hit and the offset.
    context: bool = False
    # The operators of the call's metadata filter, in order (prepare.metadata_filter): the
    # memories and the chunks meet them; () for no filter.
    filter: tuple[str, ...] = ()
    # Every CTE written AS MATERIALIZED, each then planned apart, where PostgreSQL would inline
    # one read once into the query reading it: a statement planned for its values (a custom
    # plan; on a Citus cluster twice a call) plans in less so (docs/decisions/0062).
    materialized: bool = False

    def query(self, source: str) -> object | None:
        """The shape of ``source``'s part (its field), ``None`` when the statement leaves it out."""
        return getattr(self, source)  # type: ignore[no-any-return]
