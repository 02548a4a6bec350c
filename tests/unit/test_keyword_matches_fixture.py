"""The labelled agent history of benchmarks/quality/keyword_matches.py: every question's answer
is one memory (or one decision) of the history, and the history shares the questions' words."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
LINES = [json.loads(line) for line in (DATA / "keyword_matches.jsonl").read_text().splitlines()]
FIXTURE = json.loads((DATA / "keyword_matches_questions.json").read_text("utf-8"))


def test_each_answer_is_one_row_of_the_history() -> None:
    memories = [line["text"] for line in LINES if line["type"] == "memory"]
    decisions = [line["content"] for line in LINES if line["type"] == "decision"]
    for question in FIXTURE["questions"]:
        rows = memories if question["source"] == "semantic" else decisions
        assert rows.count(question["answer"]) == 1, question
    assert sum(q["source"] == "semantic" for q in FIXTURE["questions"]) == len(memories)


def test_the_episodic_rows_come_after_the_memories_and_before_the_questions() -> None:
    memories = [line["created_at"] for line in LINES if line["type"] == "memory"]
    episodic = [line["created_at"] for line in LINES if line["type"] != "memory"]
    assert max(memories) < min(episodic) <= max(episodic) < FIXTURE["as_of"]
