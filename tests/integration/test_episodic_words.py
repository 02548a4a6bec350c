"""The episodic word index (revision 0007): kept in step by triggers, and the threshold's
pruning of its postings, on the real PostgreSQL."""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, text

from retrieval.memory.records import DecisionInput, ToolCallInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.results import RetrievalResponse
from retrieval.search.retriever import HybridRetriever
from retrieval.search.sources.episodic.plan import SEVERAL_KEYWORDS
from tests.threads import run_together

AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
# What splits search_text into tokens: ASCII characters other than letters, digits and "_".
SEPARATORS = re.compile(r"[\x01-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]+")
ITEMS = {1: "decisions", 2: "tool_calls"}


def _expected(connection: Connection) -> tuple[Counter[tuple[str, str]], set[tuple[object, ...]]]:
    # The vocabulary (tenant, token) -> rows and the postings, recounted from search_text.
    rows: Counter[tuple[str, str]] = Counter()
    postings: set[tuple[object, ...]] = set()
    for item, table in ITEMS.items():
        found = connection.execute(
            text(f"SELECT tenant_id, id, created_at, search_text FROM retrieval.{table}")
        )
        for tenant, row_id, created_at, search_text in found:
            for token in {t for t in SEPARATORS.split(search_text) if t}:
                rows[(tenant, token)] += 1
                postings.add((tenant, token, created_at, item, row_id))
    return rows, postings


def _stored(connection: Connection) -> tuple[Counter[tuple[str, str]], set[tuple[object, ...]]]:
    vocabulary = connection.execute(
        text("SELECT tenant_id, token, rows FROM retrieval.episodic_vocabulary")
    ).all()
    postings = connection.execute(
        text(
            "SELECT p.tenant_id, v.token, p.created_at, p.item, p.row_id "
            "FROM retrieval.episodic_postings AS p JOIN retrieval.episodic_vocabulary AS v "
            "ON v.tenant_id = p.tenant_id AND v.id = p.token_id"
        )
    ).all()
    return Counter({(t, token): n for t, token, n in vocabulary}), {tuple(p) for p in postings}


def _assert_in_step(store: MemoryStore) -> None:
    with store.engine.connect() as connection:
        assert _stored(connection) == _expected(connection)


def test_the_word_index_follows_inserts_updates_and_deletes(store: MemoryStore) -> None:
    first = store.record_decision(
        tenant_id="acme", task_id="t1", action_type="plan",
        content="Deploy api-server v2.1 to eu-west; roll back on HTTP 500", status="open",
        created_at=AS_OF,
    )  # fmt: skip
    store.record_decision(
        tenant_id="acme", task_id="t2", action_type="note",
        content="Café résumé: ÜBER-straße\tdata_load (x/y) {z} [w] `v` ~u", status="done",
        created_at=AS_OF - timedelta(days=3),
    )  # fmt: skip
    store.record_tool_call(
        tenant_id="acme", decision_id=first, tool_name="Http.Get",
        params={"url": "https://example.org/a?b=c", "Retries": 3}, result="ok",
        created_at=AS_OF,
    )  # fmt: skip
    store.record_decision(
        tenant_id="other", task_id="t1", action_type="plan", content="Deploy the api server",
        status="open", created_at=AS_OF,
    )  # fmt: skip
    _assert_in_step(store)

    with store.engine.begin() as connection:  # another writer's plain SQL
        connection.execute(
            text("UPDATE retrieval.decisions SET content = 'Rollback finished' WHERE id = :id"),
            {"id": first},
        )
    _assert_in_step(store)

    store.forget(tenant_id="acme", task_id="t1")  # the decision and, by cascade, its call
    _assert_in_step(store)
    store.record_tool_call(
        tenant_id="acme", decision_id=None, tool_name="cleanup", params={"deploy": "api"},
        result=None, created_at=AS_OF,
    )  # fmt: skip
    with store.engine.begin() as connection:
        connection.execute(text("TRUNCATE retrieval.tool_calls"))
    _assert_in_step(store)
    store.forget(tenant_id="acme", everything=True)
    _assert_in_step(store)
    with store.engine.connect() as connection:
        left = connection.execute(
            text("SELECT DISTINCT tenant_id FROM retrieval.episodic_vocabulary")
        ).scalars()
        assert set(left) == {"other"}  # a forgotten tenant's words are gone too
    with store.engine.begin() as connection:
        connection.execute(text("TRUNCATE retrieval.decisions CASCADE"))  # both tables empty
    _assert_in_step(store)


def test_a_bulk_insert_is_indexed_in_one_pass(store: MemoryStore) -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]
    with store.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO retrieval.decisions "
                "(tenant_id, task_id, action_type, content, status, created_at) "
                "SELECT 'acme', NULL, 'run', c, 'done', :at FROM unnest(CAST(:c AS text[])) AS c"
            ),
            {
                "c": [" ".join(rng.sample(words, 4)) for _ in range(500)],
                "at": AS_OF,
            },
        )
    _assert_in_step(store)


def test_a_token_longer_than_a_btree_entry_is_found(store: MemoryStore) -> None:
    sequence = "ACGT" * 2000  # one 8,000-character token
    store.record_decision(
        tenant_id="acme", task_id=None, action_type="note",
        content=f"Sequenced {sequence} today", status="done", created_at=AS_OF,
    )  # fmt: skip
    config = RetrievalConfig(
        semantic=SourceConfig(0.9, 0.1, limit=5, half_life_hours=720.0, enabled=False),
        min_final_score=0.0,
        record_access=False,
    )
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        response = retriever.retrieve("gtacgtac", tenant_id="acme", as_of=AS_OF, config=config)
    assert [r.metadata["matched_keywords"] for r in response] == [["gtacgtac"]]


def test_concurrent_writers_keep_the_word_index_and_never_deadlock(store: MemoryStore) -> None:
    # Two threads write and forget decisions and tool calls over the same words at once: the
    # triggers take the tenant's advisory lock first, so the writers queue, never cycle.
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "iota"]

    def work(worker: int) -> None:
        rng = random.Random(worker)
        for round_ in range(8):
            ids = store.record_decisions(
                {"tenant_id": "acme", "task_id": f"w{worker}-{round_}", "action_type": "run",
                 "content": " ".join(rng.sample(words, 5)), "status": "done"}
                for _ in range(30)
            )  # fmt: skip
            store.record_tool_calls(
                {"tenant_id": "acme", "decision_id": ids[0], "tool_name": "search",
                 "params": {"q": rng.sample(words, 3)}, "result": None}
                for _ in range(10)
            )  # fmt: skip
            if round_ % 2:
                store.forget(tenant_id="acme", task_id=f"w{worker}-{round_ - 1}")

    assert run_together(work) == []
    _assert_in_step(store)


WORDS = ["migration", "timeout", "database", "deploy", "rollback", "billing", "invoice", "cache"]


@pytest.fixture
def spread(store: MemoryStore) -> MemoryStore:
    # 400 decisions and 200 tool calls over 60 days, each holding a random subset of WORDS,
    # written in two batches.
    rng = random.Random(11)
    decisions = []
    for index in range(400):
        held = rng.sample(WORDS, rng.choice([1, 1, 1, 2, 2, 3, 4, 6, 8]))
        decisions.append(DecisionInput(
            tenant_id="acme", task_id=f"t{index % 7}", action_type="plan",
            content=f"step {index}: " + " and ".join(held), status="done",
            created_at=AS_OF - timedelta(hours=rng.uniform(-2.0, 60 * 24.0)),
        ))  # fmt: skip
    calls = []
    for _ in range(200):
        held = rng.sample(WORDS, rng.choice([1, 1, 2, 3, 5]))
        calls.append(ToolCallInput(
            tenant_id="acme", decision_id=None, tool_name="search",
            params={"terms": held}, result=None,
            created_at=AS_OF - timedelta(hours=rng.uniform(0.0, 60 * 24.0)),
        ))  # fmt: skip
    store.record_decisions(decisions)
    store.record_tool_calls(calls)
    return store


@pytest.mark.parametrize(
    ("relevance", "threshold", "half_life_hours"),
    [(0.7, 0.4, 168.0), (0.7, 0.55, 168.0), (0.5, 0.3, 24.0), (0.9, 0.6, 720.0), (0.3, 0.5, 48.0)],
)
def test_pruning_keeps_every_row_that_passes_the_threshold(
    spread: MemoryStore, relevance: float, threshold: float, half_life_hours: float
) -> None:
    episodic = SourceConfig(
        relevance=relevance, recency=1.0 - relevance, limit=600, half_life_hours=half_life_hours
    )
    base = RetrievalConfig(
        semantic=SourceConfig(0.9, 0.1, limit=5, half_life_hours=720.0, enabled=False),
        episodic=episodic,
        total_limit=600,
        candidate_pool=600,
        record_access=False,
        episodic_min_keyword_share=0.0,  # the threshold's pruning alone (the share's: below)
    )
    everything = replace(base, min_final_score=0.0)
    pruned = replace(base, min_final_score=threshold)
    query = "database migration timeout after the deploy rollback"
    with HybridRetriever.from_store(spread, background_writes=False) as retriever:
        full = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=everything)
        kept = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=pruned)

    def rows(response: RetrievalResponse) -> list[tuple[str, int, float]]:
        return [(r.metadata["item"], r.metadata["id"], r.final_score) for r in response]

    expected = [row for row in rows(full) if row[2] >= threshold]
    assert rows(kept) == expected
    assert expected  # the threshold keeps some rows ...
    read = kept.diagnostics.sources["episodic"].candidates
    # ... and reads fewer rows than the unpruned search
    assert len(expected) <= read < full.diagnostics.sources["episodic"].candidates


@pytest.mark.parametrize("share", [0.5, 0.75])
def test_a_row_needs_its_share_of_the_keywords_and_every_such_row_is_found(
    spread: MemoryStore, share: float
) -> None:
    # The gate of decision 0023: a decision or tool call matching fewer than ``share`` of the
    # query's keywords (at most two: several words are more than a word alone) is no result; the
    # bands then skip their postings, and still find every row with enough keywords that passes
    # the threshold.
    episodic = SourceConfig(relevance=0.7, recency=0.3, limit=600, half_life_hours=168.0)
    base = RetrievalConfig(
        semantic=SourceConfig(0.9, 0.1, limit=5, half_life_hours=720.0, enabled=False),
        episodic=episodic,
        total_limit=600,
        candidate_pool=600,
        record_access=False,
    )
    query = "database migration timeout after the deploy rollback"
    with HybridRetriever.from_store(spread, background_writes=False) as retriever:
        every = retriever.retrieve(
            query,
            tenant_id="acme",
            as_of=AS_OF,
            config=replace(base, episodic_min_keyword_share=0.0),
        )
        gated = retriever.retrieve(
            query,
            tenant_id="acme",
            as_of=AS_OF,
            config=replace(base, episodic_min_keyword_share=share),
        )
    keywords = len(gated.diagnostics.keywords)
    needed = min(math.ceil(share * keywords), SEVERAL_KEYWORDS)

    def rows(response: RetrievalResponse) -> list[tuple[str, int, float]]:
        return [(r.metadata["item"], r.metadata["id"], r.final_score) for r in response]

    enough = [
        row
        for row, result in zip(rows(every), every, strict=True)
        if len(result.metadata["matched_keywords"]) >= needed
    ]
    assert rows(gated) == enough
    assert enough and len(enough) < len(every)  # some rows pass, some matched too few
    read = gated.diagnostics.sources["episodic"].candidates
    assert read < every.diagnostics.sources["episodic"].candidates  # fewer postings read


@pytest.mark.parametrize("extra_words", [0, 70])
def test_relevance_counts_each_matched_keyword_once(spread: MemoryStore, extra_words: int) -> None:
    # Tokens "deploy" and "deployment" both hold keyword "deploy": counted once. With more than
    # 63 keywords the source counts them another way (no bit set): the same rule holds.
    spread.record_decision(
        tenant_id="acme", task_id=None, action_type="plan",
        content="deploy the deployment after the migration migrations", status="done",
        created_at=AS_OF,
    )  # fmt: skip
    filler = [f"filler{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(extra_words)]
    query = " ".join(["deploy", "migration", "timeout", *filler])
    config = RetrievalConfig(
        semantic=SourceConfig(0.9, 0.1, limit=5, half_life_hours=720.0, enabled=False),
        episodic=SourceConfig(relevance=0.7, recency=0.3, limit=40, half_life_hours=168.0),
        total_limit=40,
        min_final_score=0.0,
        record_access=False,
        max_query_words=100,  # every keyword read
        episodic_min_keyword_share=0.0,
    )
    with HybridRetriever.from_store(spread, background_writes=False) as retriever:
        response = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
    keywords = len(response.diagnostics.keywords)
    assert keywords == 3 + extra_words
    assert len(response) == 40
    for result in response:
        matched = result.metadata["matched_keywords"]
        assert result.relevance_score == pytest.approx(len(matched) / keywords), result
    (twice,) = [r for r in response if r.content.startswith("deploy the deployment")]
    assert twice.metadata["matched_keywords"] == ["deploy", "migration"]
    assert twice.relevance_score == pytest.approx(2 / keywords)


@pytest.mark.parametrize("task_id", [None, "t1"])
def test_a_created_at_moved_by_sql_moves_the_reported_time(
    store: MemoryStore, task_id: str | None
) -> None:
    # Rows counted from their postings take their time from the postings (without the task);
    # with the task, from the row itself: both follow an UPDATE of created_at.
    decision = store.record_decision(
        tenant_id="acme", task_id="t1", action_type="plan",
        content="Deploy the billing service to staging", status="open",
        created_at=AS_OF - timedelta(days=1),
    )  # fmt: skip
    moved = AS_OF - timedelta(days=20)
    with store.engine.begin() as connection:
        connection.execute(
            text("UPDATE retrieval.decisions SET created_at = :at WHERE id = :id"),
            {"at": moved, "id": decision},
        )
    _assert_in_step(store)
    config = RetrievalConfig(
        episodic=SourceConfig(relevance=0.7, recency=0.3, limit=5, half_life_hours=168.0),
        min_final_score=0.0,
        record_access=False,
    )
    with HybridRetriever.from_store(store, config=config) as retriever:
        response = retriever.retrieve(
            "deploy billing service", tenant_id="acme", task_id=task_id, as_of=AS_OF
        )
    (result,) = [r for r in response if r.source == "episodic"]
    assert result.metadata["id"] == decision
    assert result.metadata["created_at"] == moved.isoformat()
    assert result.recency_score == pytest.approx(0.5 ** (20 / 7))
    assert result.relevance_score == pytest.approx(1.0)
