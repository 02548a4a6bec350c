from __future__ import annotations

import math

import pytest

from retrieval import scoring


def test_bm25_term_matches_the_formula_by_hand() -> None:
    # N = 4 documents, the term in 1 of them, tf = 2, dl = 10, avgdl = 8.
    idf = math.log(1 + (4 - 1 + 0.5) / (1 + 0.5))
    expected = idf * 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 10 / 8))
    assert scoring.bm25_term(2, 1, 10, 8.0, 4) == pytest.approx(expected, abs=1e-12)
    assert scoring.bm25_term(0, 1, 10, 8.0, 4) == 0.0
    assert scoring.bm25_idf(4, 4) > 0  # a term in every document still scores a little


def test_bm25_scores_rank_the_document_that_repeats_a_rare_term_first() -> None:
    documents = [
        ["vitamin", "d", "deficiency", "vitamin"],
        ["vitamin", "levels", "in", "adults"],
        ["cardiovascular", "risk", "in", "adults"],
    ]
    scores = scoring.bm25_scores(["vitamin", "deficiency"], documents)
    assert scores[0] > scores[1] > scores[2] == 0.0
    # Repeated query terms count once.
    assert scoring.bm25_scores(["vitamin", "vitamin"], documents) == scoring.bm25_scores(
        ["vitamin"], documents
    )
    with pytest.raises(ValueError, match="df <= N"):
        scoring.bm25_idf(5, 4)


def test_rrf_is_normalized_by_its_maximum() -> None:
    assert scoring.reciprocal_rank_fusion({"bm25": 1, "dense": 1}) == 1.0
    both = scoring.reciprocal_rank_fusion({"bm25": 3, "dense": 5})
    assert both == pytest.approx((1 / 63 + 1 / 65) / (2 / 61))
    one = scoring.reciprocal_rank_fusion({"bm25": 1, "dense": None})
    assert one == pytest.approx(0.5)
    weighted = scoring.reciprocal_rank_fusion(
        {"bm25": 1, "dense": None}, weights={"bm25": 3.0, "dense": 1.0}
    )
    assert weighted == pytest.approx(0.75)
    assert scoring.reciprocal_rank_fusion({"bm25": None, "dense": None}) == 0.0
    with pytest.raises(ValueError, match="ranks start at 1"):
        scoring.reciprocal_rank_fusion({"bm25": 0})


def test_min_max_max_and_cascade() -> None:
    assert scoring.min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert scoring.min_max([7.0, 7.0]) == [1.0, 1.0]
    assert scoring.min_max([]) == []
    assert scoring.fuse_max([0.2, 0.9, 0.4]) == 0.9
    assert scoring.fuse_max([]) == 0.0
    stages = [(0.0, 0.95), (0.8, 0.75), (0.9, 0.70)]
    assert scoring.cascade(stages, 0.3) == 0.8  # the first stage that reaches its threshold
    assert scoring.cascade([(0.5, 0.95), (0.6, 0.75)], 0.3) == 0.3
