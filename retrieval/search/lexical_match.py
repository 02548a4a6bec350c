"""Exact and fuzzy matching of short texts (questions, triggers, names), as pure functions.

Pure semantic search fails on exact questions: "What is Python?" should find the memory that
says exactly that, whatever a neighbour means. A lexical score of ``query`` against ``text``:

* exact tier: identical 1.0, identical ignoring case 0.98, identical after punctuation and
  spaces are normalized 0.95, else 0;
* fuzzy: the token-sort ratio (words lower-cased and sorted, then ``difflib``'s similarity
  ``2 * matches / total characters``); in SQL, ``pg_trgm``'s similarity plays this part;
* tokens: ``0.4 * jaccard + 0.6 * coverage`` of the word sets (coverage: the share of the
  query's words found in the text).

:func:`combine` merges them with the semantic score by ``max`` (default), ``weighted`` or
``cascade`` (exact >= 0.95, fuzzy >= 0.75, tokens >= 0.70, else the semantic score).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from retrieval.search import scoring

EXACT = 1.0
CASE_INSENSITIVE = 0.98
NORMALIZED = 0.95
JACCARD_WEIGHT = 0.4
COVERAGE_WEIGHT = 0.6
DEFAULT_THRESHOLDS: Mapping[str, float] = {"exact": 0.95, "fuzzy": 0.75, "tokens": 0.70}

Strategy = Literal["max", "weighted", "cascade"]
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class LexicalScores:
    """The three lexical scores of a text for a query, each in [0, 1]."""

    exact: float
    fuzzy: float
    tokens: float


def normalize(text: str) -> str:
    """Lower-cased words joined by single spaces: punctuation and spacing removed."""
    return " ".join(words(text))


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, in order (an apostrophe splits a word)."""
    return [word.lower() for word in _WORD.findall(text)]


def exact_tier(query: str, text: str) -> float:
    """1.0 identical, 0.98 ignoring case, 0.95 ignoring punctuation and spacing, else 0."""
    if query == text:
        return EXACT
    if query.casefold() == text.casefold():
        return CASE_INSENSITIVE
    if normalize(query) and normalize(query) == normalize(text):
        return NORMALIZED
    return 0.0


def token_sort_ratio(query: str, text: str) -> float:
    """Similarity of the sorted lower-cased words: ``2 * matching characters / all characters``."""
    left, right = " ".join(sorted(words(query))), " ".join(sorted(words(text)))
    if not left and not right:
        return 1.0
    return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()


def token_overlap(query: str, text: str) -> float:
    """``0.4 * jaccard + 0.6 * coverage`` of the word sets (0 when the query has no word)."""
    asked, found = set(words(query)), set(words(text))
    if not asked:
        return 0.0
    common = len(asked & found)
    jaccard = common / len(asked | found)
    coverage = common / len(asked)
    return JACCARD_WEIGHT * jaccard + COVERAGE_WEIGHT * coverage


def lexical_scores(query: str, text: str) -> LexicalScores:
    """The exact tier, the fuzzy ratio and the token overlap of ``text`` for ``query``."""
    return LexicalScores(
        exact=exact_tier(query, text),
        fuzzy=token_sort_ratio(query, text),
        tokens=token_overlap(query, text),
    )


def combine(
    lexical: LexicalScores,
    semantic: float,
    *,
    strategy: Strategy = "max",
    weights: Mapping[str, float] | None = None,
    thresholds: Mapping[str, float] = DEFAULT_THRESHOLDS,
) -> float:
    """One relevance in [0, 1] from the lexical scores and the semantic one.

    ``max``: the best of the four. ``weighted``: ``sum(weights[k] * score_k)`` over ``exact``,
    ``fuzzy``, ``tokens`` and ``semantic`` (weights summing to 1). ``cascade``: the first of
    exact, fuzzy, tokens that reaches its threshold, else the semantic score.
    """
    scores = {
        "exact": lexical.exact,
        "fuzzy": lexical.fuzzy,
        "tokens": lexical.tokens,
        "semantic": semantic,
    }
    if strategy == "max":
        return scoring.fuse_max(scores.values())
    if strategy == "weighted":
        if weights is None or abs(sum(weights.values()) - 1.0) > 1e-6:
            raise ValueError(f"weighted needs weights summing to 1, got {weights!r}")
        return scoring.weighted_sum(scores, weights)
    if strategy == "cascade":
        stages = [(scores[name], thresholds[name]) for name in ("exact", "fuzzy", "tokens")]
        return scoring.cascade(stages, semantic)
    raise ValueError(f"unknown strategy {strategy!r}: use max, weighted or cascade")
