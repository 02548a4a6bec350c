"""What retrieval returns: results whose scores are in [0, 1] and carry their evidence."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SOURCES = ("working_state", "semantic", "episodic", "documents")


@dataclass(frozen=True)
class RetrievalResult:
    """One piece of context: its text, where it came from, and why it ranks where it does.

    Every score is in [0, 1], higher is better; ``final_score`` combines the others with the
    source's weights. ``metadata`` holds the evidence (raw distance, matched keywords, ids,
    timestamps). An out-of-range score raises ``ValueError``.
    """

    content: str
    source: str
    relevance_score: float
    recency_score: float
    final_score: float
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source {self.source!r} is not one of {', '.join(SOURCES)}")
        for name in ("relevance_score", "recency_score", "final_score"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if math.isnan(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name}={value!r} is outside [0, 1]")
