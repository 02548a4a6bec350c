"""A conversation turn that only asks yields to the turns that tell
(retrieval.search.rank.questions): its final score scaled by 1 - question_discount, never under
the threshold it passed, the cut recorded as a part; other turns and other kinds as they were."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.integrations.records import result_record
from retrieval.memory.speakers import said_text
from retrieval.search.config import RetrievalConfig
from retrieval.search.rank import ranking
from retrieval.search.rank.questions import only_asks, questions_yield
from retrieval.ui.score_parts import question_label, score_parts
from tests.scored_turns import scored_memory

THRESHOLD = 0.25


def _scored(
    memory_id: int, content: str, relevance: float, kind: str = "message"
) -> ranking.Scored:
    return scored_memory(memory_id, content, relevance, kind=kind, distance=0.4)


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("How was it?", True),
        ("How was it? Did the kids like it?", True),
        ("How was it? 😊", True),  # a part with no word is no sentence
        ("Did she say “really?”", True),
        ("Wow! How was it?", True),  # a reaction and a question
        ("Wow, that looks great! What did you paint?", True),
        ("I got the job in Berlin last week! Can you believe it?", False),  # news, not a reaction
        ("Nice. How was it?", False),  # only an exclamation is taken for a reaction
        ("Wow!", False),  # a reaction alone asks nothing
        ("how was the trip", True),  # a chat's question without its mark
        ("wow! did you go with the kids", True),
        ("Have fun", False),  # an order, not a question
        ("have you seen it", True),
        ("What a day.", False),  # marked as told
        ("what a day!", False),
        ("I play tennis on Tuesdays.", False),
        ("Tennis? I love it.", False),
        ("", False),
        ("?", False),
        # Chinese, Japanese and Arabic marks; a Chinese character counts as a word
        ("太好了！你去哪了？", True),
        ("我今天终于拿到了柏林的工作！你相信吗？", False),  # news, not a reaction
        ("我去了北京。你呢？", False),
        ("「本当？」", True),
        ("ما هذا؟", True),
        ("¡Qué bien! ¿Cuándo vuelves?", True),
        ("Me mudé a Berlín. ¿Y tú?", False),
    ],
)
def test_a_turn_only_asks_when_it_asks_beside_reactions_at_most(text: str, asks: bool) -> None:
    assert only_asks(text) is asks


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("Maria: How was it?", "How was it?"),
        ('Maria said, "How was it?"', "How was it?"),
        ("How was it?", "How was it?"),
    ],
)
def test_what_a_turn_says_without_its_speaker(content: str, said: str) -> None:
    assert said_text(content) == said


def test_a_question_ranks_under_the_answer_it_led_and_says_why() -> None:
    question = _scored(1, "Sam: What sports do you play?", 0.70)
    answer = _scored(2, "Alex: Tennis is one of my passions.", 0.62)
    yielded = questions_yield([question, answer], 0.3, THRESHOLD)
    assert yielded[0].final_score == pytest.approx(question.final_score * 0.7)
    assert yielded[1] is answer
    config = RetrievalConfig(min_final_score=THRESHOLD)
    results, _ = ranking.select({"semantic": yielded}, config)
    assert [r.metadata["id"] for r in results] == [2, 1]
    asked = results[1]
    assert asked.metadata["only_asks"] == {"own_final_score": pytest.approx(question.final_score)}
    parts = asked.metadata["parts"]
    assert parts["question"]["value"] == pytest.approx(asked.final_score - question.final_score)
    assert sum(p["value"] for p in parts.values()) == pytest.approx(asked.final_score)
    assert "only_asks" not in results[0].metadata and "question" not in results[0].metadata["parts"]
    assert result_record(asked, 2)["details"]["only_asks"]["own_final_score"] > asked.final_score
    label = question_label(asked.metadata)
    assert label == (
        f"a question, not an answer: its score {question.final_score:.3f} scaled to "
        f"{asked.final_score:.3f}"
    )
    assert question_label(results[0].metadata) is None
    drawn = score_parts(asked)  # the bar adds up to the scaled score
    assert sum(part.value for part in drawn) == pytest.approx(asked.final_score)


def test_a_question_stays_retrievable_at_the_threshold() -> None:
    question = _scored(1, "Sam: Anything new?", 0.25)
    assert THRESHOLD / 0.7 > question.final_score >= THRESHOLD
    (kept,) = questions_yield([question], 0.3, THRESHOLD)
    assert kept.final_score == THRESHOLD
    under = _scored(2, "Sam: Anything new?", 0.05)  # under the threshold: not its business
    assert questions_yield([under], 0.3, THRESHOLD) == [under]


def test_other_kinds_statements_and_a_discount_of_0_change_nothing() -> None:
    fact = _scored(1, "What is the deploy procedure?", 0.8, kind="fact")
    told = _scored(2, "Sam: The deploy runs at 10.", 0.8)
    question = _scored(3, "Sam: When does the deploy run?", 0.8)
    assert questions_yield([fact, told], 0.3, THRESHOLD) == [fact, told]
    assert questions_yield([question], 0.0, THRESHOLD) == [question]


@given(
    relevance=st.floats(0.0, 1.0),
    discount=st.floats(0.0, 1.0),
    threshold=st.floats(0.0, 1.0),
)
def test_a_yielded_score_stays_between_the_threshold_and_its_own(
    relevance: float, discount: float, threshold: float
) -> None:
    question = _scored(1, "Sam: How was it?", relevance)
    (kept,) = questions_yield([question], discount, threshold)
    own = question.final_score
    if own < threshold or discount == 0.0:
        assert kept == question
        return
    assert threshold <= kept.final_score <= own
    parts = kept.to_result().metadata["parts"]
    assert sum(p["value"] for p in parts.values()) == pytest.approx(kept.final_score)
