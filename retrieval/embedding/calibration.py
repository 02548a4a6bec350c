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

Every other constant that depends on where a model puts its distances is a model's too
(:class:`ModelThresholds`): the evidence gate, the similarities that make two memories versions
of one fact, a near duplicate, or unrelated. Each measured model has its own, from the labelled
sets (docs/decisions/0037-multilingual-e5-small.md); a model without them gets MiniLM's carried
over at the same relevance (:meth:`DenseCalibration.carried`), with the warning above.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrieval.embedding.e5_model import E5_MODEL_ID
from retrieval.embedding.models import DEFAULT_MODEL_ID

logger = logging.getLogger(__name__)


# all-MiniLM-L6-v2's same-fact curve, (intercept, slope): fitted on the labelled pairs
# (retrieval.memory.same_fact).
MINILM_SAME_FACT_CURVE = (-9.626, 15.645)


def same_fact_on_curve(similarity: float, curve: tuple[float, float]) -> float:
    """How likely, in [0, 1], a memory at cosine ``similarity`` to a text states the same fact,
    by the logistic ``curve`` (intercept, slope)."""
    intercept, slope = curve
    return 1.0 / (1.0 + math.exp(-(intercept + slope * similarity)))


@dataclass(frozen=True)
class ModelThresholds:
    """A model's constants that read its distances (each a cosine similarity unless named a
    distance), calibrated on labelled pairs."""

    # The evidence gate: a memory or a chunk within this L2 distance of the query is evidence
    # (RetrievalConfig.max_distance).
    max_distance: float
    # Two memories of a kind are versions of one fact from this similarity on
    # (RetrievalConfig.version_similarity) ...
    version_similarity: float
    # ... or from this one when they share version_shared_words of their lexemes ...
    version_words_similarity: float
    # ... and a newer one saying it replaces a value may be a version from this one on.
    update_similarity: float
    # similar() shows a memory as a near duplicate of a text from this similarity on
    # (WriteConfig.similar_threshold).
    similar_threshold: float
    # Under this similarity a text and a memory are unrelated (a supersedes by hand is checked;
    # with MiniLM no correction nor paraphrase of tests/data/near_duplicates.jsonl scores under
    # 0.37, 118 of its 120 unrelated pairs under 0.35).
    unrelated_below: float
    # The previous turn's share in a conversation turn's stored vector, and the share of the turn
    # before a speaker's run in a message that continues it (WriteConfig.turn_context and
    # run_turn_context): how far a model's vector of a short turn needs its context.
    turn_context: float = 0.3
    run_turn_context: float = 0.5
    # How likely a memory at a similarity to a text states the same fact: the logistic curve's
    # (intercept, slope) fitted on the labelled pairs (retrieval.memory.same_fact).
    same_fact_curve: tuple[float, float] = MINILM_SAME_FACT_CURVE


@dataclass(frozen=True)
class DenseCalibration:
    """Where a model's L2 distances put relevance 0 (``unrelated_distance``) and 1
    (``paraphrase_distance``)."""

    model_id: str
    unrelated_distance: float
    paraphrase_distance: float
    # The model's own thresholds; None: MiniLM's, carried over at the same relevance.
    measured: ModelThresholds | None = None

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

    def level(self, cosine: float) -> float:
        """The relevance (not clamped) of unit vectors at ``cosine`` (``d^2 = 2 - 2 cos``)."""
        return (self.zero_squared - (2.0 - 2.0 * cosine)) / self.span_squared

    def cosine_at(self, level: float) -> float:
        """The cosine similarity of unit vectors at relevance ``level`` (not clamped)."""
        return 1.0 - (self.zero_squared - level * self.span_squared) / 2.0

    def distance_at(self, level: float) -> float:
        """The L2 distance of relevance ``level``."""
        return math.sqrt(max(0.0, self.zero_squared - level * self.span_squared))

    @property
    def thresholds(self) -> ModelThresholds:
        """The model's thresholds: measured, else MiniLM's carried over."""
        return self.measured if self.measured is not None else self.carried(MINILM_THRESHOLDS)

    def carried(self, thresholds: ModelThresholds) -> ModelThresholds:
        """MiniLM's ``thresholds`` moved to this model at the same relevance (MiniLM's
        calibration to this one's)."""
        minilm = CALIBRATIONS[DEFAULT_MODEL_ID]

        def cosine(value: float) -> float:
            return round(self.cosine_at(minilm.level(value)), 3)

        gate = minilm.relevance(np.array([thresholds.max_distance]))[0]
        return ModelThresholds(
            max_distance=round(self.distance_at(float(gate)), 3),
            version_similarity=cosine(thresholds.version_similarity),
            version_words_similarity=cosine(thresholds.version_words_similarity),
            update_similarity=cosine(thresholds.update_similarity),
            similar_threshold=cosine(thresholds.similar_threshold),
            unrelated_below=cosine(thresholds.unrelated_below),
            turn_context=thresholds.turn_context,  # a share, not a distance: kept
            run_turn_context=thresholds.run_turn_context,
            same_fact_curve=self._carried_curve(thresholds.same_fact_curve),
        )

    def _carried_curve(self, curve: tuple[float, float]) -> tuple[float, float]:
        # MiniLM's curve over this model's similarities: MiniLM's cosine at a relevance is
        # linear in this model's cosine at the same relevance.
        minilm = CALIBRATIONS[DEFAULT_MODEL_ID]
        at_zero = minilm.cosine_at(self.level(0.0))
        per_unit = minilm.cosine_at(self.level(1.0)) - at_zero
        intercept, slope = curve
        return (round(intercept + slope * at_zero, 3), round(slope * per_unit, 3))

    def same_fact(self, similarity: float) -> float:
        """How likely, in [0, 1], a memory at cosine ``similarity`` to a text states the same
        fact, by this model's curve."""
        return same_fact_on_curve(similarity, self.thresholds.same_fact_curve)

    def own(self, name: str, configured: float) -> float:
        """``configured``, the value of setting ``name``; where it is left at MiniLM's
        calibrated value under another model, this model's."""
        if configured == getattr(MINILM_THRESHOLDS, name):
            return float(getattr(self.thresholds, name))
        return configured


# all-MiniLM-L6-v2's: the gate (docs/decisions/0003), versions (0024, 0034), near duplicates and
# unrelated texts (0022, tests/data/near_duplicates.jsonl), the turn context (0012, 0030).
MINILM_THRESHOLDS = ModelThresholds(
    max_distance=1.2,
    version_similarity=0.70,
    version_words_similarity=0.5,
    update_similarity=0.3,
    similar_threshold=0.60,
    unrelated_below=0.35,
    turn_context=0.3,
    run_turn_context=0.5,
    same_fact_curve=MINILM_SAME_FACT_CURVE,
)


# Measured with benchmarks/quality/calibrate.py on tests/data/calibration.json and BEIR SciFact
# (benchmarks/results-calibration-2026-11-27.json): unrelated pairs' median distance (2,047
# pairs) and paraphrase pairs' median distance (24 pairs).
CALIBRATIONS: dict[str, DenseCalibration] = {
    DEFAULT_MODEL_ID: DenseCalibration(
        model_id=DEFAULT_MODEL_ID,
        unrelated_distance=1.353,
        paraphrase_distance=0.536,
        measured=MINILM_THRESHOLDS,
    ),
    # Measured 2026-12-05 (benchmarks/results/calibration-multilingual-e5-small.json and
    # near-duplicates-multilingual-e5-small.json): questions on e5's query side, stored texts on
    # its passage side. Its texts lie close together (unrelated ones at a cosine of 0.79).
    E5_MODEL_ID: DenseCalibration(
        model_id=E5_MODEL_ID,
        unrelated_distance=0.642,
        paraphrase_distance=0.463,
        measured=ModelThresholds(
            # No gate: every pair of e5's unit vectors lies within it. MiniLM's gate carried to
            # the same relevance (0.602) kept 0.959 of SciFact's relevant pairs but 0.916 of a
            # conversation's evidence turns, and cost the paths matrix's conversations 3.7 / 3.9
            # points at 5 / 10 turns on the tuning half; a gate at relevance 0 (0.642), 0.4.
            max_distance=2.0,
            # The most updates taken while taking at most 5% of the related pairs, as for
            # MiniLM: 0.533 of the updates, 0.033 of the related pairs (MiniLM 0.675 / 0.042).
            version_similarity=0.92,
            version_words_similarity=0.847,  # MiniLM's 0.5 at the same relevance
            update_similarity=0.80,  # under every labelled update (the lowest: 0.804)
            # The best F1 on all the pairs and on each half (0.887; held out 0.887 and 0.888).
            similar_threshold=0.89,
            # No correction nor paraphrase under it; 64 of the 120 unrelated pairs are (a
            # weaker guard than MiniLM's 118).
            unrelated_below=0.80,
            # MiniLM's shares: 0.45 / 0.65 and 0.6 / 0.8 tried, no better on the tuning half.
            turn_context=0.3,
            run_turn_context=0.5,
            # Fitted on the labelled pairs; held out, 0.24 said and 0.23-0.25 found for
            # similarities of 0.8-0.9, 0.002 and 0 for 0.7-0.8.
            same_fact_curve=(-54.509, 61.364),
        ),
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
