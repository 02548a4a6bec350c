"""The documents source's part of the ranking: its weights, threshold and limit alone.

A chunk reaches the ranking only with the evidence its statement's gate asks for (near by
meaning, or covering enough of the query's idf), so no rule of its own follows; it fills no
empty answer.
"""

from __future__ import annotations

from retrieval.search.rank.source import RankSource
from retrieval.search.sources.documents.plan import SOURCE

# The documents source's part of the ranking.
RANK = RankSource(SOURCE)
