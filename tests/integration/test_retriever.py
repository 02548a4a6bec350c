"""The hybrid retriever on the real PostgreSQL with the real model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import text

from retrieval.embedding.calibration import calibration_for
from retrieval.errors import ConfigurationError, ValidationError
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search import reference_scores, scoring
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.context import to_markdown, to_messages
from retrieval.search.modes import Mode
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase, as_stored

AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
HOUR = 3600.0
# Every candidate visible: no threshold, generous limits.
OPEN = RetrievalConfig(
    working_state=SourceConfig(relevance=0.3, recency=0.7, limit=10, half_life_hours=1.0),
    semantic=SourceConfig(relevance=0.9, recency=0.1, limit=20, half_life_hours=720.0),
    episodic=SourceConfig(relevance=0.7, recency=0.3, limit=20, half_life_hours=168.0),
    total_limit=50,
    min_final_score=0.0,
    max_distance=None,
    memory_bm25=False,  # the dense channel alone (tests/integration/test_memory_bm25.py: fused)
    episodic_min_keyword_share=0.0,  # any keyword (tests/integration/test_episodic_words.py)
)


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        yield retriever


def _history(store: MemoryStore, tenant: str = "acme") -> dict[str, int]:
    ids = {}
    ids["deploy"] = store.remember(
        "The deploy failed because the database migration timed out",
        tenant_id=tenant,
        kind="episteme",
        created_at=AS_OF - timedelta(days=2),
        importance=0.9,
        entities=["deploy", "postgres"],
    )
    ids["editor"] = store.remember(
        "Alice prefers dark mode in her code editor",
        tenant_id=tenant,
        kind="fact",
        created_at=AS_OF - timedelta(days=40),
    )
    ids["insight"] = store.remember(
        "Insight: migrations fail when the lock timeout is too short",
        tenant_id=tenant,
        kind="synthesized_insight",
        created_at=AS_OF - timedelta(hours=5),
    )
    ids["decision"] = store.record_decision(
        tenant_id=tenant,
        task_id="task-1",
        action_type="plan",
        content="Retry the database migration with a longer lock timeout",
        status="done",
        created_at=AS_OF - timedelta(hours=3),
    )
    ids["other_decision"] = store.record_decision(
        tenant_id=tenant,
        task_id="task-2",
        action_type="plan",
        content="Write the quarterly report on database costs",
        status="open",
        created_at=AS_OF - timedelta(days=10),
    )
    ids["tool_call"] = store.record_tool_call(
        tenant_id=tenant,
        decision_id=ids["decision"],
        tool_name="run_migration",
        params={"lock_timeout": "60s"},
        result="migration applied",
        created_at=AS_OF - timedelta(hours=2),
    )
    return ids


def test_sql_scores_equal_the_python_oracle(store: MemoryStore, retriever: HybridRetriever) -> None:
    _history(store)
    query = "Why did the database migration fail?"
    response = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=OPEN)
    query_vector = store.embedder.embed([query])[0]
    keywords = scoring.extract_keywords(query)
    assert keywords == ("database", "migration", "fail")
    semantic = [r for r in response if r.source == "semantic"]
    episodic = [r for r in response if r.source == "episodic"]
    assert len(semantic) == 3 and len(episodic) == 3
    for result in semantic:
        memory = store.get_memory(result.metadata["id"], tenant_id="acme")
        assert memory is not None
        distance = float(np.linalg.norm(memory.embedding - as_stored(query_vector)))
        assert result.metadata["distance"] == pytest.approx(distance, abs=1e-5)
        calibration = calibration_for(store.embedder.model_id)
        assert result.relevance_score == pytest.approx(
            float(calibration.relevance(np.array([distance]))[0]), abs=1e-5
        )
        # The seed's relevance stays in the evidence.
        assert result.metadata["inverse_distance"] == pytest.approx(
            reference_scores.distance_relevance(distance), abs=1e-5
        )
        age = (AS_OF - memory.created_at).total_seconds()
        assert result.recency_score == pytest.approx(
            reference_scores.exponential_recency(age, 720 * HOUR), abs=1e-12
        )
        signals = {"relevance": result.relevance_score, "recency": result.recency_score}
        assert result.final_score == pytest.approx(
            scoring.weighted_sum(signals, {"relevance": 0.9, "recency": 0.1}), abs=1e-12
        )
    for result in episodic:
        if result.metadata["item"] == "tool_call":
            # A tool call matches on its name or its parameters, not its result.
            lowered = (result.metadata["tool_name"] + json.dumps(result.metadata["params"])).lower()
        else:
            lowered = result.content.lower()
        matched = [keyword for keyword in keywords if keyword in lowered]
        assert result.metadata["matched_keywords"] == matched
        assert result.relevance_score == pytest.approx(
            scoring.keyword_fraction(len(matched), len(keywords)), abs=1e-12
        )
        created = datetime.fromisoformat(result.metadata["created_at"])
        assert result.recency_score == pytest.approx(
            reference_scores.exponential_recency((AS_OF - created).total_seconds(), 168 * HOUR),
            abs=1e-12,
        )
    finals = [r.final_score for r in response]
    assert finals == sorted(finals, reverse=True)


def test_optional_signals_match_the_oracle(store: MemoryStore, retriever: HybridRetriever) -> None:
    ids = _history(store)
    with store.engine.begin() as connection:
        connection.execute(
            text("UPDATE retrieval.memories SET access_count = 9 WHERE id = :id"),
            {"id": ids["deploy"]},
        )
    weights = SourceConfig(
        relevance=0.4,
        recency=0.1,
        importance=0.2,
        popularity=0.1,
        entity=0.2,
        limit=10,
        half_life_hours=720.0,
    )
    config = RetrievalConfig(semantic=weights, min_final_score=0.0, max_distance=None)
    response = retriever.retrieve(
        "database migration",
        tenant_id="acme",
        as_of=AS_OF,
        config=config,
        entities=["deploy", "billing"],
    )
    by_id = {r.metadata["id"]: r for r in response if r.source == "semantic"}
    deploy = by_id[ids["deploy"]]
    assert deploy.metadata["signals"]["popularity"] == pytest.approx(reference_scores.popularity(9))
    assert deploy.metadata["signals"]["entity"] == pytest.approx(
        reference_scores.entity_overlap(1, 2)
    )
    assert deploy.metadata["matched_entities"] == ["deploy"]
    assert deploy.metadata["signals"]["importance"] == pytest.approx(0.9)
    editor = by_id[ids["editor"]]
    # No importance stored: neutral 0.5; no access, no entity.
    assert editor.metadata["signals"]["importance"] == 0.5
    assert editor.metadata["signals"]["popularity"] == 0.0
    assert editor.metadata["signals"]["entity"] == 0.0
    assert deploy.final_score == pytest.approx(
        scoring.weighted_sum(deploy.metadata["signals"], weights.weights)
    )


def test_another_tenants_rows_never_appear(store: MemoryStore, retriever: HybridRetriever) -> None:
    _history(store, tenant="acme")
    _history(store, tenant="globex")
    response = retriever.retrieve(
        "database migration timed out", tenant_id="acme", as_of=AS_OF, config=OPEN
    )
    assert len(response) == 6
    with store.engine.connect() as connection:
        acme = {
            (table, row_id)
            for table in ("memories", "decisions", "tool_calls")
            for (row_id,) in connection.execute(
                text(f"SELECT id FROM retrieval.{table} WHERE tenant_id = 'acme'")
            )
        }
    table_of = {"memory": "memories", "decision": "decisions", "tool_call": "tool_calls"}
    assert {(table_of[r.metadata["item"]], r.metadata["id"]) for r in response} <= acme
    assert retriever.retrieve("database migration", tenant_id="initech", as_of=AS_OF).results == ()


def test_an_empty_answer_names_a_tenant_that_holds_nothing(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    _history(store, tenant="acme")
    unknown = retriever.retrieve("database migration", tenant_id="acmee", as_of=AS_OF)
    assert unknown.results == ()
    assert unknown.diagnostics.notes == (
        "tenant 'acmee' holds nothing here (no memory, decision, tool call or document): "
        "check the tenant id and the database",
    )
    assert unknown.diagnostics.to_dict()["notes"] == list(unknown.diagnostics.notes)
    # A tenant that holds something, but nothing then: empty, and no note.
    before = datetime(2000, 1, 1, tzinfo=UTC)
    empty = retriever.retrieve("database migration", tenant_id="acme", as_of=before)
    assert empty.results == () and empty.diagnostics.notes == ()
    found = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF)
    assert found.results and found.diagnostics.notes == ()
    assert retriever.holds("acme") and not retriever.holds("acmee")
    store.record_decision(
        tenant_id="initech", task_id="T-1", action_type="plan", content="x", status="done"
    )
    assert retriever.holds("initech")  # a decision is something


def test_like_wildcards_in_a_keyword_match_literally(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    for content in ("Run the data_load job", "Run the dataXload job", "Run the data load job"):
        store.record_decision(
            tenant_id="acme",
            task_id=None,
            action_type="run",
            content=content,
            status="done",
            created_at=AS_OF,
        )
    config = RetrievalConfig(
        semantic=OPEN.semantic.__class__(**{**OPEN.semantic.__dict__, "enabled": False})
    )
    response = retriever.retrieve("data_load", tenant_id="acme", as_of=AS_OF, config=config)
    assert [r.content for r in response] == ["Run the data_load job"]
    assert response[0].metadata["matched_keywords"] == ["data_load"]


def test_keyword_matches_equal_ilike_on_the_original_text(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # The source compares the stored lower-cased search text with LIKE (revision 0006); the
    # matches must be ILIKE's on the original columns, mixed case and non-ASCII letters
    # included.
    contents = [
        "Überprüfung der STRASSE abgeschlossen",
        "ΣΊΣΥΦΟΣ pushed the Boulder again",
        "Café RÉSUMÉ review for İstanbul office",
        "Plain lowercase note about the boulder",
    ]
    for content in contents:
        store.record_decision(
            tenant_id="acme", task_id=None, action_type="note", content=content,
            status="done", created_at=AS_OF,
        )  # fmt: skip
    store.record_tool_call(
        tenant_id="acme", decision_id=None, tool_name="Geo_LOOKUP",
        params={"City": "İstanbul", "Note": "Überprüfung"}, result="ok", created_at=AS_OF,
    )  # fmt: skip
    store.record_tool_call(
        tenant_id="acme", decision_id=None, tool_name="fetchcity",
        params={"q": "x"}, result=None, created_at=AS_OF,
    )  # fmt: skip
    config = RetrievalConfig(
        semantic=SourceConfig(0.9, 0.1, limit=5, half_life_hours=720.0, enabled=False),
        episodic=SourceConfig(relevance=0.7, recency=0.3, limit=10, half_life_hours=168.0),
        min_final_score=0.0,
        record_access=False,
    )
    queries = [
        "überprüfung straße", "σίσυφος boulder", "café résumé", "istanbul lookup",
        "İstanbul city", "geo_lookup", "boulder",
    ]  # fmt: skip
    with store.engine.connect() as connection:
        for query in queries:
            keywords = scoring.extract_keywords(query)
            expected: dict[tuple[str, int], list[str]] = {}
            for keyword in keywords:
                pattern = scoring.like_pattern(keyword)
                decisions = connection.execute(
                    text(
                        "SELECT id FROM retrieval.decisions "
                        "WHERE tenant_id = 'acme' AND content ILIKE :p"
                    ),
                    {"p": pattern},
                ).scalars()
                calls = connection.execute(
                    text(
                        "SELECT id FROM retrieval.tool_calls WHERE tenant_id = 'acme' "
                        "AND (tool_name ILIKE :p OR params::text ILIKE :p)"
                    ),
                    {"p": pattern},
                ).scalars()
                for item, ids in (("decision", decisions), ("tool_call", calls)):
                    for row in ids:
                        expected.setdefault((item, row), []).append(keyword)
            response = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
            got = {(r.metadata["item"], r.metadata["id"]): r.metadata["matched_keywords"]
                   for r in response}  # fmt: skip
            assert got == expected, query
            assert expected, query


def test_task_filter_narrows_the_episodic_source(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _history(store)
    response = retriever.retrieve(
        "database migration report", tenant_id="acme", as_of=AS_OF, config=OPEN, task_id="task-1"
    )
    episodic = {(r.metadata["item"], r.metadata["id"]) for r in response if r.source == "episodic"}
    assert episodic == {("decision", ids["decision"]), ("tool_call", ids["tool_call"])}
    everything = retriever.retrieve(
        "database migration report", tenant_id="acme", as_of=AS_OF, config=OPEN
    )
    assert ("decision", ids["other_decision"]) in {
        (r.metadata["item"], r.metadata["id"]) for r in everything
    }


def test_modes_filter_kinds_in_sql(store: MemoryStore, retriever: HybridRetriever) -> None:
    ids = _history(store)
    store.remember(
        "Runbook: how to run a database migration safely",
        tenant_id="acme",
        kind="techne",
        created_at=AS_OF,
    )

    def kinds(mode: str, config: RetrievalConfig = OPEN) -> set[str]:
        response = retriever.retrieve(
            "database migration", tenant_id="acme", as_of=AS_OF, config=config, mode=mode
        )
        return {r.metadata["kind"] for r in response}

    assert kinds("semantic") == {
        "episteme",
        "fact",
        "synthesized_insight",
        "techne",
        "decision",
        "tool_call",
    }
    assert kinds("session_recovery") == {"episteme", "fact", "techne", "decision", "tool_call"}
    assert kinds("knowledge_lookup") == {"episteme", "techne", "decision"}
    custom = OPEN.with_modes(facts_only=Mode(include_kinds=frozenset({"fact"})))
    assert kinds("facts_only", custom) == {"fact"}
    assert ids["insight"]
    with pytest.raises(ConfigurationError, match=r"unknown mode 'nope'.*knowledge_lookup"):
        retriever.retrieve("database migration", tenant_id="acme", mode="nope")


def test_a_mode_whose_results_leave_the_memories_metadata_out(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # A conversation's turns (the turns around its hits read too) and a fact, each with
    # metadata: a mode whose results carry none returns the same results with the
    # rest of their evidence, and the statements it runs send no memory's metadata.
    turns = [
        "Maria: I finally booked the flights to Lisbon for March.",
        "Sam: Lisbon in spring sounds lovely, which hotel?",
        "Maria: A small place near the Alfama, with a view of the river.",
    ]
    for position, turn in enumerate(turns):
        metadata = {"channel": "chat", "turn": position}
        store.remember(
            turn, tenant_id="acme", thread_id="trip", position=position, metadata=metadata,
            created_at=AS_OF,
        )  # fmt: skip
    store.remember(
        "Maria's passport expires in June 2027.",
        tenant_id="acme",
        metadata={"source": "profile", "notes": "x" * 3000},
        created_at=AS_OF,
    )
    quiet = RetrievalConfig(**{**OPEN.__dict__, "record_access": False})
    lean = quiet.with_modes(lean=Mode(metadata=False))
    sent: list[str] = []
    execute = retriever._reads.execute

    def spy(query: str, params: dict[str, object], **options: object) -> object:
        sent.append(query)
        return execute(query, params, **options)  # type: ignore[arg-type]

    question = "Where is Maria staying in Lisbon, and is her passport valid?"
    full = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, config=quiet)
    retriever._reads.execute = spy  # type: ignore[method-assign]
    try:
        bare = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, config=lean, mode="lean")
    finally:
        retriever._reads.execute = execute  # type: ignore[method-assign]
    assert [r.metadata["id"] for r in bare] == [r.metadata["id"] for r in full]
    assert len(full) >= 3 and all(r.metadata["metadata"] for r in full)
    for lean_result, full_result in zip(bare, full, strict=True):
        assert "metadata" not in lean_result.metadata
        assert lean_result.final_score == full_result.final_score
        rest = {k: v for k, v in full_result.metadata.items() if k != "metadata"}
        assert lean_result.metadata == rest
    assert any("context_hits" in query for query in sent)  # the turns around the hits read
    assert not any("'metadata', n.metadata" in query for query in sent)


def test_bad_queries_get_clear_errors(retriever: HybridRetriever) -> None:
    with pytest.raises(ValidationError, match="query is empty"):
        retriever.retrieve("   ", tenant_id="acme")
    with pytest.raises(ValidationError, match="no time zone"):
        retriever.retrieve("database", tenant_id="acme", as_of=datetime(2026, 1, 1))
    with pytest.raises(ValidationError, match="tenant_id is empty"):
        retriever.retrieve("database", tenant_id="")
    with pytest.raises(ValidationError, match="NUL"):
        retriever.retrieve("data\x00base", tenant_id="acme")
    with pytest.raises(ValidationError, match="entities"):
        retriever.retrieve("database", tenant_id="acme", entities="deploy")
    # Half of a surrogate pair alone: UTF-8 cannot encode it, whichever string holds it.
    with pytest.raises(ValidationError, match=r"query contains an unpaired surrogate \(U\+D800\)"):
        retriever.retrieve("data\ud800base", tenant_id="acme")
    with pytest.raises(ValidationError, match="tenant_id contains an unpaired surrogate"):
        retriever.retrieve("database", tenant_id="acme\udc80")
    with pytest.raises(ValidationError, match="entities contains an unpaired surrogate"):
        retriever.retrieve("database", tenant_id="acme", entities=["ok", "\udfff"])
    for field, options in (
        ("tenant_id", {"tenant_id": "ac\x00me"}),
        ("task_id", {"tenant_id": "acme", "task_id": "T\x00"}),
        ("entities", {"tenant_id": "acme", "entities": ["ok", "e\x00"]}),
    ):
        with pytest.raises(ValidationError, match=f"{field} contains a NUL byte at position"):
            retriever.retrieve("database", **options)
    with pytest.raises(ValidationError, match="tenant_id contains an unpaired surrogate"):
        retriever.timeline("acme\ud800")
    with pytest.raises(ValidationError, match="kinds contains a NUL byte at position 4"):
        retriever.timeline("acme", kinds=["fact\x00"])
    with pytest.raises(ValidationError, match="tenant_id is empty"):
        retriever.timeline(" ")


def test_threshold_limits_and_a_deterministic_order(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    _history(store)
    store.remember_many(
        [
            MemoryInput(
                text=f"Database migration note number {n}", tenant_id="acme", created_at=AS_OF
            )
            for n in range(8)
        ]
    )
    config = RetrievalConfig(min_final_score=0.55, max_distance=None)
    first = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF, config=config)
    assert all(r.final_score >= 0.55 for r in first)
    assert sum(1 for r in first if r.source == "semantic") <= config.semantic.limit
    assert sum(1 for r in first if r.source == "episodic") <= config.episodic.limit
    assert len(first) <= config.total_limit
    dropped = first.diagnostics.sources["semantic"]
    assert dropped.candidates == 11 and dropped.kept <= dropped.candidates
    again = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF, config=config)
    assert [(r.source, r.metadata["id"]) for r in again] == [
        (r.source, r.metadata["id"]) for r in first
    ]
    assert [r.final_score for r in again] == [r.final_score for r in first]


def test_max_distance_cuts_semantic_candidates(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    _history(store)
    wide = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF, config=OPEN)
    distances = sorted(r.metadata["distance"] for r in wide if r.source == "semantic")
    cut = (distances[0] + distances[1]) / 2
    narrow = retriever.retrieve(
        "database migration",
        tenant_id="acme",
        as_of=AS_OF,
        config=RetrievalConfig(**{**OPEN.__dict__, "max_distance": cut}),
    )
    assert [r.metadata["distance"] for r in narrow if r.source == "semantic"] == [distances[0]]


def test_working_state_messages_are_scored_and_kept_unchanged(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    _history(store)
    messages = [
        {"role": "user", "content": "Let's look at the migration again", "id": "m1"},
        {"role": "assistant", "content": "Sure, which database?", "id": "m2"},
    ]
    response = retriever.retrieve(
        "database migration", tenant_id="acme", as_of=AS_OF, working_state=messages, config=OPEN
    )
    ws = [r for r in response if r.source == "working_state"]
    assert {r.metadata["message"]["id"] for r in ws} == {"m1", "m2"}
    assert all(
        r.metadata["message"] is m
        for r in ws
        for m in messages
        if m["id"] == r.metadata["message"]["id"]
    )
    newest = next(r for r in ws if r.metadata["message"]["id"] == "m2")
    assert newest.recency_score == 1.0 and newest.relevance_score == 0.5
    # With the default threshold the older message (0.3 * 0.5 + 0.7 * 0.1 = 0.22) is dropped.
    default = retriever.retrieve(
        "database migration", tenant_id="acme", as_of=AS_OF, working_state=messages
    )
    assert [r.metadata["message"]["id"] for r in default if r.source == "working_state"] == ["m2"]
    # As chat context: stored results as assistant messages, then the conversation unchanged.
    chat = to_messages(default, messages)
    assert chat[-2:] == messages and chat[-2] is messages[0] and chat[-1] is messages[1]
    assert {m["role"] for m in chat[:-2]} == {"assistant"}
    assert all(0 <= m["metadata"]["final_score"] <= 1 for m in chat[:-2])
    block = to_markdown(default)
    assert block.startswith("## Previous context") and "final " in block


def test_diagnostics_report_one_statement_and_each_source(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    _history(store)
    no_cut = RetrievalConfig(max_distance=None)
    response = retriever.retrieve(
        "database migration", tenant_id="acme", as_of=AS_OF, config=no_cut
    )
    diagnostics = response.diagnostics
    assert diagnostics.statements == 1
    assert diagnostics.keywords == ("database", "migration")
    assert set(diagnostics.sources) == {"semantic", "episodic", "documents"}
    semantic = diagnostics.sources["semantic"]
    assert semantic.candidates == 3 and semantic.kept >= semantic.returned
    assert set(semantic.mean_scores) == {"relevance", "recency", "final"}
    assert diagnostics.sql_ms > 0 and diagnostics.total_ms >= diagnostics.sql_ms
    assert diagnostics.as_of == AS_OF
    assert diagnostics.to_dict()["sources"]["episodic"]["candidates"] == 3
    # A query without keywords runs only the semantic source; still one statement.
    assert retriever.retrieve("SQL", tenant_id="acme").diagnostics.keywords == ()


def test_a_tenant_without_decisions_is_asked_without_the_episodic_source_until_it_has_some(
    store: MemoryStore,
) -> None:
    # The episodic CTEs are left out for a tenant that held no decisions or tool calls at the
    # last call; the statement's presence row brings them back the moment its first decision
    # exists (written by another store object), and drops them again once it is forgotten.
    store.remember("The deploy failed on the database migration", tenant_id="solo",
                   created_at=AS_OF - timedelta(days=1))  # fmt: skip
    with HybridRetriever.from_store(store, config=OPEN, background_writes=False) as retriever:

        def ask() -> tuple[list[str], int]:
            response = retriever.retrieve("database migration", tenant_id="solo", as_of=AS_OF)
            return [r.source for r in response], response.diagnostics.statements

        assert ask() == (["semantic"], 1)  # not known yet: asked with the episodic CTEs
        assert ask() == (["semantic"], 1)  # known to hold none: asked without them
        assert retriever._presence.may_hold("solo", "episodic") is False
        other = MemoryStore(store.engine, schema=store.schema, embedder=store.embedder)
        decision = other.record_decision(
            tenant_id="solo", task_id="t", action_type="plan", status="open",
            content="Retry the database migration tonight", created_at=AS_OF,
        )  # fmt: skip
        sources, statements = ask()
        assert statements == 2 and sorted(sources) == ["episodic", "semantic"]
        assert ask() == (sources, 1)
        other.forget(tenant_id="solo", task_id="t")
        assert store.get_decision(decision, tenant_id="solo") is None
        assert ask() == (["semantic"], 1)
        assert retriever._presence.may_hold("solo", "episodic") is False
        assert ask() == (["semantic"], 1)


def test_returned_memories_get_their_accesses_counted(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _history(store)
    response = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF, config=OPEN)
    returned = {r.metadata["id"] for r in response if r.source == "semantic"}

    assert returned == {ids["deploy"], ids["editor"], ids["insight"]}
    for memory_id in returned:
        memory = store.get_memory(memory_id, tenant_id="acme")
        assert memory is not None
        assert memory.access_count == 1 and memory.last_accessed_at is not None
    with HybridRetriever.from_store(store) as background:
        background.retrieve("database migration", tenant_id="acme", as_of=AS_OF, config=OPEN)
        background.flush()
        memory = store.get_memory(ids["deploy"], tenant_id="acme")
        assert memory is not None and memory.access_count == 2
    off = RetrievalConfig(**{**OPEN.__dict__, "record_access": False})
    retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF, config=off)
    memory = store.get_memory(ids["deploy"], tenant_id="acme")
    assert memory is not None and memory.access_count == 2


def test_timeline_lists_a_window_newest_first(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _history(store)
    _history(store, tenant="globex")
    events = retriever.timeline("acme", since=AS_OF - timedelta(days=3), until=AS_OF)
    assert [(e.item, e.id) for e in events] == [
        ("tool_call", ids["tool_call"]),
        ("decision", ids["decision"]),
        ("memory", ids["insight"]),
        ("memory", ids["deploy"]),
    ]
    only = retriever.timeline("acme", kinds=["decision", "fact"], limit=10)
    assert {(e.item, e.kind) for e in only} == {("decision", "decision"), ("memory", "fact")}
    assert len(retriever.timeline("acme", limit=2)) == 2
    with pytest.raises(ValidationError, match="no time zone"):
        retriever.timeline("acme", since=datetime(2026, 1, 1))


def test_access_counts_are_updated_in_place(store: MemoryStore, retriever: HybridRetriever) -> None:
    # Migration 0003 leaves a fifth of each page free and no index covers the columns an access
    # sets, so the update is a HOT one: the row stays in its page and no index (the HNSW graph
    # included) gets a new entry. The first update always finds that room; later ones find it
    # once PostgreSQL prunes the page's dead versions, which any older transaction that wrote,
    # in any database of the server, holds back (a suite sharing a server has such transactions),
    # so only the first is checked for its page.
    ids = _history(store)
    where = text(
        "SELECT (ctid::text::point)[0], access_count FROM retrieval.memories WHERE id = :id"
    )
    with store.engine.connect() as connection:
        options = connection.execute(
            text("SELECT reloptions FROM pg_class WHERE oid = 'retrieval.memories'::regclass")
        ).scalar_one()
        indexes = connection.execute(
            text(
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
                "WHERE indrelid = 'retrieval.memories'::regclass"
            )
        ).scalars()
        indexed_access = [index for index in indexes if "access" in index]
        block, _ = connection.execute(where, {"id": ids["deploy"]}).one()
    assert options == ["fillfactor=80"]
    assert indexed_access == []
    one = RetrievalConfig(
        semantic=SourceConfig(relevance=0.9, recency=0.1, limit=1, half_life_hours=720.0),
        min_final_score=0.0,
    )
    for count in range(1, 6):
        response = retriever.retrieve("why did the deploy fail", tenant_id="acme", config=one)
        assert [r.metadata["id"] for r in response if r.source == "semantic"] == [ids["deploy"]]
        with store.engine.connect() as connection:
            page, accesses = connection.execute(where, {"id": ids["deploy"]}).one()
        assert accesses == count
        if count == 1:
            assert page == block


def test_a_dropped_connection_is_replaced(store: MemoryStore, retriever: HybridRetriever) -> None:
    _history(store)
    first = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF)
    with store.engine.begin() as connection:
        # Ends every other session on this database, the retriever's kept connection included.
        ended = connection.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).scalar_one()
    assert ended >= 1
    again = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF)
    assert [r.content for r in again] == [r.content for r in first]


def test_threads_can_share_a_retriever(store: MemoryStore, retriever: HybridRetriever) -> None:
    _history(store)
    expected = [
        r.content for r in retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF)
    ]

    def ask(_: int) -> list[str]:
        response = retriever.retrieve("database migration", tenant_id="acme", as_of=AS_OF)
        return [r.content for r in response]

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(ask, range(16)))
    assert answers == [expected] * 16


def test_pending_access_counts_are_written_when_the_process_exits(
    database: PgDatabase, store: MemoryStore
) -> None:
    ids = _history(store)
    # The update is slowed down so that the interpreter reaches its exit while it is queued.
    script = (
        "import time\n"
        "from retrieval.search.present.access_counts import AccessRecorder\n"
        "from retrieval.db.engine import make_engine\n"
        "from retrieval.db.read_pool import ReadConnections\n"
        f"connections = ReadConnections(make_engine({database.url!r}))\n"
        "def slow(query, params):\n"
        "    time.sleep(1.0)\n"
        "    return connections.execute(query, params)\n"
        "recorder = AccessRecorder('retrieval', slow)\n"
        f"recorder.record('acme', [{ids['deploy']}])\n"
        "# no close(), no flush(): the interpreter exits with the update queued\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=300)
    memory = store.get_memory(ids["deploy"], tenant_id="acme")
    assert memory is not None and memory.access_count == 1
