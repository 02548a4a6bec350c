"""How far a hit lifts its neighbours: its relevance times ``lift`` per position away, every hit
alike and every turn around it (its speaker's own run too); which hits have neighbours at all."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest

from retrieval.search.candidate import Candidate, Lift, place
from retrieval.search.rank.context_lift import context_candidates
from retrieval.search.rank.ranking import to_result

AT = datetime(2026, 5, 8, tzinfo=UTC)


def _candidate(
    memory_id: int,
    relevance: float,
    *,
    thread: str | None = "s1",
    position: int | None = 0,
    kind: str = "message",
    text: str | None = None,
) -> Candidate:
    details = json.dumps({"thread_id": thread, "position": position})
    content = text if text is not None else f"turn {memory_id}"
    return Candidate("semantic", "memory", memory_id, content, kind, AT, relevance,
                     0.5, 0.5, 0.0, 0.0, 1.0, None, None, details)  # fmt: skip


def turns(rows: dict[int, list[tuple[int, Candidate]]]) -> list[tuple[Any, ...]]:
    """The turns the read stage would find: ``rows[hit_id]`` = [(offset, neighbour)]."""
    return [(hit, offset, *turn) for hit, found in rows.items() for offset, turn in found]


def test_every_hit_lifts_its_neighbours_by_its_own_relevance() -> None:
    leader, trailer = _candidate(1, 0.8), _candidate(2, 0.6, thread="s2")
    rows = turns({1: [(1, _candidate(11, 0.1))], 2: [(-2, _candidate(22, 0.1, thread="s2"))]})
    lifted = context_candidates([leader, trailer], {}, lift=0.85, rows=rows, placed={1, 2})
    assert math.isclose(lifted[11].relevance, 0.8 * 0.85)
    assert math.isclose(lifted[22].relevance, 0.6 * 0.85**2)
    assert lifted[22].lifted_by == Lift(id=2, offset=-2, own_relevance=0.1)
    # The lift joins the evidence of the result it is returned as.
    result = to_result(lifted[22], {"relevance": 1.0}, lifted[22].relevance)
    assert result.metadata["lifted_by"] == {"id": 2, "offset": -2, "own_relevance": 0.1}
    assert result.metadata["parts"]["context"]["value"] == lifted[22].relevance


def test_a_neighbour_keeps_its_own_relevance_when_that_is_larger() -> None:
    rows = turns({1: [(1, _candidate(11, 0.75))]})
    assert context_candidates([_candidate(1, 0.8)], {}, lift=0.85, rows=rows, placed={1}) == {}


@pytest.mark.parametrize(
    ("hit", "untold", "asked"),
    [
        (_candidate(1, 0.8), False, ([1], ["s1"], [0])),
        (_candidate(1, 0.8, thread=None, position=None), True, ([1], [None], [None])),
        (_candidate(1, 0.8, thread=None, position=None), False, None),
        (_candidate(1, 0.8, thread=None, position=None, kind="fact"), True, None),
    ],
)
def test_which_hits_have_neighbours(
    hit: Candidate, untold: bool, asked: tuple[list[int], list[str | None], list[int | None]] | None
) -> None:
    # The read stage asks for the turns of the hits that have a place in a conversation.
    where = place(hit, untold)
    found = None if where is None else ([hit.id], [where[0]], [where[1]])
    assert found == asked


def test_a_hit_lifts_every_turn_around_it_its_own_run_too() -> None:
    # Maria typed one thought as three messages; John answered; Maria went on.
    hit = _candidate(3, 0.8, text="Maria: I love sports.")
    around = {
        1: _candidate(1, 0.1, text="Maria: Guess what."),
        2: _candidate(2, 0.1, text="Maria: Tennis is one of my passions."),
        4: _candidate(4, 0.1, text="John: Since when?"),
        5: _candidate(5, 0.1, text="Maria: Since I was ten."),
    }
    rows = turns({3: [(turn_id - 3, turn) for turn_id, turn in around.items()]})
    lifted = context_candidates([hit], {}, lift=0.85, rows=rows, placed={3})
    assert set(lifted) == {1, 2, 4, 5}
    assert math.isclose(lifted[2].relevance, 0.8 * 0.85)
    assert math.isclose(lifted[5].relevance, 0.8 * 0.85**2)
