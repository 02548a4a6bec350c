"""The working state: the caller's current messages, scored in Python and never stored.

Relevance is the fraction of the query's keywords found in a message (case-insensitive
substring match, as the episodic source's ILIKE); recency is by position, the newest message
1.0 down to 0.1 for the oldest of the last ``limit`` messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval import scoring
from retrieval.config import SourceConfig
from retrieval.errors import ValidationError
from retrieval.results import RetrievalResult

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
) -> list[RetrievalResult]:
    """Score the last ``config.limit`` messages against ``keywords``, oldest first.

    Each result's ``metadata`` keeps the caller's original dict under ``message``.
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
        recency = scoring.position_recency(position, len(recent))
        signals = {"relevance": relevance, "recency": recency}
        final = scoring.weighted_sum(signals, _applicable(config.weights))
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
                },
            )
        )
    return results


def _applicable(weights: Mapping[str, float]) -> dict[str, float]:
    # Messages have no stored importance, accesses or entities: those signals score 0 here.
    return {name: weight for name, weight in weights.items() if name in ("relevance", "recency")}
