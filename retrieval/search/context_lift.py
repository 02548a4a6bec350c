"""A thread's relevance lifts its turns: the neighbours of the best memories as candidates.

For the best semantic candidates of a call that are turns of a conversation (a ``thread_id``
and a ``position``), the memories of the same thread within ``context_window`` positions are
read (:mod:`retrieval.search.sources.context`) and become candidates whose relevance is the
larger of their own (the calibrated dense relevance of their text) and the hit's relevance
times ``context_lift ** |offset|``: the turn after a question that matched is likely its
answer. They are then scored like every candidate (the source's weights, threshold, limits),
so a neighbour takes a place in the results only where it outranks the candidate it would
displace: within the caller's budget, not beside it. A candidate that is also a neighbour keeps
the larger relevance. ``metadata["lifted_by"]`` names the hit and the offset.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrieval.search.sources.common import Candidate

Fetch = Callable[[Sequence[int], Sequence[str], Sequence[int]], list[tuple[Any, ...]]]


def context_candidates(
    hits: Sequence[Candidate],
    candidates: Mapping[int, Candidate],
    *,
    lift: float,
    fetch: Fetch,
) -> dict[int, Candidate]:
    """The context turns of ``hits`` (semantic candidates, best first) as candidates, by id,
    each with its lifted relevance; ``candidates`` are the call's semantic candidates by id
    (one of them lifted higher than its own relevance is returned with the lifted one).
    ``fetch(hit_ids, threads, positions)`` reads the turns."""
    placed = [(hit, _place(hit)) for hit in hits]
    threaded = [(hit, place) for hit, place in placed if place is not None]
    if lift <= 0.0 or not threaded:
        return {}
    relevance = {hit.id: hit.relevance for hit, _ in threaded}
    rows = fetch(
        [hit.id for hit, _ in threaded],
        [place[0] for _, place in threaded],
        [place[1] for _, place in threaded],
    )
    lifted: dict[int, Candidate] = {}
    for hit_id, offset, *columns in rows:
        turn = Candidate(*columns)
        score = min(1.0, relevance[hit_id] * lift ** abs(offset))
        best = lifted.get(turn.id) or candidates.get(turn.id) or turn
        if score <= best.relevance:
            continue
        own = candidates.get(turn.id, turn)
        evidence = json.loads(own.details)
        evidence["lifted_by"] = {"id": hit_id, "offset": offset, "own_relevance": own.relevance}
        lifted[turn.id] = own._replace(relevance=score, details=json.dumps(evidence))
    return lifted


def _place(candidate: Candidate) -> tuple[str, int] | None:
    """The (thread, position) of a semantic candidate, from its evidence."""
    if candidate.source != "semantic":
        return None
    details = json.loads(candidate.details)
    thread, position = details.get("thread_id"), details.get("position")
    if not isinstance(thread, str) or not isinstance(position, int):
        return None
    return thread, position
