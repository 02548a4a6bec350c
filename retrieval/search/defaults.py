"""The measured defaults of :class:`~retrieval.search.config.RetrievalConfig`, each with the
decision or benchmark that chose it."""

from __future__ import annotations

from retrieval.settings import UNIT, Within

# Calibrated on all-MiniLM-L6-v2 (docs/decisions/0003-memory-weights-and-threshold.md): the L2
# cut-off 1.2 separates related from unrelated memories.
DEFAULT_MIN_FINAL_SCORE = 0.25
DEFAULT_MAX_DISTANCE = 1.2
# When no result passes the thresholds, this many of the best memories under them are returned,
# marked below_threshold (docs/decisions/0035-never-empty-when-a-memory-is-near.md).
DEFAULT_FALLBACK_RESULTS = 3
# Candidates each database source hands from SQL to Python (pgvector's default ef_search).
DEFAULT_CANDIDATE_POOL = 40
# The HNSW search's list of candidates (hnsw.ef_search), at least the pool: recall@10 against exact
# search 0.60 -> 0.82 in a tenant of 1,000,000 memories for about 1 ms (docs/decisions/0010).
DEFAULT_EXACT_SCAN_FACTOR = 4.0  # see retrieval.search.plan.exact_read
DEFAULT_EF_SEARCH = 160
# Memories the rarest query terms of the memories' BM25 channel may bring in (their summed
# document frequencies), beside the vector channel's pool
# (docs/decisions/0002-memory-bm25-on-by-default.md; 300 until
# docs/decisions/0057-a-smaller-bm25-budget.md).
DEFAULT_MEMORY_BM25_ROWS = 150
# A turn's relevance lifts its thread's neighbours by this share per position away, up to two
# positions (docs/decisions/0012-conversation-context-and-time.md).
DEFAULT_CONTEXT_LIFT = 0.85
DEFAULT_CONTEXT_WINDOW = 2
# A time the query names weighs 0.2 of a result's final score; its fit halves every 7 days
# outside the named window (docs/decisions/0012-conversation-context-and-time.md).
DEFAULT_TIME_WEIGHT = 0.2
DEFAULT_TIME_HALF_LIFE_DAYS = 7.0
# A conversation turn that only asks keeps 0.7 of its final score, so that the turns that tell
# rank above it (docs/decisions/0032-a-question-yields-to-the-answers.md).
DEFAULT_QUESTION_DISCOUNT = 0.3
# The query words a keyword channel reads at most (benchmarks/README.md, long-queries).
DEFAULT_MAX_QUERY_WORDS = 32
# A decision or tool call matching fewer of a query's keywords is no result (decision 0023).
DEFAULT_EPISODIC_MIN_KEYWORD_SHARE = 0.5
# Two memories of a kind (not conversation turns) at this cosine similarity or more are versions
# of one fact: the older ranks below the newer (docs/decisions/0024-the-newer-version-first.md).
DEFAULT_VERSION_SIMILARITY = 0.70
DEFAULT_VERSION_SHARED_WORDS = 0.5
# Okapi BM25's parameters and their ranges, for the BM25 channels and DocumentStore.bm25 alike
# (Anserini's defaults for short texts, docs/decisions/0002-memory-bm25-on-by-default.md).
DEFAULT_BM25_K1 = 0.9
DEFAULT_BM25_B = 0.4
BM25_K1 = Within(0.0, 10.0)
BM25_B = UNIT
