"""The episodic source's part of the ranking: its weights, threshold and limit alone.

A decision or tool call reaches the ranking only matching enough of the query's keywords
(:func:`~retrieval.search.sources.episodic.plan.min_keyword_hits`), so no rule of its own
follows; it fills no empty answer (a keyword-only match is no answer by meaning).
"""

from __future__ import annotations

from retrieval.search.rank.source import RankSource
from retrieval.search.sources.episodic.plan import SOURCE

# The episodic source's part of the ranking.
RANK = RankSource(SOURCE)
