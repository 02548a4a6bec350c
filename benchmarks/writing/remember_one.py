"""One memory at a time, as an agent writes: ``MemoryStore.remember`` of a new memory, of a copy
of a live one (refreshed), and of a correction (``supersedes``), each with its vector given (so
the model is out of the timing), against the floor: a bare ``INSERT`` of the same row with
psycopg, in the same run.

Run it with two versions of the package, in turn, on the same machine and settings, to see what
a change of the write path costs (``PYTHONPATH=/path/to/other/checkout``: that checkout's
``retrieval``; ``--label`` names the run in the result).

Usage: python benchmarks/writing/remember_one.py [--writes 400] [--runs 5] [--label NAME]
       [--database-url URL] [--json PATH]
Without --database-url it runs on a throw-away embedded server.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common
from _common import add_output, summary_ms, timed_ms, write_result
from _server import add_database_url, reached
from sqlalchemy import text

import retrieval
from retrieval.db.migrate import MigrationSettings
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore

SETTINGS = MigrationSettings(schema="bench", embedding_dim=384)
FLOOR = (
    "INSERT INTO bench.memories (tenant_id, content, kind, metadata, created_at, "
    "embedding, embedding_model) VALUES (%s, %s, 'fact', '{}', now(), %s, 'bench') RETURNING id"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=400, help="writes timed per run and kind")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--label", default="", help="names the package version measured")
    add_database_url(parser)
    add_output(parser)
    args = parser.parse_args()
    engine = reached(args.database_url, SETTINGS).engine
    store = MemoryStore(engine, schema="bench", embedder=SentenceTransformerEmbedder())
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((args.writes * 2, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    timings: dict[str, list[float]] = {"new": [], "copy": [], "correction": [], "floor": []}
    for run in range(args.runs):
        with engine.begin() as connection:
            connection.execute(text("TRUNCATE bench.memories, bench.memory_entities"))
        tenant = f"t{run}"
        for name, write in _writes(store, engine, tenant, vectors, args.writes).items():
            timings[name].append(_median_ms(write, args.writes))
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.3f} ms" for k, v in timings.items()))
    results: dict[str, Any] = {
        name: {"median_of_runs_ms": statistics.median(values), "runs_ms": values}
        for name, values in timings.items()
    }
    floor = results["floor"]["median_of_runs_ms"]
    for name in ("new", "copy", "correction"):
        results[name]["x_floor"] = results[name]["median_of_runs_ms"] / floor
    results["package"] = str(Path(retrieval.__file__).parent)
    write_result("remember-one", results, args, variant=args.label or None)


def _writes(
    store: MemoryStore, engine: Any, tenant: str, vectors: np.ndarray, count: int
) -> dict[str, Callable[[int], object]]:
    """Each kind of write, called with the write's number; ``count`` notes stored first (not
    timed) for the copies and the corrections to name."""
    ids = [
        store.remember(f"Note {i} of {tenant}.", tenant_id=tenant, embedding=vectors[i])
        for i in range(count)
    ]

    def new(i: int) -> object:  # another tenant's, from an empty one each run
        return store.remember(f"Fresh {i}.", tenant_id=f"{tenant}-new", embedding=vectors[i])

    def copy(i: int) -> object:  # note i told again, in other whitespace: refreshed
        return store.remember(f"Note  {i} of {tenant}. ", tenant_id=tenant, embedding=vectors[i])

    def correction(i: int) -> object:
        return store.remember(
            f"Note {i} of {tenant}, corrected.",
            tenant_id=tenant,
            embedding=vectors[count + i],
            supersedes=ids[i],
        )

    raw = engine.raw_connection()

    def floor(i: int) -> object:
        with raw.cursor() as cursor:
            cursor.execute(FLOOR, (tenant, f"Floor {i}.", vectors[count + i]))
            found = cursor.fetchone()
        raw.commit()
        return found

    return {"new": new, "copy": copy, "correction": correction, "floor": floor}


def _median_ms(write: Callable[[int], object], count: int) -> float:
    times = []
    for i in range(count):
        times.append(timed_ms(write, i)[1])
    return summary_ms(times)["p50_ms"]


if __name__ == "__main__":
    main()
