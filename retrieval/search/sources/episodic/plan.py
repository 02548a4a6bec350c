"""The episodic source's part of the plan: its shape for a call, and the values it binds.

A call reads decisions and tool calls when its query has keywords, its mode keeps either kind
and it names no metadata filter or namespace (decisions and tool calls carry no metadata and lie
in no namespace). The source reads only the keyword postings of rows that can pass the
threshold (:mod:`~retrieval.search.plan.keyword_bands`); with a lexical score in its relevance,
which keywords do not bound, it reads them all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from retrieval.embedding.calibration import DenseCalibration
from retrieval.search import scoring
from retrieval.search.knowledge import TenantView
from retrieval.search.plan.keyword_bands import Band, keyword_bands
from retrieval.search.plan.parameters import HOUR, lexical_parameters
from retrieval.search.plan.source import PlanSource
from retrieval.search.prepare.call import PreparedCall

SOURCE = "episodic"
DECISION = "decision"
TOOL_CALL = "tool_call"
# A row's keywords are counted as a bit set in a bigint up to this many keywords.
MAX_BITS = 63
# A decision or tool call matching several of a query's keywords shares more than a word with
# it: two, or a third of a long query's (docs/decisions/0023).
SEVERAL_KEYWORDS = 2
SEVERAL_SHARE = 1 / 3


@dataclass(frozen=True)
class EpisodicQuery:
    """The shape of the episodic CTEs: which kinds of rows, and whether one task only."""

    decisions: bool
    tool_calls: bool
    with_task: bool
    lexical: str | None = None  # None, or how lexical scores combine: max, weighted, cascade
    many_keywords: bool = False  # more than MAX_BITS keywords: counted without a bit set
    bound: bool = False  # the connection's role is bound by row-level security
    capped: bool = False  # more keywords than it reads: the rarest are chosen in SQL


def reported(call: PreparedCall) -> bool:
    """Whether the ranking reports on decisions and tool calls: the source on, with a limit
    (read or not: a query without keywords reads none)."""
    return call.config.episodic.enabled and call.config.episodic.limit > 0


def episodic_query(call: PreparedCall, tenant: TenantView) -> EpisodicQuery | None:
    """The episodic CTEs' shape for ``call`` on a tenant known as ``tenant``."""
    config, mode = call.config, call.mode
    kinds = tuple(
        kind
        for kind in (DECISION, TOOL_CALL)
        if (mode.include_kinds is None or kind in mode.include_kinds)
        and kind not in mode.exclude_kinds
    )
    keywords = len(call.query.keywords)
    if not (reported(call) and keywords and kinds) or call.filter_operators:
        return None
    return EpisodicQuery(
        decisions=DECISION in kinds,
        tool_calls=TOOL_CALL in kinds,
        with_task=call.task_id is not None,
        lexical=config.lexical_match if SOURCE in config.lexical_sources else None,
        many_keywords=min(keywords, config.max_query_words) > MAX_BITS,
        bound=tenant.bound,
        capped=keywords > config.max_query_words,
    )


def min_keyword_hits(keywords: int, share: float) -> int:
    """The keywords of ``keywords`` a decision or tool call must match: ``share`` of them,
    rounded up, at least one, and never more than several (:data:`SEVERAL_KEYWORDS`, or a
    third of a long query's): "why does the nightly build fail with a flaky test?" is answered
    by "Quarantine the flaky payment test"."""
    several = max(SEVERAL_KEYWORDS, math.ceil(SEVERAL_SHARE * keywords - 1e-9))
    return max(1, min(math.ceil(share * keywords - 1e-9), several))


def episodic_parameters(
    query: EpisodicQuery, call: PreparedCall, calibration: DenseCalibration
) -> dict[str, Any]:
    """The values the episodic CTEs of ``query``'s shape bind for ``call``."""
    config, keywords = call.config, call.query.keywords
    read = min(len(keywords), config.max_query_words)  # the rarest, when there are more
    min_hits = min_keyword_hits(read, config.episodic_min_keyword_share)
    bands = (
        keyword_bands(
            read,
            relevance_weight=config.episodic.relevance,
            recency_weight=config.episodic.recency,
            threshold=config.threshold(SOURCE),
            half_life_seconds=config.episodic.half_life_hours * HOUR,
            as_of=call.as_of,
            min_hits=min_hits,
        )
        if query.lexical is None
        else [Band(lists=read, since=None, until=None)]
    )
    params = {
        **band_parameters(bands),
        "keywords": list(keywords),
        "patterns": [scoring.like_pattern(keyword) for keyword in keywords],
        "episodic_keywords": read,
        "episodic_min_hits": min_hits,
        "episodic_candidates": config.pool,
        "episodic_half_life": config.episodic.half_life_hours * HOUR,
        "episodic_relevance": config.episodic.relevance,
        "episodic_recency": config.episodic.recency,
        "task_id": call.task_id,
    }
    if query.lexical:
        params |= lexical_parameters(config, call.query)
    return params


def band_parameters(bands: list[Band]) -> dict[str, list[object]]:
    """The bound parameters of the bands the episodic source reads (see :func:`keyword_bands`)."""
    return {
        "episodic_band_lists": [band.lists for band in bands],
        "episodic_band_since": [band.since for band in bands],
        "episodic_band_until": [band.until for band in bands],
    }


# The episodic source's part of the plan: a presence row tells whether a tenant holds any
# decision or tool call.
PLAN = PlanSource(SOURCE, reported, episodic_query, episodic_parameters, probed=True)
