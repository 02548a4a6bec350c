"""How far a hit lifts its neighbours: its relevance times its lead over the best hit to the
power ``focus``, times ``lift`` per position away; which hits have neighbours at all; which
turns are a hit's own run (its speaker's messages around it, no one else's between)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest

from retrieval.search.candidate import Candidate, place
from retrieval.search.rank.context_lift import context_candidates

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


def test_a_trailing_hit_lifts_by_its_lead_to_the_power_of_focus() -> None:
    leader, trailer = _candidate(1, 0.8), _candidate(2, 0.6, thread="s2")
    rows = turns({1: [(1, _candidate(11, 0.1))], 2: [(-2, _candidate(22, 0.1, thread="s2"))]})
    lifted = context_candidates(
        [leader, trailer], {}, lift=0.85, rows=rows, placed={1, 2}, focus=5.0
    )
    assert math.isclose(lifted[11].relevance, 0.8 * 0.85)
    assert math.isclose(lifted[22].relevance, 0.6 * (0.6 / 0.8) ** 5 * 0.85**2)
    evidence = json.loads(lifted[22].details)["lifted_by"]
    assert evidence == {"id": 2, "offset": -2, "own_relevance": 0.1}
    alike = context_candidates(
        [leader, trailer], {}, lift=0.85, rows=rows, placed={1, 2}, focus=0.0
    )
    assert math.isclose(alike[22].relevance, 0.6 * 0.85**2)


def test_a_neighbour_keeps_its_own_relevance_when_that_is_larger() -> None:
    rows = turns({1: [(1, _candidate(11, 0.75))]})
    assert (
        context_candidates([_candidate(1, 0.8)], {}, lift=0.85, rows=rows, placed={1}, focus=5.0)
        == {}
    )


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


def test_a_hit_lifts_the_others_turns_and_those_past_them_not_its_own_run() -> None:
    # Maria typed one thought as three messages; John answered; Maria went on.
    hit = _candidate(3, 0.8, text="Maria: I love sports.")
    around = {
        1: _candidate(1, 0.1, text="Maria: Guess what."),
        2: _candidate(2, 0.1, text="Maria: Tennis is one of my passions."),
        4: _candidate(4, 0.1, text="John: Since when?"),
        5: _candidate(5, 0.1, text="Maria: Since I was ten."),
    }
    rows = turns({3: [(turn_id - 3, turn) for turn_id, turn in around.items()]})
    options: dict[str, Any] = {"lift": 0.85, "rows": rows, "placed": {3}, "focus": 5.0}
    assert set(context_candidates([hit], {}, **options, own_run=False)) == {4, 5}
    assert set(context_candidates([hit], {}, **options)) == {1, 2, 4, 5}
    # The others' turns and those past them are lifted as before.
    lifted = context_candidates([hit], {}, **options, own_run=False)
    assert math.isclose(lifted[5].relevance, 0.8 * 0.85**2)


@pytest.mark.parametrize(
    ("hit_text", "kind", "lifted"),
    [
        ("I love sports.", "message", {1, 2}),  # no speaker named: no run known
        ("Maria: I love sports.", "fact", {2}),  # a turn of a thread, whatever its kind
        ('Maria said, "I love sports."', "message", {2}),  # a narrated turn has a speaker
    ],
)
def test_a_run_is_known_only_for_turns_that_name_their_speaker(
    hit_text: str, kind: str, lifted: set[int]
) -> None:
    hit = _candidate(3, 0.8, text=hit_text, kind=kind)
    rows = turns({3: [
        (-1, _candidate(1, 0.1, text='Maria said, "Guess what."', kind=kind)),
        (1, _candidate(2, 0.1, text="John: Since when?", kind=kind)),
    ]})  # fmt: skip
    found = context_candidates([hit], {}, lift=0.85, rows=rows, placed={3}, own_run=False)
    assert set(found) == lifted
