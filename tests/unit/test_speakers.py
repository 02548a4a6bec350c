"""Who said a message (retrieval.memory.speakers): the name its text opens with, of one to
three words, and what the message says without it; a text naming its speaker is a turn."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from retrieval.memory.kinds import is_turn
from retrieval.memory.speakers import said_text, speaker_of
from retrieval.search.candidate import Candidate, is_turn_candidate


@pytest.mark.parametrize(
    ("content", "speaker", "said"),
    [
        ("Maria: I joined a climbing gym.", "Maria", "I joined a climbing gym."),
        ('Maria said, "I joined a climbing gym."', "Maria", "I joined a climbing gym."),
        ("Maria Lopez: hi", "Maria Lopez", "hi"),  # a chat's export names people in full
        ('Maria Lopez said, "hi"', "Maria Lopez", "hi"),
        ("Mary Ann Smith: hi", "Mary Ann Smith", "hi"),
        ("Jean-Luc Picard: engage", "Jean-Luc Picard", "engage"),
        ("Dr. Lee: take two", "Dr. Lee", "take two"),
        ("O'Brien: on my way", "O'Brien", "on my way"),
        ("王伟: 你好", "王伟", "你好"),
        ("Mum 🌸: dinner at 7?", "Mum 🌸", "dinner at 7?"),  # as a phone shows a contact
        ("Maria (work): running late", "Maria (work)", "running late"),
        ("Maria: Tom: hi", "Maria", "Tom: hi"),  # the first name only
        ('Maria said, "ok": fine', "Maria", 'ok": fine'),  # the shorter name that reads
        # no speaker: a phrase in lower case, four words, a name too long, no name at all
        ("Note to self: buy milk", None, "Note to self: buy milk"),
        ("I told him: no", None, "I told him: no"),
        ("Anna Maria Lisa Rossi: hi", None, "Anna Maria Lisa Rossi: hi"),
        (f"{'A' * 41}: hi", None, f"{'A' * 41}: hi"),
        ("I joined a climbing gym.", None, "I joined a climbing gym."),
        ("Maria:no space", None, "Maria:no space"),
        # a label, not a name: a note written down, a heading, a field, a list's step
        ("Update: the deadline moved to Friday.", None, "Update: the deadline moved to Friday."),
        ("NOTE: never deploy on Fridays", None, "NOTE: never deploy on Fridays"),
        ("N.B.: bring ID", None, "N.B.: bring ID"),
        ("Decision: we use Postgres.", None, "Decision: we use Postgres."),
        ("Background: Many studies ...", None, "Background: Many studies ..."),
        ("Step 2: run the tests", None, "Step 2: run the tests"),
        # a role or a numbered speaker still speaks
        ("User: hi", "User", "hi"),
        ("Speaker 1: hello", "Speaker 1", "hello"),
        ("Q: where?", "Q", "where?"),
    ],
)
def test_the_speaker_is_the_name_a_message_opens_with(
    content: str, speaker: str | None, said: str
) -> None:
    assert speaker_of(content) == speaker
    assert said_text(content) == said


def test_a_turn_is_a_message_a_place_in_a_thread_or_a_text_naming_who_said_it() -> None:
    # kinds.is_turn: a message, a memory with a thread and a position, or one that opens with
    # who said it, whatever its kind; only a turn has a speaker.
    def candidate(kind: str, content: str, details: dict[str, object]) -> Candidate:
        return Candidate(
            "semantic", "memory", 1, content, kind, datetime(2026, 1, 1, tzinfo=UTC),
            0.5, 0.5, 0.5, 0.0, 0.0, 0.4, None, None, json.dumps(details),
        )  # fmt: skip

    threaded = {"thread_id": "t", "position": 3}
    assert is_turn_candidate(candidate("message", "hi", {}))
    assert is_turn_candidate(candidate("fact", "hi", threaded))
    assert is_turn_candidate(candidate("fact", "Maria Lopez: hi", {}))
    assert not is_turn_candidate(candidate("fact", "hi", {"thread_id": "t", "position": None}))
    assert not is_turn_candidate(candidate("fact", "Note to self: hi", {}))
    assert not is_turn_candidate(candidate("fact", "Update: the standup is at 10.", {}))
    assert is_turn("fact", None, None, 'Maria said, "hi"') and not is_turn("fact", None, None)
