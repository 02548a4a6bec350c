"""The scoring formulas that run in SQL, in plain Python: the oracle the tests check the read
path's statements against (the read path never calls them), and what the benchmarks use to
score other libraries' results the same way.

Every function returns a score in [0, 1], higher is better (docs/design.md, the scoring
contract), but BM25 itself, which :func:`lexical_relevance` makes absolute. The SQL that runs is
:mod:`retrieval.search.statement` (recency: ``common.recency_sql``; BM25:
:mod:`retrieval.search.statement.bm25`; relevance and fusion: ``relevance``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from retrieval.search.defaults import DEFAULT_BM25_B, DEFAULT_BM25_K1
from retrieval.search.scoring import cascade, fuse_max, keyword_fraction

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


def popularity(access_count: int) -> float:
    """Popularity ``log10(access_count + 1) / log10(101)``, capped at 1 (100 accesses)."""
    if access_count < 0:
        raise ValueError(f"access_count must be >= 0, got {access_count}")
    return min(1.0, math.log10(access_count + 1) / _LOG10_101)


def entity_overlap(matched: int, wanted: int) -> float:
    """Entity overlap: matched entity ids / query entity ids (0 when the query names none)."""
    return keyword_fraction(matched, wanted)


# -- lexical relevance: BM25 ------------------------------------------------------------


def bm25_idf(document_frequency: int, documents: int) -> float:
    """Lucene's (and Anserini's) BM25 idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``, never < 0."""
    if not 0 <= document_frequency <= documents:
        raise ValueError(f"need 0 <= df <= N, got df={document_frequency}, N={documents}")
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25_term(
    term_frequency: int,
    document_frequency: int,
    document_length: int,
    average_length: float,
    documents: int,
    *,
    k1: float = DEFAULT_BM25_K1,
    b: float = DEFAULT_BM25_B,
) -> float:
    """One query term's Okapi BM25 contribution to one document:
    ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` (0 when ``tf`` is 0)."""
    if term_frequency == 0:
        return 0.0
    norm = k1 * (1.0 - b + b * document_length / average_length)
    idf = bm25_idf(document_frequency, documents)
    return idf * term_frequency * (k1 + 1.0) / (term_frequency + norm)


def bm25_scores(
    query_terms: Iterable[str],
    documents: Sequence[Sequence[str]],
    *,
    k1: float = DEFAULT_BM25_K1,
    b: float = DEFAULT_BM25_B,
    distinct_length: bool = False,
) -> list[float]:
    """Okapi BM25 of every document (a list of terms) for the distinct ``query_terms``.

    The plain-Python reference of the SQL implementation: statistics (document frequency,
    term frequency, lengths) are computed from ``documents`` themselves. A document's length
    is its number of terms, or with ``distinct_length`` of distinct terms (as for memories).
    """
    counts = [Counter(document) for document in documents]
    lengths = [len(count) if distinct_length else len(document) for count, document in zip(
        counts, documents, strict=True
    )]  # fmt: skip
    total = len(documents)
    average = sum(lengths) / total if total else 0.0
    frequency = Counter(term for count in counts for term in count)
    scores = []
    for count, length in zip(counts, lengths, strict=True):
        scores.append(
            sum(
                bm25_term(count[t], frequency[t], length, average, total, k1=k1, b=b)
                for t in dict.fromkeys(query_terms)
            )
        )
    return scores


def query_idf(query_terms: Iterable[str], documents: Sequence[Sequence[str]]) -> float:
    """The summed idf of the distinct ``query_terms`` over ``documents`` (a term no document
    holds counts with document frequency 0): what a document of average length holding every
    query term once scores."""
    held = Counter(term for document in documents for term in set(document))
    return sum(bm25_idf(held[term], len(documents)) for term in dict.fromkeys(query_terms))


def lexical_relevance(bm25: float, total_idf: float) -> float:
    """BM25 made absolute: ``min(1, bm25 / total_idf)`` (0 when the query has no terms)."""
    return min(1.0, bm25 / total_idf) if total_idf > 0 else 0.0


# -- fusion of channels -----------------------------------------------------------------

DEFAULT_RRF_K = 60


def reciprocal_rank_fusion(
    ranks: Mapping[str, int | None],
    *,
    k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
) -> float:
    """Weighted RRF ``sum(w_c / (k + rank_c))`` over the channels that ranked the item (ranks
    from 1), divided by its maximum ``sum(w_c / (k + 1))`` so that it lies in [0, 1]."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    weight = weights or dict.fromkeys(ranks, 1.0)
    best = sum(weight[channel] / (k + 1) for channel in ranks)
    if best == 0:
        return 0.0
    total = 0.0
    for channel, rank in ranks.items():
        if rank is None:
            continue
        if rank < 1:
            raise ValueError(f"ranks start at 1, got {rank} for {channel!r}")
        total += weight[channel] / (k + rank)
    return min(1.0, total / best)


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores rescaled to [0, 1]: ``(s - min) / (max - min)``; all equal gives all 1."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(score - low) / (high - low) for score in scores]


def fused_relevance(
    fusion: str,
    lexical: float,
    dense: float,
    ranks: Mapping[str, int | None],
    *,
    bm25_weight: float = 0.5,
    cascade_threshold: float = 0.7,
    k: int = DEFAULT_RRF_K,
) -> float:
    """One relevance of the absolute ``lexical`` and ``dense`` channel scores by ``fusion``:
    ``convex`` (``bm25_weight * lexical + (1 - bm25_weight) * dense``), ``max``, ``cascade``
    (lexical when it reaches ``cascade_threshold``, else dense), or ``rrf`` of the channels'
    ``ranks`` (``bm25``, ``dense``; None: not ranked)."""
    if fusion == "convex":
        return min(1.0, bm25_weight * lexical + (1.0 - bm25_weight) * dense)
    if fusion == "max":
        return fuse_max([lexical, dense])
    if fusion == "cascade":
        return cascade([(lexical, cascade_threshold)], dense)
    if fusion == "rrf":
        weights = {"bm25": bm25_weight, "dense": 1.0 - bm25_weight}
        return reciprocal_rank_fusion(ranks, k=k, weights=weights)
    raise ValueError(f"unknown fusion {fusion!r}")
