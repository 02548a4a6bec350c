"""Documents and BM25 in SQL on the real PostgreSQL: parity with the Python reference."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.errors import ValidationError
from retrieval.memory.store import MemoryStore
from retrieval.search import reference_scores
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from retrieval.search.statement import bm25
from tests.bm25_reference import bm25_reference, lexemes, term_statistics
from tests.conftest import as_stored

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "scifact_sample.json"
QUERIES = (
    "vitamin D deficiency and cardiovascular risk",
    "gene expression in cancer cells",
    "protein binding in human cells",
    "antibiotic resistance of bacteria",
)


@pytest.fixture
def documents(store: MemoryStore) -> DocumentStore:
    return DocumentStore(store)


def _sample_documents(tenant: str, count: int = 40) -> list[DocumentInput]:
    titles = json.loads(SAMPLE.read_text())["titles"]
    return [
        DocumentInput(
            tenant_id=tenant,
            doc_id=f"doc-{n}",
            filename=f"doc-{n}.txt",
            chunks=[
                ChunkInput(titles[3 * n]),
                ChunkInput(titles[3 * n + 1] + " " + titles[3 * n + 2], section_title="More"),
            ],
        )
        for n in range(count)
    ]


def _reference(store: MemoryStore, tenant: str, query: str) -> dict[int, float]:
    return bm25_reference(store.engine, "document_chunks", tenant, query)


def _stats(store: MemoryStore, tenant: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(document frequencies kept by the write path, the same recounted from the postings)."""
    return term_statistics(store.engine, "document", tenant)


def test_bm25_in_sql_equals_the_python_reference(
    store: MemoryStore, documents: DocumentStore
) -> None:
    for document in _sample_documents("acme"):
        assert documents.add(document).status == "added"
    for query in QUERIES:
        expected = _reference(store, "acme", query)
        got = dict(documents.bm25(query, tenant_id="acme", limit=1000))
        assert expected, query
        assert got.keys() == expected.keys(), query
        for chunk_id, score in expected.items():
            assert got[chunk_id] == pytest.approx(score, abs=1e-6), (query, chunk_id)
    for k1, b in ((0.9, 0.4), (2.0, 1.0)):
        got = dict(documents.bm25(QUERIES[0], tenant_id="acme", limit=1000, k1=k1, b=b))
        with store.engine.connect() as connection:
            chunks = connection.execute(
                text("SELECT id, content FROM retrieval.document_chunks ORDER BY id")
            ).all()
        reference = reference_scores.bm25_scores(
            list(dict.fromkeys(lexemes(store.engine, QUERIES[0]))),
            [lexemes(store.engine, c) for _, c in chunks],
            k1=k1,
            b=b,
        )
        for (chunk_id, _), score in zip(chunks, reference, strict=True):
            assert got.get(chunk_id, 0.0) == pytest.approx(score, abs=1e-6)


def test_statistics_follow_adds_replacements_and_removals(
    store: MemoryStore, documents: DocumentStore
) -> None:
    sample = _sample_documents("acme", count=10)
    for document in sample:
        documents.add(document)
    kept, recount = _stats(store, "acme")
    assert kept == recount
    # Unchanged: a no-op. Changed: replaced, statistics follow.
    again = documents.add(sample[0])
    assert again.status == "unchanged"
    changed = DocumentInput(
        tenant_id="acme", doc_id="doc-0", chunks=[ChunkInput("Completely different words")]
    )
    replaced = documents.add(changed)
    assert replaced.status == "replaced" and len(replaced.chunk_ids) == 1
    kept, recount = _stats(store, "acme")
    assert kept == recount
    assert documents.forget(tenant_id="acme", doc_id="doc-1") is True
    assert documents.forget(tenant_id="acme", doc_id="doc-1") is False
    kept, recount = _stats(store, "acme")
    assert kept == recount
    with store.engine.connect() as connection:
        corpus = connection.execute(
            text(
                "SELECT chunks, total_terms FROM retrieval.document_corpus WHERE tenant_id = 'acme'"
            )
        ).one()
        actual = connection.execute(
            text(
                "SELECT count(*), sum(term_count) FROM retrieval.document_chunks "
                "WHERE tenant_id = 'acme'"
            )
        ).one()
    assert tuple(corpus) == tuple(actual)
    assert _reference(store, "acme", QUERIES[1]) == pytest.approx(
        dict(documents.bm25(QUERIES[1], tenant_id="acme", limit=1000))
    )


def test_tenants_have_their_own_documents_and_statistics(
    store: MemoryStore, documents: DocumentStore
) -> None:
    for document in _sample_documents("acme", count=5):
        documents.add(document)
    documents.add(
        DocumentInput(tenant_id="globex", doc_id="x", chunks=[ChunkInput("vitamin D levels")])
    )
    globex = documents.bm25("vitamin", tenant_id="globex")
    assert len(globex) == 1
    with store.engine.connect() as connection:
        owners = connection.execute(
            text("SELECT tenant_id FROM retrieval.document_chunks WHERE id = :id"),
            {"id": globex[0][0]},
        ).scalar_one()
    assert owners == "globex"
    assert documents.bm25("vitamin", tenant_id="initech") == []


def test_bad_documents_write_nothing(store: MemoryStore, documents: DocumentStore) -> None:
    bad = [
        (DocumentInput(tenant_id="acme", doc_id="d", chunks=[]), "no chunk"),
        (DocumentInput(tenant_id="acme", doc_id="d", chunks=[ChunkInput("  ")]), "empty"),
        (DocumentInput(tenant_id="acme", doc_id="d", chunks=[ChunkInput("a\x00b")]), "NUL"),
        (
            DocumentInput(tenant_id="acme", doc_id="d", chunks=[ChunkInput("a\ud800b")]),
            r"chunk 0: text contains an unpaired surrogate \(U\+D800\) at position 1",
        ),
        (
            DocumentInput(
                tenant_id="acme", doc_id="d", chunks=[ChunkInput("t", section_title="\udc80")]
            ),
            "section_title contains an unpaired surrogate",
        ),
        (
            DocumentInput(
                tenant_id="acme", doc_id="d", chunks=[ChunkInput("t")], filename="\udfff"
            ),
            "filename contains an unpaired surrogate",
        ),
        (
            DocumentInput(
                tenant_id="acme", doc_id="d", chunks=[ChunkInput("t")], metadata={"k": "\ud83d"}
            ),
            "metadata contains an unpaired surrogate",
        ),
        (
            DocumentInput(tenant_id="acme", doc_id="d\x00", chunks=[ChunkInput("t")]),
            "doc_id contains a NUL byte at position 1",
        ),
        (
            DocumentInput(tenant_id="acme", doc_id="d", chunks=[ChunkInput("t")], filename="\x00"),
            "filename contains a NUL byte",
        ),
        (
            DocumentInput(
                tenant_id="acme", doc_id="d", chunks=[ChunkInput("t", section_title="a\x00")]
            ),
            "chunk 0: section_title contains a NUL byte",
        ),
        (
            DocumentInput(
                tenant_id="acme", doc_id="d", chunks=[ChunkInput("t")], metadata={"k": "\x00"}
            ),
            "metadata contains a NUL character",
        ),
        (
            DocumentInput(
                tenant_id="acme", doc_id="d", chunks=[ChunkInput("text", page_start=3, page_end=2)]
            ),
            "pages",
        ),
        (
            DocumentInput(
                tenant_id="acme", doc_id="d", chunks=[ChunkInput("t")], metadata={"x": object()}
            ),
            "not JSON",
        ),
        (
            DocumentInput(
                tenant_id="acme",
                doc_id="d",
                chunks=[
                    ChunkInput("fine", embedding=[0.1] * store.dim),
                    ChunkInput("t", embedding=[0.1] * 3),
                ],
            ),
            "3 dimensions|shape",
        ),
        (
            DocumentInput(
                tenant_id="acme",
                doc_id="d",
                chunks=[ChunkInput("t", embedding=[float("nan")] * store.dim)],
            ),
            "NaN",
        ),
    ]
    for document, message in bad:
        with pytest.raises(ValidationError, match=message):
            documents.add(document)
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM retrieval.documents")).scalar() == 0
    for query, message in (
        ("a\x00b", "query contains a NUL byte at position 1"),
        ("a\ud800", r"query contains an unpaired surrogate \(U\+D800\) at position 1"),
    ):
        with pytest.raises(ValidationError, match=message):
            documents.bm25(query, tenant_id="acme")
        with pytest.raises(ValidationError, match=message):
            documents.dense(query, tenant_id="acme")
    other = DocumentStore(store, text_search_config="simple")
    documents.add(DocumentInput(tenant_id="acme", doc_id="d", chunks=[ChunkInput("words")]))
    with pytest.raises(ValidationError, match="text search configuration 'english'"):
        other.add(DocumentInput(tenant_id="acme", doc_id="e", chunks=[ChunkInput("more")]))


def test_forgetting_a_tenant_removes_its_documents_and_statistics(
    store: MemoryStore, documents: DocumentStore
) -> None:
    for document in _sample_documents("acme", count=3):
        documents.add(document)
    documents.add(DocumentInput(tenant_id="globex", doc_id="x", chunks=[ChunkInput("vitamin")]))
    forgotten = store.forget(tenant_id="acme", everything=True)
    assert forgotten.document_ids == ("doc-0", "doc-1", "doc-2")
    with store.engine.connect() as connection:
        for table in (
            "documents",
            "document_chunks",
            "document_terms",
            "document_term_stats",
            "document_corpus",
        ):
            left = connection.execute(
                text(f"SELECT count(*) FROM retrieval.{table} WHERE tenant_id = 'acme'")
            ).scalar_one()
            assert left == 0, table
    assert documents.bm25("vitamin", tenant_id="globex") != []


def test_given_chunk_embeddings_are_stored_as_they_are(
    store: MemoryStore, documents: DocumentStore
) -> None:
    rng = np.random.default_rng(3)
    given = rng.normal(size=store.dim).astype(np.float32)
    given /= np.linalg.norm(given)
    document = DocumentInput(
        tenant_id="acme",
        doc_id="vectors",
        chunks=[ChunkInput("vitamin D and bone density", embedding=given), ChunkInput("gene")],
    )
    first = documents.add(document)
    assert first.status == "added"
    with store.engine.connect() as connection:
        stored = connection.execute(
            text(
                "SELECT embedding::text FROM retrieval.document_chunks "
                "WHERE tenant_id = 'acme' ORDER BY chunk_index"
            )
        ).scalars()
        vectors = [np.asarray(json.loads(row), dtype=np.float32) for row in stored]
    np.testing.assert_allclose(vectors[0], as_stored(given), atol=1e-6)
    embedded = store.embedder.embed(["gene"])[0]  # the chunk without one was embedded
    np.testing.assert_allclose(vectors[1], as_stored(embedded), atol=1e-5)
    assert documents.add(document).status == "unchanged"
    moved = DocumentInput(
        tenant_id="acme",
        doc_id="vectors",
        chunks=[ChunkInput("vitamin D and bone density", embedding=-given), ChunkInput("gene")],
    )
    assert documents.add(moved).status == "replaced"


def _ten_chunks(**changes: Any) -> RetrievalConfig:
    """The documents source alone, its best 10 chunks by relevance, every fused chunk (no
    threshold, no evidence gate), with ``changes``."""
    default = RetrievalConfig(record_access=False)
    return replace(
        default,
        semantic=replace(default.semantic, enabled=False),
        episodic=replace(default.episodic, enabled=False),
        documents=replace(default.documents, limit=10, relevance=1.0, recency=0.0),
        candidate_pool=10,
        min_final_score=0.0,
        max_distance=None,
        **changes,
    )


def test_the_pruned_bm25_channel_finds_the_exact_top(
    store: MemoryStore, documents: DocumentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Terms held by more than `share` of the chunks are only probed for the chunks the rarer
    # terms found, when that is lossless; whichever tier answers (the seed's top, probes of
    # the rows that can still reach the top, every posting), the channel's top 10 and their
    # scores are BM25's own. A seed of 1 row per candidate (10 of the 80 chunks) makes all
    # three tiers occur, with the sample's titles as queries too.
    for document in _sample_documents("acme"):
        documents.add(document)
    queries = [*QUERIES, *json.loads(SAMPLE.read_text())["titles"][:20]]
    tiers = set()
    for seed in (1, bm25.SEED):
        monkeypatch.setattr(bm25, "SEED", seed)
        for share in (0.0, 0.05, 0.1, 0.2, 0.3, 1.0):
            config = _ten_chunks(
                fusion="rrf",
                bm25_weight=1.0,  # the results in the BM25 channel's order
                bm25_common_share=share,
            )
            with HybridRetriever.from_store(store, config=config) as retriever:
                for query in queries:
                    expected = documents.bm25(query, tenant_id="acme", limit=10)
                    response = retriever.retrieve(query, tenant_id="acme")
                    tiers |= {r.metadata["bm25_tier"] for r in response}
                    got = sorted(
                        (
                            (r.metadata["id"], r.metadata["bm25"])
                            for r in response
                            if r.metadata["bm25"]
                        ),
                        key=lambda item: (-item[1], item[0]),
                    )
                    assert [c for c, _ in got] == [c for c, _ in expected], (seed, share, query)
                    for (_, score), (_, reference) in zip(got, expected, strict=True):
                        assert score == pytest.approx(reference, abs=1e-9)
    assert tiers == {1, 2, 3}


def test_bm25_parameters_of_the_config_reach_the_channel(
    store: MemoryStore, documents: DocumentStore
) -> None:
    for document in _sample_documents("acme", count=10):
        documents.add(document)
    config = _ten_chunks(bm25_k1=2.0, bm25_b=0.3)
    expected = dict(documents.bm25(QUERIES[1], tenant_id="acme", limit=10, k1=2.0, b=0.3))
    with HybridRetriever.from_store(store, config=config) as retriever:
        response = retriever.retrieve(QUERIES[1], tenant_id="acme")
    got = {r.metadata["id"]: r.metadata["bm25"] for r in response if r.metadata["bm25"]}
    assert got and all(got[chunk] == pytest.approx(expected[chunk]) for chunk in got)
