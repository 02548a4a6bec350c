"""Dense relevance that spans [0, 1]: each embedding model's distances, calibrated.

An L2 distance means different things for different models: with all-MiniLM-L6-v2, two
unrelated texts lie about 1.38 apart and two paraphrases about 0.6, so ``1 / (1 + d)`` lives
in a band of 0.42 to 0.66 and a small recency weight outweighs it. A calibration names two
distances measured on labelled pairs (``benchmarks/quality/calibrate.py``): ``unrelated_distance``
(the median of unrelated pairs), where relevance is 0, and ``paraphrase_distance`` (the median
of paraphrase pairs), where it is 1. In between, relevance is linear in the squared distance,
which for unit vectors is linear in the cosine similarity (``cos = 1 - d^2 / 2``):

    relevance = clamp((u^2 - d^2) / (u^2 - p^2), 0, 1)

A model without a calibration gets :data:`UNCALIBRATED` (unit vectors: orthogonal texts 0,
identical texts 1, so relevance is the cosine similarity clipped at 0), and a warning once.
See docs/decisions/0001-relevance-spans-0-to-1.md.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrieval.embedding.models import DEFAULT_MODEL_ID

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DenseCalibration:
    """Where a model's L2 distances put relevance 0 (``unrelated_distance``) and 1
    (``paraphrase_distance``)."""

    model_id: str
    unrelated_distance: float
    paraphrase_distance: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.paraphrase_distance < self.unrelated_distance:
            raise ValueError(
                f"calibration of {self.model_id!r}: paraphrase_distance "
                f"{self.paraphrase_distance!r} must be >= 0 and below unrelated_distance "
                f"{self.unrelated_distance!r}"
            )

    @property
    def zero_squared(self) -> float:
        """The squared distance of relevance 0."""
        return self.unrelated_distance**2

    @property
    def span_squared(self) -> float:
        """The squared distances between relevance 0 and 1."""
        return self.unrelated_distance**2 - self.paraphrase_distance**2

    def relevance(self, distances: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
        """The relevance of each L2 distance (the SQL's formula, for arrays)."""
        squared = np.asarray(distances, dtype=np.float64) ** 2
        return np.clip((self.zero_squared - squared) / self.span_squared, 0.0, 1.0)


# Measured with benchmarks/quality/calibrate.py on tests/data/calibration.json and BEIR SciFact
# (benchmarks/results-calibration-2026-11-27.json): unrelated pairs' median distance (2,047
# pairs) and paraphrase pairs' median distance (24 pairs).
CALIBRATIONS: dict[str, DenseCalibration] = {
    DEFAULT_MODEL_ID: DenseCalibration(
        model_id=DEFAULT_MODEL_ID, unrelated_distance=1.353, paraphrase_distance=0.536
    ),
}

# Unit vectors: orthogonal texts (cosine 0, distance sqrt(2)) score 0, identical ones 1.
UNCALIBRATED = DenseCalibration(
    model_id="(uncalibrated)", unrelated_distance=math.sqrt(2.0), paraphrase_distance=0.0
)
_warned: set[str] = set()


def calibration_for(model_id: str) -> DenseCalibration:
    """The calibration of ``model_id``, or :data:`UNCALIBRATED` (with a warning, once per
    model)."""
    found = CALIBRATIONS.get(model_id)
    if found is not None:
        return found
    if model_id not in _warned:
        _warned.add(model_id)
        logger.warning(
            "embedding model %r has no relevance calibration: its distances map to relevance "
            "as cosine similarity (0 for orthogonal texts, 1 for identical ones); run "
            "benchmarks/quality/calibrate.py with it and add its distances to "
            "retrieval.embedding.calibration.CALIBRATIONS for scores that span [0, 1]",
            model_id,
        )
    return UNCALIBRATED
