from __future__ import annotations

import math

import pytest

from retrieval.search import reference_scores, scoring
from retrieval.search.results import RetrievalResult


def test_distance_relevance_is_one_over_one_plus_d() -> None:
    assert reference_scores.distance_relevance(0.0) == 1.0
    assert reference_scores.distance_relevance(1.0) == 0.5
    assert reference_scores.distance_relevance(3.0) == 0.25
    with pytest.raises(ValueError, match="distance must be >= 0"):
        reference_scores.distance_relevance(-0.1)


def test_recency_halves_every_half_life_and_caps_future_at_one() -> None:
    day = 86_400.0
    assert reference_scores.exponential_recency(0, day) == 1.0
    assert reference_scores.exponential_recency(day, day) == 0.5
    assert reference_scores.exponential_recency(3 * day, day) == 0.125
    assert reference_scores.exponential_recency(-day, day) == 1.0
    with pytest.raises(ValueError, match="half_life_seconds must be > 0"):
        reference_scores.exponential_recency(1, 0)


def test_position_recency_runs_from_point_one_to_one() -> None:
    assert [round(scoring.position_recency(i, 4), 3) for i in range(4)] == [0.1, 0.4, 0.7, 1.0]
    assert scoring.position_recency(0, 1) == 1.0
    with pytest.raises(ValueError):
        scoring.position_recency(4, 4)


def test_popularity_is_logarithmic_and_capped() -> None:
    assert reference_scores.popularity(0) == 0.0
    assert reference_scores.popularity(100) == pytest.approx(1.0)
    assert reference_scores.popularity(9) == pytest.approx(1 / math.log10(101))
    assert reference_scores.popularity(10_000) == 1.0


def test_fractions() -> None:
    assert scoring.keyword_fraction(2, 4) == 0.5
    assert scoring.keyword_fraction(0, 0) == 0.0
    assert reference_scores.entity_overlap(1, 3) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        scoring.keyword_fraction(3, 2)


def test_weighted_sum_stays_in_unit_interval() -> None:
    scores = {"relevance": 0.8, "recency": 0.2}
    assert scoring.weighted_sum(scores, {"relevance": 0.9, "recency": 0.1}) == pytest.approx(0.74)
    assert (
        scoring.weighted_sum({"relevance": 1.0, "recency": 1.0}, {"relevance": 0.7, "recency": 0.3})
        == 1.0
    )


def test_keywords_are_long_lower_cased_distinct_words_without_stop_words() -> None:
    text = "What did the Migration of the ORDERS table do? The migration failed: lock_timeout!"
    assert scoring.extract_keywords(text) == (
        "migration",
        "orders",
        "table",
        "failed",
        "lock_timeout",
    )
    assert scoring.extract_keywords("the cat sat", min_length=3) == ("the", "cat", "sat")
    assert scoring.extract_keywords("the cat sat", min_length=3, stop_words={"the"}) == (
        "cat",
        "sat",
    )


def test_like_patterns_match_wildcards_literally() -> None:
    assert scoring.like_pattern("100%") == "%100\\%%"
    assert scoring.like_pattern("lock_timeout") == "%lock\\_timeout%"
    assert scoring.like_pattern("C:\\tmp") == "%C:\\\\tmp%"


def test_results_refuse_scores_outside_the_unit_interval() -> None:
    result = RetrievalResult("text", "semantic", 0.6, 0.5, 0.59, {"distance": 0.66})
    assert result.metadata["distance"] == 0.66
    with pytest.raises(ValueError, match=r"relevance_score=1.2 is outside \[0, 1\]"):
        RetrievalResult("text", "semantic", 1.2, 0.5, 0.5)
    with pytest.raises(ValueError, match="final_score=nan is outside"):
        RetrievalResult("text", "episodic", 0.5, 0.5, float("nan"))
    with pytest.raises(ValueError, match="recency_score must be a number"):
        RetrievalResult("text", "episodic", 0.5, "0.5", 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source 'web' is not one of"):
        RetrievalResult("text", "web", 0.5, 0.5, 0.5)


def test_time_fit_is_one_inside_the_window_and_halves_per_half_life_outside() -> None:
    from retrieval.search.scoring import time_fit

    assert time_fit(0.0, 7.0) == 1.0
    assert time_fit(7.0, 7.0) == pytest.approx(0.5)
    assert time_fit(21.0, 7.0) == pytest.approx(0.125)
    assert time_fit(1e9, 7.0) == 0.0


def test_with_time_keeps_the_weights_summing_to_one() -> None:
    from retrieval.search.scoring import with_time

    weights = with_time({"relevance": 0.95, "recency": 0.05}, 0.2)
    assert weights == pytest.approx({"relevance": 0.76, "recency": 0.04, "time": 0.2})
    assert sum(weights.values()) == pytest.approx(1.0)
