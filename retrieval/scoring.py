"""Pure scoring functions, each with its formula: the contract of DESIGN.md, "The scoring contract".

Every function returns a score in [0, 1], higher is better. The SQL of each source computes the
same quantities; these functions are the oracle the SQL results are tested against.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

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
_LOG10_101 = math.log10(101)


def distance_relevance(distance: float) -> float:
    """Relevance of an L2 distance ``d >= 0``: ``1 / (1 + d)`` (1 for identical vectors)."""
    if distance < 0 or math.isnan(distance):
        raise ValueError(f"distance must be >= 0, got {distance}")
    return 1.0 / (1.0 + distance)


def exponential_recency(age_seconds: float, half_life_seconds: float) -> float:
    """Recency ``0.5 ^ (age / half_life)``: 1 now, 0.5 one half-life ago.

    A negative age (a timestamp after ``as_of``) counts as now.
    """
    if half_life_seconds <= 0:
        raise ValueError(f"half_life_seconds must be > 0, got {half_life_seconds}")
    return float(0.5 ** (max(age_seconds, 0.0) / half_life_seconds))


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


def popularity(access_count: int) -> float:
    """Popularity ``log10(access_count + 1) / log10(101)``, capped at 1 (100 accesses)."""
    if access_count < 0:
        raise ValueError(f"access_count must be >= 0, got {access_count}")
    return min(1.0, math.log10(access_count + 1) / _LOG10_101)


def entity_overlap(matched: int, wanted: int) -> float:
    """Entity overlap: matched entity ids / query entity ids (0 when the query names none)."""
    return keyword_fraction(matched, wanted)


def weighted_sum(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """``sum(weights[k] * scores[k])``, clamped to [0, 1] against floating-point drift.

    With weights summing to 1 and scores in [0, 1], the sum is in [0, 1].
    """
    total = sum(weight * scores[name] for name, weight in weights.items() if weight)
    return min(1.0, max(0.0, total))


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
