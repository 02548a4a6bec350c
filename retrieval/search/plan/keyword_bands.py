"""Which keyword postings can hold an episodic row that passes the threshold, by age.

An episodic row matching ``h`` of the query's ``n`` keywords, at age ``a``, scores at most
``final = w_rel * h / n + w_rec * 0.5 ^ (a / half_life)`` (its other signals are 0). With the
threshold ``T``, a row needs ``h`` hits where ``final`` can still reach ``T``: few hits only
while it is young, more as it ages. So the ages split into bands: band ``h`` holds the rows
old enough to need at least ``h`` hits (and young enough that ``h`` can suffice). A row with at
least ``h`` of ``n`` keywords misses at most ``n - h``, so it holds at least one of *any*
``n - h + 1`` keywords: the source reads, for band ``h``, only the postings of the ``n - h + 1``
keywords with the fewest rows, within the band's time range. Every row that can pass the
threshold is found; most rows that cannot are never read. The bounds are widened by a hair so
that rounding never drops a row the exact scores would keep.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

# Margins: the threshold lowered, the age bounds widened, so that rounding keeps every row.
_SCORE_MARGIN = 1e-9
_AGE_MARGIN_SECONDS = 1e-3
# Ages past this (about 3,000 years) are treated as unbounded (datetime's range ends).
_LONGEST_AGE_SECONDS = 1e11


@dataclass(frozen=True)
class Band:
    """Rows created in ``[since, until)`` (``None``: unbounded) need one of the ``lists``
    rarest keywords."""

    lists: int
    since: datetime | None
    until: datetime | None


def keyword_bands(
    keywords: int,
    *,
    relevance_weight: float,
    recency_weight: float,
    threshold: float,
    half_life_seconds: float,
    as_of: datetime,
    min_hits: int = 1,
) -> list[Band]:
    """The bands of rows that can reach ``threshold`` with at least ``min_hits`` keywords,
    youngest first; none when no row can.

    With ``threshold`` 0 (or any threshold a single keyword reaches at any age) and
    ``min_hits`` 1 this is one band: every keyword, all time.
    """
    if keywords < 1:
        return []
    needed = threshold - _SCORE_MARGIN
    bands: list[Band] = []
    until: datetime | None = None  # the younger band's oldest bound
    for hits in range(max(1, min_hits), keywords + 1):
        age = _oldest_age(
            hits / keywords, relevance_weight, recency_weight, needed, half_life_seconds
        )
        if age is None:
            continue  # this many hits cannot reach the threshold at any age
        since = _before(as_of, age)
        bands.append(Band(lists=keywords - hits + 1, since=since, until=until))
        if since is None:
            break  # every older row with this many hits passes: no further band
        until = since
    return bands


def _before(as_of: datetime, age: float) -> datetime | None:
    if math.isinf(age):
        return None
    try:
        return as_of - timedelta(seconds=age)
    except OverflowError:  # before year 1: unbounded
        return None


def _oldest_age(
    relevance: float,
    relevance_weight: float,
    recency_weight: float,
    needed: float,
    half_life: float,
) -> float | None:
    # The largest age (seconds) at which relevance alone plus recency can reach ``needed``:
    # inf when any age can, None when none can.
    missing = needed - relevance_weight * relevance
    if missing <= 0.0:
        return math.inf
    if recency_weight <= 0.0 or missing > recency_weight:
        return None
    age = half_life * math.log2(recency_weight / missing)
    age = age * (1.0 + 1e-9) + _AGE_MARGIN_SECONDS
    return math.inf if age > _LONGEST_AGE_SECONDS else age
