"""A final score split into its weighted parts (recorded by the ranking, drawn by the
inspector's bars)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.search import scoring
from retrieval.search.rank.weighted_parts import weighted_parts
from retrieval.search.results import RetrievalResult
from retrieval.ui.score_parts import score_parts

unit = st.floats(min_value=0.0, max_value=1.0)


def _result(
    source: str, signals: dict[str, float], weights: dict[str, float], **evidence: Any
) -> RetrievalResult:
    """A result as the ranking builds it: its metadata carries its weighted parts."""
    return RetrievalResult(
        content="x",
        source=source,
        relevance_score=signals["relevance"],
        recency_score=signals["recency"],
        final_score=scoring.weighted_sum(signals, weights),
        metadata={
            "signals": signals,
            "weights": weights,
            **evidence,
            "parts": weighted_parts(source, signals, weights, evidence),
        },
    )


@given(dense=unit, lexical=unit, recency=unit, importance=unit, bm25_weight=unit)
def test_convex_parts_add_up_to_the_final_score(
    dense: float, lexical: float, recency: float, importance: float, bm25_weight: float
) -> None:
    relevance = min(1.0, bm25_weight * lexical + (1 - bm25_weight) * dense)
    signals = {"relevance": relevance, "recency": recency, "importance": importance}
    weights = {"relevance": 0.8, "recency": 0.1, "importance": 0.1}
    fused = bm25_weight * lexical + (1 - bm25_weight) * dense
    share = bm25_weight * lexical / fused if fused > 0 else 0.0  # what the statement records
    result = _result("semantic", signals, weights, fusion="convex", lexical_share=share)
    parts = score_parts(result)
    assert sum(part.value for part in parts) == pytest.approx(result.final_score, abs=1e-9)
    assert all(part.value > 0 for part in parts)
    named = {part.name: part.value for part in parts}
    if min(named.get("lexical", 0), named.get("meaning", 0)) > 1e-9:
        assert named["lexical"] / named["meaning"] == pytest.approx(
            bm25_weight * lexical / ((1 - bm25_weight) * dense), rel=1e-6
        )


def test_each_source_s_relevance_is_named_by_its_evidence() -> None:
    signals = {"relevance": 0.6, "recency": 0.5}
    weights = {"relevance": 0.7, "recency": 0.3}
    episodic = score_parts(_result("episodic", signals, weights))
    assert [(p.name, round(p.value, 6)) for p in episodic] == [("lexical", 0.42), ("recency", 0.15)]
    lifted = _result("semantic", signals, weights, lifted_by={"id": 1, "offset": 1})
    assert score_parts(lifted)[0].name == "context"
    dense_only = _result("semantic", signals, weights, dense_relevance=0.6)
    assert score_parts(dense_only)[0].name == "meaning"
    took_lexical = _result("semantic", signals, weights, fusion="max", lexical_share=1.0)
    assert [p.name for p in score_parts(took_lexical)] == ["lexical", "recency"]


def test_the_time_a_query_names_is_a_part_of_its_own() -> None:
    signals = {"relevance": 0.5, "recency": 0.5, "time": 1.0}
    weights = {"relevance": 0.6, "recency": 0.2, "time": 0.2}
    parts = score_parts(_result("semantic", signals, weights))
    assert [p.name for p in parts] == ["meaning", "recency", "time"]
    assert parts[-1].label == "fits the time asked about" and parts[-1].value == pytest.approx(0.2)
