"""A memory ranks below its newer versions among the candidates (retrieval.search.rank.versions):
capped under them, still returned, and naming the newest."""

from __future__ import annotations

from datetime import timedelta

import pytest

from retrieval.integrations.records import result_record
from retrieval.search.config import RetrievalConfig
from retrieval.search.rank import ranking
from retrieval.search.rank.versions import VERSION_MARGIN, newer_versions_first
from retrieval.ui.score_parts import outdated_label, score_parts
from tests.scored_turns import WHEN, scored_memory

CONFIG = RetrievalConfig(min_final_score=0.25)


def _scored(memory_id: int, relevance: float, newer: list[int] | None = None) -> ranking.Scored:
    return scored_memory(
        memory_id, f"version {memory_id}", relevance, kind="fact",
        created_at=WHEN - timedelta(days=memory_id), distance=0.4, newer=newer,
    )  # fmt: skip


def _ranked(scored: list[ranking.Scored]) -> list[int]:
    results, _ = ranking.select({"semantic": newer_versions_first(scored, 0.25)}, CONFIG)
    return [result.metadata["id"] for result in results]


def test_an_older_version_more_relevant_than_the_newer_ranks_under_it_and_names_it() -> None:
    older, newer = _scored(2, 0.95, newer=[1]), _scored(1, 0.80)
    capped = newer_versions_first([older, newer], 0.25)
    assert capped[0].final_score == pytest.approx(newer.final_score - VERSION_MARGIN)
    results, _ = ranking.select({"semantic": capped}, CONFIG)
    assert [r.metadata["id"] for r in results] == [1, 2]
    outdated = results[1]
    assert outdated.metadata["possibly_outdated_by"] == {
        "id": 1,
        "own_final_score": pytest.approx(older.final_score),
    }
    parts = outdated.metadata["parts"]
    assert parts["outdated"]["value"] < 0
    assert sum(p["value"] for p in parts.values()) == pytest.approx(outdated.final_score)
    assert "outdated" not in results[0].metadata["parts"]
    assert "possibly_outdated_by" not in results[0].metadata


def test_a_chain_of_versions_ranks_newest_first() -> None:
    # v3 is the oldest and the most relevant; each newer version caps the older ones.
    v3, v2, v1 = _scored(3, 0.99, newer=[1, 2]), _scored(2, 0.97, newer=[1]), _scored(1, 0.6)
    assert _ranked([v3, v2, v1]) == [1, 2, 3]


def test_an_older_version_already_under_the_newer_keeps_its_score_and_is_still_named() -> None:
    older, newer = _scored(2, 0.5, newer=[1]), _scored(1, 0.9)
    (kept, _) = newer_versions_first([older, newer], 0.25)
    assert kept.final_score == older.final_score
    result = kept.to_result()
    assert result.metadata["possibly_outdated_by"]["id"] == 1
    assert "outdated" not in result.metadata["parts"]


def test_a_newer_version_under_the_threshold_does_not_hide_the_older() -> None:
    older, newer = _scored(2, 0.9, newer=[1]), _scored(1, 0.05)
    assert newer.final_score < CONFIG.min_final_score
    (kept, _) = newer_versions_first([older, newer], CONFIG.min_final_score)
    assert kept.final_score == older.final_score
    assert _ranked([older, newer]) == [2]


def test_a_newer_version_that_is_not_a_candidate_changes_nothing() -> None:
    older = _scored(2, 0.9, newer=[99])
    (kept,) = newer_versions_first([older], 0.25)
    assert kept is older
    assert "possibly_outdated_by" not in kept.to_result().metadata


def test_the_record_and_the_inspector_show_what_may_replace_a_result() -> None:
    capped = newer_versions_first([_scored(2, 0.95, newer=[1]), _scored(1, 0.8)], 0.25)
    results, _ = ranking.select({"semantic": capped}, CONFIG)
    outdated = results[1]
    record = result_record(outdated, 2)
    assert record["details"]["possibly_outdated_by"]["id"] == 1
    label = outdated_label(outdated.metadata)
    assert label is not None and label.startswith("possibly outdated by memory #1")
    assert f"capped to {outdated.final_score:.3f}" in label
    assert outdated_label(results[0].metadata) is None
    drawn = score_parts(outdated)  # scaled to the capped score: the bar adds up to it
    assert sum(part.value for part in drawn) == pytest.approx(outdated.final_score)
