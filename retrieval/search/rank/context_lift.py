"""A thread's relevance lifts its turns: the neighbours of the leading memories as candidates.

For the best semantic candidates of a call that are turns of a conversation (a ``thread_id``
and a ``position``, or a message stored without a thread: its session is inferred from the
time between messages, :mod:`retrieval.search.statement.context`), the memories of the same
session within ``context_window`` positions (read by the read stage) and become candidates whose
relevance is
the larger of their own (the calibrated dense relevance of their text) and the hit's lift:

    lift = relevance(hit) * (relevance(hit) / relevance(best hit)) ** context_focus
                          * context_lift ** |offset|

The turn after a question that matched is likely its answer; but only a hit that leads lifts
its neighbours far: the neighbours of a hit that trails the best one would take the places of
other sessions' evidence, which a question asking for several things ("what are all the ...",
"what do A and B have in common") needs. With ``own_run`` false (the default,
``context_own_run``), a hit does not lift its own run: the messages its speaker sent around it
with no other person's between (:mod:`retrieval.search.rank.speakers`), most often the rest of
one thought typed as several messages; it lifts the turns of the others around it and the turns
past them. They are then scored like every candidate (the
source's weights, threshold, limits), so a neighbour takes a place in the results only where it
outranks the candidate it would displace: within the caller's budget, not beside it. A
candidate that is also a neighbour keeps the larger relevance. ``metadata["lifted_by"]`` names
the hit, the offset and the turn's own relevance.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from retrieval.search.candidate import Candidate
from retrieval.search.rank.speakers import message_speaker

Rows = Sequence[tuple[Any, ...]]


def context_candidates(
    hits: Sequence[Candidate],
    candidates: Mapping[int, Candidate],
    *,
    lift: float,
    rows: Rows,
    placed: Collection[int],
    focus: float = 0.0,
    own_run: bool = True,
) -> dict[int, Candidate]:
    """The context turns of ``hits`` (semantic candidates, best first) as candidates, by id,
    each with its lifted relevance; ``candidates`` are the call's semantic candidates by id
    (one of them lifted higher than its own relevance is returned with the lifted one).
    ``focus`` is the power of a hit's relevance over the best hit's that scales its lift;
    ``placed`` are the ids of the hits with a place in a conversation
    (:func:`~retrieval.search.candidate.place`), and ``rows`` the turns the read stage found
    around them: ``hit_id, offset``, then a candidate's columns; ``own_run`` false leaves out
    the turns of each hit's own run."""
    threaded = [hit for hit in hits if hit.id in placed]
    if lift <= 0.0 or not threaded:
        return {}
    if not own_run:
        rows = _outside_own_runs(threaded, rows)
    best = max(hit.relevance for hit in hits)
    share = {hit.id: _lead(hit.relevance, best, focus) for hit in threaded}
    lifted: dict[int, Candidate] = {}
    for hit_id, offset, *columns in rows:
        turn = Candidate(*columns)
        score = min(1.0, share[hit_id] * lift ** abs(offset))
        top = lifted.get(turn.id) or candidates.get(turn.id) or turn
        if score <= top.relevance:
            continue
        own = candidates.get(turn.id, turn)
        evidence = json.loads(own.details)
        evidence["lifted_by"] = {"id": hit_id, "offset": offset, "own_relevance": own.relevance}
        lifted[turn.id] = own._replace(relevance=score, details=json.dumps(evidence))
    return lifted


def _lead(relevance: float, best: float, focus: float) -> float:
    """A hit's relevance, scaled by its share of the best hit's to the power ``focus``."""
    if focus <= 0.0 or best <= 0.0:
        return relevance
    return float(relevance * (relevance / best) ** focus)


def _outside_own_runs(hits: Sequence[Candidate], rows: Rows) -> Rows:
    """``rows`` less the turns in their hit's own run: said by the hit's speaker, with every
    turn between them said by that speaker too (a turn the read did not return breaks no run)."""
    said = {(hit.id, 0): message_speaker(hit) for hit in hits}
    for hit_id, offset, *columns in rows:
        said[hit_id, offset] = message_speaker(Candidate(*columns))

    def in_own_run(hit_id: int, offset: int) -> bool:
        speaker = said.get((hit_id, 0))
        if speaker is None or offset == 0:
            return False
        step = 1 if offset > 0 else -1
        return all(
            said.get((hit_id, between), speaker) == speaker
            for between in range(step, offset + step, step)
        )

    return [row for row in rows if not in_own_run(row[0], row[1])]
