"""The documents source with a metadata filter, in a table another tenant fills: p50 per filter.

Two tenants of ``--documents`` documents each (5 chunks a document, a chunk's text a few words
of its number, its vector a SciFact title vector with small noise, as ``documents.py`` makes
them), stored once in ``--data-dir``: the tenant asked, whose documents carry ``{"team":
"t<N mod 2>", "user": "u<N mod 100>"}``, and another whose every document is of user ``u7``
and team ``t9``. For ``--claims`` SciFact claims (their vectors cached), ``retrieve(...,
filter=..., limit=10)`` with only the documents source on (no threshold, its limit 10), each
of :data:`FILTERS` in turn claim by claim, ``--passes`` times: per filter the p50 of each
claim's median, and the share of calls that returned 10 chunks. The user ``u7`` is 1% of the
tenant's chunks and half the table's; the team ``t0`` half the tenant's and a quarter of the
table's. With another revision's library on ``PYTHONPATH``, the same for it
(docs/decisions/0065: the chunks' walk of the graph followed by the exact read when it does
not fill the channel's candidates).

Usage: python benchmarks/reading/documents_filtered.py --data-dir DIR [--documents 2000]
       [--claims 100] [--passes 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, percentiles, timed_ms, write_result
from _scifact import documents_only, load_corpus, read_queries
from _server import add_data_dir, embedded
from sqlalchemy import text
from tqdm import tqdm

from retrieval.db.migrate import MigrationSettings
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

SCHEMA = MigrationSettings(schema="docs_filtered", embedding_dim=384)
TENANT, OTHER = "asked", "other"
CHUNKS_PER_DOCUMENT = 5
FILTERS: dict[str, dict[str, Any]] = {
    "none": {},
    "user u7 (1% of the tenant, half the table)": {"user": "u7"},
    "the same by $in": {"user": {"$in": ["u7"]}},
    "team t0 (half the tenant, a quarter of the table)": {"team": "t0"},
    "the same by $in ": {"team": {"$in": ["t0"]}},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, required=True, what="the documents' data, kept for the next run")
    parser.add_argument("--documents", type=int, default=2_000, help="per tenant, 5 chunks each")
    parser.add_argument("--claims", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3)
    add_output(parser)
    args = parser.parse_args()

    bench = embedded(args.data_dir, SCHEMA)
    embedder = SentenceTransformerEmbedder()
    store = MemoryStore(bench.engine, schema=SCHEMA.schema, embedder=embedder)
    if _chunks(bench.engine) != 2 * args.documents * CHUNKS_PER_DOCUMENT:
        _load(store, embedder, args.documents, bench.data_dir.parent)
    claims = read_queries()[: args.claims]
    embedder.embed(claims)  # the claims' vectors cached before the timing
    times: dict[str, list[list[float]]] = {name: [[] for _ in claims] for name in FILTERS}
    full: dict[str, list[bool]] = {name: [] for name in FILTERS}
    base = documents_only()  # every chunk near enough counts: the top 10 is always full
    config = replace(base, documents=replace(base.documents, limit=10), max_distance=None,
                     min_final_score=0.0, total_limit=10)  # fmt: skip
    with HybridRetriever.from_store(store, config=config) as retriever:

        def call(index: int, name: str) -> int:
            found = retriever.retrieve(claims[index], tenant_id=TENANT, limit=10,
                                       filter=FILTERS[name] or None)  # fmt: skip
            return sum(r.source == "documents" for r in found)

        for index in range(len(claims)):  # the warm-up pass
            for name in FILTERS:
                full[name].append(call(index, name) == 10)
        for number in range(args.passes):
            for index in range(len(claims)):
                names = list(FILTERS) if (index + number) % 2 == 0 else list(FILTERS)[::-1]
                for name in names:
                    times[name][index].append(timed_ms(call, index, name)[1])
    results: dict[str, Any] = {"documents": args.documents, "claims": len(claims)}
    for name in FILTERS:
        summary = percentiles([statistics.median(claim) for claim in times[name]])
        results[name] = {
            "p50_ms": round(summary["p50"], 2),
            "p95_ms": round(summary["p95"], 2),
            "full_top_10": round(sum(full[name]) / len(full[name]), 3),
        }
        print(name, results[name], flush=True)
    write_result("documents-filtered", results, args)
    bench.engine.dispose()


def _chunks(engine: Any) -> int:
    with engine.connect() as connection:
        count = connection.execute(text(f"SELECT count(*) FROM {SCHEMA.schema}.document_chunks"))
        return int(count.scalar_one())


def _load(
    store: MemoryStore, embedder: SentenceTransformerEmbedder, count: int, cache: Path
) -> None:
    # Both tenants' documents, their chunks' vectors SciFact title vectors with noise.
    documents = DocumentStore(store)
    for tenant in (TENANT, OTHER):
        store.forget(tenant_id=tenant, everything=True)
    # SciFact's title vectors, shared with retrieve.py and documents.py.
    titles = load_corpus(embedder, cache / "scifact-title-vectors.npy").vectors
    noise = np.random.default_rng(7)
    for tenant in (TENANT, OTHER):
        for n in tqdm(range(count), desc=tenant, unit=" docs", disable=None):
            picks = noise.integers(0, len(titles), size=CHUNKS_PER_DOCUMENT)
            chunk_vectors = titles[picks] + noise.normal(0.0, 0.02, size=(len(picks), 384))
            chunk_vectors /= np.linalg.norm(chunk_vectors, axis=1, keepdims=True)
            meta = ({"team": f"t{n % 2}", "user": f"u{n % 100}"} if tenant == TENANT
                    else {"team": "t9", "user": "u7"})  # fmt: skip
            documents.add(DocumentInput(
                tenant_id=tenant, doc_id=f"doc-{n}", metadata=meta,
                chunks=[ChunkInput(f"chunk {n} {k}", embedding=v)
                        for k, v in enumerate(chunk_vectors)],
            ))  # fmt: skip
    with store.engine.begin() as connection:
        connection.execute(text(f"ANALYZE {SCHEMA.schema}.document_chunks"))
        connection.execute(text(f"ANALYZE {SCHEMA.schema}.documents"))


if __name__ == "__main__":
    main()
