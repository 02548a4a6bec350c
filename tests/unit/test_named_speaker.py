"""The turns of the person a query names weigh more when most leading turns are theirs
(retrieval.search.rank.named_speaker): scores stay in [0, 1] with parts that add up to them,
and every other candidate keeps its score."""

from __future__ import annotations

import pytest

from retrieval.search.config import RetrievalConfig
from retrieval.search.rank import ranking
from retrieval.search.rank.named_speaker import favour_named_speaker
from retrieval.ui.score_parts import score_parts
from tests.scored_turns import WEIGHTS, scored_memory

CONFIG = RetrievalConfig(min_final_score=0.0)


def _turn(turn_id: int, text: str, relevance: float, kind: str = "message") -> ranking.Scored:
    return scored_memory(turn_id, text, relevance, kind=kind)


def _order(scored: list[ranking.Scored] | tuple[ranking.Scored, ...]) -> list[int]:
    return [result.identity for result in sorted(scored, key=ranking.rank_key)]


# Maria said the three leading turns; Tom's turn leads her fourth.
TURNS = [
    _turn(1, 'Maria said, "I joined a climbing gym."', 0.62),
    _turn(2, "Maria: weekends are for the lake", 0.60),
    _turn(5, "Maria: my knee is fine again", 0.595),
    _turn(3, "Tom: tennis is one of my passions", 0.59),
    _turn(4, 'Maria said, "tennis is one of my passions too"', 0.58),
]


def test_the_named_speakers_turns_rise_when_the_leading_ones_are_theirs() -> None:
    again = favour_named_speaker("What sports does Maria play?", TURNS, WEIGHTS, 0.1)
    assert _order(TURNS) == [1, 2, 5, 3, 4]
    assert _order(list(again)) == [1, 2, 5, 4, 3]
    results, _ = ranking.select({"semantic": list(again)}, CONFIG)
    for result in results:
        parts = result.metadata["parts"]
        assert sum(part["value"] for part in parts.values()) == pytest.approx(result.final_score)
        assert 0.0 <= result.final_score <= 1.0
        if result.content.startswith("Maria"):
            assert parts["speaker"] == {"weight": 0.1, "signal": 1.0, "value": 0.1}
            assert parts["meaning"]["weight"] == pytest.approx(0.8 * 0.9)
        else:  # another's turn keeps its score
            assert "speaker" not in parts and parts["meaning"]["weight"] == 0.8
            assert result.final_score == TURNS[3].final_score
    maria = next(r for r in results if r.metadata["id"] == 4)
    assert [p.label for p in score_parts(maria)][-1] == "said by the person asked about"


@pytest.mark.parametrize(
    "query",
    [
        "What sports does Tom play?",  # Tom said none of the three leading turns
        "What do Maria and Tom play?",  # two speakers named
        "What sports does maria play?",  # a name in another case is not the name...
        "What sports does Mariana play?",  # a name inside another word is not the name
        "What sports are played?",  # nobody named
    ],
)
def test_nothing_changes_unless_one_speaker_of_most_leading_turns_is_named(query: str) -> None:
    assert favour_named_speaker(query, TURNS, WEIGHTS, 0.05) is TURNS


def test_a_weight_of_zero_and_memories_that_are_not_turns_change_nothing() -> None:
    assert favour_named_speaker("What does Maria play?", TURNS, WEIGHTS, 0.0) is TURNS
    # Maria said two of the three leading turns, not all three.
    mixed = [TURNS[0], TURNS[1], TURNS[3], TURNS[4]]
    assert favour_named_speaker("What does Maria play?", mixed, WEIGHTS, 0.1) is mixed
    notes = [_turn(n, f"A note on what Maria plays, {n}", 0.6 - n / 100, kind="fact")
             for n in range(3)]  # fmt: skip
    assert favour_named_speaker("What does Maria play?", notes, WEIGHTS, 0.05) is notes


def test_the_time_a_query_names_keeps_its_signal_when_rescored() -> None:
    timed = [
        ranking.scored_candidate(t.candidate, WEIGHTS | {"time": 0.2}, {"time": 0.5})
        for t in TURNS
        if t.candidate is not None
    ]
    again = favour_named_speaker("Maria's sports?", timed, WEIGHTS | {"time": 0.2}, 0.1)
    assert all(r.signals is not None and r.signals["time"] == 0.5 for r in again)
    marias = [r for r in again if r.identity != 3]
    assert all(r.weights is not None and r.weights["time"] == pytest.approx(0.18) for r in marias)
    assert _order(list(again)) == [1, 2, 5, 4, 3]


# A chat's export names people in full; questions name them by first (or last) name.
FULL_NAMES = [
    _turn(1, "Maria Lopez: I joined a climbing gym.", 0.62),
    _turn(2, "Maria Lopez: weekends are for the lake", 0.60),
    _turn(5, "Maria Lopez: my knee is fine again", 0.595),
    _turn(3, "Tom Berg: tennis is one of my passions", 0.59),
    _turn(4, "Maria Lopez: tennis is one of my passions too", 0.58),
]


@pytest.mark.parametrize(
    "query",
    ["What sports does Maria play?", "What sports does Lopez play?", "Maria Lopez's sports?"],
)
def test_a_person_named_by_a_part_of_their_full_name_is_named(query: str) -> None:
    again = favour_named_speaker(query, FULL_NAMES, WEIGHTS, 0.1)
    assert _order(list(again)) == [1, 2, 5, 4, 3]


def test_two_speakers_sharing_the_first_name_named_are_nobody() -> None:
    shared = [*FULL_NAMES[:3], _turn(3, "Maria Berg: tennis is one of my passions", 0.59)]
    assert favour_named_speaker("What does Maria play?", shared, WEIGHTS, 0.1) is shared


def test_a_query_typed_all_in_lower_case_names_in_any_case() -> None:
    # ... unless the whole query is in lower case, as people type to a chat.
    again = favour_named_speaker("what sports does maria play", TURNS, WEIGHTS, 0.1)
    assert _order(list(again)) == [1, 2, 5, 4, 3]
    again = favour_named_speaker("what sports does lopez play", FULL_NAMES, WEIGHTS, 0.1)
    assert _order(list(again)) == [1, 2, 5, 4, 3]
