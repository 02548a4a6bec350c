"""Metadata filters in a table that another tenant fills: their time and recall.

A value rare in the tenant asked and common in the other, and a value half the tenant holds
that is a quarter of the table. PostgreSQL prices a filter from the table's statistics, not
the tenant's. On ``filters.py``'s tenant (``--data-dir``: run ``filters.py`` first; 100,000
memories, user ``u<N mod 1000>``, team ``t<N mod 2>``), another tenant of as many memories,
every one of user ``u7`` and team ``t9`` in the namespace ``("teams", "t1", "users", "u7")``,
is stored for the run; then, for ``--claims`` SciFact claims, ``retrieve(..., limit=10)`` on the
first tenant, the vector channel alone, with each of :data:`CONDITIONS`: ``{"user": "u7"}`` and
``{"user": {"$in": ["u7"]}}`` (0.1% of the tenant's rows meet it; half of the table's do),
``{"team": "t0"}`` and ``{"team": {"$in": ["t0"]}}`` (half of the tenant's rows, a quarter of
the table's), and that namespace (the user's 0.1%; half of the table's rows lie in it): p50,
the share of full answers, and recall@10 against the exact nearest rows that meet it. The
other tenant is forgotten after. With the library of another revision on ``PYTHONPATH``, the
same for that revision (docs/decisions/0063: an equality priced by the table's statistics
walked the graph here and lost a fifth of its top 10).

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
CONDITIONS: dict[str, dict[str, Any]] = {
    "rare in the tenant, common in the table": {"filter": {"user": "u7"}},
    "the same by $in": {"filter": {"user": {"$in": ["u7"]}}},
    "half the tenant, a quarter of the table": {"filter": {"team": "t0"}},
    "half the tenant by $in": {"filter": {"team": {"$in": ["t0"]}}},
    "the rare user's namespace": {"namespace": ("teams", "t1", "users", "u7")},
}


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
                            metadata={"user": "u7", "team": "t9", "score": 5},
                            namespace=("teams", "t1", "users", "u7"))
                for row in range(start, min(start + 5000, len(vectors)))
            )  # fmt: skip
        with bench.engine.begin() as connection:
            connection.exec_driver_sql(f"ANALYZE {SCHEMA}.memories")
        claims = read_queries()[: args.claims]
        queries = embedder.embed(claims)
        config = vector_alone(shapes()["semantic"])
        measured: dict[str, Any] = {}
        with HybridRetriever.from_store(store, config=config) as retriever:
            for name, options in CONDITIONS.items():
                exact = _exact(vectors, queries, options)
                measured[name] = _measured(retriever, claims, options, exact, rows, args.passes)
                print(name, measured[name], flush=True)
    finally:
        store.forget(tenant_id=OTHER, everything=True)
        with bench.engine.begin() as connection:
            connection.exec_driver_sql(f"ANALYZE {SCHEMA}.memories")
    write_result("filter-skew", {"claims": args.claims, "passes": args.passes, **measured}, args)


if __name__ == "__main__":
    main()
