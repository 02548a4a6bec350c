"""The paths matrix in small: a conversation stored through every documented way of storing one
(a thread and a position with or without the kind, messages without a thread, either way of
writing a turn, under a namespace, with keys, ``retrieval ingest`` of a transcript, the
LangGraph store, the MCP tools, Mem0's interface) answers as well as the best of them, within
two points, but for the gaps measured and named in :data:`KNOWN_GAPS`, which may only shrink.

The ways are those of ``benchmarks/quality/paths.py``, which runs every quality corpus through
them; here, ``tests/data/paths_conversation.json``: two short conversations whose questions
are answered by a turn's words, never by its date (LangGraph cannot store a turn's time, nor
Mem0's search ask as of one), read three turns at a time. A rule that treats one way apart (as
the newer-version rule once capped the turns of a thread stored without their kind, "I
sprained my wrist" under "My wrist is better too") shows here as a way falling behind.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "quality"))  # the matrix's ways, shared
from _paths import (  # noqa: E402
    COMMON_WAYS,
    CONVERSATION_WAYS,
    TOLD_NOW,
    Dialogue,
    Turn,
    Way,
    first_refs,
)

FIXTURE = ROOT / "tests" / "data" / "paths_conversation.json"
BUDGET = 3  # turns read
TOLERANCE = 0.02
# Questions a way misses that the best way answers, measured (2026-12-05), and why: the gaps a
# change may close but not widen. Three turns read is a small budget: the thread's lift puts a
# hit's neighbours before a turn two places away ("When does the team fly back from Lisbon?");
# a turn written "NAME: text" (ingest writes a transcript so) misses "Who is Maria's tennis
# partner?", answered by a turn whose first sentence says something else; the LangGraph store
# has no threads, no times and no threshold.
KNOWN_GAPS = {
    "thread": 1,
    "thread, kind not given": 1,
    "no thread": 1,
    "other format": 2,
    "namespace": 1,
    "keys": 1,
    "ingest": 2,
    "langgraph": 2,
}


def _dialogues() -> tuple[list[Dialogue], list[dict[str, object]]]:
    data = json.loads(FIXTURE.read_text("utf-8"))
    dialogues = []
    for d in data["dialogues"]:
        turns = []
        for s, session in enumerate(d["sessions"]):
            when = datetime.fromisoformat(session["date"])
            for n, (speaker, text) in enumerate(session["turns"]):
                turns.append(Turn(f"{s}:{n}", f'{speaker} said, "{text}"',
                                  when + timedelta(minutes=n), f"s{s}", n))  # fmt: skip
        last = max(t.created_at for t in turns)
        dialogues.append(Dialogue(d["tenant"], tuple(turns), last + timedelta(days=1)))
    return dialogues, data["questions"]


def _recall(way: Way, dialogues: list[Dialogue], questions: list[dict[str, object]]) -> float:
    for dialogue in dialogues:
        way.store_dialogue(dialogue)
    as_of = {d.tenant: d.as_of for d in dialogues}
    found = 0
    with way.asker() as ask:
        for question in questions:
            tenant = str(question["tenant"])
            session, turn = question["evidence"]  # type: ignore[misc]
            read = first_refs(ask(tenant, question["query"], BUDGET, as_of[tenant]), BUDGET)
            found += f"{session}:{turn}" in read
    return found / len(questions)


@pytest.mark.slow
def test_every_documented_way_of_storing_a_conversation_answers_as_well_as_the_best(
    store: MemoryStore,
) -> None:
    dialogues, questions = _dialogues()
    config = RetrievalConfig(record_access=False)
    recall: dict[str, float] = {}
    for name in CONVERSATION_WAYS + COMMON_WAYS:
        way = Way(name, store, config)
        try:
            recall[name] = _recall(way, dialogues, questions)
        finally:
            way.close()
    best = max(recall.values())
    for name, value in recall.items():
        allowed = KNOWN_GAPS.get(name, 0) / len(questions) + TOLERANCE
        assert value >= best - allowed, (
            f"{name} answers {value:.3f}, the best way {best:.3f}: more than its known gap "
            f"({KNOWN_GAPS.get(name, 0)} questions) and two points behind; every way: {recall}"
        )
    assert best >= 0.9, recall


def test_a_conversation_told_now_keeps_its_threads_and_places_but_not_its_times() -> None:
    # The way that measures what the conversation corpora lose by their times alone (as a
    # LangGraph put is told when it is made): each turn told when stored, asked now.
    told = datetime(2026, 3, 1, 9, 30).astimezone()
    turn = Turn("0:4", 'Maria said, "I play tennis on Sundays."', told, "s0", 4)
    way = Way(TOLD_NOW, None, RetrievalConfig())
    item = way._turn_input("t", turn, 4)
    assert "created_at" not in item
    assert (item["thread_id"], item["position"], item["kind"]) == ("s0", 4, "message")
    assert not way.timed and not way.asks_as_of
    # Mem0's add keeps a time (its timestamp); neither its search nor LangGraph's asks as of one.
    mem0 = Way("mem0", None, RetrievalConfig())
    assert mem0.timed and not mem0.asks_as_of
    assert Way("thread", None, RetrievalConfig())._turn_input("t", turn, 4)["created_at"] == told
