"""The scoring contract a returned result keeps: its weights sum to 1, each signal they weigh
lies in [0, 1], its final score is their weighted sum (capped at 1) less the cuts it records (an
older version's cap, ``outdated``; a question's discount, ``question``), and the parts it records
(``metadata["parts"]``) add up to it."""

from __future__ import annotations

import math

from retrieval.search.results import RetrievalResponse

CUTS = ("outdated", "question")  # the parts that take from a weighted sum


def check_contract(response: RetrievalResponse) -> None:
    """Assert the scoring contract for every result of ``response``."""
    for result in response:
        signals, weights = result.metadata["signals"], result.metadata["weights"]
        assert math.isclose(sum(weights.values()), 1.0, abs_tol=1e-9)
        total = sum(weight * signals[name] for name, weight in weights.items())
        parts = result.metadata["parts"]
        cuts = [parts[name]["value"] for name in CUTS if name in parts]
        assert all(cut < 0.0 for cut in cuts)
        assert math.isclose(result.final_score, min(1.0, total) + sum(cuts), abs_tol=1e-9)
        assert all(0.0 <= signals[name] <= 1.0 for name in weights)
        assert math.isclose(sum(p["value"] for p in parts.values()), result.final_score)
        assert 0.0 <= result.final_score <= 1.0
