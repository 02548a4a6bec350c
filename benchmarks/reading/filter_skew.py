"""A metadata filter on a value rare in the tenant asked and common in another: time and recall.

PostgreSQL prices a filter from the table's statistics, not the tenant's. On ``filters.py``'s
tenant (``--data-dir``: run ``filters.py`` first; 100,000 memories, user ``u<N mod 1000>``),
another tenant of as many memories, every one of user ``u7``, is stored for the run; then, for
``--claims`` SciFact claims, ``retrieve(..., filter={"user": "u7"}, limit=10)`` on the first
tenant (0.1% of its rows meet it; half of the table's do), the vector channel alone: p50, the
share of full answers, and recall@10 against the exact nearest rows that meet it. The other
tenant is forgotten after. With the library of another revision on ``PYTHONPATH``, the same
for that revision (docs/decisions/0063: an equality priced by the table's statistics walked
the graph here and lost a fifth of its top 10).

Usage: python benchmarks/reading/filter_skew.py --data-dir DIR [--claims 50] [--passes 2]
       [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
sys.path.insert(0, str(Path(__file__).resolve().parent))  # filters.py
from _common import add_output, write_result
from _scifact import (
    read_queries,
    shapes,
    vector_alone,
)
from _server import add_data_dir
from filters import SCHEMA, _exact, _measured, filtered_tenant

from retrieval.memory.records import MemoryInput
from retrieval.search.retriever import HybridRetriever

OTHER = "skewed"  # the tenant whose every memory is of user u7
CONDITION: dict[str, Any] = {"filter": {"user": "u7"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, required=True, what="filters.py's data")
    parser.add_argument("--claims", type=int, default=50)
    parser.add_argument("--passes", type=int, default=2)
    add_output(parser)
    args = parser.parse_args()

    bench, embedder, store, vectors, rows = filtered_tenant(args.data_dir, 100_000)
    store.forget(tenant_id=OTHER, everything=True)
    try:
        for start in range(0, len(vectors), 5000):
            store.remember_many(
                MemoryInput(text=f"other {row}", tenant_id=OTHER, embedding=vectors[row],
                            metadata={"user": "u7", "team": "t9", "score": 5})
                for row in range(start, min(start + 5000, len(vectors)))
            )  # fmt: skip
        with bench.engine.begin() as connection:
            connection.exec_driver_sql(f"ANALYZE {SCHEMA}.memories")
        claims = read_queries()[: args.claims]
        exact = _exact(vectors, embedder.embed(claims), CONDITION)
        config = vector_alone(shapes()["semantic"])
        with HybridRetriever.from_store(store, config=config) as retriever:
            measured = _measured(retriever, claims, CONDITION, exact, rows, args.passes)
    finally:
        store.forget(tenant_id=OTHER, everything=True)
        with bench.engine.begin() as connection:
            connection.exec_driver_sql(f"ANALYZE {SCHEMA}.memories")
    print(measured, flush=True)
    write_result("filter-skew", {"claims": args.claims, "passes": args.passes, **measured}, args)


if __name__ == "__main__":
    main()
