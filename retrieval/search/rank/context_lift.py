"""A thread's relevance lifts its turns: the neighbours of the leading memories as candidates.

For the best semantic candidates of a call that are turns of a conversation (a ``thread_id``
and a ``position``, or a message stored without a thread: its session is inferred from the
time between messages, :mod:`retrieval.search.statement.context`), the memories of the same
session within ``context_window`` positions (read by the read stage) become candidates whose
relevance is the larger of their own (the calibrated dense relevance of their text) and the
hit's lift:

    lift = relevance(hit) * context_lift ** |offset|

The turn after a question that matched is likely its answer. They are then scored like every
candidate (the source's weights, threshold, limits), so a neighbour takes a place in the
results only where it outranks the candidate it would displace: within the caller's budget,
not beside it. A candidate that is also a neighbour keeps the larger relevance.
``metadata["lifted_by"]`` names the hit, the offset and the turn's own relevance (the
candidate's ``lifted_by``, added to its evidence only when it is returned). (A hit's
lift once depended on its lead over the best hit, and a hit once left its speaker's own run
alone; neither won on data they were not tuned on: docs/decisions/0036-rules-that-hold.md.)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from retrieval.search.candidate import Candidate, Lift

Rows = Sequence[tuple[Any, ...]]


def context_candidates(
    hits: Sequence[Candidate],
    candidates: Mapping[int, Candidate],
    *,
    lift: float,
    rows: Rows,
    placed: Collection[int],
) -> dict[int, Candidate]:
    """The context turns of ``hits`` (semantic candidates, best first) as candidates, by id,
    each with its lifted relevance; ``candidates`` are the call's semantic candidates by id
    (one of them lifted higher than its own relevance is returned with the lifted one).
    ``placed`` are the ids of the hits with a place in a conversation
    (:func:`~retrieval.search.candidate.place`), and ``rows`` the turns the read stage found
    around them: ``hit_id, offset``, then a candidate's columns."""
    threaded = [hit for hit in hits if hit.id in placed]
    if lift <= 0.0 or not threaded:
        return {}
    share = {hit.id: hit.relevance for hit in threaded}
    lifted: dict[int, Candidate] = {}
    for hit_id, offset, *columns in rows:
        turn = Candidate(*columns)
        score = min(1.0, share[hit_id] * lift ** abs(offset))
        top = lifted.get(turn.id) or candidates.get(turn.id) or turn
        if score <= top.relevance:
            continue
        own = candidates.get(turn.id, turn)
        lifted[turn.id] = own._replace(
            relevance=score, lifted_by=Lift(hit_id, offset, own.relevance)
        )
    return lifted
