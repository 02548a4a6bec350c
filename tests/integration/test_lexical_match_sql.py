"""Exact and fuzzy matching of memories in SQL, on the design study's examples."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from retrieval.memory.config import WriteConfig
from retrieval.memory.store import MemoryStore
from retrieval.search import lexical_match, scoring
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever

AS_OF = datetime(2026, 11, 26, tzinfo=UTC)
QUESTIONS = (
    "What is Python?",
    "What is machine learning?",
    "How do I bake sourdough bread?",
    "Who approves refunds above 500 euros?",
)
ONLY_SEMANTIC = RetrievalConfig(
    semantic=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=720),
    episodic=SourceConfig(relevance=0.7, recency=0.3, limit=5, half_life_hours=168, enabled=False),
    documents=SourceConfig(
        relevance=0.9, recency=0.1, limit=5, half_life_hours=8760, enabled=False
    ),
    min_final_score=0.0,
    max_distance=None,
    record_access=False,
)


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    # "trigger" is a kind of the design study's own, declared as a user would.
    store = MemoryStore(
        store.engine, embedder=store.embedder, config=WriteConfig(extra_kinds={"trigger"})
    )
    for question in QUESTIONS:
        store.remember(question, tenant_id="acme", kind="trigger", created_at=AS_OF)
    with HybridRetriever.from_store(store, config=ONLY_SEMANTIC) as retriever:
        yield retriever


def _scores(retriever: HybridRetriever, query: str, how: str) -> dict[str, dict[str, float]]:
    config = replace(ONLY_SEMANTIC, lexical_match=how)
    response = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
    return {r.content: {**r.metadata["lexical"], "relevance": r.relevance_score} for r in response}


def test_the_design_studys_examples_in_sql(retriever: HybridRetriever) -> None:
    exact = _scores(retriever, "What is Python?", "max")["What is Python?"]
    assert exact["exact"] == 1.0 and exact["relevance"] == 1.0
    assert _scores(retriever, "what is python", "max")["What is Python?"]["exact"] == 0.95
    assert _scores(retriever, "what is python?", "max")["What is Python?"]["exact"] == 0.98
    fuzzy = _scores(retriever, "What's machine learning?", "cascade")
    learning = fuzzy["What is machine learning?"]
    assert learning["fuzzy"] >= 0.75 and learning["relevance"] == learning["fuzzy"]
    unrelated = fuzzy["How do I bake sourdough bread?"]
    assert max(unrelated["exact"], unrelated["fuzzy"], unrelated["tokens"]) < 0.5
    assert unrelated["relevance"] == unrelated["semantic"]  # cascade falls back to semantic


def test_sql_lexical_scores_equal_the_python_oracle(retriever: HybridRetriever) -> None:
    query = "who approves large refunds?"
    weighted = _scores(retriever, query, "weighted")
    for content, scores in weighted.items():
        assert scores["exact"] == lexical_match.exact_tier(query, content)
        assert scores["tokens"] == pytest.approx(lexical_match.token_overlap(query, content))
        combined = scoring.weighted_sum(
            {k: scores[k] for k in ("exact", "fuzzy", "tokens", "semantic")},
            {"exact": 0.25, "fuzzy": 0.25, "tokens": 0.25, "semantic": 0.25},
        )
        assert scores["relevance"] == pytest.approx(combined)
    best = _scores(retriever, query, "max")
    for scores in best.values():
        assert scores["relevance"] == pytest.approx(
            max(scores["exact"], scores["fuzzy"], scores["tokens"], scores["semantic"])
        )


ONLY_EPISODIC = replace(
    ONLY_SEMANTIC,
    semantic=replace(ONLY_SEMANTIC.semantic, enabled=False),
    episodic=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=168),
    lexical_sources=frozenset({"episodic"}),
)


def test_the_episodic_source_matches_exactly_and_fuzzily(store: MemoryStore) -> None:
    for question in QUESTIONS:
        store.record_decision(
            tenant_id="acme",
            task_id="t1",
            action_type="ask",
            content=question,
            status="done",
            created_at=AS_OF,
        )
    decision = store.record_decision(
        tenant_id="acme", task_id="t1", action_type="search", content="look it up", status="done"
    )
    store.record_tool_call(
        tenant_id="acme",
        decision_id=decision,
        tool_name="search_pubmed",
        params={"query": "machine learning"},
        result="3 papers",
        created_at=AS_OF,
    )
    with HybridRetriever.from_store(store, config=ONLY_EPISODIC) as retriever:

        def scores(query: str, how: str | None) -> dict[str, dict[str, float]]:
            config = replace(ONLY_EPISODIC, lexical_match=how)
            response = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
            return {
                r.metadata.get("tool_name", r.content): {
                    **r.metadata.get("lexical", {}),
                    "relevance": r.relevance_score,
                }
                for r in response
            }

        exact = scores("What is Python?", "max")["What is Python?"]
        assert exact["exact"] == 1.0 and exact["relevance"] == 1.0
        fuzzy = scores("What's machine learning?", "cascade")
        learning = fuzzy["What is machine learning?"]
        assert learning["fuzzy"] >= 0.75 and learning["relevance"] == learning["fuzzy"]
        assert fuzzy["search_pubmed"]["fuzzy"] < 0.5  # matched by keywords in its parameters
        assert fuzzy["search_pubmed"]["relevance"] == fuzzy["search_pubmed"]["keywords"]
        tool = scores("search_pubmed", "max")["search_pubmed"]
        assert tool["exact"] == 1.0 and tool["relevance"] == 1.0
        query = "who approves refunds?"
        for content, found in scores(query, "weighted").items():
            assert found["exact"] == lexical_match.exact_tier(query, content)
            assert found["tokens"] == pytest.approx(lexical_match.token_overlap(query, content))
            assert found["relevance"] == pytest.approx(
                0.25 * (found["exact"] + found["fuzzy"] + found["tokens"] + found["keywords"])
            )
        plain = scores("What is Python?", None)["What is Python?"]
        assert plain == {"relevance": 1.0}  # keywords only: no lexical evidence


def test_the_working_state_can_match_too(retriever: HybridRetriever) -> None:
    messages = [{"role": "user", "content": "What is Python?"}]
    config = replace(
        ONLY_SEMANTIC, lexical_match="max", lexical_sources=frozenset({"working_state"})
    )
    response = retriever.retrieve(
        "What is Python?", tenant_id="acme", as_of=AS_OF, config=config, working_state=messages
    )
    message = next(r for r in response if r.source == "working_state")
    assert message.metadata["lexical"]["exact"] == 1.0 and message.relevance_score == 1.0
    memory = next(r for r in response if r.source == "semantic")
    assert "lexical" not in memory.metadata  # only the sources named
