from __future__ import annotations

import math

import pytest

from retrieval.search import reference_scores, scoring


def test_bm25_term_matches_the_formula_by_hand() -> None:
    # N = 4 documents, the term in 1 of them, tf = 2, dl = 10, avgdl = 8.
    idf = math.log(1 + (4 - 1 + 0.5) / (1 + 0.5))
    expected = idf * 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 10 / 8))
    assert reference_scores.bm25_term(2, 1, 10, 8.0, 4, k1=1.2, b=0.75) == pytest.approx(
        expected, abs=1e-12
    )
    # The defaults are Lucene's (and Anserini's): k1 = 0.9, b = 0.4.
    expected = idf * 2 * 1.9 / (2 + 0.9 * (1 - 0.4 + 0.4 * 10 / 8))
    assert reference_scores.bm25_term(2, 1, 10, 8.0, 4) == pytest.approx(expected, abs=1e-12)
    assert reference_scores.bm25_term(0, 1, 10, 8.0, 4) == 0.0
    assert reference_scores.bm25_idf(4, 4) > 0  # a term in every document still scores a little


def test_bm25_scores_rank_the_document_that_repeats_a_rare_term_first() -> None:
    documents = [
        ["vitamin", "d", "deficiency", "vitamin"],
        ["vitamin", "levels", "in", "adults"],
        ["cardiovascular", "risk", "in", "adults"],
    ]
    scores = reference_scores.bm25_scores(["vitamin", "deficiency"], documents)
    assert scores[0] > scores[1] > scores[2] == 0.0
    # Repeated query terms count once.
    assert reference_scores.bm25_scores(
        ["vitamin", "vitamin"], documents
    ) == reference_scores.bm25_scores(["vitamin"], documents)
    with pytest.raises(ValueError, match="df <= N"):
        reference_scores.bm25_idf(5, 4)


def test_memories_count_their_distinct_terms_as_their_length() -> None:
    documents = [["gene", "gene", "gene", "cell"], ["gene", "cell", "tissu", "organ"]]
    # Distinct lengths: 2 and 4 (average 3); total lengths: 4 and 4.
    distinct = reference_scores.bm25_scores(["gene"], documents, distinct_length=True)
    total = reference_scores.bm25_scores(["gene"], documents)
    assert distinct[0] == pytest.approx(reference_scores.bm25_term(3, 2, 2, 3.0, 2))
    assert total[0] == pytest.approx(reference_scores.bm25_term(3, 2, 4, 4.0, 2))


def test_lexical_relevance_is_bm25_over_the_querys_idf() -> None:
    documents = [["gene", "cell"], ["cell", "tissu"], ["organ"]]
    idf = reference_scores.query_idf(["gene", "cell", "unseen"], documents)
    assert idf == pytest.approx(
        reference_scores.bm25_idf(1, 3)
        + reference_scores.bm25_idf(2, 3)
        + reference_scores.bm25_idf(0, 3)
    )
    assert reference_scores.lexical_relevance(idf, idf) == 1.0
    assert reference_scores.lexical_relevance(2 * idf, idf) == 1.0  # capped
    assert reference_scores.lexical_relevance(1.0, 0.0) == 0.0  # a query without terms


@pytest.mark.parametrize(
    ("fusion", "expected"),
    [("convex", 0.5), ("max", 0.8), ("cascade", 0.8), ("rrf", (0.5 / 61 + 0.5 / 62) / (1 / 61))],
)
def test_absolute_fusions(fusion: str, expected: float) -> None:
    ranks = {"bm25": 1, "dense": 2}
    got = reference_scores.fused_relevance(fusion, 0.8, 0.2, ranks)
    assert got == pytest.approx(expected)
    assert (
        reference_scores.fused_relevance("cascade", 0.6, 0.2, ranks) == 0.2
    )  # under the threshold
    with pytest.raises(ValueError, match="unknown fusion"):
        reference_scores.fused_relevance("best", 0.8, 0.2, ranks)


def test_rrf_is_normalized_by_its_maximum() -> None:
    assert reference_scores.reciprocal_rank_fusion({"bm25": 1, "dense": 1}) == 1.0
    both = reference_scores.reciprocal_rank_fusion({"bm25": 3, "dense": 5})
    assert both == pytest.approx((1 / 63 + 1 / 65) / (2 / 61))
    one = reference_scores.reciprocal_rank_fusion({"bm25": 1, "dense": None})
    assert one == pytest.approx(0.5)
    weighted = reference_scores.reciprocal_rank_fusion(
        {"bm25": 1, "dense": None}, weights={"bm25": 3.0, "dense": 1.0}
    )
    assert weighted == pytest.approx(0.75)
    assert reference_scores.reciprocal_rank_fusion({"bm25": None, "dense": None}) == 0.0
    with pytest.raises(ValueError, match="ranks start at 1"):
        reference_scores.reciprocal_rank_fusion({"bm25": 0})


def test_min_max_max_and_cascade() -> None:
    assert reference_scores.min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert reference_scores.min_max([7.0, 7.0]) == [1.0, 1.0]
    assert reference_scores.min_max([]) == []
    assert scoring.fuse_max([0.2, 0.9, 0.4]) == 0.9
    assert scoring.fuse_max([]) == 0.0
    stages = [(0.0, 0.95), (0.8, 0.75), (0.9, 0.70)]
    assert scoring.cascade(stages, 0.3) == 0.8  # the first stage that reaches its threshold
    assert scoring.cascade([(0.5, 0.95), (0.6, 0.75)], 0.3) == 0.3
