"""A result's final score split into its weighted parts, for the inspector's stacked bars.

``final = sum(weight * signal)`` over the result's source's weights (``metadata["weights"]``
and ``metadata["signals"]``, see :mod:`retrieval.search.ranking`), so each part is one
``weight * signal`` and the parts add up to the final score. The relevance part is split
further by where the relevance came from: the meaning of the text (the dense channel) and the
lexical evidence (BM25 over the query's words, or the keywords a decision or a tool call
matched), by the fusion that combined them. A turn lifted by its thread's relevance keeps one
relevance part (``context``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
_CLOSE = 1e-9


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


def score_parts(result: RetrievalResult, *, bm25_weight: float) -> list[Part]:
    """The non-zero weighted parts of ``result``'s final score, in :data:`PARTS` order.

    ``bm25_weight`` is the convex fusion's weight of the lexical channel (the retriever's
    config). A result without weights (a working-state message) is one relevance part and one
    recency part at its own scores' share.
    """
    metadata = result.metadata
    weights: Mapping[str, float] = metadata.get("weights") or {}
    signals: Mapping[str, float] = metadata.get("signals") or {}
    parts: dict[str, Part] = {}
    for name, weight in weights.items():
        signal = float(signals.get(name, 0.0))
        if name == "relevance":
            for channel, share in _relevance_shares(result, bm25_weight).items():
                parts[channel] = Part(channel, weight * signal * share, weight, signal * share)
        elif name in COLOURS:
            parts[name] = Part(name, weight * signal, weight, signal)
    return [parts[name] for name, _, _ in PARTS if name in parts and parts[name].value > 0.0]


def _relevance_shares(result: RetrievalResult, bm25_weight: float) -> dict[str, float]:
    # Which share of the relevance each channel gave, summing to 1.
    metadata = result.metadata
    if result.source in ("episodic", "working_state"):
        return {"lexical": 1.0}  # keywords matched: the only evidence these sources have
    if "lifted_by" in metadata:
        return {"context": 1.0}
    dense = _number(metadata.get("dense_relevance"))
    lexical = _number(metadata.get("bm25_relevance"))
    if dense is None or lexical is None or dense + lexical <= 0.0:
        return {"meaning": 1.0}
    relevance = result.relevance_score
    if metadata.get("fusion") == "convex":
        dense_part, lexical_part = (1.0 - bm25_weight) * dense, bm25_weight * lexical
    elif abs(relevance - lexical) < _CLOSE and abs(relevance - dense) >= _CLOSE:
        dense_part, lexical_part = 0.0, 1.0  # max or cascade took the lexical channel
    elif abs(relevance - dense) < _CLOSE and abs(relevance - lexical) >= _CLOSE:
        dense_part, lexical_part = 1.0, 0.0
    else:  # rank fusion: each channel's share of the two
        dense_part, lexical_part = dense, lexical
    total = dense_part + lexical_part
    if total <= 0.0:
        return {"meaning": 1.0}
    return {"meaning": dense_part / total, "lexical": lexical_part / total}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
