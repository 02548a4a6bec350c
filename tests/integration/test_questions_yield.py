"""A chat's question yields to the answer through retrieve(): a message that only asks ranks
under the turns that tell, stays retrievable, and says why; the scoring contract holds, and
with question_discount 0 the question leads again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.errors import ConfigurationError
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.defaults import DEFAULT_QUESTION_DISCOUNT
from retrieval.search.retriever import HybridRetriever
from tests.score_contract import check_contract

AS_OF = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
SESSIONS = [
    [
        "Sam: What sports do you play these days?",
        "Alex: Tennis is one of my passions.",
        "Sam: Nice, I should try it some time.",
    ],
    [
        "Alex: Which sports would you like to try this summer?",
        "Sam: Maybe climbing, my sister goes every week.",
        "Alex: The new gym opened near the station.",
    ],
]
QUESTION = "What sports does Alex play?"
ANSWER = "Alex: Tennis is one of my passions."


@pytest.fixture
def chat(store: MemoryStore) -> Iterator[HybridRetriever]:
    store.remember_many(
        MemoryInput(
            text=text, tenant_id="acme", kind="message", thread_id=f"s{number}",
            position=position, created_at=MAY + timedelta(days=7 * number, minutes=position),
        )
        for number, turns in enumerate(SESSIONS)
        for position, text in enumerate(turns)
    )  # fmt: skip
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        yield retriever


def _order(retriever: HybridRetriever, config: RetrievalConfig | None = None) -> list[str]:
    response = retriever.retrieve(QUESTION, tenant_id="acme", as_of=AS_OF, config=config)
    check_contract(response)
    return [result.content for result in response]


def test_the_answer_ranks_above_the_questions_that_asked_alike(chat: HybridRetriever) -> None:
    off = _order(chat, replace(chat.config, question_discount=0.0))
    on = _order(chat, None)
    asked = [text for text in on if text.endswith("?")]
    assert off[0].endswith("?"), off  # without the rule a question asked alike leads
    assert on[0] == ANSWER, on
    assert asked and set(asked) <= set(off)  # still retrievable
    assert on.index(ANSWER) < min(on.index(text) for text in asked)


def test_a_question_says_why_it_ranks_lower(chat: HybridRetriever) -> None:
    response = chat.retrieve(QUESTION, tenant_id="acme", as_of=AS_OF)
    off = chat.retrieve(
        QUESTION, tenant_id="acme", as_of=AS_OF, config=replace(chat.config, question_discount=0.0)
    )
    own = {result.content: result.final_score for result in off}
    questions = [result for result in response if result.content.endswith("?")]
    assert questions
    for result in questions:
        before = own[result.content]
        assert result.metadata["only_asks"]["own_final_score"] == pytest.approx(before)
        expected = max(chat.config.threshold("semantic"), before * (1 - DEFAULT_QUESTION_DISCOUNT))
        assert result.final_score == pytest.approx(expected)
    for result in response:
        if not result.content.endswith("?"):
            assert "only_asks" not in result.metadata
            assert result.final_score == pytest.approx(own[result.content])


def test_the_discount_comes_from_the_environment_and_is_checked() -> None:
    config = RetrievalConfig.from_env({"RETRIEVAL_QUESTION_DISCOUNT": "0.5"})
    assert config.question_discount == 0.5
    assert RetrievalConfig().question_discount == DEFAULT_QUESTION_DISCOUNT
    with pytest.raises(ConfigurationError, match="question_discount"):
        RetrievalConfig(question_discount=1.5)
