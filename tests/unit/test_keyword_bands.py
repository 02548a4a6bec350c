"""The episodic source's bands: every row that can pass the threshold lies in a band that
reads one of the keywords it holds."""

from __future__ import annotations

import itertools
import math
import random
from datetime import UTC, datetime, timedelta

from retrieval.search.plan.keyword_bands import Band, keyword_bands
from retrieval.search.sources.episodic.plan import min_keyword_hits

AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
WEEK = 7 * 24 * 3600.0


def _covered(bands: list[Band], keywords: int, hits: int, created_at: datetime) -> bool:
    # A row holding ``hits`` keywords is read when a band over its time reads at least
    # ``keywords - hits + 1`` keywords (so that one of them is surely one it holds).
    return any(
        (band.since is None or created_at >= band.since)
        and (band.until is None or created_at < band.until)
        and band.lists >= keywords - hits + 1
        for band in bands
    )


def _defaults(*, threshold: float) -> list[Band]:
    # Eight keywords, the episodic source's default weights and half-life.
    return keyword_bands(
        8,
        relevance_weight=0.7,
        recency_weight=0.3,
        threshold=threshold,
        half_life_seconds=WEEK,
        as_of=AS_OF,
    )


def test_no_threshold_reads_every_keyword_all_time() -> None:
    bands = _defaults(threshold=0.0)
    assert bands == [Band(lists=8, since=None, until=None)]


def test_default_weights_read_fewer_keywords_for_older_rows() -> None:
    # 0.7 * h / 8 + 0.3 * recency >= 0.4: one hit never passes; two pass within 0.415 half-lives,
    # three within 1.13, four within 2.58, five or more at any age.
    bands = _defaults(threshold=0.4)
    assert [band.lists for band in bands] == [7, 6, 5, 4]
    assert bands[0].until is None and bands[-1].since is None
    ages = [(AS_OF - band.since).total_seconds() / WEEK for band in bands[:-1] if band.since]
    assert [round(age, 3) for age in ages] == [0.415, 1.126, 2.585]
    for younger, older in itertools.pairwise(bands):
        assert older.until == younger.since  # contiguous, no gap, no overlap


def test_an_unreachable_threshold_reads_nothing() -> None:
    bands = keyword_bands(
        3,
        relevance_weight=0.5,
        recency_weight=0.3,
        threshold=0.9,
        half_life_seconds=WEEK,
        as_of=AS_OF,
    )
    assert bands == []


def test_every_row_that_can_pass_is_in_a_band_that_reads_one_of_its_keywords() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(400):
        keywords = rng.randint(1, 16)
        relevance = rng.choice([0.0, 0.3, 0.5, 0.7, 0.9, 1.0, rng.random()])
        recency = rng.choice([1.0 - relevance, (1.0 - relevance) * rng.random()])
        threshold = rng.choice([0.0, 0.1, 0.4, 0.5, 0.8, rng.random()])
        half_life = rng.choice([3600.0, WEEK, 365 * 24 * 3600.0])
        bands = keyword_bands(
            keywords,
            relevance_weight=relevance,
            recency_weight=recency,
            threshold=threshold,
            half_life_seconds=half_life,
            as_of=AS_OF,
        )
        for _ in range(50):
            hits = rng.randint(1, keywords)
            age = rng.choice([0.0, -3600.0, rng.random() * 10 * half_life])
            final = relevance * hits / keywords + recency * 0.5 ** (max(age, 0.0) / half_life)
            created_at = AS_OF - timedelta(seconds=age)
            if final >= threshold:
                checked += 1
                assert _covered(bands, keywords, hits, created_at), (
                    keywords, relevance, recency, threshold, hits, age, bands,
                )  # fmt: skip
    assert checked > 5000


def test_a_row_exactly_at_the_bound_is_kept() -> None:
    # 0.7 * 2 / 8 + 0.3 * 0.75 == 0.4 exactly at 0.415 half-lives: rounding must not drop it.
    bands = _defaults(threshold=0.4)
    age = WEEK * math.log2(1 / 0.75)
    assert _covered(bands, 8, 2, AS_OF - timedelta(seconds=age))


def test_a_row_needs_half_the_keywords_rounded_up_at_least_one_at_most_two() -> None:
    # Half of them, but two of a long query's are enough: more than a word alone.
    assert [min_keyword_hits(n, 0.5) for n in range(1, 7)] == [1, 1, 2, 2, 2, 2]
    assert min_keyword_hits(5, 0.0) == 1  # off: any one keyword
    assert min_keyword_hits(4, 1.0) == 2
    assert min_keyword_hits(3, 0.3) == 1


def test_the_bands_read_no_posting_of_a_row_under_the_keywords_it_needs() -> None:
    # With eight keywords and four needed, every band reads at most the five rarest lists
    # (a row with four of eight holds one of any five), and every row with four or more hits
    # that can pass the threshold is still covered.
    bands = keyword_bands(
        8,
        relevance_weight=0.7,
        recency_weight=0.3,
        threshold=0.4,
        half_life_seconds=WEEK,
        as_of=AS_OF,
        min_hits=4,
    )
    assert bands and all(band.lists <= 5 for band in bands)
    for hits, days in itertools.product(range(4, 9), (0, 1, 3, 10, 30, 365)):
        created_at = AS_OF - timedelta(days=days)
        age = days * 24 * 3600.0
        final = 0.7 * hits / 8 + 0.3 * 0.5 ** (age / WEEK)
        if final >= 0.4:
            assert _covered(bands, 8, hits, created_at), (hits, days)
