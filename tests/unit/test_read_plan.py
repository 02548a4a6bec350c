"""The plan stage alone: a pure function of the call, the settings and what is known of the
tenant (no database, no model)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from retrieval.embedding.calibration import CALIBRATIONS, UNCALIBRATED
from retrieval.embedding.e5_model import E5_MODEL_ID
from retrieval.embedding.models import DEFAULT_MODEL_ID
from retrieval.search.config import RetrievalConfig
from retrieval.search.knowledge import FACTS, SIZE_ROWS, TenantView
from retrieval.search.plan.read_plan import ReadPlan, plan_read, statement_parameters
from retrieval.search.prepare.call import PreparedCall, prepare_call
from retrieval.search.sources.documents.plan import SOURCE as DOCUMENTS
from retrieval.search.sources.episodic.plan import SOURCE as EPISODIC
from retrieval.search.statement.render import build_statement
from tests.statement_shapes import pinned_shapes

AS_OF = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
QUERY = "Why did the orders migration time out?"
FRESH = TenantView()  # a tenant not seen yet
SEEN = TenantView(size_stale=False, memories=50, table_rows=100_000, leads_with_turns=False)


def _call(
    query: str = QUERY, config: RetrievalConfig | None = None, **options: object
) -> PreparedCall:
    default = config or RetrievalConfig()
    return prepare_call(
        query, tenant_id="acme", config=None, default=default, as_of=AS_OF, **options
    )  # type: ignore[arg-type]


def _plan(call: PreparedCall | None = None, tenant: TenantView = SEEN) -> ReadPlan:
    return plan_read(call or _call(), tenant, UNCALIBRATED)


def test_a_first_call_reads_every_source_asks_the_size_and_reads_the_turns() -> None:
    plan = _plan(tenant=FRESH)
    shape = plan.shape
    assert shape is not None and shape == plan.full_shape
    assert shape.semantic is not None and shape.semantic.bm25 and not shape.semantic.exact
    assert shape.episodic is not None and shape.episodic.decisions and shape.episodic.tool_calls
    assert shape.documents is not None and shape.documents.gated and shape.context
    assert shape.presence == (EPISODIC, DOCUMENTS, FACTS, *SIZE_ROWS)
    assert plan.scored == ("semantic", "episodic", "documents") and plan.lifts


def test_a_source_the_tenant_held_none_of_is_left_out_but_kept_in_the_full_shape() -> None:
    plan = _plan(tenant=replace(SEEN, empty=frozenset({DOCUMENTS, EPISODIC})))
    assert plan.shape is not None and plan.full_shape is not None
    assert plan.shape.documents is None and plan.shape.episodic is None
    assert plan.full_shape.documents is not None and plan.full_shape.episodic is not None
    assert plan.left_out == (EPISODIC, DOCUMENTS)
    assert plan.shape.presence == plan.full_shape.presence == (EPISODIC, DOCUMENTS, FACTS)


def test_a_tenant_whose_candidates_held_no_pair_of_facts_is_read_without_the_versions() -> None:
    plan = _plan(tenant=replace(SEEN, empty=frozenset({FACTS})))
    assert plan.shape is not None and plan.full_shape is not None
    assert plan.shape.semantic is not None and not plan.shape.semantic.versions
    assert plan.full_shape.semantic is not None and plan.full_shape.semantic.versions
    assert plan.shape.episodic is not None and plan.shape.documents is not None
    assert plan.left_out == (FACTS,) and FACTS in plan.shape.presence
    # Seen with facts, or asked without versions (a time named), the shape is the full one.
    assert _plan().shape == _plan().full_shape
    assert _plan().shape.semantic.versions  # type: ignore[union-attr]
    off = replace(RetrievalConfig(), newer_versions_first=False)
    plain = _plan(_call(config=off), tenant=replace(SEEN, empty=frozenset({FACTS})))
    assert plain.left_out == () and FACTS not in plain.shape.presence  # type: ignore[union-attr]


def test_a_small_tenant_is_read_exactly_but_never_on_citus() -> None:
    assert _plan().shape.semantic.exact  # type: ignore[union-attr]
    distributed = _plan(tenant=replace(SEEN, distributed=True))
    assert not distributed.shape.semantic.exact  # type: ignore[union-attr]
    large = replace(SEEN, memories=90_000)
    assert not _plan(tenant=large).shape.semantic.exact  # type: ignore[union-attr]
    # Without pgvector's iterative scan only a tenant holding most of the table takes the graph.
    old = replace(large, iterative_scan=False, memories=10_000)
    assert _plan(tenant=old).shape.semantic.exact  # type: ignore[union-attr]


def test_every_cte_is_materialized_where_the_statement_is_planned_for_its_values() -> None:
    cached = replace(SEEN, generic_memories=50)  # the generic plan's picture of the tenant holds
    generic = _plan(tenant=cached)
    assert generic.settings["plan_cache_mode"] == "force_generic_plan"
    assert generic.shape is not None and not generic.shape.materialized
    # Planned for its values: on Citus, before the estimate is known, for a scoped call.
    cluster = _plan(tenant=replace(cached, distributed=True))
    unknown = _plan(tenant=SEEN)
    scoped = _plan(_call(filter={"user": "u1"}), tenant=cached)
    for custom in (cluster, unknown, scoped):
        assert custom.settings["plan_cache_mode"] == "force_custom_plan"
        assert custom.shape is not None and custom.full_shape is not None
        assert custom.shape.materialized and custom.full_shape.materialized
    assert cluster.shape is not None
    alone = build_statement("retrieval", replace(cluster.shape, materialized=False))
    planned_apart = build_statement("retrieval", cluster.shape)
    assert re.search(r"^\w+ AS \(", alone, re.MULTILINE)  # some CTEs inlined on one server
    assert not re.search(r"^\w+ AS \(", planned_apart, re.MULTILINE)
    # The same statement but for the word.
    assert planned_apart.replace(" AS MATERIALIZED (", " AS (") == alone.replace(
        " AS MATERIALIZED (", " AS ("
    )


def test_a_query_without_keywords_reads_no_episodic_source() -> None:
    plan = _plan(_call("the of and"))
    assert plan.shape is not None and plan.shape.episodic is None
    assert plan.shape.presence == (DOCUMENTS, FACTS) and "episodic" in plan.scored


def test_a_mode_s_kinds_choose_the_episodic_rows() -> None:
    plan = _plan(_call(mode="knowledge_lookup"))
    episodic = plan.shape.episodic  # type: ignore[union-attr]
    assert episodic is not None and episodic.decisions and not episodic.tool_calls


def test_options_shape_the_statement() -> None:
    config = replace(RetrievalConfig(), memory_bm25=False, max_distance=None, lexical_match="max")
    plan = _plan(_call(config=config, task_id="T-1", entities=["alice"]))
    semantic, episodic = plan.shape.semantic, plan.shape.episodic  # type: ignore[union-attr]
    assert semantic is not None and not semantic.bm25 and semantic.lexical == "max"
    assert not semantic.with_max_distance and semantic.with_entities
    assert episodic is not None and episodic.with_task and episodic.lexical is None
    assert not plan.shape.documents.gated  # type: ignore[union-attr]


def test_no_source_on_reads_nothing() -> None:
    default = RetrievalConfig()
    config = replace(
        default,
        semantic=replace(default.semantic, enabled=False),
        episodic=replace(default.episodic, enabled=False),
        documents=replace(default.documents, enabled=False),
    )
    plan = _plan(_call(config=config))
    assert plan.shape is None and plan.full_shape is None and plan.scored == ()


@pytest.mark.parametrize("tenant", [FRESH, SEEN])
def test_the_plan_binds_every_parameter_its_statements_name(tenant: TenantView) -> None:
    plan = _plan(_call(task_id="T-1", entities=["alice"]), tenant)
    assert plan.full_shape is not None
    named = set(re.findall(r"%\((\w+)\)s", build_statement("retrieval", plan.full_shape)))
    assert named <= set(plan.parameters)


def test_the_same_call_and_view_give_the_same_plan() -> None:
    call = _call()
    assert _plan(call) == _plan(call)


# A filter condition of each operator, for a shape whose statement filters.
_OPERANDS = {
    "eq": "v", "eq_json": {"$eq": ["v"]}, "eq_at": {"$eq": 1}, "contains": {"$all": [1]},
    "ne": {"$ne": 1},
    "substring": {"$contains": "x"}, "isubstring": {"$icontains": "x"},
    "gt": {"$gt": 1}, "gte": {"$gte": 1}, "lt": {"$lt": 1},
    "lte": {"$lte": 1}, "in": {"$in": [[1]]},
    "in_within": {"$in": [1]}, "nin": {"$nin": [1]}, "exists": {"$exists": True},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(pinned_shapes()))
def test_each_pinned_shape_s_parameters_are_bound(name: str) -> None:
    _, shape = pinned_shapes()[name]
    scoped = shape.filter[:1] == ("namespace",)
    operators = shape.filter[1:] if scoped else shape.filter
    # A key of a list's item ("k1.0") for an equality that reads one (eq_at).
    conditions = {
        f"k{i}.0" if op == "eq_at" else f"k{i}": _OPERANDS[op] for i, op in enumerate(operators)
    } or None
    namespace = ("users", "u1") if scoped else None
    call = _call(task_id="T-1", entities=["alice"], filter=conditions, namespace=namespace)
    assert call.filter_operators == shape.filter
    named = set(re.findall(r"%\((\w+)\)s", build_statement("retrieval", shape)))
    assert named <= set(statement_parameters(shape, call, UNCALIBRATED))


@pytest.mark.parametrize(
    ("model", "margin"), [(DEFAULT_MODEL_ID, 0.077), (E5_MODEL_ID, 0.0099), (None, 0.1)]
)
def test_an_update_s_nearest_facts_are_within_one_relevance_margin_of_each_model(
    model: str | None, margin: float
) -> None:
    # The same relevance (a tenth) in each model's cosines: e5's texts lie close together.
    calibration = CALIBRATIONS[model] if model else UNCALIBRATED
    plan = plan_read(_call(), SEEN, calibration)
    assert plan.parameters["version_nearest_margin"] == pytest.approx(margin, abs=5e-4)
