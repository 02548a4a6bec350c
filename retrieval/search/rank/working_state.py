"""The working state: the caller's current messages, scored in Python and never stored.

Relevance is the fraction of the query's keywords found in a message (case-insensitive
substring match, as the episodic source's ILIKE); recency is by position, the newest message
1.0 down to 0.1 for the oldest of the last ``limit`` messages. With a lexical match (``lexical``:
``max``, ``weighted`` or ``cascade``, see :mod:`retrieval.search.lexical_match`) each message
is also
compared with the whole query (exact tier, token-sort ratio, word overlap) and the scores are
combined with the keyword fraction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.errors import ValidationError
from retrieval.search import lexical_match, scoring
from retrieval.search.config import SourceConfig
from retrieval.search.lexical_match import Strategy
from retrieval.search.rank.weighted_parts import weighted_parts
from retrieval.search.results import RetrievalResult

SOURCE = "working_state"


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message: its ``content`` string, or the text parts of a list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text", "") for part in content if isinstance(part, Mapping)]
        return " ".join(part for part in parts if isinstance(part, str) and part)
    return ""


def score_working_state(
    messages: Sequence[Mapping[str, Any]],
    keywords: Sequence[str],
    config: SourceConfig,
    *,
    lexical: LexicalOption | None = None,
) -> list[RetrievalResult]:
    """Score the last ``config.limit`` messages against ``keywords``, oldest first.

    Each result's ``metadata`` keeps the caller's original dict under ``message``; with
    ``lexical``, also the lexical scores under ``lexical``.
    """
    if not all(isinstance(message, Mapping) for message in messages):
        raise ValidationError("working_state must be a list of message dicts")
    recent = list(messages)[-config.limit :] if config.limit else []
    results = []
    for position, message in enumerate(recent):
        text = message_text(message)
        lowered = text.lower()
        matched = [keyword for keyword in keywords if keyword in lowered]
        relevance = scoring.keyword_fraction(len(matched), len(keywords))
        evidence: dict[str, Any] = {}
        if lexical is not None:
            scores = lexical_match.lexical_scores(lexical.query, text)
            keyword_relevance = relevance
            relevance = lexical_match.combine(
                scores,
                keyword_relevance,
                strategy=lexical.strategy,
                weights=lexical.weights,
                thresholds=lexical.thresholds,
            )
            evidence["lexical"] = {
                "exact": scores.exact,
                "fuzzy": scores.fuzzy,
                "tokens": scores.tokens,
                "keywords": keyword_relevance,
                "combined_by": lexical.strategy,
            }
        recency = scoring.position_recency(position, len(recent))
        signals = {"relevance": relevance, "recency": recency}
        weights = _applicable(config.weights)
        final = scoring.weighted_sum(signals, weights)
        results.append(
            RetrievalResult(
                content=text,
                source=SOURCE,
                relevance_score=relevance,
                recency_score=recency,
                final_score=final,
                metadata={
                    "message": message,
                    "position": position,
                    "of_messages": len(recent),
                    "matched_keywords": matched,
                    "keywords": list(keywords),
                    **evidence,
                    "parts": weighted_parts(SOURCE, signals, weights, evidence),
                },
            )
        )
    return results


@dataclass(frozen=True)
class LexicalOption:
    """How the working state's messages are matched with the whole query."""

    query: str
    strategy: Strategy
    weights: Mapping[str, float]
    thresholds: Mapping[str, float] = field(
        default_factory=lambda: dict(lexical_match.DEFAULT_THRESHOLDS)
    )


def _applicable(weights: Mapping[str, float]) -> dict[str, float]:
    # Messages have no stored importance, accesses or entities: those signals score 0 here.
    return {name: weight for name, weight in weights.items() if name in ("relevance", "recency")}
