from __future__ import annotations

import typing
from dataclasses import fields, replace

import pytest

from retrieval.errors import ConfigurationError
from retrieval.search.config import SOURCES, RetrievalConfig, SourceConfig
from retrieval.search.modes import Mode
from retrieval.settings import ENV, UNIT, WITHIN, Within


def test_defaults_are_measured_and_calibrated() -> None:
    config = RetrievalConfig()
    assert (config.working_state.relevance, config.working_state.recency) == (0.3, 0.7)
    # Relevance spans [0, 1] (retrieval.embedding.calibration): recency breaks ties, over a year.
    assert (config.semantic.relevance, config.semantic.recency) == (0.95, 0.05)
    assert config.semantic.half_life_hours == 24 * 365
    assert (config.episodic.relevance, config.episodic.recency) == (0.7, 0.3)
    assert (config.semantic.limit, config.episodic.limit, config.working_state.limit) == (10, 5, 10)
    assert config.total_limit == 10
    # Calibrated on the real model (see tests/integration/test_calibration.py).
    assert (config.min_final_score, config.max_distance) == (0.25, 1.2)
    assert config.semantic.weights == {"relevance": 0.95, "recency": 0.05}
    # The BM25 channel of memories is on, fused by convex (docs/decisions/0002).
    assert (config.memory_bm25, config.fusion) == (True, "convex")
    # Keyword scores keep the threshold they were calibrated with.
    assert [config.threshold(name) for name in SOURCES] == [0.4, 0.25, 0.4, 0.25]


def test_a_source_may_have_its_own_threshold() -> None:
    config = RetrievalConfig.from_env(
        {
            "RETRIEVAL_MIN_FINAL_SCORE": "0.3",
            "RETRIEVAL_EPISODIC_MIN_FINAL_SCORE": "none",
            "RETRIEVAL_DOCUMENTS_MIN_FINAL_SCORE": "0.5",
        }
    )
    assert config.threshold("episodic") == 0.3  # none: the config's
    assert config.threshold("documents") == 0.5
    assert config.threshold("working_state") == 0.4
    with pytest.raises(
        ConfigurationError, match=r"min_final_score must be a number in \[0, 1\] or None, got 1.5"
    ):
        SourceConfig(relevance=1.0, recency=0.0, limit=5, half_life_hours=1, min_final_score=1.5)


def test_the_pool_follows_the_widest_limit() -> None:
    config = RetrievalConfig()
    assert config.pool == 40
    wide = replace(config, semantic=replace(config.semantic, limit=50))
    assert wide.pool == 50  # a limit of 50 needs no candidate_pool of its own


def test_a_limit_scales_every_source() -> None:
    config = RetrievalConfig()
    assert config.with_limit(10) is config
    fifty = config.with_limit(50)
    assert fifty.total_limit == 50
    assert (fifty.semantic.limit, fifty.episodic.limit, fifty.documents.limit) == (50, 25, 25)
    assert fifty.working_state.limit == 50
    assert fifty.pool == 50
    three = config.with_limit(3)
    assert (three.total_limit, three.semantic.limit, three.episodic.limit) == (3, 3, 2)
    with pytest.raises(ConfigurationError, match="limit must be an integer >= 1"):
        config.with_limit(0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"relevance": 0.5, "recency": 0.4}, "weights must sum to 1, got 0.9"),
        ({"relevance": 1.2, "recency": -0.2}, r"relevance must be a number in \[0, 1\], got 1.2"),
        ({"relevance": 0.6, "recency": 0.2, "importance": 0.3}, "weights must sum to 1, got 1.1"),
        ({"relevance": 0.8, "recency": 0.2, "limit": -1}, "limit must be an integer >= 0"),
        (
            {"relevance": 0.8, "recency": 0.2, "half_life_hours": 0},
            "half_life_hours must be a number > 0",
        ),
    ],
)
def test_bad_source_configs_are_refused_when_made(kwargs: dict[str, float], message: str) -> None:
    arguments = {"limit": 5, "half_life_hours": 24.0, **kwargs}
    with pytest.raises(ConfigurationError, match=message):
        SourceConfig(**arguments)  # type: ignore[arg-type]


def test_signals_share_the_weight() -> None:
    source = SourceConfig(
        relevance=0.6, recency=0.1, importance=0.1, popularity=0.1, entity=0.1, limit=5,
        half_life_hours=24,
    )  # fmt: skip
    assert sum(source.weights.values()) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"total_limit": 0}, "total_limit must be an integer >= 1"),
        ({"min_final_score": 1.5}, r"min_final_score must be a number in \[0, 1\], got 1.5"),
        ({"max_distance": 0.0}, "max_distance must be a number > 0 or None"),
        ({"keyword_min_length": 0}, "keyword_min_length must be an integer >= 1"),
    ],
)
def test_bad_retrieval_configs_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        RetrievalConfig(**kwargs)  # type: ignore[arg-type]


def test_modes_are_named_presets_and_users_can_add_theirs() -> None:
    config = RetrievalConfig()
    assert config.mode("semantic") == Mode()
    assert config.mode("session_recovery").exclude_kinds == {"synthesized_insight"}
    assert "episteme" in (config.mode("knowledge_lookup").include_kinds or ())
    with pytest.raises(ConfigurationError, match="unknown mode 'psychic': use one of knowledge"):
        config.mode("psychic")
    custom = config.with_modes(decisions_only=Mode(include_kinds=frozenset({"decision"})))
    assert custom.mode("decisions_only").include_kinds == {"decision"}
    assert "decisions_only" not in config.modes


def test_from_env_reads_each_variable() -> None:
    config = RetrievalConfig.from_env(
        {
            "RETRIEVAL_SEMANTIC_RELEVANCE": "0.8",
            "RETRIEVAL_SEMANTIC_RECENCY": "0.1",
            "RETRIEVAL_SEMANTIC_IMPORTANCE": "0.1",
            "RETRIEVAL_SEMANTIC_LIMIT": "7",
            "RETRIEVAL_SEMANTIC_HALF_LIFE_HOURS": "48",
            "RETRIEVAL_EPISODIC_ENABLED": "false",
            "RETRIEVAL_TOTAL_LIMIT": "20",
            "RETRIEVAL_MIN_FINAL_SCORE": "0.4",
            "RETRIEVAL_MAX_DISTANCE": "1.1",
            "RETRIEVAL_KEYWORD_MIN_LENGTH": "3",
        }
    )
    assert config.semantic.weights == {"relevance": 0.8, "recency": 0.1, "importance": 0.1}
    assert (config.semantic.limit, config.semantic.half_life_hours) == (7, 48.0)
    assert config.episodic.enabled is False
    assert (config.total_limit, config.min_final_score, config.max_distance) == (20, 0.4, 1.1)
    assert config.keyword_min_length == 3
    assert RetrievalConfig.from_env({}) == RetrievalConfig()
    assert RetrievalConfig.from_env({"RETRIEVAL_MAX_DISTANCE": "none"}).max_distance is None
    lexical = RetrievalConfig.from_env(
        {"RETRIEVAL_LEXICAL_MATCH": "cascade", "RETRIEVAL_LEXICAL_SOURCES": "semantic, Episodic"}
    )
    assert lexical.lexical_match == "cascade"
    bm25 = RetrievalConfig.from_env({"RETRIEVAL_BM25_K1": "2", "RETRIEVAL_BM25_B": "0.3"})
    assert (bm25.bm25_k1, bm25.bm25_b) == (2.0, 0.3)
    with pytest.raises(ConfigurationError, match=r"bm25_b must be a number in \[0, 1\], got 1\.5"):
        RetrievalConfig.from_env({"RETRIEVAL_BM25_B": "1.5"})
    assert lexical.lexical_sources == {"semantic", "episodic"}


def test_from_env_names_the_bad_variable() -> None:
    with pytest.raises(ConfigurationError, match=r"RETRIEVAL_EPISODIC_.*weights must sum to 1"):
        RetrievalConfig.from_env({"RETRIEVAL_EPISODIC_RELEVANCE": "0.9"})
    with pytest.raises(ConfigurationError, match="RETRIEVAL_TOTAL_LIMIT='many' is not an integer"):
        RetrievalConfig.from_env({"RETRIEVAL_TOTAL_LIMIT": "many"})
    with pytest.raises(
        ConfigurationError, match=r"RETRIEVAL_SEMANTIC_LIMIT='7\.5' is not an integer"
    ):
        RetrievalConfig.from_env({"RETRIEVAL_SEMANTIC_LIMIT": "7.5"})
    with pytest.raises(ConfigurationError, match="is not a switch"):
        RetrievalConfig.from_env({"RETRIEVAL_SEMANTIC_ENABLED": "maybe"})
    with pytest.raises(
        ConfigurationError,
        match="RETRIEVAL_LEXICAL_SOURCES='documents': 'documents' is not one of semantic, episodic",
    ):
        RetrievalConfig.from_env({"RETRIEVAL_LEXICAL_SOURCES": "documents"})


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        RetrievalConfig().total_limit = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("within", "value", "problem"),
    [
        (UNIT, 0.5, None),
        (UNIT, float("nan"), "x must be a number in [0, 1], got nan"),
        (UNIT, True, "x must be a number in [0, 1], got True"),
        (UNIT, "0.5", "x must be a number in [0, 1], got '0.5'"),
        (Within(1, integer=True), 1, None),
        (Within(1, integer=True), 1.0, "x must be an integer >= 1, got 1.0"),
        (Within(0, 20, integer=True), 21, "x must be an integer from 0 to 20, got 21"),
        (Within(0.0, open_low=True), 0.0, "x must be a number > 0, got 0.0"),
        (
            Within(0.0, 1e6, open_high=True),
            1e6,
            "x must be a number in [0, 1000000), got 1000000.0",
        ),
    ],
)
def test_a_declared_range_says_what_it_takes(
    within: Within, value: object, problem: str | None
) -> None:
    assert within.problem("x", value) == problem


def test_every_number_setting_of_the_retrieval_config_declares_its_range() -> None:
    hints = typing.get_type_hints(RetrievalConfig)
    for item in fields(RetrievalConfig):
        if hints[item.name] in (int, float, int | None, float | None) and ENV in item.metadata:
            assert WITHIN in item.metadata, item.name
