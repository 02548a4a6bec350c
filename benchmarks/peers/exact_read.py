"""The semantic source's exact read of a small tenant against the HNSW graph, and
``hnsw.ef_search``, paired.

On the data a ``peers.py`` run keeps (``--data-dir``: our default table ``peers_ours`` with
``--rows`` memories over tenants of 0.1%, 1% and 10%), for each tenant and the 300 SciFact
claims: ``retrieve()`` with the semantic source ranking by its vector channel alone (the
peers' call, as in ``peers.py``) at ``exact_scan_factor`` 0 (always the graph) and at each
factor of ``--factors``, each at every ``hnsw.ef_search`` of ``--ef-search``, interleaved
claim by claim so all see the same machine (each setting first in turn, since the first runs
on colder buffers). Each claim is warmed once per setting, then timed
``--passes`` times; a claim's time is the median of its passes, and p50/p95 are over the
claims; recall@10 against the exact 10 nearest; whether the setting read the tenant exactly
(``n^2 <= factor x pool x N``). Ratios are to the first setting (factor 0, the first
ef_search).

Usage: python benchmarks/peers/exact_read.py --data-dir DIR [--rows 100000] [--factors 4]
       [--ef-search 160] [--tenants t-0.1pct,t-1pct,t-10pct] [--passes 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, claim_timing, recall, timed_ms, write_result
from _scifact import (
    AS_OF,
    OURS,
    TENANTS,
    cached_vectors,
    exact_nearest,
    load_corpus,
    memory_vectors,
    row_numbers,
    shapes,
    tenant_of,
    vector_alone,
)

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.defaults import DEFAULT_EF_SEARCH
from retrieval.search.plan.exact_read import reads_exactly
from retrieval.search.retriever import HybridRetriever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a peers.py data directory")
    parser.add_argument("--rows", type=int, default=100_000, help="the rows of that peers.py run")
    parser.add_argument("--factors", default="4", help="comma-separated factors beside 0")
    parser.add_argument("--ef-search", default=str(DEFAULT_EF_SEARCH), help="comma-separated")
    parser.add_argument("--tenants", default=",".join(TENANTS), help="comma-separated")
    parser.add_argument("--passes", type=int, default=3)
    add_output(parser)
    args = parser.parse_args()
    factors = [0.0, *(float(f) for f in args.factors.split(","))]
    settings = [(f, int(ef)) for f in factors for ef in args.ef_search.split(",")]

    database = connect(DatabaseConfig(data_dir=args.data_dir))
    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, args.data_dir.parent / "scifact-title-vectors.npy")
    base = cached_vectors(
        embedder, corpus.sentences, args.data_dir.parent / "scifact-sentence-vectors.npy"
    )
    vectors = memory_vectors(base, args.rows)
    owners = np.array([tenant_of(i) for i in range(args.rows)])
    claims = corpus.queries
    claim_vectors = embedder.embed(claims)
    schema = OURS["ours"][0]
    store = MemoryStore(database.engine, schema=schema, embedder=embedder)
    row_of = row_numbers(database.engine, schema)
    assert len(row_of) == args.rows, f"{len(row_of)} memories, not --rows {args.rows}"

    semantic = vector_alone(shapes()["semantic"])
    configs = {
        (factor, ef): replace(semantic, exact_scan_factor=factor, ef_search=ef)
        for factor, ef in settings
    }
    results: dict[str, Any] = {"rows": args.rows, "claims": len(claims), "passes": args.passes}
    with HybridRetriever.from_store(store, config=semantic) as retriever:
        for tenant in args.tenants.split(","):
            nearest = exact_nearest(vectors, np.flatnonzero(owners == tenant), claim_vectors)

            def search(index: int, setting: tuple[float, int], tenant: str = tenant) -> list[int]:
                found = retriever.retrieve(
                    claims[index], tenant_id=tenant, as_of=AS_OF, config=configs[setting]
                )
                return [row_of[r.metadata["id"]] for r in found]

            found: dict[tuple[float, int], list[list[int]]] = {s: [] for s in settings}
            times: dict[tuple[float, int], list[list[float]]] = {s: [] for s in settings}
            for index in range(len(claims)):
                turn = index % len(settings)  # each setting first in turn (the first runs colder)
                for setting in settings[turn:] + settings[:turn]:
                    search(index, setting)  # warm, and the tenant's size learnt
                    runs = []
                    for _ in range(args.passes):
                        got, elapsed = timed_ms(search, index, setting)
                        runs.append(elapsed)
                    found[setting].append(got)
                    times[setting].append(runs)

            p50 = {s: statistics.median(statistics.median(t) for t in times[s]) for s in settings}
            results[tenant] = {
                f"factor {f:g}, ef_search {ef}": {
                    **claim_timing(times[(f, ef)]),
                    "recall_at_10": recall(found[(f, ef)], nearest),
                    # what the last call of the setting decided
                    "read_exactly": reads_exactly(
                        retriever._sizes.memories(tenant),
                        retriever._sizes.table_of(tenant)[0],
                        f,
                        semantic.pool,
                    ),
                    "p50_ratio": p50[(f, ef)] / p50[settings[0]],
                }
                for f, ef in settings
            }
            print(tenant, results[tenant], flush=True)
    write_result("exact-read", results, args)
    database.dispose()


if __name__ == "__main__":
    main()
