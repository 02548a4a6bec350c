"""A memory ranks below its newer versions among the candidates (retrieval.search.rank.versions):
the newest takes its place when it scored lower, the older is capped under them, still returned,
and names the newest; a question that tells the two apart leaves both as they are."""

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
QUERY = "Which version is it?"


def _scored(
    memory_id: int, relevance: float, newer: list[int] | None = None, text: str | None = None
) -> ranking.Scored:
    return scored_memory(
        memory_id, text or f"version {memory_id}", relevance, kind="fact",
        created_at=WHEN - timedelta(days=memory_id), distance=0.4, newer=newer,
    )  # fmt: skip


def _ranked(scored: list[ranking.Scored], query: str = QUERY) -> list[int]:
    results, _ = ranking.select({"semantic": newer_versions_first(scored, query)}, CONFIG)
    return [result.metadata["id"] for result in results]


def test_an_older_version_more_relevant_than_the_newer_ranks_under_it_and_names_it() -> None:
    older, newer = _scored(2, 0.95, newer=[1]), _scored(1, 0.80)
    moved = newer_versions_first([older, newer], QUERY)
    # The newer takes the older's score; the older is capped just under it.
    assert moved[1].final_score == pytest.approx(older.final_score)
    assert moved[0].final_score == pytest.approx(older.final_score - VERSION_MARGIN)
    results, _ = ranking.select({"semantic": moved}, CONFIG)
    assert [r.metadata["id"] for r in results] == [1, 2]
    newest, outdated = results
    assert outdated.metadata["possibly_outdated_by"] == {
        "id": 1,
        "own_final_score": pytest.approx(older.final_score),
    }
    parts = outdated.metadata["parts"]
    assert parts["outdated"]["value"] < 0
    assert sum(p["value"] for p in parts.values()) == pytest.approx(outdated.final_score)
    assert newest.metadata["newer_version_of"] == {
        "id": 2,
        "own_final_score": pytest.approx(newer.final_score),
    }
    raised = newest.metadata["parts"]
    assert raised["version"]["value"] > 0
    assert sum(p["value"] for p in raised.values()) == pytest.approx(newest.final_score)
    assert "outdated" not in raised
    assert "possibly_outdated_by" not in newest.metadata


def test_a_chain_of_versions_ranks_newest_first() -> None:
    # v3 is the oldest and the most relevant; each newer version caps the older ones.
    v3, v2, v1 = _scored(3, 0.99, newer=[1, 2]), _scored(2, 0.97, newer=[1]), _scored(1, 0.6)
    assert _ranked([v3, v2, v1]) == [1, 2, 3]


@pytest.mark.parametrize(
    "relevances", [(0.99, 0.97, 0.6), (0.99, 0.6, 0.97), (0.6, 0.99, 0.97), (0.97, 0.6, 0.99)]
)
def test_a_chain_of_updates_each_of_the_one_before_ranks_newest_first(
    relevances: tuple[float, float, float],
) -> None:
    # Each update a version of the one before it only (an update is the version of the fact it
    # is nearest to): the newest of the chain still first, each older right under the newer.
    r3, r2, r1 = relevances
    v3, v2, v1 = _scored(3, r3, newer=[2]), _scored(2, r2, newer=[1]), _scored(1, r1)
    moved = newer_versions_first([v3, v2, v1], QUERY)
    assert _ranked([v3, v2, v1]) == [1, 2, 3]
    oldest = next(s for s in moved if s.identity == v3.identity)
    assert oldest.outdated is not None and oldest.outdated.by == 1


def test_an_older_version_already_under_the_newer_keeps_its_score_and_is_still_named() -> None:
    older, newer = _scored(2, 0.5, newer=[1]), _scored(1, 0.9)
    (kept, same) = newer_versions_first([older, newer], QUERY)
    assert kept.final_score == older.final_score
    assert same is newer
    result = kept.to_result()
    assert result.metadata["possibly_outdated_by"]["id"] == 1
    assert "outdated" not in result.metadata["parts"]


def test_a_newer_version_under_the_threshold_takes_the_older_ones_place() -> None:
    # "We replaced Redshift with Snowflake." answers "Which data warehouse do we use?" as the
    # older memory does, though its own words are far from the question.
    older, newer = _scored(2, 0.9, newer=[1]), _scored(1, 0.05)
    assert newer.final_score < CONFIG.min_final_score
    assert _ranked([older, newer]) == [1, 2]


def test_a_question_that_tells_two_facts_apart_moves_neither() -> None:
    peanuts = _scored(2, 0.95, newer=[1], text="Alice is allergic to peanuts.")
    shellfish = _scored(1, 0.80, text="Alice is allergic to shellfish.")
    assert _ranked([peanuts, shellfish], "Is Alice allergic to peanuts?") == [2, 1]
    assert _ranked([peanuts, shellfish], "What is Alice allergic to?") == [1, 2]


def test_a_newer_version_that_is_not_a_candidate_changes_nothing() -> None:
    older = _scored(2, 0.9, newer=[99])
    (kept,) = newer_versions_first([older], QUERY)
    assert kept is older
    assert "possibly_outdated_by" not in kept.to_result().metadata


def test_the_record_and_the_inspector_show_what_may_replace_a_result() -> None:
    capped = newer_versions_first([_scored(2, 0.95, newer=[1]), _scored(1, 0.8)], QUERY)
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
