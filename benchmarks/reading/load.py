"""Reads under write load: N writer processes and M reader threads for a bounded time.

One tenant is seeded with SciFact title memories (noisy copies of their all-MiniLM-L6-v2
vectors, as in ``retrieve.py``). Each run has two phases of ``--seconds``:

1. idle: M reader threads share one ``HybridRetriever`` (as a service shares it) and ask the
   SciFact test claims (query vectors cached first) on that tenant, all sources on;
2. load: the same readers while N writer processes store batches of memories with precomputed
   vectors into the same tenant (``remember_many``, each batch tagged with its writer and
   number), and record a decision with a tool call after each batch.

Reported per run and as the median over runs: read p50 / p95 idle and under load and their
ratio, reads per second, rows each writer reported committed against the rows present in the
database afterwards (they must be equal), rows per second written, and every error by type.

Usage: python benchmarks/reading/load.py [--writers 2] [--readers 4] [--seconds 20] [--runs 3]
       [--seed-rows 20000] [--batch 200] [--data-dir DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import add_output, percentiles, write_result
from _scifact import AS_OF, TENANT, load_corpus, noisy_copies

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.errors import RetrievalError
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

SCHEMA = "bench_load"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=2, help="writer processes")
    parser.add_argument("--readers", type=int, default=4, help="reader threads")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed-rows", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=200, help="memories per writer batch")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, help="keep the server's data here")
    add_output(parser)
    args = parser.parse_args()

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-load-")) / "pg"
    config = DatabaseConfig(data_dir=data_dir, schema=SCHEMA)
    database = connect(config)
    upgrade(database.engine, MigrationSettings.from_config(config))
    database.dispose()
    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, data_dir.parent / "scifact-title-vectors.npy")
    store = MemoryStore.from_database(database, embedder=embedder)
    seed(store, corpus.titles, corpus.vectors, args.seed_rows)
    np.save(data_dir.parent / "writer-vectors.npy", corpus.vectors)

    results: dict[str, Any] = {
        "settings": {k: str(v) for k, v in vars(args).items()},
        "runs": [],
    }
    queries = corpus.queries[: args.queries]
    retriever = HybridRetriever.from_store(
        store, config=RetrievalConfig(record_access=False), max_connections=args.readers
    )
    for query in queries:  # cache every query vector (and warm the connections)
        retriever.retrieve(query, tenant_id=TENANT, as_of=AS_OF)
    for run in range(args.runs):
        idle = read_phase(retriever, queries, args.readers, args.seconds)
        first_batch = run * 1_000_000
        writers = start_writers(data_dir, args.writers, args.batch, args.seconds, first_batch)
        loaded = read_phase(retriever, queries, args.readers, args.seconds)
        written = [queue_result for queue_result in finish_writers(writers)]
        present = rows_by_writer(store, first_batch)
        outcome = {
            "idle": idle,
            "load": loaded,
            "p50_ratio": loaded["p50_ms"] / idle["p50_ms"],
            "p95_ratio": loaded["p95_ms"] / idle["p95_ms"],
            "writers": written,
            "rows_reported": sum(w["rows"] for w in written),
            "rows_present": sum(present.values()),
            "rows_per_second": sum(w["rows"] for w in written) / args.seconds,
            "write_errors": dict(sum((Counter(w["errors"]) for w in written), Counter())),
        }
        results["runs"].append(outcome)
        print(json.dumps({"run": run, **_brief(outcome)}), flush=True)
    retriever.close()
    runs = results["runs"]
    results["median"] = {
        key: statistics.median(r[key] for r in runs)
        for key in ("p50_ratio", "p95_ratio", "rows_per_second")
    } | {
        "idle_p50_ms": statistics.median(r["idle"]["p50_ms"] for r in runs),
        "idle_p95_ms": statistics.median(r["idle"]["p95_ms"] for r in runs),
        "load_p50_ms": statistics.median(r["load"]["p50_ms"] for r in runs),
        "load_p95_ms": statistics.median(r["load"]["p95_ms"] for r in runs),
        "rows_missing": sum(r["rows_reported"] - r["rows_present"] for r in runs),
        "read_errors": sum(r["idle"]["errors"] + r["load"]["errors"] for r in runs),
        "write_errors": sum(sum(r["write_errors"].values()) for r in runs),
    }
    write_result("load", results, args)
    database.dispose()


def seed(store: MemoryStore, titles: list[str], vectors: np.ndarray, rows: int) -> None:
    with store.engine.connect() as connection:
        have = connection.execute(
            text(f"SELECT count(*) FROM {SCHEMA}.memories WHERE metadata->>'writer' IS NULL")
        ).scalar_one()
    if have >= rows:
        return
    copies = noisy_copies(vectors, rows, np.random.default_rng(7))
    for start in range(0, rows, 5000):
        store.remember_many(
            {
                "text": f"{titles[i % len(titles)]} (note {i})",
                "tenant_id": TENANT,
                "embedding": copies[i],
                "created_at": AS_OF,
            }
            for i in range(start, min(rows, start + 5000))
        )
    print(f"seeded {rows} memories", flush=True)


def read_phase(
    retriever: HybridRetriever, queries: list[str], readers: int, seconds: float
) -> dict[str, Any]:
    """``readers`` threads asking ``queries`` in turn until ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    times: list[float] = []
    errors: Counter[str] = Counter()
    lock = threading.Lock()

    def read(offset: int) -> None:
        own: list[float] = []
        i = offset
        while time.monotonic() < deadline:
            query = queries[i % len(queries)]
            i += readers
            started = time.perf_counter()
            try:
                retriever.retrieve(query, tenant_id=TENANT, as_of=AS_OF)
            except RetrievalError as error:
                with lock:
                    errors[type(error).__name__] += 1
                continue
            own.append((time.perf_counter() - started) * 1000)
        with lock:
            times.extend(own)

    threads = [threading.Thread(target=read, args=(n,)) for n in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spread = percentiles(times)
    return {
        "reads": len(times),
        "reads_per_second": len(times) / seconds,
        "p50_ms": spread["p50"],
        "p95_ms": spread["p95"],
        "errors": sum(errors.values()),
        "error_types": dict(errors),
    }


def start_writers(
    data_dir: Path, writers: int, batch: int, seconds: float, first_batch: int
) -> list[tuple[multiprocessing.Process, Any]]:
    """Start the writer processes and return once each is connected and waiting; they write
    for ``seconds`` from then."""
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    started = []
    for writer in range(writers):
        queue = context.Queue()
        process = context.Process(
            target=write,
            args=(str(data_dir), writer, batch, seconds, first_batch, queue, go),
        )
        process.start()
        started.append((process, queue))
    for _, queue in started:
        assert queue.get(timeout=300) == "ready"
    go.set()
    return started


def finish_writers(writers: list[tuple[multiprocessing.Process, Any]]) -> list[dict[str, Any]]:
    results = []
    for process, queue in writers:
        results.append(queue.get(timeout=600))
        process.join(60)
    return results


def write(
    data_dir: str,
    writer: int,
    batch: int,
    seconds: float,
    first_batch: int,
    queue: Any,
    go: Any,
) -> None:
    """One writer process: batches of memories and a decision with a tool call after each."""
    config = DatabaseConfig(data_dir=Path(data_dir), schema=SCHEMA)
    database = connect(config)
    store = MemoryStore.from_database(database)
    vectors = np.load(Path(data_dir).parent / "writer-vectors.npy")
    rng = np.random.default_rng(first_batch + writer)
    rows, errors = 0, Counter[str]()
    queue.put("ready")
    go.wait()
    deadline = time.monotonic() + seconds
    number = first_batch
    while time.monotonic() < deadline:
        picks = rng.integers(0, len(vectors), batch)
        noisy = vectors[picks] + rng.normal(0, 0.02, (batch, vectors.shape[1])).astype(np.float32)
        items = [
            {
                "text": f"writer {writer} batch {number} row {row}",
                "tenant_id": TENANT,
                "metadata": {"writer": writer, "batch": number},
                "embedding": noisy[row],
            }
            for row in range(batch)
        ]
        try:
            store.remember_many(items)
            rows += batch
            decision = store.record_decision(
                tenant_id=TENANT,
                task_id=f"writer-{writer}",
                action_type="write",
                content=f"Stored batch {number} of writer {writer}",
                status="done",
            )
            store.record_tool_call(
                tenant_id=TENANT,
                decision_id=decision,
                tool_name="remember_many",
                params={"rows": batch},
                result="ok",
            )
        except RetrievalError as error:
            errors[type(error).__name__] += 1
        number += 1
    database.dispose()
    queue.put({"writer": writer, "rows": rows, "batches": number - first_batch, "errors": errors})


def rows_by_writer(store: MemoryStore, first_batch: int) -> dict[int, int]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            text(
                f"SELECT (metadata->>'writer')::int, count(*) FROM {SCHEMA}.memories "
                "WHERE metadata ? 'writer' AND (metadata->>'batch')::bigint >= :first "
                "AND (metadata->>'batch')::bigint < :last GROUP BY 1"
            ),
            {"first": first_batch, "last": first_batch + 1_000_000},
        )
        return {int(writer): int(count) for writer, count in rows}


def _brief(outcome: dict[str, Any]) -> dict[str, Any]:
    return {
        "idle_p50_ms": round(outcome["idle"]["p50_ms"], 2),
        "load_p50_ms": round(outcome["load"]["p50_ms"], 2),
        "load_p95_ms": round(outcome["load"]["p95_ms"], 2),
        "rows_reported": outcome["rows_reported"],
        "rows_present": outcome["rows_present"],
        "write_errors": outcome["write_errors"],
        "read_errors": outcome["idle"]["errors"] + outcome["load"]["errors"],
    }


if __name__ == "__main__":
    main()
