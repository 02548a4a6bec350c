"""The scores the read path computes in Python, each with its formula: keyword and position
scores of the working state, the weighted sum, the time fit, keyword extraction.

Every score is in [0, 1], higher is better. What the SQL of the sources computes (relevance of
a distance, recency, BM25, fusion) has its plain-Python reference in
:mod:`retrieval.search.reference_scores`, which the tests check the SQL against.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

# Words that carry no topic, dropped from keyword queries. Lower case.
DEFAULT_STOP_WORDS: frozenset[str] = frozenset(
    """
    about above after again against also because been before being below between both could
    does doing down during each from further have having here hers herself himself into itself
    just more most myself once only other ours ourselves over same should some such than that
    their theirs them themselves then there these they this those through under until very
    were what when where which while whom with would your yours yourself yourselves will shall
    please thanks know like want need make made using used
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
DEFAULT_MIN_KEYWORD_LENGTH = 4  # "words over 3 letters"
_WORD = re.compile(r"\w+", re.UNICODE)


def keyword_fraction(matched: int, total: int) -> float:
    """Relevance of a keyword match: matched keywords / query keywords (0 without keywords)."""
    if matched < 0 or total < 0 or matched > total:
        raise ValueError(f"need 0 <= matched <= total, got {matched} of {total}")
    return matched / total if total else 0.0


def position_recency(position: int, count: int) -> float:
    """Recency of a message by position: the newest (``count - 1``) 1.0 down to the oldest 0.1.

    Linear in between; a single message is the newest.
    """
    if not 0 <= position < count:
        raise ValueError(f"position {position} is outside 0..{count - 1}")
    if count == 1:
        return 1.0
    return 0.1 + 0.9 * position / (count - 1)


def weighted_sum(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """``sum(weights[k] * scores[k])``, clamped to [0, 1] against floating-point drift.

    With weights summing to 1 and scores in [0, 1], the sum is in [0, 1].
    """
    total = sum(weight * scores[name] for name, weight in weights.items() if weight)
    return min(1.0, max(0.0, total))


def weighted_fields(record: object, weights: Mapping[str, float]) -> float:
    """:func:`weighted_sum` over the attributes of ``record`` that ``weights`` names (a
    candidate's signals are its fields): the same sum, in the same order, with no mapping of
    the scores built first."""
    total = 0.0
    for name, weight in weights.items():
        if weight:
            total += weight * getattr(record, name)
    return min(1.0, max(0.0, total))


# Past 1,000 halvings a score is 0 (PostgreSQL's power() underflows there too).
_MAX_HALVINGS = 1000


def time_fit(distance_days: float, half_life_days: float) -> float:
    """How well a date fits a time the query names: ``0.5 ^ (days outside / half_life)``, 1
    inside the window (an exponential decay, as recency's, from the window's edge)."""
    if distance_days <= 0.0:
        return 1.0
    halvings = distance_days / half_life_days
    return 0.0 if halvings > _MAX_HALVINGS else 0.5**halvings


def with_time(weights: Mapping[str, float], time_weight: float) -> dict[str, float]:
    """A source's ``weights`` when the query names a time: each scaled by ``1 - time_weight``
    and ``time`` weighted ``time_weight``, so that they still sum to 1."""
    scaled = {name: weight * (1.0 - time_weight) for name, weight in weights.items()}
    return scaled | {"time": time_weight}


def extract_keywords(
    text: str,
    *,
    min_length: int = DEFAULT_MIN_KEYWORD_LENGTH,
    stop_words: Iterable[str] = DEFAULT_STOP_WORDS,
) -> tuple[str, ...]:
    """The distinct lower-cased words of ``text`` of at least ``min_length`` letters, in order,
    minus ``stop_words``."""
    stop = stop_words if isinstance(stop_words, frozenset | set) else frozenset(stop_words)
    words = (word.lower() for word in _WORD.findall(text))
    return tuple(dict.fromkeys(w for w in words if len(w) >= min_length and w not in stop))


def like_pattern(keyword: str) -> str:
    """An ``ILIKE`` pattern matching ``keyword`` anywhere, with ``%``, ``_`` and ``\\`` literal."""
    escaped = keyword.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fuse_max(scores: Iterable[float]) -> float:
    """The best of the channels' normalized scores (0 without any)."""
    return max(scores, default=0.0)


def cascade(stages: Sequence[tuple[float, float]], fallback: float) -> float:
    """The score of the first ``(score, threshold)`` stage that reaches its threshold, else
    ``fallback`` (for example exact >= 0.95, then fuzzy >= 0.75, then tokens >= 0.70, then
    the semantic score)."""
    for score, threshold in stages:
        if score >= threshold:
            return score
    return fallback
