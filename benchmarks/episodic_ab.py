"""Before/after of the episodic source's SQL: this checkout's CTEs against another revision's.

Loads ``retrieval/sources/episodic.py`` as it is at ``--against`` (a git revision), builds the
episodic-only statement with each version's CTEs through the retriever's own statement builder,
and runs both on the SciFact claims interleaved, claim by claim (each one's fastest of
``--repeat``), on ``retrieve.py``'s benchmark data (schema ``bench_one``, loaded there first).
Checks that both return the same rows and evidence for every claim, and prints p50 / p95 / mean.
Interleaving matters on this machine: separate runs differ by about 20%.

Usage: python benchmarks/episodic_ab.py --data-dir DIR --against REV [--queries 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from documents import read_queries
from retrieve import AS_OF, ONE, TENANT

from retrieval import retriever, scoring
from retrieval.config import RetrievalConfig
from retrieval.db import make_engine
from retrieval.embedded import start_embedded
from retrieval.read_connections import ReadConnections

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "retrieval/sources/episodic.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="retrieve.py's data")
    parser.add_argument("--against", required=True, help="git revision to compare with")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    versions = {"before": _module_at(args.against), "after": None}
    statements = {}
    current = retriever.episodic_ctes
    for name, module in versions.items():
        retriever.episodic_ctes = module.episodic_ctes if module else current  # type: ignore[attr-defined]
        statements[name] = retriever.build_statement(
            ONE.schema, False, None, True, False, True, True, False
        )
    retriever.episodic_ctes = current

    server = start_embedded(args.data_dir)
    connections = ReadConnections(make_engine(server.url()))
    config = RetrievalConfig()
    times: dict[str, list[float]] = {name: [] for name in statements}
    same = 0
    for claim in read_queries()[: args.queries]:
        keywords = scoring.extract_keywords(claim)
        if not keywords:
            continue
        params = retriever._parameters(config, TENANT, None, keywords, AS_OF, None, ())
        params.update(retriever._mode_parameters(config.mode("semantic")))
        best = dict.fromkeys(statements, float("inf"))
        rows = {}
        for _ in range(args.repeat):
            for name, statement in statements.items():
                started = time.perf_counter()
                rows[name] = connections.execute(statement, params)
                best[name] = min(best[name], (time.perf_counter() - started) * 1000)
        same += rows["before"] == rows["after"]
        for name in statements:
            times[name].append(best[name])
    connections.close()
    print(
        json.dumps(
            {
                "against": args.against,
                "queries": len(times["after"]),
                "identical_results": same,
                **{
                    name: {
                        "p50_ms": statistics.median(values),
                        "p95_ms": sorted(values)[round(0.95 * (len(values) - 1))],
                        "mean_ms": statistics.mean(values),
                    }
                    for name, values in times.items()
                },
            },
            indent=2,
        )
    )


def _module_at(revision: str) -> ModuleType:
    text = subprocess.run(
        ["git", "show", f"{revision}:{SOURCE}"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="episodic-ab-")) / "episodic_before.py"
    path.write_bytes(text)
    spec = importlib.util.spec_from_file_location("episodic_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["episodic_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    main()
