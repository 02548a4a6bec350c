from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from retrieval.embedding.calibration import (
    CALIBRATIONS,
    UNCALIBRATED,
    DenseCalibration,
    calibration_for,
)
from retrieval.embedding.models import DEFAULT_MODEL_ID


def test_relevance_is_zero_for_unrelated_one_for_paraphrases_linear_in_the_cosine() -> None:
    calibration = CALIBRATIONS[DEFAULT_MODEL_ID]
    u, p = calibration.unrelated_distance, calibration.paraphrase_distance
    assert calibration.relevance(np.array([u, p, 0.0, 2.0])).tolist() == [0.0, 1.0, 1.0, 0.0]
    # Unit vectors: cos = 1 - d^2 / 2, so half-way in cosine is half-way in relevance.
    cos_u, cos_p = 1 - u * u / 2, 1 - p * p / 2
    middle = math.sqrt(2 * (1 - (cos_u + cos_p) / 2))
    assert calibration.relevance(np.array([middle]))[0] == pytest.approx(0.5)


def test_the_default_models_cut_off_sits_at_a_quarter_of_the_scale() -> None:
    # The cut-off distance 1.2 (docs/design.md, "Calibration") maps to relevance 0.25.
    relevance = CALIBRATIONS[DEFAULT_MODEL_ID].relevance(np.array([1.2]))[0]
    assert relevance == pytest.approx(0.253, abs=0.005)


def test_an_uncalibrated_model_is_the_cosine_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="retrieval.embedding.calibration"):
        assert calibration_for("acme/unknown-model") is UNCALIBRATED
        assert calibration_for("acme/unknown-model") is UNCALIBRATED
    warnings = [r for r in caplog.records if "acme/unknown-model" in r.getMessage()]
    assert len(warnings) == 1
    assert "benchmarks/quality/calibrate.py" in warnings[0].getMessage()
    # Orthogonal unit vectors (distance sqrt 2) score 0, identical ones 1, cos 0.5 scores 0.5.
    assert UNCALIBRATED.relevance(np.array([math.sqrt(2), 0.0, 1.0])).tolist() == pytest.approx(
        [0.0, 1.0, 0.5]
    )


def test_a_calibration_must_put_paraphrases_nearer_than_unrelated_texts() -> None:
    with pytest.raises(ValueError, match="paraphrase_distance"):
        DenseCalibration(model_id="m", unrelated_distance=0.5, paraphrase_distance=0.9)
