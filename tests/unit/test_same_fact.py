"""How likely a near memory states the same fact: the curve in the code is the one the
near-duplicates benchmark fitted, and it says what it means on the facts it was not fitted on."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval.memory.config import DEFAULT_SIMILAR_THRESHOLD
from retrieval.memory.same_fact import INTERCEPT, SLOPE, same_fact_likelihood

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "near-duplicates.json"
MEASURED = json.loads(RESULTS.read_text("utf-8"))["results"]


def test_the_curve_and_the_threshold_are_the_measured_ones() -> None:
    curve = MEASURED["same_fact_curve"]
    assert (curve["intercept"], curve["slope"]) == (INTERCEPT, SLOPE)
    assert MEASURED["chosen"]["threshold"] == DEFAULT_SIMILAR_THRESHOLD


def test_the_likelihood_rises_with_similarity_from_unrelated_to_the_same_fact() -> None:
    values = [same_fact_likelihood(x / 20) for x in range(-4, 21)]
    assert values == sorted(values)
    assert same_fact_likelihood(0.1) < 0.01  # two unrelated texts
    assert 0.3 < same_fact_likelihood(DEFAULT_SIMILAR_THRESHOLD) < 0.6  # about even odds
    assert same_fact_likelihood(0.9) > 0.95  # a paraphrase


def test_fitted_on_half_the_facts_it_agrees_with_the_other_half() -> None:
    for bands in MEASURED["same_fact_curve"]["held_out_by_band"]:
        for band in bands:
            if band["pairs"] >= 20:  # the bands with enough pairs to say
                assert abs(band["mean_likelihood"] - band["near_share"]) <= 0.15, band
