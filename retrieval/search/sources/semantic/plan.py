"""The semantic source's part of the plan: its shape for a call, and the values it binds.

The dense channel reads a tenant through the HNSW graph, or exactly when it is small
(:mod:`~retrieval.search.plan.exact_read`); the BM25 channel over the memories' lexemes reads
the rarest of a long query's words; each candidate names its newer versions among the others
(``newer_versions_first``) unless the query names a time, which chooses among versions by its
own signal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from retrieval.embedding.calibration import DenseCalibration
from retrieval.search.knowledge import TenantView
from retrieval.search.modes import Mode
from retrieval.search.plan.exact_read import holds_most, reads_by_size, reads_exactly
from retrieval.search.plan.parameters import (
    HOUR,
    bm25_parameters,
    dense_parameters,
    lexical_parameters,
)
from retrieval.search.plan.source import PlanSource
from retrieval.search.prepare.call import PreparedCall

SOURCE = "semantic"
# The semantic source's most relevant candidates whose newer versions are looked for: this many
# times what it returns (a version further down does not reach the results).
VERSION_CANDIDATES = 2
# A version is a short statement ("Bob moved to Denver."): memories longer than this many
# characters (about 50 words) are never versions of one another. Two abstracts, notes or pages on
# one topic are near in meaning and share most words, as versions do, but both stay true.
VERSION_MOST_CHARACTERS = 280
# An update that is not near a fact ("Maria got married and her name is now Maria Silva.") is a
# version of the facts it is nearest to among the candidates, within this much relevance (a
# cosine of 0.077 with all-MiniLM-L6-v2, 0.010 with e5-small): of "Maria's last name is Lopez.",
# not of "Maria is vegetarian." (docs/decisions/0055-an-update-replaces-the-fact-it-is-nearest.md).
NEAREST_VERSION_MARGIN = 0.1


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


def reported(call: PreparedCall) -> bool:
    """Whether the call reads memories: the source on, with a limit."""
    return call.config.semantic.enabled and call.config.semantic.limit > 0


def semantic_query(call: PreparedCall, tenant: TenantView) -> SemanticQuery | None:
    """The semantic CTEs' shape for ``call`` on a tenant known as ``tenant``."""
    config = call.config
    if not reported(call):
        return None
    # Whether the tenant is read exactly, from the sizes the retriever last saw; they are
    # asked for again when they are stale (see plan.exact_read).
    exact = reads_by_size(config, tenant) and (
        reads_exactly(tenant.memories, tenant.table_rows, config.exact_scan_factor, config.pool)
        # Without the iterative scan (pgvector before 0.8), a filtered graph walk stops at
        # ef_search rows: every tenant but one holding most of the table is read exactly.
        or not (tenant.iterative_scan or holds_most(tenant.memories, tenant.table_rows))
    )
    return SemanticQuery(
        mode=call.mode,
        with_max_distance=config.max_distance is not None,
        with_entities=bool(call.entities),
        lexical=config.lexical_match if SOURCE in config.lexical_sources else None,
        bm25=config.memory_bm25,
        bound=tenant.bound,
        exact=exact,
        # A query of more words than the BM25 channels read: they choose the rarest lexemes (a
        # word gives one lexeme, or a few for a compound such as "read-only").
        capped=call.query.words > config.max_query_words,
        # A time the query names chooses among versions by its own signal.
        versions=config.newer_versions_first and call.window is None,
    )


def signal_parameters(call: PreparedCall, calibration: DenseCalibration) -> dict[str, Any]:
    """The values a memory's signals bind (its dense relevance, recency, the mode's kinds):
    the semantic source's, and the context turns' (:mod:`retrieval.search.statement.context`)."""
    config, mode = call.config, call.mode
    return {
        **dense_parameters(call, calibration),
        "semantic_half_life": config.semantic.half_life_hours * HOUR,
        "include_kinds": sorted(mode.include_kinds) if mode.include_kinds is not None else None,
        "exclude_kinds": sorted(mode.exclude_kinds),
    }


def semantic_parameters(
    query: SemanticQuery, call: PreparedCall, calibration: DenseCalibration
) -> dict[str, Any]:
    """The values the semantic CTEs of ``query``'s shape bind for ``call``."""
    config, thresholds = call.config, calibration.thresholds
    params = signal_parameters(call, calibration) | {
        "semantic_candidates": config.pool,
        "entity_ids": list(dict.fromkeys(call.entities)),
        # The facts that may be versions: their CTEs, or their presence row when left out.
        "version_most_characters": VERSION_MOST_CHARACTERS,
    }
    if query.with_max_distance:
        params["fallback_results"] = config.fallback_results
    if query.versions:
        params |= {
            "version_similarity": calibration.own("version_similarity", config.version_similarity),
            "version_shared_words": config.version_shared_words,
            "version_words_similarity": thresholds.version_words_similarity,
            "update_similarity": thresholds.update_similarity,
            "version_candidates": VERSION_CANDIDATES * config.semantic.limit,
            "version_nearest_margin": calibration.cosine_at(NEAREST_VERSION_MARGIN)
            - calibration.cosine_at(0.0),
        }
    if query.bm25:
        params |= bm25_parameters(config, call.query)
    if query.lexical:
        params |= lexical_parameters(config, call.query)
    return params


# The semantic source's part of the plan.
PLAN = PlanSource(SOURCE, reported, semantic_query, semantic_parameters)
