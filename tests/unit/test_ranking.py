"""Python's half of the scoring contract (retrieval.search.rank.ranking): weights, threshold, ties,
limits."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.search.candidate import Candidate
from retrieval.search.config import RetrievalConfig
from retrieval.search.rank import ranking
from retrieval.search.results import RetrievalResult

WHEN = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
WEIGHTS = {"relevance": 0.9, "recency": 0.1}


def _candidate(
    id: int, relevance: float, recency: float, *, source: str = "semantic", item: str = "memory"
) -> Candidate:
    return Candidate(
        source=source, item=item, id=id, content=f"row {id}", kind="fact",
        created_at=WHEN - timedelta(hours=id), relevance=relevance, recency=recency,
        importance=0.0, popularity=0.0, entity=0.0, distance=0.5, matched=None,
        entities=None, details=json.dumps({"evidence": id}),
    )  # fmt: skip


def test_a_returned_candidate_carries_its_decoded_evidence_and_final_score() -> None:
    config = RetrievalConfig(min_final_score=0.0)
    scored = ranking.scored_candidate(_candidate(7, 0.8, 0.5), WEIGHTS)
    assert scored.final_score == pytest.approx(0.9 * 0.8 + 0.1 * 0.5)
    results, diagnostics = ranking.select({"semantic": [scored]}, config)
    (result,) = results
    assert result.final_score == scored.final_score
    assert result.metadata["evidence"] == 7 and result.metadata["id"] == 7
    assert result.metadata["created_at"] == (WHEN - timedelta(hours=7)).isoformat()
    assert diagnostics["semantic"].returned == 1


def test_ties_break_by_relevance_recency_source_item_and_id() -> None:
    config = RetrievalConfig(min_final_score=0.0, total_limit=10)
    config = replace(config, semantic=replace(config.semantic, limit=10),
                     episodic=replace(config.episodic, limit=10))  # fmt: skip
    semantic = [ranking.scored_candidate(_candidate(i, 0.5, 0.5), WEIGHTS) for i in (3, 1, 2)]
    episodic = [
        ranking.scored_candidate(_candidate(i, 0.5, 0.5, source="episodic", item=item), WEIGHTS)
        for i, item in ((1, "tool_call"), (1, "decision"))
    ]
    better = ranking.scored_candidate(_candidate(9, 0.6, 0.0), WEIGHTS)  # higher final
    results, _ = ranking.select({"semantic": [*semantic, better], "episodic": episodic}, config)
    assert [(r.source, r.metadata["item"], r.metadata["id"]) for r in results] == [
        ("semantic", "memory", 9),
        ("semantic", "memory", 1),
        ("semantic", "memory", 2),
        ("semantic", "memory", 3),
        ("episodic", "decision", 1),
        ("episodic", "tool_call", 1),
    ]


def test_threshold_and_limits_and_diagnostics_over_every_candidate() -> None:
    config = RetrievalConfig(min_final_score=0.5, total_limit=2)
    config = replace(config, semantic=replace(config.semantic, limit=3))
    rows = [ranking.scored_candidate(_candidate(i, r, 0.0), WEIGHTS)
            for i, r in enumerate((0.9, 0.8, 0.7, 0.6, 0.1))]  # fmt: skip
    results, diagnostics = ranking.select({"semantic": rows}, config)
    assert [r.metadata["id"] for r in results] == [0, 1]
    seen = diagnostics["semantic"]
    assert (seen.candidates, seen.kept, seen.returned) == (5, 4, 2)
    assert seen.mean_scores["relevance"] == pytest.approx((0.9 + 0.8 + 0.7 + 0.6 + 0.1) / 5)


def test_working_state_results_rank_with_the_database_candidates() -> None:
    config = RetrievalConfig(min_final_score=0.0)
    message = RetrievalResult(
        content="hi", source="working_state", relevance_score=1.0, recency_score=1.0,
        final_score=1.0, metadata={"position": 0},
    )  # fmt: skip
    row = ranking.scored_candidate(_candidate(1, 0.9, 0.9), WEIGHTS)
    results, _ = ranking.select(
        {"semantic": [row], "working_state": [ranking.scored_result(message)]}, config
    )
    assert results[0] is message and results[1].metadata["id"] == 1


@pytest.mark.parametrize(("relevance", "recency"), [(1.5, 0.5), (0.5, -0.1), (float("nan"), 0.5)])
def test_a_candidate_score_outside_the_unit_interval_is_refused(
    relevance: float, recency: float
) -> None:
    with pytest.raises(ValueError, match="outside"):
        ranking.scored_candidate(_candidate(1, relevance, recency), WEIGHTS)


def test_equal_scores_go_to_the_nearer_vector() -> None:
    # Relevance clamped to 0 (both past the calibrated zero) ties the two on every score: the
    # distance still tells them apart, before the id does.
    far = _candidate(1, 0.0, 0.5)._replace(distance=1.9)
    near = _candidate(2, 0.0, 0.5)._replace(distance=1.4)
    ranked = sorted(
        (ranking.scored_candidate(c, WEIGHTS) for c in (far, near)), key=ranking.rank_key
    )
    assert [scored.identity for scored in ranked] == [2, 1]
    no_distance = ranking.scored_candidate(_candidate(0, 0.0, 0.5)._replace(distance=None), WEIGHTS)
    ranked = sorted([no_distance, *ranked], key=ranking.rank_key)
    assert [scored.identity for scored in ranked] == [2, 1, 0]  # no vector: after those with one


def test_an_answer_that_would_be_empty_gets_its_best_weak_matches_marked() -> None:
    config = RetrievalConfig(min_final_score=0.5, fallback_results=2)
    under = [ranking.scored_candidate(_candidate(n, 0.3 - n / 100, 0.5), WEIGHTS) for n in (1, 2)]
    beyond = [ranking.scored_candidate(_candidate(3, 0.35, 0.5), WEIGHTS)]  # beyond the gate
    results, diagnostics = ranking.select(
        {"semantic": under}, config, {"semantic": beyond}, ("semantic",)
    )
    assert [r.metadata["id"] for r in results] == [3, 1]  # the best two, by their own scores
    assert all(r.metadata["below_threshold"] for r in results)
    assert all(r.final_score < config.min_final_score for r in results)
    assert diagnostics["semantic"].candidates == 3 and diagnostics["semantic"].returned == 2
    # An answer with a result gets no weak match; 0 keeps an empty answer empty.
    passing = [ranking.scored_candidate(_candidate(4, 0.9, 0.5), WEIGHTS)]
    results, _ = ranking.select(
        {"semantic": passing + under}, config, {"semantic": beyond}, ("semantic",)
    )
    assert [r.metadata["id"] for r in results] == [4]
    assert "below_threshold" not in results[0].metadata
    off = replace(config, fallback_results=0)
    assert ranking.select({"semantic": under}, off, {"semantic": beyond}, ("semantic",))[0] == []


def test_the_weak_matches_are_the_most_relevant_then_the_nearest_ranked_by_final() -> None:
    # Past the calibrated zero every relevance is 0 and the final score is the recency alone:
    # the newest, farthest rows would fill the answer. The nearest two fill it, ranked by final.
    config = RetrievalConfig(min_final_score=0.5, fallback_results=2)
    rows = [
        _candidate(1, 0.0, 0.2)._replace(distance=1.40),  # told long ago, the nearest
        _candidate(2, 0.0, 0.6)._replace(distance=1.42),
        _candidate(3, 0.0, 1.0)._replace(distance=1.48),  # told last, the farthest
        _candidate(4, 0.0, 0.9)._replace(distance=1.45),
    ]
    under = [ranking.scored_candidate(c, WEIGHTS) for c in rows]
    results, _ = ranking.select({"semantic": under}, config, {}, ("semantic",))
    assert [r.metadata["id"] for r in results] == [2, 1]  # chosen nearest, ranked by final
    assert all(r.metadata["below_threshold"] for r in results)
    # A relevance above 0 still comes first, whatever the distance.
    relevant = ranking.scored_candidate(_candidate(5, 0.1, 0.0)._replace(distance=1.6), WEIGHTS)
    results, _ = ranking.select({"semantic": [*under, relevant]}, config, {}, ("semantic",))
    assert [r.metadata["id"] for r in results] == [5, 1]
