"""The read path on the embedded server with different ``shared_buffers``, in alternating rounds.

Each round starts the embedded server afresh with one ``shared_buffers`` (a child process of
this script is the server's only user, so the server stops when it exits and the next round
starts it with the next size), asks every SciFact test claim once to warm the server and the
query-vector cache, then times one ``retrieve()`` call per claim: all sources, the semantic
source alone and the episodic source alone on the data of ``retrieve.py`` (schema
``bench_one``), and the documents source on the 100,000 chunks of ``documents.py`` (schema
``bench_docs``, when loaded). Sizes alternate round by round, so the machine's drift hits
every size alike; the summary gives each size's median over rounds of the p50 and p95.

Usage: python benchmarks/reading/embedded_memory.py --data-dir DIR [--sizes 128MB,2048MB]
       [--rounds 3] [--queries 300] [--json PATH]
``DIR`` holds the data loaded by ``retrieve.py`` (and ``documents.py``) with ``--data-dir``;
no other process may be using its server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, timed_ms, write_result

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the benchmarks' data")
    parser.add_argument("--sizes", default="128MB,2048MB", help="shared_buffers, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every size")
    parser.add_argument("--queries", type=int, default=300, help="claims per shape")
    add_output(parser)
    parser.add_argument("--round", help=argparse.SUPPRESS)  # internal: one round of one size
    args = parser.parse_args()
    if args.round:
        print(json.dumps(one_round(args.data_dir, args.round, args.queries)))
        return

    sizes = args.sizes.split(",")
    rounds: dict[str, list[dict[str, Any]]] = {size: [] for size in sizes}
    for number in range(args.rounds):
        for size in sizes if number % 2 == 0 else reversed(sizes):
            command = [sys.executable, __file__, "--data-dir", str(args.data_dir)]
            result = subprocess.run(
                [*command, "--round", size, "--queries", str(args.queries)],
                cwd=HERE,
                check=True,
                capture_output=True,
                text=True,
            )
            measured = json.loads(result.stdout.strip().splitlines()[-1])
            rounds[size].append(measured)
            print(f"round {number + 1} {size}: {measured}", flush=True)
    summary = {
        size: {
            shape: {
                "p50_ms": statistics.median(r[shape]["p50_ms"] for r in runs),
                "p95_ms": statistics.median(r[shape]["p95_ms"] for r in runs),
            }
            for shape in runs[0]
            if shape != "shared_buffers"
        }
        for size, runs in rounds.items()
    }
    report = {
        "settings": {"sizes": sizes, "rounds": args.rounds, "queries": args.queries},
        "rounds": rounds,
        "summary": summary,
    }
    write_result("embedded-memory", report, args)


def one_round(data_dir: Path, size: str, queries: int) -> dict[str, Any]:
    """One server start with ``shared_buffers = size`` and the timed shapes."""
    from _scifact import (
        AS_OF,
        DOCUMENTS,
        ONE,
        TENANT,
        documents_only,
        read_queries,
        shapes,
        stored_chunks,
    )
    from _server import embedded

    from retrieval.embedding.models import SentenceTransformerEmbedder
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    bench = embedded(data_dir, shared_buffers=size)
    if bench.server.reused:
        raise SystemExit(f"another process uses the server in {data_dir}: stop it first")
    engine = bench.engine
    claims = read_queries()[:queries]
    embedder = SentenceTransformerEmbedder()
    configs = shapes()
    timed: list[tuple[str, str, RetrievalConfig, Any]] = [
        (name, ONE.schema, configs[name], AS_OF) for name in ("all sources", "semantic", "episodic")
    ]
    if stored_chunks(engine):
        timed.append(("documents", DOCUMENTS.schema, documents_only(), None))
    measured: dict[str, Any] = {"shared_buffers": size}
    for name, schema, config, as_of in timed:
        store = MemoryStore(engine, schema=schema, embedder=embedder)
        retriever = HybridRetriever.from_store(store, config=config)
        for claim in claims:  # warm: query vectors cached, pages read once
            retriever.retrieve(claim, tenant_id=TENANT, as_of=as_of)
        times = []
        for claim in claims:
            times.append(timed_ms(retriever.retrieve, claim, tenant_id=TENANT, as_of=as_of)[1])
        retriever.close()
        times.sort()
        measured[name] = {
            "p50_ms": round(statistics.median(times), 3),
            "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 3),
        }
    engine.dispose()
    return measured


def cpus() -> int:
    from _common import cpus

    return cpus()


if __name__ == "__main__":
    main()
