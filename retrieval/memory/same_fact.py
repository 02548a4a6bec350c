"""How likely a memory states the same fact as a text, from their cosine similarity.

A logistic curve fitted by maximum likelihood on the labelled pairs of
``tests/data/near_duplicates.jsonl`` (paraphrases and updates of a value: the same fact;
related facts of the same subject and unrelated ones: not), with all-MiniLM-L6-v2's vectors
(``benchmarks/quality/near_duplicates.py``, ``results/near-duplicates.json``; decision 0022).
On pairs like those (half of them the same fact), a likelihood of 0.5 is even odds; fitted on
half the facts, the curve agrees with the other half's share of same-fact pairs by band of
similarity (0.6-0.7: 0.64 said, 0.56 found; 0.7-0.8: 0.90 said, 0.96 found).
"""

from __future__ import annotations

from retrieval.embedding.calibration import MINILM_SAME_FACT_CURVE, same_fact_on_curve

# The curve's parameters: likelihood = 1 / (1 + exp(-(INTERCEPT + SLOPE * similarity))).
INTERCEPT, SLOPE = MINILM_SAME_FACT_CURVE
SAME_FACT_CURVE = MINILM_SAME_FACT_CURVE  # each model has its own: retrieval.embedding.calibration


def same_fact_likelihood(similarity: float, curve: tuple[float, float] = SAME_FACT_CURVE) -> float:
    """How likely, in [0, 1], a memory at cosine ``similarity`` to a text states the same fact
    (a paraphrase, or another value of it), by ``curve`` (intercept, slope)."""
    return same_fact_on_curve(similarity, curve)
