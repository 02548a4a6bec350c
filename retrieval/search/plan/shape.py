"""The read statement's shape: which CTEs it holds, as the plan chose them.

Equal shapes share one statement text (:mod:`retrieval.search.statement.render` renders each
once per retriever); every value of a call is a bound parameter, never part of the shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.search.modes import Mode

DECISION = "decision"
TOOL_CALL = "tool_call"
# A row's keywords are counted as a bit set in a bigint up to this many keywords.
MAX_BITS = 63


@dataclass(frozen=True)
class SemanticQuery:
    """The shape of the semantic CTEs: which filters and channels they carry."""

    mode: Mode
    with_max_distance: bool
    with_entities: bool
    lexical: str | None = None  # None, or how lexical scores combine: max, weighted, cascade
    bm25: bool = False  # the BM25 channel over the memories' lexemes, fused by ``fusion``
    bound: bool = False  # the connection's role is bound by row-level security
    # The dense channel reads the tenant's rows exactly (its btree, then a sort) in place of
    # the HNSW graph: see retrieval.search.plan.exact_read for when.
    exact: bool = False
    # The query has more words than max_query_words: its BM25 channel reads the rarest lexemes.
    capped: bool = False
    # Each candidate names its newer versions among the candidates (newer_versions_first).
    versions: bool = False


@dataclass(frozen=True)
class EpisodicQuery:
    """The shape of the episodic CTEs: which kinds of rows, and whether one task only."""

    decisions: bool
    tool_calls: bool
    with_task: bool
    lexical: str | None = None  # None, or how lexical scores combine: max, weighted, cascade
    many_keywords: bool = False  # more than MAX_BITS keywords: counted without a bit set
    bound: bool = False  # the connection's role is bound by row-level security
    capped: bool = False  # more keywords than it reads: the rarest are chosen in SQL


@dataclass(frozen=True)
class StatementShape:
    """Which parts the statement holds.

    ``semantic`` and ``episodic``: the shape of those sources' CTEs (``None``: left out).
    ``documents``: the documents' CTEs, behind the distance gate when ``gated``. ``presence``:
    the sources whose presence rows are asked for. ``context``: the context turns of the
    semantic candidates (with a semantic source only).
    """

    semantic: SemanticQuery | None
    episodic: EpisodicQuery | None
    documents: bool = False
    gated: bool = True
    presence: tuple[str, ...] = ()
    capped: bool = False  # more query words than max_query_words: the documents read the rarest
    # The turns around the semantic candidates that are turns, read in the same statement
    # (statement.context): its rows then carry two more columns, the hit and the offset.
    context: bool = False
    # The operators of the call's metadata filter, in order (prepare.metadata_filter): the
    # memories and the chunks meet them; () for no filter.
    filter: tuple[str, ...] = ()
