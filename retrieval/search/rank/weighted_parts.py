"""A result's final score as its weighted parts: ``final = sum(weight * signal)`` over its
source's weights, each term one part, the relevance split by the evidence that gave it.

The relevance part is ``meaning`` (the dense channel), ``lexical`` (BM25 over the query's
words, or the keywords a decision, a tool call or a message matched) or ``context`` (a turn
lifted by its thread's relevance, :mod:`retrieval.search.rank.context_lift`). Where a source fused
its dense and BM25 channels, the statement records the lexical channel's share of the fused
relevance (``lexical_share``, :func:`retrieval.search.statement.relevance.lexical_share_sql`), and
the relevance is split by it. The parts add up to the final score; each result carries them in
``metadata["parts"]`` (what the inspector draws).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Sources whose only relevance is lexical: keywords matched.
_LEXICAL_SOURCES = frozenset({"episodic", "working_state"})


def weighted_parts(
    source: str,
    signals: Mapping[str, float],
    weights: Mapping[str, float],
    evidence: Mapping[str, Any],
) -> dict[str, dict[str, float]]:
    """Each part's ``weight``, ``signal`` (its share of the signal) and ``value`` (their
    product), by name, in the weights' order with the relevance split first into its
    channels; ``evidence`` is the result's metadata (``lexical_share``, ``lifted_by``)."""
    parts: dict[str, dict[str, float]] = {}
    for name, weight in weights.items():
        signal = float(signals.get(name, 0.0))
        shares = _relevance_shares(source, evidence) if name == "relevance" else {name: 1.0}
        for part, share in shares.items():
            parts[part] = {
                "weight": weight,
                "signal": signal * share,
                "value": weight * signal * share,
            }
    return parts


def _relevance_shares(source: str, evidence: Mapping[str, Any]) -> dict[str, float]:
    if source in _LEXICAL_SOURCES:
        return {"lexical": 1.0}
    if "lifted_by" in evidence:
        return {"context": 1.0}
    share = evidence.get("lexical_share")
    if isinstance(share, bool) or not isinstance(share, int | float):
        return {"meaning": 1.0}
    return {"meaning": 1.0 - float(share), "lexical": float(share)}
