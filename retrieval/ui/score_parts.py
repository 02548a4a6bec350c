"""A result's final score split into its weighted parts, for the inspector's stacked bars:
the parts the ranking recorded (:mod:`retrieval.search.weighted_parts`), with their labels and
colours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from retrieval.search.results import RetrievalResult

# The parts in the order the bars draw them, with their labels and colours.
PARTS: tuple[tuple[str, str, str], ...] = (
    ("meaning", "relevance: meaning", "#3b6fb6"),
    ("lexical", "relevance: lexical evidence", "#6aa84f"),
    ("context", "relevance: its thread's", "#8e7cc3"),
    ("recency", "recency", "#e69138"),
    ("importance", "importance", "#c27ba0"),
    ("popularity", "popularity", "#76a5af"),
    ("entity", "entity overlap", "#a61c00"),
    ("time", "fits the time asked about", "#bf9000"),
)
LABELS = {name: label for name, label, _ in PARTS}
COLOURS = {name: colour for name, _, colour in PARTS}
_ORDER = {name: place for place, (name, _, _) in enumerate(PARTS)}


@dataclass(frozen=True)
class Part:
    """One weighted part of a final score: ``value = weight * signal``."""

    name: str
    value: float
    weight: float
    signal: float

    @property
    def label(self) -> str:
        """What the part measures, in words."""
        return LABELS[self.name]

    @property
    def colour(self) -> str:
        """The part's colour in the bars."""
        return COLOURS[self.name]


def score_parts(result: RetrievalResult) -> list[Part]:
    """The non-zero weighted parts of ``result``'s final score, in :data:`PARTS` order, as
    the ranking recorded them (``metadata["parts"]``)."""
    recorded: Mapping[str, Mapping[str, float]] = result.metadata.get("parts") or {}
    parts = [
        Part(name, float(part["value"]), float(part["weight"]), float(part["signal"]))
        for name, part in recorded.items()
        if name in COLOURS
    ]
    return sorted((part for part in parts if part.value > 0.0), key=lambda part: _ORDER[part.name])
