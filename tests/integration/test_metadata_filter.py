"""Metadata filters in the one statement, on a real PostgreSQL: a filtered call keeps only the
memories and chunks that meet it, gets its full top k from inside the search, reads no
decision or tool call, lifts only turns that meet it, works for a role bound by row-level
security, and refuses a filter it cannot run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from retrieval.db.placeholders import positional
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.errors import ValidationError
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.prepare.metadata_filter import metadata_filter
from retrieval.search.retriever import HybridRetriever
from retrieval.search.statement.metadata import metadata_conditions
from tests.conftest import CountingEmbedder

WHEN = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
QUESTION = "How is the deploy pipeline configured?"


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    config = RetrievalConfig(record_access=False, min_final_score=0.0, max_distance=None)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as r:
        yield r


def _ids(results: Any, source: str = "semantic") -> list[int]:
    return [r.metadata["id"] for r in results if r.source == source]


def _deploy_notes(store: MemoryStore) -> dict[str, list[int]]:
    # 40 notes of user u2 nearer the question than the 12 of user u1.
    ids: dict[str, list[int]] = {"u1": [], "u2": []}
    for index in range(40):
        ids["u2"].append(store.remember(
            f"The deploy pipeline is configured in deploy.yaml, step {index}.", tenant_id="acme",
            metadata={"user": "u2", "score": index}, created_at=WHEN,
        ))  # fmt: skip
    for index in range(12):
        ids["u1"].append(store.remember(
            f"Note {index}: our release train leaves on Tuesdays.", tenant_id="acme",
            metadata={"user": "u1", "score": index, "team": {"name": "web"}, "tags": ["ops"]},
            created_at=WHEN,
        ))  # fmt: skip
    return ids


def test_a_filtered_call_gets_its_full_top_k_of_the_rows_that_meet_it(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _deploy_notes(store)
    unfiltered = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=10))
    assert set(unfiltered) <= set(ids["u2"])
    found = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=10, filter={"user": "u1"}))
    assert len(found) == 10 and set(found) <= set(ids["u1"])


@pytest.mark.parametrize(
    ("condition", "kept"),
    [
        ({"user": "u1", "score": {"$gte": 9}}, {9, 10, 11}),
        ({"user": "u1", "score": {"$lt": 2}}, {0, 1}),
        ({"score": {"$in": [3, 5]}, "user": {"$ne": "u2"}}, {3, 5}),
        ({"user": "u1", "score": {"$nin": list(range(2, 12))}}, {0, 1}),
        ({"team.name": "web", "score": {"$lte": 1}}, {0, 1}),
        ({"tags": ["ops"], "score": {"$gt": 10}}, {11}),
        ({"team": {"$exists": True}, "score": {"$gt": 10}}, {11}),
        ({"score": {"$gt": "10"}}, set()),  # a string compares with strings only
        # $and, $or and $not, inside the one statement.
        ({"$or": [{"user": "u1", "score": {"$lt": 2}}, {"user": "u1", "score": {"$gt": 10}}]},
         {0, 1, 11}),
        ({"user": "u1", "$not": {"score": {"$lte": 10}}}, {11}),
        ({"$and": [{"user": "u1"}, {"score": {"$in": [3, 4]}}]}, {3, 4}),
        ({"user": "u1", "$or": [{"score": 5}, {"$not": {"score": {"$gte": 1}}}]}, {0, 5}),
    ],
)  # fmt: skip
def test_each_operator_keeps_the_memories_that_meet_it(
    store: MemoryStore, retriever: HybridRetriever, condition: dict[str, Any], kept: set[int]
) -> None:
    ids = _deploy_notes(store)
    found = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=50, filter=condition))
    assert set(found) == {ids["u1"][score] for score in kept}


def test_exists_false_and_ne_keep_the_rows_without_the_key(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _deploy_notes(store)
    bare = store.remember("The deploy pipeline has no owner.", tenant_id="acme", created_at=WHEN)
    found = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=50,
                                    filter={"team": {"$exists": False}}))  # fmt: skip
    assert set(found) == set(ids["u2"]) | {bare}
    found = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=60,
                                    filter={"user": {"$ne": "u2"}}))  # fmt: skip
    assert set(found) == set(ids["u1"]) | {bare}


def test_chunks_meet_the_filter_on_their_documents_metadata_and_their_own(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    documents = DocumentStore(store)
    for team in ("web", "data"):
        documents.add(DocumentInput(
            tenant_id="acme", doc_id=f"{team}-runbook", metadata={"team": team},
            chunks=[ChunkInput("The deploy pipeline is configured in deploy.yaml."),
                    ChunkInput("Deploys roll back with one command.", metadata={"stage": "prod"})],
        ))  # fmt: skip
    results = retriever.retrieve(QUESTION, tenant_id="acme", filter={"team": "web"})
    chunks = [r for r in results if r.source == "documents"]
    assert chunks and {r.metadata["metadata"]["team"] for r in chunks} == {"web"}
    staged = retriever.retrieve(QUESTION, tenant_id="acme", filter={"stage": "prod"})
    assert {r.content for r in staged if r.source == "documents"} == {
        "Deploys roll back with one command."
    }


def test_a_filtered_call_reads_no_decision_or_tool_call(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    _deploy_notes(store)
    store.record_decision(tenant_id="acme", task_id="t1", action_type="plan",
                          content="Configure the deploy pipeline", status="done")  # fmt: skip
    plain = retriever.retrieve(QUESTION, tenant_id="acme", limit=60)
    assert any(r.source == "episodic" for r in plain)
    filtered = retriever.retrieve(QUESTION, tenant_id="acme", limit=60, filter={"user": "u1"})
    assert not any(r.source == "episodic" for r in filtered)
    assert filtered.diagnostics.sources["episodic"].candidates == 0


def test_only_turns_that_meet_the_filter_are_lifted(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    turns = [
        ("Where is the deploy pipeline configured?", "u1"),
        ("In deploy.yaml, at the root of the repository.", "u2"),
        ("Thanks, and who owns it?", "u1"),
    ]
    ids = [
        store.remember(text, tenant_id="chat", kind="message", thread_id="s1", position=index,
                       metadata={"speaker": speaker}, created_at=WHEN + timedelta(minutes=index))
        for index, (text, speaker) in enumerate(turns)
    ]  # fmt: skip
    everyone = _ids(retriever.retrieve(QUESTION, tenant_id="chat"))
    assert ids[1] in everyone
    mine = retriever.retrieve(QUESTION, tenant_id="chat", filter={"speaker": "u1"})
    assert set(_ids(mine)) == {ids[0], ids[2]}


def test_a_role_bound_by_row_level_security_filters_too(
    store: MemoryStore, app_engine: Engine, counting_embedder: CountingEmbedder
) -> None:
    ids = _deploy_notes(store)
    app = MemoryStore(app_engine, embedder=counting_embedder)
    with HybridRetriever.from_store(app, config=RetrievalConfig(record_access=False)) as bound:
        found = _ids(bound.retrieve("release train Tuesdays", tenant_id="acme",
                                    filter={"score": {"$gte": 6}, "user": "u1"}))  # fmt: skip
    assert found and set(found) <= {ids["u1"][score] for score in range(6, 12)}


def test_a_bad_filter_is_refused_before_any_read(retriever: HybridRetriever) -> None:
    with pytest.raises(ValidationError, match=r"\$or takes a non-empty list of filters"):
        retriever.retrieve(QUESTION, tenant_id="acme", filter={"$or": {"a": 1}})
    with pytest.raises(ValidationError, match="filter must be a dict"):
        retriever.retrieve(QUESTION, tenant_id="acme", filter="user=u1")  # type: ignore[arg-type]


def test_the_async_retriever_and_build_context_filter_too(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    import asyncio

    from retrieval.aio import AsyncHybridRetriever
    from retrieval.search.agent_context import build_context

    ids = _deploy_notes(store)

    async def asked() -> list[int]:
        threaded = AsyncHybridRetriever(retriever)
        try:
            found = await threaded.retrieve(QUESTION, tenant_id="acme", filter={"user": "u1"})
        finally:
            await threaded.threads.aclose()
        return _ids(found)

    assert set(asyncio.run(asked())) <= set(ids["u1"])
    context = build_context(retriever, QUESTION, [], tenant_id="acme", filter={"user": "u1"})
    assert context.response is not None
    assert set(_ids(context.response)) <= set(ids["u1"]) and _ids(context.response)


# -- $eq and $ne: one meaning each, complements ------------------------------------------------

# Values a key may hold: scalars of each JSON type, lists (in another order, longer, nested) and
# objects; a row without the key too.
_VALUES: list[Any] = [
    "ops", "db", 1, 1.5, 0, True, False, None, ["ops"], ["ops", "db"], ["db", "ops"], [],
    [["ops"]], {"name": "web"}, {"name": "web", "size": 2}, {}, "1", [1],
]  # fmt: skip


def _same(a: Any, b: Any) -> bool:
    # JSON equality as jsonb has it: true is not 1, 1 is 1.0, objects by keys, lists in order.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _rows_of_every_value(
    store: MemoryStore, retriever: HybridRetriever
) -> tuple[dict[int, Any], int, Callable[[dict[str, Any]], set[int]]]:
    # A memory of each of _VALUES at "tags" and at "first.tags", and one without the key: their
    # values by id, that last one's id, and what a filter keeps of them.
    rows = {
        store.remember(f"Deploy note {n}.", tenant_id="acme", created_at=WHEN,
                       metadata={"tags": value, "first": {"tags": value}}): value
        for n, value in enumerate(_VALUES)
    }  # fmt: skip
    bare = store.remember("Deploy note without tags.", tenant_id="acme", created_at=WHEN)

    def kept(condition: dict[str, Any]) -> set[int]:
        found = retriever.retrieve(QUESTION, tenant_id="acme", limit=50, filter=condition)
        return set(_ids(found))

    return rows, bare, kept


_EXAMPLES = settings(
    max_examples=40, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
_KEYS = st.sampled_from(["tags", "first.tags"])


def test_eq_and_ne_split_the_rows_and_eq_is_equality(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    rows, bare, kept = _rows_of_every_value(store, retriever)
    everything = set(rows) | {bare}

    @_EXAMPLES
    @given(st.sampled_from(_VALUES), _KEYS)
    def split(value: Any, key: str) -> None:
        equal = kept({key: {"$eq": value}})
        assert equal == {i for i, held in rows.items() if _same(held, value)}
        assert kept({key: value}) == equal  # a plain value is $eq
        unequal = kept({key: {"$ne": value}})
        assert equal.isdisjoint(unequal) and equal | unequal == everything

    split()


def test_in_is_the_union_of_its_equalities_and_nin_its_complement(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # $in of strings, numbers, booleans and nulls is read by containment (in_within), of lists
    # or objects by comparing each whole (in): either way a row is kept when the value at the
    # key equals one of those given, never when it is a list holding one.
    rows, bare, kept = _rows_of_every_value(store, retriever)

    @_EXAMPLES
    @given(st.lists(st.sampled_from(_VALUES), min_size=1, max_size=3), _KEYS)
    def union(values: list[Any], key: str) -> None:
        inside = kept({key: {"$in": values}})
        assert inside == {i for i, held in rows.items() if any(_same(held, v) for v in values)}
        assert kept({key: {"$nin": values}}) == (set(rows) | {bare}) - inside

    union()


def test_a_lists_item_and_all_read_the_list(store: MemoryStore, retriever: HybridRetriever) -> None:
    first = store.remember("Deploy note one.", tenant_id="acme", created_at=WHEN,
                           metadata={"tags": ["ops", "db"]})  # fmt: skip
    second = store.remember("Deploy note two.", tenant_id="acme", created_at=WHEN,
                            metadata={"tags": ["db", "ops"]})  # fmt: skip
    only = store.remember("Deploy note three.", tenant_id="acme", created_at=WHEN,
                          metadata={"tags": ["ops"]})  # fmt: skip

    def kept(condition: dict[str, Any]) -> set[int]:
        found = retriever.retrieve(QUESTION, tenant_id="acme", limit=50, filter=condition)
        return set(_ids(found))

    assert kept({"tags.0": {"$eq": "ops"}}) == {first, only}
    assert kept({"tags.0": "ops"}) == {first, only}
    assert kept({"tags.0": {"$ne": "ops"}}) == {second}
    assert kept({"tags.0": {"$in": ["ops"]}}) == {first, only}
    assert kept({"tags": {"$eq": ["ops"]}}) == {only}
    assert kept({"tags": {"$ne": ["ops"]}}) == {first, second}
    assert kept({"tags": {"$all": ["ops"]}}) == {first, second, only}
    assert kept({"tags": {"$all": ["ops", "db"]}}) == {first, second}


# -- $and, $or, $not: inside the one statement ---------------------------------------------------


def test_not_keeps_the_rows_without_the_key_and_or_is_the_union(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _deploy_notes(store)
    bare = store.remember("The deploy pipeline has no owner.", tenant_id="acme", created_at=WHEN)

    def kept(condition: dict[str, Any]) -> set[int]:
        found = retriever.retrieve(QUESTION, tenant_id="acme", limit=60, filter=condition)
        return set(_ids(found))

    # u1's notes all have a team: NOT of it is u2's notes and the note without metadata.
    assert kept({"$not": {"team.name": "web"}}) == set(ids["u2"]) | {bare}
    first, second = {"score": {"$lt": 3}}, {"user": "u1"}
    assert kept({"$or": [first, second]}) == kept(first) | kept(second)
    assert kept({"$not": first}) == (set(ids["u1"]) | set(ids["u2"]) | {bare}) - kept(first)


def test_contains_reads_text_and_a_wildcard_any_value(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    notes = {
        store.remember(f"Deploy note {n}.", tenant_id="acme", created_at=WHEN,
                       metadata=metadata): n
        for n, metadata in enumerate([
            {"note": "Latency rose after the deploy"}, {"note": "latency fixed"},
            {"note": "50% off, 100_000 rows"}, {"note": 5}, {"note": ["Latency"]}, {},
        ])
    }  # fmt: skip
    by_number = {n: memory for memory, n in notes.items()}

    def kept(condition: dict[str, Any]) -> set[int]:
        found = retriever.retrieve(QUESTION, tenant_id="acme", limit=50, filter=condition)
        return {notes[memory] for memory in _ids(found)}

    assert kept({"note": {"$contains": "Latency"}}) == {0}  # text only, in its case
    assert kept({"note": {"$icontains": "LATENCY"}}) == {0, 1}
    assert kept({"note": {"$contains": "50%"}}) == {2} and kept({"note": {"$contains": "0_0"}}) == {
        2
    }
    assert kept({"note": {"$contains": "%"}}) == {2}  # a sign of LIKE is itself
    assert kept({"note": "*"}) == {0, 1, 2, 3, 4}
    assert kept({"$not": {"note": "*"}}) == {5} and by_number[5] in notes


# A walk of the graph made to stop short, as at 100,000 rows: a low bound on the rows it visits
# and no sort to read the rows exactly instead (the planner's choice on a large table).
WALKED = {"hnsw.max_scan_tuples": "100", "enable_sort": "off"}
FAR_QUERY = "Which note is nearest?"


def _far_and_near(store: MemoryStore, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # The question's vector, 2,256 unit vectors near it and 48 far from it, as a halfvec
    # column holds them.
    rng = np.random.default_rng(seed)
    vector = np.asarray(store.embedder.embed([FAR_QUERY])[0], dtype=np.float32)

    def unit(rows: np.ndarray) -> np.ndarray:
        rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return rows.astype(np.float16).astype(np.float32)

    return (
        vector,
        unit(vector + 0.04 * rng.normal(size=(2_256, 384))),
        unit(rng.normal(size=(48, 384))),
    )


@pytest.mark.parametrize(
    "condition",
    [
        {"user": {"$in": ["u7"]}},
        {"tags": {"$all": ["u7"]}},
        {"user": {"$ne": "u1"}},
        {"user": {"$gt": "u5"}},
    ],
)
def test_a_filtered_walk_that_stops_short_is_read_exactly(
    store: MemoryStore, condition: dict[str, Any]
) -> None:
    # The rows that meet the filter are few in the tenant asked (48 of its 768) and far from the
    # question, while the rows near it are the tenant's others and another tenant's, which meet
    # the filter's value but not the tenant. Walked through the graph (forced here with no sort,
    # as the planner chooses at 100,000 rows), the walk meets none of them before it stops
    # (hnsw.max_scan_tuples); the pool is then read exactly: the 10 nearest rows that meet the
    # filter, as numpy finds them.
    vector, near, far = _far_and_near(store, 11)
    users = ["u7" if n < 48 else "u1" for n in range(768)]
    mine = np.concatenate([far, near[:720]])
    ids = store.remember_many(
        MemoryInput(text=f"Note {n}.", tenant_id="acme", embedding=mine[n],
                    metadata={"user": users[n], "tags": [users[n]]})
        for n in range(768)
    )  # fmt: skip
    store.remember_many(
        MemoryInput(text=f"Other {n}.", tenant_id="other", embedding=near[n],
                    metadata={"user": "u7", "tags": ["u7"]})
        for n in range(720, 2_256)
    )  # fmt: skip
    with store.engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE retrieval.memories")
    config = RetrievalConfig(
        semantic=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=720.0),
        record_access=False, min_final_score=0.0, max_distance=None, memory_bm25=False,
        context_lift=0.0, time_weight=0.0, total_limit=10, newer_versions_first=False,
        exact_scan_factor=0.0,  # every tenant read through the graph
    )  # fmt: skip
    distances = np.linalg.norm(far - vector, axis=1)
    nearest = {ids[i] for i in np.argsort(distances)[:10]}
    with HybridRetriever.from_store(
        store, config=config, background_writes=False, session_settings=WALKED
    ) as retriever:
        for _ in range(2):  # the tenant not seen yet, then known
            found = _ids(retriever.retrieve(FAR_QUERY, tenant_id="acme", filter=condition))
            assert set(found) == nearest and len(found) == 10


@pytest.mark.parametrize(
    "condition",
    [
        {"team": {"$in": ["u7"]}},
        {"tags": {"$all": ["u7"]}},
        {"team": {"$ne": "u1"}},
        {"team": {"$gt": "u5"}},
    ],
)
def test_a_filtered_walk_of_the_chunks_that_stops_short_is_read_exactly(
    store: MemoryStore, condition: dict[str, Any]
) -> None:
    # As for memories: the chunks that meet the filter are few in the tenant asked and far
    # from the question, those near it are the tenant's others and another tenant's; the walk
    # of the chunks' graph stops short and the chunks that meet the filter are read exactly.
    vector, near, far = _far_and_near(store, 12)
    documents = DocumentStore(store)
    for tenant, doc_id, team, texts, vectors in (
        ("acme", "far", "u7", [f"Far {n}." for n in range(48)], far),
        ("acme", "near", "u1", [f"Near {n}." for n in range(720)], near[:720]),
        ("other", "near", "u7", [f"Other {n}." for n in range(1_536)], near[720:]),
    ):
        documents.add(DocumentInput(
            tenant_id=tenant, doc_id=doc_id, metadata={"team": team, "tags": [team]},
            chunks=[ChunkInput(text, embedding=v) for text, v in zip(texts, vectors, strict=True)],
        ))  # fmt: skip
    with store.engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE retrieval.document_chunks")
    config = RetrievalConfig(
        documents=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=720.0),
        record_access=False, min_final_score=0.0, max_distance=None, total_limit=10,
        time_weight=0.0,
    )  # fmt: skip
    distances = np.linalg.norm(far - vector, axis=1)
    nearest = {f"Far {n}." for n in np.argsort(distances)[:10]}
    with HybridRetriever.from_store(
        store, config=config, background_writes=False, session_settings=WALKED
    ) as retriever:
        for _ in range(2):  # the tenant not seen yet, then known
            found = retriever.retrieve(FAR_QUERY, tenant_id="acme", filter=condition)
            chunks = [r.content for r in found if r.source == "documents"]
            assert set(chunks) == nearest and len(chunks) == 10


def _priced(store: MemoryStore, condition: dict[str, Any], operator: str) -> tuple[int, float]:
    # 2,000 memories of the tenant, team t<n mod 2> and user u<n mod 100>: how many meet the
    # condition (an operator's alone) and how many the planner expects to.
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(2_000, 384)).astype(np.float32)
    store.remember_many(
        MemoryInput(text=f"Note {n}.", tenant_id="acme", embedding=vectors[n],
                    metadata={"team": f"t{n % 2}", "user": f"u{n % 100}", "score": n})
        for n in range(2_000)
    )  # fmt: skip
    engine: Engine = store.engine
    with engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE retrieval.memories")
    checked = metadata_filter(condition)
    assert checked is not None and checked.operators == (operator,)
    where = " AND ".join(metadata_conditions(checked.operators, "m.metadata"))
    statement = positional(
        f"SELECT m.id FROM retrieval.memories AS m WHERE m.tenant_id = %(tenant_id)s AND {where}"
    )
    params = {"tenant_id": "acme", **checked.parameters()}
    with engine.connect() as connection:
        cursor = psycopg.RawCursor(connection.connection.driver_connection)
        text = statement.text if isinstance(statement.text, str) else statement.text.decode()
        explained = cursor.execute(f"EXPLAIN (FORMAT JSON) {text}", statement.values(params))
        plan = explained.fetchone()[0][0]["Plan"]  # type: ignore[index]
        found = cursor.execute(text, statement.values(params)).fetchall()
    return len(found), plan["Plan Rows"]


@pytest.mark.parametrize("condition", [{"team": "t0"}, {"team": {"$eq": "t1"}}])
def test_an_equality_is_priced_at_the_rows_that_hold_the_value(
    store: MemoryStore, condition: dict[str, Any]
) -> None:
    # Half the tenant's rows hold {"team": "t0"}. The planner must price the condition near
    # them: an equality it priced at 0.5% of them made it sort every such row by distance
    # instead of walking the graph (100,000 rows: 60 ms against 2.5 ms). A value rare in the
    # tenant and common in the table walks the graph too and, short of the pool, is read exactly
    # (test_a_filtered_walk_that_stops_short_is_read_exactly).
    found, expected = _priced(store, condition, "eq")
    assert found == 1_000
    assert expected >= found / 4  # priced near the rows that hold it


@pytest.mark.parametrize(
    ("condition", "held"),
    [({"user": {"$in": ["u7", "u8"]}}, 40), ({"team": {"$in": ["t0"]}}, 1_000)],
)
def test_an_in_of_values_is_priced_at_the_rows_that_hold_them(
    store: MemoryStore, condition: dict[str, Any], held: int
) -> None:
    # $in of two users (2% of the rows) must be priced near them, so that the GIN index reads
    # them: written as a list's elements compared, it was priced at half the rows and walked
    # the graph past every row (100,000 rows, 0.2%: 55-82 ms against 2.4 ms by equality). A
    # value half the rows hold is priced near them too, and walks the graph.
    found, expected = _priced(store, condition, "in_within")
    assert found == held
    assert held / 4 <= expected <= held * 4  # priced near the rows that hold them
