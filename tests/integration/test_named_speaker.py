"""The turns of the person a question names, through retrieve(): when most leading turns are
theirs, their turns carry a ``speaker`` part, the scoring contract holds, and their turn in
another session takes a place above the other speaker's, whose turns keep their scores; a
question whose leading turns are another's, naming two, or nobody, is scored as before."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.results import RetrievalResponse
from retrieval.search.retriever import HybridRetriever
from tests.score_contract import check_contract

AS_OF = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
# Each turn a short session of its own, so that no turn lifts another (context_lift).
SESSIONS = [
    [
        "Maria: I started tennis lessons this spring, twice a week.",
        "Tom: I play football.",
        "Maria: I play tennis at the club on Tuesdays.",
        "Maria: Tennis is my favourite sport now.",
    ],
    [
        "Tom: I signed up for a swimming class at the community pool.",
        "Maria: I joined a climbing gym near the office as well.",
        "Tom: Swimming is tiring but I like the pool.",
        "Maria: I also go hiking in the hills on weekends.",
    ],
]
QUESTION = "Which sports does Maria play?"


@pytest.fixture
def chat(store: MemoryStore) -> Iterator[HybridRetriever]:
    store.remember_many(
        MemoryInput(
            text=text, tenant_id="acme", kind="message", thread_id=f"s{number}-{position}",
            position=0, created_at=MAY + timedelta(days=7 * number, minutes=position),
        )
        for number, turns in enumerate(SESSIONS)
        for position, text in enumerate(turns)
    )  # fmt: skip
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        yield retriever


def _order(response: RetrievalResponse) -> list[str]:
    return [result.content for result in response]


def test_the_named_persons_turns_rank_first_and_say_why(chat: HybridRetriever) -> None:
    off = replace(chat.config, speaker_weight=0.0)
    before = chat.retrieve(QUESTION, tenant_id="acme", as_of=AS_OF, config=off, limit=6)
    after = chat.retrieve(QUESTION, tenant_id="acme", as_of=AS_OF, limit=6)
    check_contract(after)
    assert all("speaker" not in r.metadata["weights"] for r in before)
    own = {r.content: r.final_score for r in before}
    for result in after:
        if result.content.startswith("Maria:"):
            assert result.metadata["signals"]["speaker"] == 1.0
            assert result.metadata["parts"]["speaker"]["value"] == pytest.approx(0.1)
            assert result.final_score > own[result.content]
        else:  # Tom's turns keep their scores
            assert "speaker" not in result.metadata["weights"]
            assert result.final_score == own[result.content]
    # Every turn of Maria's comes before every turn of Tom's that it trailed without it.
    speakers = [text.split(":")[0] for text in _order(after)]
    assert speakers == sorted(speakers, key=lambda name: name != "Maria"), _order(after)
    # Without the signal Tom's football trails Maria's tennis but leads her climbing (another
    # session's turn); with it, her climbing comes first.
    climbing = "Maria: I joined a climbing gym near the office as well."
    football = "Tom: I play football."
    assert _order(before).index(football) < _order(before).index(climbing)
    assert _order(after).index(climbing) < _order(after).index(football)


@pytest.mark.parametrize(
    "question",
    [
        "Does Maria swim?",  # Maria named, but Tom said the leading turn
        "What sports do Maria and Tom do?",  # two speakers named
        "What sports are there?",  # nobody named
    ],
)
def test_a_question_whose_leading_turns_are_anothers_or_naming_two_or_nobody_is_as_before(
    chat: HybridRetriever, question: str
) -> None:
    off = replace(chat.config, speaker_weight=0.0)
    before = chat.retrieve(question, tenant_id="acme", as_of=AS_OF, config=off, limit=6)
    after = chat.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=6)
    assert [(r.content, r.final_score) for r in after] == [
        (r.content, r.final_score) for r in before
    ]
    assert all("speaker" not in r.metadata["weights"] for r in after)


def test_a_person_stored_by_full_name_is_named_by_first_name(store: MemoryStore) -> None:
    # A chat's export names people in full; the question names Maria by her first name.
    full = {"Maria:": "Maria Lopez:", "Tom:": "Tom Berg:"}
    store.remember_many(
        MemoryInput(
            text=" ".join(full.get(word, word) for word in text.split(" ")), tenant_id="names",
            kind="message", thread_id=f"s{number}-{position}", position=0,
            created_at=MAY + timedelta(days=7 * number, minutes=position),
        )
        for number, turns in enumerate(SESSIONS)
        for position, text in enumerate(turns)
    )  # fmt: skip
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        response = retriever.retrieve(QUESTION, tenant_id="names", as_of=AS_OF, limit=6)
    check_contract(response)
    assert response.results
    for result in response:
        said_by_maria = result.content.startswith("Maria Lopez:")
        assert ("speaker" in result.metadata["weights"]) is said_by_maria, result.content
    assert _order(response)[0].startswith("Maria Lopez:")
