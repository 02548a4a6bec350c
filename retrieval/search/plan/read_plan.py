"""The plan stage: a pure function of the call, the settings and what is known of the tenant.

:func:`plan_read` decides which sources and channels a call reads, the shape of its statement
(:mod:`~retrieval.search.plan.shape`) and every value it binds
(:mod:`~retrieval.search.plan.parameters`). It does no I/O: what the retriever has learnt of the
tenant and the database comes in as a
:class:`~retrieval.search.knowledge.TenantView`, so a plan is tested alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from retrieval import arguments
from retrieval.embedding.calibration import DenseCalibration
from retrieval.search.config import RetrievalConfig
from retrieval.search.knowledge import DOCUMENTS, EPISODIC, SIZE_ROWS, TenantView
from retrieval.search.plan.exact_read import holds_most, reads_exactly
from retrieval.search.plan.parameters import context_parameters, statement_parameters
from retrieval.search.plan.plan_cache import PLAN_CACHE_MODE, generic_plan_fits, plan_cache_mode
from retrieval.search.plan.shape import (
    DECISION,
    MAX_BITS,
    TOOL_CALL,
    EpisodicQuery,
    SemanticQuery,
    StatementShape,
)
from retrieval.search.prepare.call import PreparedCall


@dataclass(frozen=True)
class ReadPlan:
    """What one call reads, and how.

    ``shape`` is the statement to run (``None``: no database source to read); ``full_shape``
    the statement with every source the call reads, run when a source ``shape`` left out (its
    tenant held none of it at the last look) shows rows in the presence rows; ``parameters``
    bind either, and the context turns' own statement; ``settings`` are the session settings
    the statement needs (among them its plan: :mod:`~retrieval.search.plan.plan_cache`).
    """

    call: PreparedCall
    semantic: bool  # the sources the call reads
    episodic: bool
    documents: bool
    scored: tuple[str, ...]  # the sources the ranking reports on, in order
    lifts: bool  # the leading turns lift their neighbours (context_lift)
    shape: StatementShape | None
    full_shape: StatementShape | None
    parameters: dict[str, Any]
    settings: dict[str, str]

    @property
    def config(self) -> RetrievalConfig:
        """The call's config."""
        return self.call.config


def plan_read(call: PreparedCall, tenant: TenantView, calibration: DenseCalibration) -> ReadPlan:
    """The plan of ``call`` for a tenant known as ``tenant``."""
    config, mode = call.config, call.mode
    kinds = tuple(
        kind
        for kind in (DECISION, TOOL_CALL)
        if (mode.include_kinds is None or kind in mode.include_kinds)
        and kind not in mode.exclude_kinds
    )
    semantic = config.semantic.enabled and config.semantic.limit > 0
    episodic_on = config.episodic.enabled and config.episodic.limit > 0
    # Decisions and tool calls carry no metadata and lie in no namespace: a call filtered by
    # either does not read them; nor chunks a call that names a namespace.
    episodic = (
        episodic_on and bool(call.query.keywords) and bool(kinds) and not call.filter_operators
    )
    documents = (
        config.documents.enabled
        and config.documents.limit > 0
        and not call.namespace
        and not call.keyed
    )
    lifts = semantic and config.context_lift > 0.0 and config.context_window > 0
    scored = tuple(
        name
        for name, on in (
            ("semantic", semantic),
            ("episodic", episodic_on),
            ("documents", documents),
        )
        if on
    )
    probed = tuple(source for source, on in ((EPISODIC, episodic), (DOCUMENTS, documents)) if on)
    settings = {"hnsw.ef_search": ef_search(config), PLAN_CACHE_MODE: plan_cache_mode(False)}
    if not (semantic or probed):
        return ReadPlan(
            call, semantic, episodic, documents, scored, lifts, None, None, {}, settings
        )
    context = lifts and tenant.leads_with_turns
    full = _shape(call, tenant, kinds, semantic, episodic, documents, context, probed)
    shape = replace(
        full,
        episodic=full.episodic if tenant.may_hold_episodic else None,
        documents=full.documents and tenant.may_hold_documents,
    )
    generic = full.semantic is not None and generic_plan_fits(
        tenant,
        exact=full.semantic.exact,
        # A filter, a namespace, keys or the mode's kinds: their values choose the index.
        scoped=bool(call.filter_operators)
        or mode.include_kinds is not None
        or bool(mode.exclude_kinds),
        factor=config.exact_scan_factor,
        pool=config.pool,
    )
    settings[PLAN_CACHE_MODE] = plan_cache_mode(generic)
    parameters = statement_parameters(config, full, call, calibration)
    if lifts:
        parameters |= context_parameters(config)
    return ReadPlan(
        call, semantic, episodic, documents, scored, lifts, shape, full, parameters, settings
    )


def _shape(
    call: PreparedCall,
    tenant: TenantView,
    kinds: tuple[str, ...],
    semantic: bool,
    episodic: bool,
    documents: bool,
    context: bool,
    probed: tuple[str, ...],
) -> StatementShape:
    # The statement of the call with every source it reads.
    config = call.config
    lexical = config.lexical_match
    # Whether the tenant is read exactly, from the sizes the retriever last saw; they are
    # asked for again when they are stale (see plan.exact_read).
    readable = semantic and config.exact_scan_factor > 0 and not tenant.distributed
    sized = readable and tenant.size_stale
    exact = readable and (
        reads_exactly(tenant.memories, tenant.table_rows, config.exact_scan_factor, config.pool)
        # Without the iterative scan (pgvector before 0.8), a filtered graph walk stops at
        # ef_search rows: every tenant but one holding most of the table is read exactly.
        or not (tenant.iterative_scan or holds_most(tenant.memories, tenant.table_rows))
    )
    # A query of more words than the BM25 channels read: they choose the rarest lexemes (a
    # word gives one lexeme, or a few for a compound such as "read-only").
    many_words = call.query.words > config.max_query_words
    keywords = len(call.query.keywords)
    return StatementShape(
        semantic=SemanticQuery(
            mode=call.mode,
            with_max_distance=config.max_distance is not None,
            with_entities=bool(call.entities),
            lexical=lexical if "semantic" in config.lexical_sources else None,
            bm25=config.memory_bm25,
            bound=tenant.bound,
            exact=exact,
            capped=many_words,
            # A time the query names chooses among versions by its own signal.
            versions=config.newer_versions_first and call.window is None,
        )
        if semantic
        else None,
        episodic=EpisodicQuery(
            decisions=DECISION in kinds,
            tool_calls=TOOL_CALL in kinds,
            with_task=call.task_id is not None,
            lexical=lexical if "episodic" in config.lexical_sources else None,
            many_keywords=min(keywords, config.max_query_words) > MAX_BITS,
            bound=tenant.bound,
            capped=keywords > config.max_query_words,
        )
        if episodic
        else None,
        documents=documents,
        gated=config.max_distance is not None,
        capped=many_words,
        presence=probed + (SIZE_ROWS if sized else ()),
        context=context,
        filter=call.filter_operators,
    )


def ef_search(config: RetrievalConfig) -> str:
    """The HNSW search keeps ef_search candidates, and at least the candidate pool (pgvector
    takes at most 1,000)."""
    return str(min(max(config.pool, config.ef_search), arguments.MAX_RESULTS))
