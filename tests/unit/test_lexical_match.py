from __future__ import annotations

import pytest

from retrieval.search.lexical_match import (
    LexicalScores,
    combine,
    exact_tier,
    lexical_scores,
    token_overlap,
    token_sort_ratio,
)


def test_the_design_studys_examples() -> None:
    assert lexical_scores("What is Python?", "What is Python?").exact == 1.0
    fuzzy = lexical_scores("What's machine learning?", "What is machine learning?")
    assert fuzzy.fuzzy >= 0.75
    assert combine(fuzzy, 0.4, strategy="cascade") == fuzzy.fuzzy
    unrelated = lexical_scores("What is Python?", "How do I bake sourdough bread?")
    assert max(unrelated.exact, unrelated.fuzzy, unrelated.tokens) < 0.5


def test_exact_tiers() -> None:
    assert exact_tier("What is Python?", "What is Python?") == 1.0
    assert exact_tier("What is Python?", "what is python?") == 0.98
    assert exact_tier("What is Python?", "what is  python") == 0.95
    assert exact_tier("What is Python?", "What is Rust?") == 0.0
    assert exact_tier("?!", "...") == 0.0  # no words: not a match


def test_token_scores() -> None:
    assert token_sort_ratio("learning machine", "machine learning") == 1.0
    # Query words {deploy, failed}, text words {the, deploy, failed, again}: jaccard 2/4,
    # coverage 2/2.
    assert token_overlap("deploy failed", "The deploy failed again") == pytest.approx(
        0.4 * 0.5 + 0.6 * 1.0
    )
    assert token_overlap("", "anything") == 0.0


def test_combine_strategies() -> None:
    scores = LexicalScores(exact=0.0, fuzzy=0.6, tokens=0.72)
    assert combine(scores, 0.5) == 0.72  # max
    assert combine(scores, 0.5, strategy="cascade") == 0.72  # tokens >= 0.70
    weights = {"exact": 0.25, "fuzzy": 0.25, "tokens": 0.25, "semantic": 0.25}
    assert combine(scores, 0.5, strategy="weighted", weights=weights) == pytest.approx(
        (0.6 + 0.72 + 0.5) / 4
    )
    assert combine(LexicalScores(0.0, 0.5, 0.5), 0.42, strategy="cascade") == 0.42
    with pytest.raises(ValueError, match="summing to 1"):
        combine(scores, 0.5, strategy="weighted", weights={"exact": 0.5})
    with pytest.raises(ValueError, match="unknown strategy"):
        combine(scores, 0.5, strategy="best")  # type: ignore[arg-type]
