"""What each ranking rule costs a ``retrieve()`` call: the defaults against the defaults with one
rule undone, paired claim by claim on the 100,000-memory benchmark.

On the data ``retrieve.py`` loads (``--data-dir``; schema ``bench_one``: one tenant with
100,000 memories, 100,000 decisions and 100,000 tool calls), one retriever per configuration
asks each SciFact claim in turn (the order alternating), after a warm pass; per configuration
the p50 of ``retrieve()``, of its statement and of its ranking over ``--passes`` passes.
Configurations: the defaults; ``newer_versions_first`` off; ``fallback_results`` 0; and the
episodic rule before two words of a long query were enough (half of its keywords, patched into
the plan for that retriever's calls).

Usage: python benchmarks/reading/rule_costs.py --data-dir DIR [--queries 150] [--passes 3]
       [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, write_result
from _scifact import AS_OF, ONE, TENANT, read_queries


def half_the_keywords(keywords: int, share: float) -> int:
    """The episodic rule before "several": half of the keywords, rounded up, at least one."""
    return max(1, math.ceil(share * keywords - 1e-9))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="retrieve.py's data")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--passes", type=int, default=3)
    add_output(parser)
    args = parser.parse_args()

    from retrieval.db.embedded import start_embedded
    from retrieval.db.engine import make_engine
    from retrieval.embedding.models import SentenceTransformerEmbedder
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever
    from retrieval.search.sources.episodic import plan as episodic_plan

    server = start_embedded(args.data_dir)
    store = MemoryStore(make_engine(server.url()), schema=ONE.schema,
                        embedder=SentenceTransformerEmbedder())  # fmt: skip
    defaults = RetrievalConfig(record_access=False)
    rule = episodic_plan.min_keyword_hits
    variants: dict[str, tuple[Any, Callable[[int, float], int]]] = {
        "defaults": (defaults, rule),
        "newer_versions_first off": (replace(defaults, newer_versions_first=False), rule),
        "fallback_results 0": (replace(defaults, fallback_results=0), rule),
        "episodic: half the keywords": (defaults, half_the_keywords),
    }
    retrievers = {name: HybridRetriever.from_store(store, config=config)
                  for name, (config, _) in variants.items()}  # fmt: skip

    def ask(name: str, query: str) -> Any:
        episodic_plan.min_keyword_hits = variants[name][1]  # type: ignore[assignment]
        try:
            return retrievers[name].retrieve(query, tenant_id=TENANT, as_of=AS_OF)
        finally:
            episodic_plan.min_keyword_hits = rule

    queries = read_queries()[: args.queries]
    for query in queries:  # warm: query vectors, plans, connections
        for name in retrievers:
            ask(name, query)
    times: dict[str, dict[str, list[float]]] = {
        name: {"total": [], "sql": [], "ranking": []} for name in retrievers
    }
    for number in range(args.passes):
        for index, query in enumerate(queries):
            names = list(retrievers)
            for name in names if (index + number) % 2 == 0 else names[::-1]:
                began = time.perf_counter()
                response = ask(name, query)
                times[name]["total"].append((time.perf_counter() - began) * 1000)
                times[name]["sql"].append(response.diagnostics.sql_ms)
                times[name]["ranking"].append(response.diagnostics.fusion_ms)
    results: dict[str, Any] = {"queries": len(queries), "passes": args.passes}
    for name, found in times.items():
        results[name] = {f"{part}_p50_ms": round(statistics.median(values), 3)
                         for part, values in found.items()}  # fmt: skip
    base = results["defaults"]["total_p50_ms"]
    for name in retrievers:
        results[name]["defaults_over_it"] = round(base / results[name]["total_p50_ms"], 3)
    write_result("rule-costs", results, args)
    for retriever in retrievers.values():
        retriever.close()


if __name__ == "__main__":
    main()
