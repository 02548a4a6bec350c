"""The labelled pairs similar()'s threshold is calibrated on (benchmarks/quality/
near_duplicates.py): enough of them, every relation, well formed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

PAIRS = Path(__file__).resolve().parents[1] / "data" / "near_duplicates.jsonl"


def test_the_pairs_cover_every_relation_of_every_fact() -> None:
    pairs = [json.loads(line) for line in PAIRS.read_text("utf-8").splitlines()]
    assert len(pairs) >= 300
    relations = Counter(pair["relation"] for pair in pairs)
    assert set(relations) == {"paraphrase", "update", "related", "unrelated"}
    assert len(set(relations.values())) == 1  # as many of each
    for pair in pairs:
        assert pair["near"] == (pair["relation"] in ("paraphrase", "update"))
        assert pair["a"].strip() and pair["b"].strip() and pair["a"] != pair["b"]
    assert len({pair["fact"] for pair in pairs}) == len(pairs) // 4
