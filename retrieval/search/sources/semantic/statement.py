"""The semantic source: memories found by meaning (HNSW) and by their words (GIN).

Two channels, each absolute (:mod:`retrieval.search.statement.relevance`):

* dense: the tenant's ``semantic_candidates`` memories nearest the query by L2 distance on the
  HNSW index (the tenant and the mode's kinds filter the scan itself; with
  ``hnsw.iterative_scan`` on, a small tenant still gets its full pool); relevance is the
  embedding model's calibrated relevance of the distance;
* lexical (``bm25``): Okapi BM25 over the memories' lexemes (``search_vector``, revision 0010,
  with a GIN index on ``(tenant_id, search_vector)``). The tenant's statistics are the number
  of memories and of their lexemes (``memory_corpus``) and, for one memory in eight (by a hash
  of its id), the terms they hold (``memory_term_stats``), all kept by triggers. A query term
  that fewer than ``COMMON_SAMPLED`` sampled memories hold is rare: the GIN index finds its
  memories, and their number is its exact document frequency (up to ``COUNT_CAP``); a common
  term's document frequency is the sample's estimate. The rarest terms' memories, up to
  ``memory_bm25_rows`` in all, join the dense pool. Every candidate is then scored with every
  query term from its own lexemes, so each carries both exact channel scores; a memory that
  holds only the query's commoner terms is found only if it is near by meaning too. When every
  query term was counted and searched (``bm25_complete`` in the metadata), the channel is
  exact BM25 over the tenant. A memory's length is its number of distinct lexemes.

The channels are fused by ``fusion``; a memory is returned only with absolute evidence (when
the cut-off is on): its vector within ``max_distance`` of the query's, or its lexemes covering
``bm25_min_coverage`` of the query's idf. Recency is ``0.5 ^ (age / half_life)``; the optional
signals are the stored importance (unset counts as a neutral 0.5), popularity
``log10(access_count + 1) / log10(101)`` and entity overlap (query entity ids the memory links
to / query entity ids). The metadata keeps the seed's ``1 / (1 + d)`` (``inverse_distance``),
the raw distance and both channels' scores and ranks.
"""

from __future__ import annotations

from retrieval.search.candidate import COLUMNS
from retrieval.search.modes import Mode
from retrieval.search.plan.shape import StatementShape
from retrieval.search.prepare.metadata_filter import KEYED
from retrieval.search.sources.semantic.plan import SemanticQuery
from retrieval.search.statement.bm25 import bm25_contribution, bm25_factors
from retrieval.search.statement.common import (
    computed_once,
    halvings_sql,
    live_or_replaced_sql,
    live_sql,
    memory_columns,
    recency_sql,
    short_fact_sql,
    told_at_sql,
)
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.lexical import lexical_evidence, lexical_relevance, lexical_scores
from retrieval.search.statement.metadata import memory_conditions
from retrieval.search.statement.relevance import (
    dense_relevance_sql,
    fused_relevance_sql,
    lexical_relevance_sql,
    lexical_share_sql,
)
from retrieval.search.statement.source import StatementSource
from retrieval.search.statement.template import template

SOURCE = "semantic"
# What each CTE holds, printed above it in docs/statements/.
NOTES = {
    "semantic_nearest": "the tenant's live or corrected memories nearest the query's vector",
    "semantic_walk": "a filtered call's nearest through the HNSW graph (kept if it fills the pool)",
    "mem_corpus": "the tenant's memory count, mean length and sampled share (memory_corpus)",
    "mem_terms": "the query's lexemes with their document frequencies estimated from the sample",
    "mem_probed": "the rarest query terms whose memories fit the BM25 row budget",
    "mem_fetched": "the live or corrected memories holding each probed term (GIN index)",
    "mem_weights": "each query term's document frequency (counted or estimated) and BM25 factors",
    "mem_total": "the query's summed idf, its terms, and how many were not counted",
    "mem_matched": "the memories the rare terms found beyond the dense pool, in the mode's kinds",
    "mem_pool": "the candidates of both channels, marked by the channel that found them",
    "mem_scores": "each candidate's BM25 score and the idf it covers, from its own lexemes",
    "mem_ranked": "the candidates with their BM25 and dense ranks",
    "semantic_found": "the dense pool and the lexical channel's best candidates",
    "semantic_routed": "the candidates, each corrected memory in its live correction's place",
    "mem_facts": "the most relevant candidates stating facts (not turns), with their vectors",
    "mem_newer": "each fact's possible newer versions among them, marked near or not",
    "semantic_versions": "the memories' candidates, each with its newer versions",
    "semantic_sent": "the candidates ranked: with evidence, newer versions, weak matches",
    "semantic": "the memories' candidates: relevance, recency, signals and evidence",
}
NEUTRAL_IMPORTANCE = 0.5
# A query term held by fewer sampled memories than this (one in eight memories feeds the
# statistics; revision 0010) is rare: its memories are counted exactly, up to COUNT_CAP.
# Above it, the sample's estimate stands (with 16 sampled, within about 25%).
COMMON_SAMPLED = 16
COUNT_CAP = 512

# A memory's importance and popularity signals, for a row ``n`` of a memories' CTE.
MEMORY_SIGNALS = template("read_semantic.signals", neutral=NEUTRAL_IMPORTANCE)
# What every memory result carries as evidence (the pairs of a json_build_object), for a row
# ``n`` with its ``distance`` and its dense relevance ``c.dense`` (:func:`memory_once`): with the
# memory's own metadata first, and without it (a mode whose results leave it out).
_EVIDENCE = {
    True: template(
        "read_semantic.evidence", metadata=template("read_semantic.metadata_evidence") + " "
    ),
    False: template("read_semantic.evidence", metadata=""),
}


def memory_evidence(mode: Mode) -> str:
    """The evidence of a memory result of ``mode`` (the pairs of a json_build_object, for a row
    ``n`` as :data:`_EVIDENCE`'s): the memory's own metadata only where the mode's results
    carry it."""
    return _EVIDENCE[mode.metadata]


# When a memory candidate ``n`` was last told (``t.told_at``), then its dense relevance and its
# age (``c.dense``, ``c.halvings``; with BM25 ``c.lexical`` too, :func:`memory_once`): each
# computed once, in the candidate's CTE, and read by name.
MEMORY_TOLD_AT = computed_once("t", {"told_at": told_at_sql("n")})


def memory_once(lexical: str | None = None) -> str:
    """The expressions a memory candidate ``n`` computes once after :data:`MEMORY_TOLD_AT`:
    ``c.dense``, with ``lexical`` ``c.lexical`` (its SQL), and ``c.halvings``."""
    once = {"dense": dense_relevance_sql("n.distance")}
    if lexical is not None:
        once["lexical"] = lexical
    once["halvings"] = halvings_sql("t.told_at", "semantic_half_life")
    return computed_once("c", once)


def semantic_ctes(
    schema: str, query: SemanticQuery, filter_operators: tuple[str, ...] = ()
) -> list[Cte]:
    """The CTEs of the semantic source, the last named ``semantic``.

    The dense channel's pool: the tenant's nearest memories through the HNSW graph (pgvector's
    iterative scan keeps the tenant's filter inside the walk), or with ``query.exact`` its rows
    read exactly, each distance computed once and sorted (for a tenant small for its table:
    :mod:`~retrieval.search.plan.exact_read`). With a metadata filter, a walk that did not fill
    the pool is followed by the exact read of the rows that meet the filter.

    Parameters: ``tenant_id``, ``query_vector``, ``semantic_candidates``,
    ``semantic_half_life``, ``as_of``, ``dense_zero_squared``, ``dense_span_squared``, and when
    used ``include_kinds``, ``exclude_kinds``, ``max_distance``, ``entity_ids``; with
    ``query.bm25`` ``query_text``, ``bm25_k1``, ``bm25_b``, ``memory_bm25_rows``,
    ``bm25_min_coverage`` and the fusion's
    (:mod:`retrieval.search.statement.relevance`).
    """
    ctes = _nearest(schema, query, filter_operators)
    if query.bm25:
        ctes += _bm25_channel(schema, query, filter_operators)
    found = "semantic_found" if query.bm25 else "semantic_nearest"
    found_through = ""
    if _routes(filter_operators):
        ctes.append(_routed(schema, query, filter_operators, found))
        found, found_through = "semantic_routed", ", 'found_through', n.found_through"
    if query.bm25:
        computed = memory_once(lexical_relevance_sql("n.bm25", "(SELECT total_idf FROM mem_total)"))
        own = fused_relevance_sql("c.lexical", "c.dense", "n.bm25_rank", "n.dense_rank")
        evidence = ", " + _bm25_evidence()
        cut = template("read_semantic.cut_or_covered") if query.with_max_distance else ""
    else:
        computed, own, evidence = memory_once(), "c.dense", ""
        cut = template("read_semantic.cut") if query.with_max_distance else ""
    relevance, lexical_join, lexical_details = own, "", ""
    if query.lexical is not None:
        relevance = lexical_relevance(query.lexical, own)
        lexical_join = lexical_scores("n.content")
        lexical_details = ", " + lexical_evidence(query.lexical, "semantic", own)
    entities, entity = _entity_columns(schema, query.with_entities)
    ctes.append(
        template(
            "read_semantic.semantic",
            relevance=relevance,
            recency=recency_sql("c.halvings"),
            signals=MEMORY_SIGNALS,
            entity=entity,
            entities=entities,
            evidence=memory_evidence(query.mode),
            lexical_details=lexical_details,
            bm25_evidence=evidence,
            found=found,
            told_at=MEMORY_TOLD_AT,
            computed=computed,
            lexical_join=lexical_join,
            gate=f"({cut})" if cut else "TRUE",
            found_through=found_through,
        )
    )
    if query.versions:
        ctes += _versions(schema)
    if query.with_max_distance:
        ctes.append(_sent(query))
    return noted(ctes, NOTES)


def semantic_rows(query: SemanticQuery) -> str:
    """The CTE whose rows are the semantic source's candidates."""
    if query.with_max_distance:
        return "semantic_sent"
    return "semantic_versions" if query.versions else "semantic"


def _statement_ctes(schema: str, shape: StatementShape) -> list[Cte]:
    if shape.semantic is None:
        return []
    return semantic_ctes(schema, shape.semantic, shape.filter)


def _statement_rows(shape: StatementShape) -> list[str]:
    return [] if shape.semantic is None else [semantic_rows(shape.semantic)]


# The semantic source's part of the read statement.
STATEMENT = StatementSource(SOURCE, _statement_ctes, _statement_rows)


def _sent(query: SemanticQuery) -> str:
    # The candidates the ranking reads when a gate applies: those with evidence, the newer
    # versions beyond it, and an empty answer's weak matches.
    rows = "semantic_versions" if query.versions else "semantic"
    versions = query.versions
    return template(
        "read_semantic.semantic_sent",
        rows=rows,
        or_newer="\n       " + template("read_semantic.or_newer") if versions else "",
        versions_note=" (mem_newer)" if versions else " (none: no versions asked)",
    )


def _nearest(schema: str, query: SemanticQuery, filter_operators: tuple[str, ...]) -> list[str]:
    """The dense channel's CTE ``semantic_nearest``: the tenant's nearest memories (of the
    mode's kinds, meeting the call's metadata filter). Through the graph with a metadata filter,
    the walk (``semantic_walk``) is kept when it filled the pool, and the rows that meet the
    filter are read exactly when it did not (the planner prices a filter from the table's
    statistics, not the tenant's: a walk may stop short of the pool)."""
    routes = _routes(filter_operators)
    filters = [
        "m.tenant_id = %(tenant_id)s",
        *kind_filters(query.mode, "m"),
        *memory_conditions(filter_operators, "m"),
        _candidate_sql("m", routes),
    ]
    routed_to = _routed_to("m", routes)
    fragments = {
        "columns": memory_columns("m"),
        "vector_column": (", m.search_vector" if query.bm25 else "") + ", " + routed_to,
        "distance": "m.embedding <-> %(query_vector)s::vector",
        "where": " AND ".join(filters),
    }
    if query.exact:
        return [template("read_semantic.nearest_exact", schema, **fragments)]
    if not filter_operators:
        return [template("read_semantic.nearest", schema, cte="semantic_nearest", **fragments)]
    return [
        template("read_semantic.nearest", schema, cte="semantic_walk", **fragments),
        template("read_semantic.nearest_checked", schema, **fragments),
    ]


def _routes(filter_operators: tuple[str, ...]) -> bool:
    # Whether a call's candidates may be memories a correction replaced: not where it reads
    # only memories under a key (LangGraph's store), whose new values replace them.
    return KEYED not in filter_operators


def _candidate_sql(alias: str, routes: bool) -> str:
    # Which memories a channel reads: the live ones, and those a correction replaced where the
    # call routes them to their corrections.
    return live_or_replaced_sql(alias) if routes else live_sql(alias)


def _routed_to(alias: str, routes: bool) -> str:
    # The correction that replaced the candidate ``alias`` (NULL where it is live, and in a
    # call whose candidates are all live).
    if not routes:
        return "NULL::bigint AS routed_to"
    return template("read_semantic.routed_to", alias=alias)


# The columns a candidate carries after the memory's own, as each channel leaves them.
_CHANNELS = "f.routed_to, f.distance"
_BM25_CHANNELS = (
    "f.search_vector, f.routed_to, f.distance, f.near, f.bm25, f.coverage, f.bm25_rank, "
    "f.dense_rank"
)


def _routed(
    schema: str, query: SemanticQuery, filter_operators: tuple[str, ...], found: str
) -> str:
    """The CTE ``semantic_routed``: the candidates of ``found``, each memory that a correction
    replaced in the correction's place (which must be live and meet the call's kinds and
    filters), with the scores that found the memory it replaced; a memory found both ways keeps
    the way that ranks it higher (of both channels' ranks, then the nearer, then its own
    text)."""
    conditions = [
        live_sql("s"),
        *kind_filters(query.mode, "s"),
        *memory_conditions(filter_operators, "s"),
    ]
    return template(
        "read_semantic.routed",
        schema,
        found=found,
        columns=memory_columns("s"),
        channels=_BM25_CHANNELS if query.bm25 else _CHANNELS,
        conditions=" AND ".join(conditions),
        better=("LEAST(n.bm25_rank, n.dense_rank), " if query.bm25 else "")
        + "n.distance, n.found_through NULLS FIRST",
    )


def _versions(schema: str) -> list[str]:
    # The most relevant candidates that state facts, with their vectors; each one's newer
    # versions among them (the rank stage ranks it below them: newer_versions_first); the
    # candidates with them.
    columns = ", ".join(
        f"v.{column}" if column in ("newer", "newer_near") else f"s.{column}" for column in COLUMNS
    )
    return [
        template("read_semantic.mem_facts", schema, short_fact=short_fact_sql("s")),
        template("read_semantic.mem_newer"),
        template("read_semantic.semantic_versions", columns=columns),
    ]


def _entity_columns(schema: str, with_entities: bool) -> tuple[str, str]:
    """The memory's entity ids among the query's, and the entity signal (their share)."""
    if not with_entities:
        return "NULL::text[]", "0.0::float8"
    entities = template("read_semantic.entities", schema)
    return entities, template("read_semantic.entity_signal", entities=entities)


def kind_filters(mode: Mode, alias: str) -> list[str]:
    # The mode's kinds, on the ``kind`` column of ``alias``.
    filters = []
    if mode.include_kinds is not None:
        filters.append(template("read_semantic.include_kinds", alias=alias))
    if mode.exclude_kinds:
        filters.append(template("read_semantic.exclude_kinds", alias=alias))
    return filters


def _bm25_channel(
    schema: str, query: SemanticQuery, filter_operators: tuple[str, ...]
) -> list[str]:
    # The query's lexemes (in the text search configuration the tenant's memories were indexed
    # with) and the sample's estimate of their document frequencies (a query of more words than
    # max_query_words: that many of them, the rarest by the estimate, a lexeme the sample lacks
    # counting as the rarest); the rarest terms' memories, within the row budget, fetched
    # through the GIN index (which counts them exactly) and joined to the dense pool; every
    # candidate scored with every query term from its own lexemes; the lexical channel keeps
    # its best ``semantic_candidates``.
    return [
        *_bm25_terms(schema, query, filter_operators),
        *_bm25_weights(),
        *_bm25_pool(query, filter_operators),
    ]


def _bm25_terms(schema: str, query: SemanticQuery, filter_operators: tuple[str, ...]) -> list[str]:
    # The tenant's corpus row, the query's lexemes with their estimated document frequencies,
    # the rarest terms within the row budget and their memories.
    routes = _routes(filter_operators)
    return [
        template("read_semantic.mem_corpus", schema),
        template(
            "read_semantic.mem_terms",
            schema,
            capped=template("read_semantic.capped") if query.capped else "",
        ),
        template("read_semantic.mem_probed", common_sampled=COMMON_SAMPLED),
        template(
            "read_semantic.mem_fetched",
            columns=memory_columns("m"),
            routed_to=_routed_to("m", routes),
            matching=_matching(schema, query.bound, routes),
            fetched=COUNT_CAP + 1,
        ),
    ]


def _bm25_weights() -> list[str]:
    # Each query term's document frequency (counted or estimated) and BM25 factors; the
    # query's summed idf and terms.
    return [
        template(
            "read_semantic.mem_weights",
            factors=bm25_factors("x.document_frequency", "c"),
            count_cap=COUNT_CAP,
        ),
        template("read_semantic.mem_total"),
    ]


def _bm25_pool(query: SemanticQuery, filter_operators: tuple[str, ...]) -> list[str]:
    # The candidates of both channels, each scored with every query term from its own lexemes,
    # and ranked by each channel.
    return [
        template(
            "read_semantic.mem_matched",
            columns=memory_columns("r"),
            kinds=" AND ".join(
                [
                    "TRUE",
                    *kind_filters(query.mode, "r"),
                    *memory_conditions(filter_operators, "r"),
                ]
            ),
        ),
        template("read_semantic.mem_pool"),
        template("read_semantic.mem_scores", contribution=_CONTRIBUTION),
        template("read_semantic.mem_ranked"),
        template("read_semantic.semantic_found"),
    ]


# A query lexeme's BM25 contribution to a memory: its positions are its frequency, the memory's
# distinct lexemes its length (of its marked copy: setweight keeps every lexeme).
_CONTRIBUTION = bm25_contribution("w", "cardinality(u.positions)", "length(x.marked)")


def _matching(schema: str, bound: bool, routes: bool) -> str:
    # The tenant's live memories holding a probed term, through the GIN index, or, for a role
    # bound by row-level security, through the owner's function (revision 0011).
    return template(
        "read_semantic.matching_bound" if bound else "read_semantic.matching",
        schema,
        live=_candidate_sql("m", routes),
        fetched=COUNT_CAP + 1,
    )


def _bm25_evidence() -> str:
    # Both channels' scores and ranks, and the lexical channel's share of the fusion, for the
    # metadata.
    share = lexical_share_sql("c.lexical", "c.dense", "n.bm25_rank", "n.dense_rank")
    return template("read_semantic.bm25_evidence", share=share)
