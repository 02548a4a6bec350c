"""Concurrent writers of one tenant keep the BM25 statistics right and never deadlock.

Writers add, replace and forget documents and memories whose terms overlap, from two threads
at once; every write takes the tenant's corpus row first, so they queue instead of locking the
term statistics in opposite orders. Afterwards the kept document frequencies equal a recount.
"""

from __future__ import annotations

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.memory.store import MemoryStore
from tests.bm25_reference import term_statistics
from tests.conftest import CountingEmbedder, PgDatabase
from tests.threads import run_together

TEXTS = (
    "alpha beta gamma delta epsilon zeta",
    "zeta epsilon delta gamma beta alpha theta",
    "theta iota kappa alpha beta",
)
ROUNDS = 12


def _stats_match_a_recount(store: MemoryStore, prefix: str) -> None:
    kept, recount = term_statistics(store.engine, prefix, "acme")
    assert kept == recount


def test_documents_written_and_forgotten_at_once(store: MemoryStore) -> None:
    documents = DocumentStore(store)
    store.embedder.embed(list(TEXTS))  # load the model before the threads race

    def work(worker: int) -> None:
        for round_ in range(ROUNDS):
            body = TEXTS[(worker + round_) % len(TEXTS)]
            documents.add(
                DocumentInput(
                    tenant_id="acme",
                    doc_id=f"doc-{worker}",
                    chunks=[ChunkInput(body), ChunkInput(TEXTS[round_ % len(TEXTS)])],
                )
            )
            if round_ % 3 == 2:
                documents.forget(tenant_id="acme", doc_id=f"doc-{worker}")

    assert run_together(work) == []
    _stats_match_a_recount(store, "document")


def test_memories_written_and_forgotten_at_once(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    store = MemoryStore(database.engine, embedder=counting_embedder)
    counting_embedder.embed(list(TEXTS))

    def work(worker: int) -> None:
        for round_ in range(ROUNDS):
            ids = store.remember_many(
                {"text": f"{TEXTS[(worker + i) % len(TEXTS)]} {round_}", "tenant_id": "acme"}
                for i in range(3)
            )
            if round_ % 2 == 1:
                store.forget(tenant_id="acme", memory_ids=ids[:2])

    assert run_together(work) == []
    _stats_match_a_recount(store, "memory")
