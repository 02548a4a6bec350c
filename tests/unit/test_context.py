from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from retrieval.search.context import to_markdown, to_messages, to_table
from retrieval.search.results import Diagnostics, RetrievalResponse, RetrievalResult

CONVERSATION = [
    {"role": "user", "content": "the migration failed again", "name": "ana"},
    {"role": "assistant", "content": "Which table?"},
    {"role": "user", "content": "orders"},
]


def _response() -> RetrievalResponse:
    memory = RetrievalResult(
        content="Migration 0042 timed out on the orders table.",
        source="semantic",
        relevance_score=0.6,
        recency_score=0.9,
        final_score=0.63,
        metadata={
            "id": 7,
            "item": "memory",
            "kind": "critique",
            "created_at": "2026-11-21T14:12:00+00:00",
            "distance": 0.6667,
        },
    )
    decision = RetrievalResult(
        content="Retry with a longer lock timeout",
        source="episodic",
        relevance_score=0.5,
        recency_score=0.8,
        final_score=0.59,
        metadata={
            "id": 3,
            "item": "decision",
            "kind": "decision",
            "created_at": "2026-11-21T15:00:00+00:00",
            "matched_keywords": ["migration"],
        },
    )
    newest = RetrievalResult(
        content="orders",
        source="working_state",
        relevance_score=0.0,
        recency_score=1.0,
        final_score=0.7,
        metadata={"message": CONVERSATION[2], "position": 2, "of_messages": 3},
    )
    first = RetrievalResult(
        content="the migration failed again",
        source="working_state",
        relevance_score=1.0,
        recency_score=0.1,
        final_score=0.37,
        metadata={"message": CONVERSATION[0], "position": 0, "of_messages": 3},
    )
    diagnostics = Diagnostics(
        embedding_ms=0.1,
        sql_ms=2.0,
        fusion_ms=0.2,
        total_ms=2.4,
        sources={},
        keywords=("migration",),
        mode="semantic",
        as_of=datetime(2026, 11, 25, tzinfo=UTC),
        query_embedding_cached=True,
        statements=1,
    )
    return RetrievalResponse(results=(newest, memory, decision, first), diagnostics=diagnostics)


def test_messages_keep_the_callers_dicts_and_carry_scores_in_metadata() -> None:
    messages = to_messages(_response(), CONVERSATION)
    assert [m["role"] for m in messages] == ["assistant", "assistant", "user", "assistant", "user"]
    assert all(m is original for m, original in zip(messages[2:], CONVERSATION, strict=True))
    assert CONVERSATION[0] == {
        "role": "user",
        "content": "the migration failed again",
        "name": "ana",
    }
    context = messages[0]
    assert (
        context["content"] == "[2026-11-21 14:12 UTC] Migration 0042 timed out on the orders table."
    )
    assert context["metadata"]["source"] == "semantic"
    assert context["metadata"]["final_score"] == 0.63
    assert context["metadata"]["distance"] == 0.6667
    assert messages[1]["metadata"]["matched_keywords"] == ["migration"]
    assert not any(m["role"] == "system" for m in messages)


def test_messages_without_the_conversation_keep_the_kept_turns_in_order() -> None:
    messages = to_messages(_response())
    assert messages[2] is CONVERSATION[0] and messages[3] is CONVERSATION[2]
    assert len(messages) == 4


def test_markdown_block_names_source_time_scores_and_text() -> None:
    block = to_markdown(_response())
    assert block.startswith("## Previous context\n")
    assert (
        "- **semantic/critique** · 2026-11-21 14:12 UTC · final 0.63 (relevance 0.60, "
        "recency 0.90)\n  Migration 0042 timed out on the orders table." in block
    )
    empty = RetrievalResponse(results=(), diagnostics=_response().diagnostics)
    assert "(nothing relevant found)" in to_markdown(empty)


def test_the_callers_own_messages_are_no_previous_context_in_either_form() -> None:
    # One rule for both forms: the working state's messages are the caller's conversation,
    # not context retrieved for it (to_messages puts them after the context, as they are).
    response = _response()
    assert any(r.source == "working_state" for r in response)
    assert "working_state" not in to_markdown(response)
    context = [m for m in to_messages(response) if m["role"] == "assistant"]
    assert all(m["metadata"]["source"] != "working_state" for m in context)
    assert len(context) == sum(r.source != "working_state" for r in response)
    only_own = RetrievalResponse(
        results=tuple(r for r in response if r.source == "working_state"),
        diagnostics=response.diagnostics,
    )
    assert "(nothing relevant found)" in to_markdown(only_own)


def test_a_memory_with_neighbors_shows_its_turns_in_order_each_dated() -> None:
    hit = _response().results[1]
    metadata = {
        **hit.metadata,
        "position": 4,
        "thread_id": "session_2",
        "neighbors": [
            _turn(9, "Bob: and after?", 5, "2026-11-21T14:13:00+00:00"),
            _turn(8, "Bob: what happened?", 3, "2026-11-21T14:11:00+00:00"),
        ],
    }
    response = RetrievalResponse(
        results=(replace(hit, metadata=metadata),), diagnostics=_response().diagnostics
    )
    content = to_messages(response)[0]["content"]
    assert content == (
        "[2026-11-21 14:12 UTC] [2026-11-21 14:11 UTC] Bob: what happened?\n"
        "» Migration 0042 timed out on the orders table.\n"
        "[2026-11-21 14:13 UTC] Bob: and after?"
    )
    assert "  [2026-11-21 14:11 UTC] Bob: what happened?\n  » Migration 0042" in to_markdown(
        response
    )


def _turn(memory_id: int, content: str, position: int, created_at: str) -> dict[str, object]:
    return {
        "id": memory_id,
        "content": content,
        "position": position,
        "created_at": created_at,
        "kind": "message",
        "metadata": {},
    }


def test_table_lists_results_in_rank_order() -> None:
    lines = to_table(_response()).splitlines()
    assert lines[0].split() == ["#", "source", "id", "final", "rel", "rec", "text"]
    assert lines[2].split()[:4] == ["1", "working_state/user", "-", "0.70"]
    memory = next(r for r in _response().results if r.source == "semantic")
    # An id is named with what it is: ids repeat across sources.
    row = lines[3].split()[:5]
    assert row == ["2", "semantic/critique", "memory", str(memory.metadata["id"]), "0.63"]
    assert lines[-1].startswith("(final: the score, 0 to 1") and "rec: how recent" in lines[-1]
    assert "final: the score" not in to_table(_response(), legend=False)


def test_overlapping_neighbour_windows_show_each_turn_once() -> None:
    memory = next(r for r in _response().results if r.source == "semantic")
    first, second = memory, replace(memory, content="Migration 0043 failed too.")
    window = [
        _turn(20, "Bob: before", 1, "2026-11-21T14:10:00+00:00"),
        _turn(21, "Bob: between", 2, "2026-11-21T14:11:00+00:00"),
        _turn(22, "Bob: after", 4, "2026-11-21T14:13:00+00:00"),
    ]
    one = {**first.metadata, "id": 30, "position": 0, "thread_id": "s",
           "neighbors": [window[0], window[1]]}  # fmt: skip
    two = {**second.metadata, "id": 31, "position": 3, "thread_id": "s",
           "neighbors": [window[1], window[2]]}  # fmt: skip
    response = RetrievalResponse(
        results=(replace(first, metadata=one), replace(second, metadata=two)),
        diagnostics=_response().diagnostics,
    )
    messages = to_messages(response)
    text = "\n".join(str(m["content"]) for m in messages)
    assert text.count("Bob: between") == 1 and text.count("Bob: before") == 1
    assert "Bob: after" in text
    block = to_markdown(response)
    assert block.count("Bob: between") == 1


def test_table_says_which_memory_a_correction_was_found_through() -> None:
    memory = next(r for r in _response().results if r.source == "semantic")
    correction = replace(
        memory, content="Then we moved on to Madrid.", metadata={**memory.metadata, "id": 4,
                                                                  "found_through": 1}
    )  # fmt: skip
    response = RetrievalResponse(results=(correction,), diagnostics=_response().diagnostics)
    lines = to_table(response).splitlines()
    assert lines[2].endswith("(found through memory 1) Then we moved on to Madrid.")
    assert lines[-1].startswith("(found through memory N: a correction")
    # Found by its own text, a memory's row and the legend say nothing of it.
    assert "found through" not in to_table(_response())
