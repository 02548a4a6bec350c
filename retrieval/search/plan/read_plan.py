"""The plan stage: a pure function of the call, the settings and what is known of the tenant.

:func:`plan_read` asks each source (:data:`SOURCES`, each through one interface:
:mod:`~retrieval.search.plan.source`) whether the call reads it and its part of the statement's
shape (:mod:`~retrieval.search.plan.shape`), and binds every value those parts name. It does no
I/O: what the retriever has learnt of the tenant and the database comes in as a
:class:`~retrieval.search.knowledge.TenantView`, so a plan is tested alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from retrieval import arguments
from retrieval.embedding.calibration import DenseCalibration
from retrieval.search.config import RetrievalConfig
from retrieval.search.knowledge import FACTS, SIZE_ROWS, TenantView
from retrieval.search.plan.exact_read import reads_by_size
from retrieval.search.plan.parameters import call_parameters, context_parameters
from retrieval.search.plan.plan_cache import PLAN_CACHE_MODE, generic_plan_fits, plan_cache_mode
from retrieval.search.plan.shape import StatementShape
from retrieval.search.plan.source import PlanSource
from retrieval.search.prepare.call import PreparedCall
from retrieval.search.sources.documents import plan as documents
from retrieval.search.sources.episodic import plan as episodic
from retrieval.search.sources.semantic import plan as semantic

# The sources, in the order the statement and the results take them.
SOURCES: tuple[PlanSource[Any], ...] = (semantic.PLAN, episodic.PLAN, documents.PLAN)


@dataclass(frozen=True)
class ReadPlan:
    """What one call reads, and how.

    ``shape`` is the statement to run (``None``: no database source to read); ``full_shape``
    the statement with every source the call reads, run when a source ``shape`` left out
    (``left_out``: its tenant held none of it at the last look) shows rows in the presence rows,
    or when the candidates of a shape without the versions (``facts`` left out) hold a pair of
    facts that may be versions;
    ``parameters`` bind either, and the context turns' own statement; ``settings`` are the
    session settings the statement needs (among them its plan:
    :mod:`~retrieval.search.plan.plan_cache`).
    """

    call: PreparedCall
    scored: tuple[str, ...]  # the sources the ranking reports on, in order
    lifts: bool  # the leading turns lift their neighbours (context_lift)
    shape: StatementShape | None
    full_shape: StatementShape | None
    parameters: dict[str, Any]
    settings: dict[str, str]
    left_out: tuple[str, ...] = ()

    @property
    def config(self) -> RetrievalConfig:
        """The call's config."""
        return self.call.config


def plan_read(call: PreparedCall, tenant: TenantView, calibration: DenseCalibration) -> ReadPlan:
    """The plan of ``call`` for a tenant known as ``tenant``."""
    config = call.config
    scored = tuple(source.name for source in SOURCES if source.reported(call))
    queries = {source.name: source.query(call, tenant) for source in SOURCES}
    read = {name for name, query in queries.items() if query is not None}
    lifts = semantic.SOURCE in read and config.context_lift > 0.0 and config.context_window > 0
    settings = {"hnsw.ef_search": ef_search(config), PLAN_CACHE_MODE: plan_cache_mode(False)}
    if not read:
        return ReadPlan(call, scored, lifts, None, None, {}, settings)
    probed = tuple(source.name for source in SOURCES if source.probed and source.name in read)
    # Whether the candidates hold facts that may be versions: a tenant whose candidates have
    # held no pair is read without the versions (see retrieval.search.knowledge).
    memories = queries[semantic.SOURCE]
    paired = (
        memories if isinstance(memories, semantic.SemanticQuery) and memories.versions else None
    )
    # The tenant's size, when it is to be asked for again, chooses how its memories are read.
    sized = semantic.SOURCE in read and reads_by_size(config, tenant) and tenant.size_stale
    generic = isinstance(memories, semantic.SemanticQuery) and generic_plan_fits(
        tenant,
        exact=memories.exact,
        # A filter, a namespace, keys or the mode's kinds: their values choose the index.
        scoped=bool(call.filter_operators)
        or call.mode.include_kinds is not None
        or bool(call.mode.exclude_kinds),
        factor=config.exact_scan_factor,
        pool=config.pool,
    )
    full = StatementShape(
        **queries,
        presence=probed + ((FACTS,) if paired else ()) + (SIZE_ROWS if sized else ()),
        context=lifts and tenant.leads_with_turns,
        filter=call.filter_operators,
        # A statement planned for its values plans in less with each CTE planned apart.
        materialized=tenant.routed or not generic,
    )
    left_out = tuple(name for name in probed if name in tenant.empty)
    shape = replace(full, **{name: None for name in left_out})  # type: ignore[arg-type]
    if paired is not None and FACTS in tenant.empty:
        shape = replace(shape, semantic=replace(paired, versions=False))
        left_out += (FACTS,)
    settings[PLAN_CACHE_MODE] = plan_cache_mode(generic)
    parameters = statement_parameters(full, call, calibration)
    if lifts:
        parameters |= context_parameters(config)
    return ReadPlan(call, scored, lifts, shape, full, parameters, settings, left_out)


def statement_parameters(
    shape: StatementShape, call: PreparedCall, calibration: DenseCalibration
) -> dict[str, Any]:
    """Every value the statement of ``shape`` binds for ``call``: the call's, and those of
    each source part it holds."""
    params = call_parameters(call)
    for source in SOURCES:
        query = shape.query(source.name)
        if query is not None:
            params |= source.parameters(query, call, calibration)
    if shape.context:
        params |= context_parameters(call.config)
    return params


def ef_search(config: RetrievalConfig) -> str:
    """The HNSW search keeps ef_search candidates, and at least the candidate pool (pgvector
    takes at most 1,000)."""
    return str(min(max(config.pool, config.ef_search), arguments.MAX_RESULTS))
