from __future__ import annotations

import pytest

from retrieval.errors import ValidationError
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.lexical_match import Strategy
from retrieval.search.rank.working_state import LexicalOption, message_text, score_working_state
from retrieval.search.scoring import extract_keywords

CONFIG = RetrievalConfig().working_state


def test_recency_by_position_and_relevance_by_keywords() -> None:
    messages = [
        {"role": "user", "content": "Deploy the billing service today"},
        {"role": "assistant", "content": "Which environment?"},
        {"role": "user", "content": "Production, after the migration of the billing database"},
    ]
    keywords = extract_keywords("billing migration status")
    assert keywords == ("billing", "migration", "status")
    results = score_working_state(messages, keywords, CONFIG)
    assert [r.recency_score for r in results] == [0.1, 0.55, 1.0]
    assert [round(r.relevance_score, 3) for r in results] == [0.333, 0.0, 0.667]
    newest = results[2]
    assert newest.final_score == pytest.approx(0.3 * 2 / 3 + 0.7 * 1.0)
    assert newest.metadata["matched_keywords"] == ["billing", "migration"]
    assert newest.metadata["message"] is messages[2]  # the caller's dict, unchanged


def test_only_the_last_limit_messages_count() -> None:
    messages = [{"role": "user", "content": f"message {i}"} for i in range(15)]
    results = score_working_state(messages, ("message",), CONFIG)
    assert len(results) == 10
    assert results[0].content == "message 5" and results[0].recency_score == 0.1
    short = SourceConfig(relevance=0.3, recency=0.7, limit=2, half_life_hours=1)
    assert [r.content for r in score_working_state(messages, (), short)] == [
        "message 13",
        "message 14",
    ]


def test_list_content_and_bad_messages() -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image"}]}
    assert message_text(parts) == "see"
    assert message_text({"role": "tool"}) == ""
    with pytest.raises(ValidationError, match="list of message dicts"):
        score_working_state(["not a dict"], (), CONFIG)  # type: ignore[list-item]


def test_messages_match_the_whole_query_exactly_or_fuzzily() -> None:
    messages = [
        {"role": "user", "content": "What is Python?"},
        {"role": "user", "content": "What is machine learning?"},
        {"role": "user", "content": "How do I bake sourdough bread?"},
    ]

    def scored(query: str, strategy: Strategy) -> dict[str, dict[str, float]]:
        option = LexicalOption(
            query=query, strategy=strategy, weights=RetrievalConfig().lexical_weights
        )
        results = score_working_state(messages, extract_keywords(query), CONFIG, lexical=option)
        return {
            r.content: {**r.metadata["lexical"], "relevance": r.relevance_score} for r in results
        }

    exact = scored("What is Python?", "max")["What is Python?"]
    assert exact["exact"] == 1.0 and exact["relevance"] == 1.0
    fuzzy = scored("What's machine learning?", "cascade")
    learning = fuzzy["What is machine learning?"]
    assert learning["fuzzy"] >= 0.75 and learning["relevance"] == learning["fuzzy"]
    bread = fuzzy["How do I bake sourdough bread?"]
    assert max(bread["exact"], bread["fuzzy"], bread["tokens"]) < 0.5
    assert bread["relevance"] == bread["keywords"]  # cascade falls back to the keywords
    weighted = scored("What's machine learning?", "weighted")["What is machine learning?"]
    assert weighted["relevance"] == pytest.approx(
        0.25 * (weighted["exact"] + weighted["fuzzy"] + weighted["tokens"] + weighted["keywords"])
    )
    plain = score_working_state(messages, extract_keywords("What is Python?"), CONFIG)
    assert "lexical" not in plain[0].metadata
