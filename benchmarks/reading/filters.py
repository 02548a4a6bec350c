"""Metadata filters and namespaces at 100,000 memories: what a selective and an unselective
filter or namespace cost, and whether such a call still gets its full top 10 of the rows that
meet it.

One tenant of ``--rows`` memories (SciFact sentences' vectors and their noisy copies, as the
peers' data; texts "note N"), each with metadata ``{"user": "u<N mod 1000>", "team":
"t<N mod 2>", "score": N mod 100}`` and the namespace ``("teams", "t<N mod 2>", "users",
"u<N mod 1000>")``. For 100 SciFact claims, ``retrieve(..., limit=10)`` with the vector channel
alone (``_scifact.vector_alone``, the peers' setting), for each call:

* no filter;
* selective: ``{"user": "u7"}`` (0.1% of the rows), by containment;
* comparisons: ``{"user": {"$lt": "u1"}}`` (0.1%: ``"u0"`` alone), ``{"score": {"$lt": 1}}``
  (1%), ``{"score": {"$lt": 10}}`` (10%) and ``{"score": {"$gte": 50}}`` (50%);
* unselective: ``{"team": "t0"}`` (50%);
* selective, grouped: ``{"$or": [{"user": "u7"}, {"user": "u8"}]}`` (0.2%), and
  ``{"team": "t0", "$not": {"user": "u8"}}`` (50% less 0.1%);
* ``$in`` of two users (``["u7", "u8"]``, 0.2%);
* the operators no index answers, on few rows: ``$contains`` (``"u777"`` in the user, 0.1%)
  and ``$nin`` (every user but ``u999``, 0.1%);
* each other operator, on many rows: ``$in`` (``["t0"]``, 50%), ``$nin`` (``["t1"]``, 50%),
  ``$ne`` (``"u7"``, 99.9%), ``$exists`` (100%), ``$contains`` (``"0"`` in the team, 50%);
* a selective namespace, ``("teams", "t1", "users", "u7")`` (0.1%);
* an unselective namespace, ``("teams", "t0")`` (50%).

Reported per call: p50 and p95 of each claim's median over ``--passes`` timed passes (one
warm-up pass first), the share of calls that returned 10 results, and recall@10 against the
exact nearest rows that meet the filter (numpy). The calls are run without and then with the
GIN indexes of revision 0017 on ``(tenant_id, metadata jsonb_path_ops)`` and of revision 0018
on ``(tenant_id, namespace)`` (btree_gin), dropped for the first run and made again. Last, what
the indexes cost writes: ``--write-rows`` memories
with their vectors and metadata stored in batches of 1,000 into a tenant of their own, with and
without the index in turn (``--passes`` times each), rows per second.

Usage: python benchmarks/reading/filters.py [--data-dir DIR] [--rows N] [--passes P]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, percentiles, timed_ms, write_result
from _scifact import (
    AS_OF,
    cached_vectors,
    memory_vectors,
    read_queries,
    scifact_sentences,
    shapes,
    vector_alone,
)
from _server import add_data_dir, embedded
from sqlalchemy import text

from retrieval.db.migrate import MigrationSettings
from retrieval.db.vector_index import build_vector_index, drop_vector_index
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

SCHEMA = "filters"
TENANT = "filtered"
CLAIMS = 100
# Each call's options of retrieve().
FILTERS: dict[str, dict[str, Any]] = {
    "none": {},
    "selective (0.1%, containment)": {"filter": {"user": "u7"}},
    "selective (0.1%, comparison)": {"filter": {"user": {"$lt": "u1"}}},
    "selective (1%, comparison)": {"filter": {"score": {"$lt": 1}}},
    "comparison (10%)": {"filter": {"score": {"$lt": 10}}},
    "unselective comparison (50%)": {"filter": {"score": {"$gte": 50}}},
    "unselective (50%)": {"filter": {"team": "t0"}},
    "selective $or (0.2%)": {"filter": {"$or": [{"user": "u7"}, {"user": "u8"}]}},
    "selective $not (50% - 0.1%)": {"filter": {"team": "t0", "$not": {"user": "u8"}}},
    "$in, selective (0.2%)": {"filter": {"user": {"$in": ["u7", "u8"]}}},
    "$contains, selective (0.1%)": {"filter": {"user": {"$contains": "u777"}}},
    "$nin, selective (0.1%)": {"filter": {"user": {"$nin": [f"u{n}" for n in range(999)]}}},
    "$in (50%)": {"filter": {"team": {"$in": ["t0"]}}},
    "$nin (50%)": {"filter": {"team": {"$nin": ["t1"]}}},
    "$ne (99.9%)": {"filter": {"user": {"$ne": "u7"}}},
    "$exists (100%)": {"filter": {"team": {"$exists": True}}},
    "$contains (50%)": {"filter": {"team": {"$contains": "0"}}},
    "namespace, selective (0.1%)": {"namespace": ("teams", "t1", "users", "u7")},
    "namespace, unselective (50%)": {"namespace": ("teams", "t0")},
}
# Revision 0017's index and revision 0018's.
INDEXES = {
    "memories_metadata_idx": "(tenant_id, metadata jsonb_path_ops)",
    "memories_namespace_idx": "(tenant_id, namespace)",
}


_OPERATORS: dict[str, Any] = {
    "$lt": lambda held, given: held < given,
    "$gte": lambda held, given: held >= given,
    "$in": lambda held, given: held in given,
    "$nin": lambda held, given: held not in given,
    "$ne": lambda held, given: held != given,
    "$exists": lambda held, given: given,  # every row holds every key
    "$contains": lambda held, given: given in held,
}


def metadata_of(row: int) -> dict[str, Any]:
    """The metadata of row ``row``."""
    return {"user": f"u{row % 1000}", "team": f"t{row % 2}", "score": row % 100}


def namespace_of(row: int) -> tuple[str, ...]:
    """The namespace of row ``row``."""
    return ("teams", f"t{row % 2}", "users", f"u{row % 1000}")


def meets(row: int, options: dict[str, Any]) -> bool:
    """Whether row ``row`` meets one of :data:`FILTERS` (as the statement decides it)."""
    if "namespace" in options:
        prefix = options["namespace"]
        return namespace_of(row)[: len(prefix)] == prefix
    return _meets(metadata_of(row), options.get("filter") or {})


def _meets(meta: dict[str, Any], condition: dict[str, Any]) -> bool:
    # The filters of FILTERS as the statement reads them: equality, $or, $not, and one
    # operator on a key ($lt, $gte, $in, $nin, $ne, $exists, $contains).
    for key, value in condition.items():
        if key == "$or":
            held = any(_meets(meta, part) for part in value)
        elif key == "$not":
            held = not _meets(meta, value)
        elif isinstance(value, dict):
            [(operator, operand)] = value.items()
            held = _OPERATORS[operator](meta[key], operand)
        else:
            held = meta[key] == value
        if not held:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    parser.add_argument("--rows", type=int, default=100_000, help="memories in the tenant")
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the claims")
    parser.add_argument("--write-rows", type=int, default=20_000, help="rows of the write test")
    add_output(parser)
    args = parser.parse_args()

    bench, embedder, store, vectors, rows = filtered_tenant(args.data_dir, args.rows)
    claims = read_queries()[:CLAIMS]
    claim_vectors = embedder.embed(claims)
    exact = {name: _exact(vectors, claim_vectors, options) for name, options in FILTERS.items()}
    config = vector_alone(shapes()["semantic"])
    results: dict[str, Any] = {"rows": args.rows, "claims": len(claims), "passes": args.passes}
    for indexed in (False, True):
        _index(bench.engine, indexed)
        with HybridRetriever.from_store(store, config=config) as retriever:
            results["with GIN indexes" if indexed else "without GIN indexes"] = {
                name: _measured(retriever, claims, options, exact[name], rows, args.passes)
                for name, options in FILTERS.items()
            }
    results["writes"] = _writes(bench.engine, store, vectors[: args.write_rows], args.passes)
    _index(bench.engine, True)
    write_result("filters", results, args)


def filtered_tenant(
    data_dir: Path | None, count: int
) -> tuple[Any, SentenceTransformerEmbedder, MemoryStore, np.ndarray, dict[int, int]]:
    """The benchmark's server (in ``data_dir``) and its tenant of ``count`` memories, loaded
    once: the server, the embedder, the store, the memories' vectors and their ids by row."""
    bench = embedded(data_dir, MigrationSettings(schema=SCHEMA, embedding_dim=384))
    embedder = SentenceTransformerEmbedder()
    base = cached_vectors(
        embedder, scifact_sentences(44_790), bench.data_dir.parent / "scifact-sentence-vectors.npy"
    )
    vectors = memory_vectors(base, count)
    store = MemoryStore(bench.engine, schema=SCHEMA, embedder=embedder)
    return bench, embedder, store, vectors, _load(bench.engine, store, vectors)


def _writes(engine: Any, store: MemoryStore, vectors: np.ndarray, passes: int) -> dict[str, Any]:
    # Rows per second of a batch load into a tenant of its own, with and without the index.
    rates: dict[str, list[float]] = {"with GIN indexes": [], "without GIN indexes": []}
    for run in range(passes):
        for indexed in (True, False) if run % 2 == 0 else (False, True):
            store.forget(tenant_id="writes", everything=True)
            _index(engine, indexed)
            began = time.perf_counter()
            for start in range(0, len(vectors), 1000):
                store.remember_many(
                    MemoryInput(
                        text=f"write {row}", tenant_id="writes", embedding=vectors[row],
                        metadata=metadata_of(row), namespace=namespace_of(row), created_at=AS_OF,
                    )
                    for row in range(start, min(start + 1000, len(vectors)))
                )  # fmt: skip
            rates["with GIN indexes" if indexed else "without GIN indexes"].append(
                len(vectors) / (time.perf_counter() - began)
            )
    store.forget(tenant_id="writes", everything=True)
    medians = {name: statistics.median(runs) for name, runs in rates.items()}
    return {
        "rows": len(vectors),
        "rows_per_s": {name: round(value) for name, value in medians.items()},
        "ratio": round(medians["with GIN indexes"] / medians["without GIN indexes"], 3),
        "runs": {name: [round(r) for r in runs] for name, runs in rates.items()},
    }


def _load(engine: Any, store: MemoryStore, vectors: np.ndarray) -> dict[int, int]:
    # The tenant's rows, loaded once (the data directory keeps them); their ids by row.
    with engine.connect() as connection:
        have = connection.execute(
            text(f"SELECT count(*) FROM {SCHEMA}.memories WHERE tenant_id = :t "
                 "AND namespace <> '{}'"), {"t": TENANT}
        ).scalar_one()  # fmt: skip
    if have != len(vectors):
        store.forget(tenant_id=TENANT, everything=True)
        drop_vector_index(engine, SCHEMA)
        started = time.perf_counter()
        for start in range(0, len(vectors), 5000):
            store.remember_many(
                MemoryInput(
                    text=f"note {row}", tenant_id=TENANT, embedding=vectors[row],
                    metadata=metadata_of(row), namespace=namespace_of(row), created_at=AS_OF,
                )
                for row in range(start, min(start + 5000, len(vectors)))
            )  # fmt: skip
        build_vector_index(engine, SCHEMA)
        print(f"loaded {len(vectors)} memories in {time.perf_counter() - started:.0f} s")
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"VACUUM ANALYZE {SCHEMA}.memories"))
        found = connection.execute(
            text(f"SELECT id, content FROM {SCHEMA}.memories WHERE tenant_id = :t"), {"t": TENANT}
        ).all()
    return {int(memory_id): int(content.split()[1]) for memory_id, content in found}


def _exact(vectors: np.ndarray, queries: np.ndarray, options: dict[str, Any]) -> list[set[int]]:
    # Each claim's 10 nearest rows that meet the condition.
    mine = np.array([row for row in range(len(vectors)) if meets(row, options)])
    scores = queries @ vectors[mine].T
    return [set(mine[np.argsort(-row, kind="stable")[:10]].tolist()) for row in scores]


def _index(engine: Any, present: bool) -> None:
    # The GIN indexes on the tenant and the metadata or the namespace, made or dropped.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        for name, columns in INDEXES.items():
            if present:
                connection.execute(text(
                    f"CREATE INDEX IF NOT EXISTS {name} ON {SCHEMA}.memories USING gin {columns}"
                ))  # fmt: skip
            else:
                connection.execute(text(f"DROP INDEX IF EXISTS {SCHEMA}.{name}"))
        if present:
            connection.execute(text(f"ANALYZE {SCHEMA}.memories"))


def _measured(
    retriever: HybridRetriever,
    claims: list[str],
    options: dict[str, Any],
    exact: list[set[int]],
    rows: dict[int, int],
    passes: int,
) -> dict[str, Any]:
    # p50 / p95 of each claim's median time, the share of full answers, recall@10.
    def call(index: int) -> list[int]:
        asked = claims[index]
        found = retriever.retrieve(asked, tenant_id=TENANT, as_of=AS_OF, limit=10, **options)
        return [rows[r.metadata["id"]] for r in found]

    found = [call(index) for index in range(len(claims))]  # the warm-up pass
    times: list[list[float]] = [[] for _ in claims]
    for _ in range(passes):
        for index in range(len(claims)):
            times[index].append(timed_ms(call, index)[1])
    summary = percentiles([statistics.median(claim) for claim in times])
    overlap = [len(set(ids) & want) / 10 for ids, want in zip(found, exact, strict=True)]
    return {
        "p50_ms": round(summary["p50"], 2),
        "p95_ms": round(summary["p95"], 2),
        "full_top_10": round(sum(len(ids) == 10 for ids in found) / len(found), 3),
        "recall_at_10": round(statistics.mean(overlap), 3),
    }


if __name__ == "__main__":
    main()
