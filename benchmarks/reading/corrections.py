"""What a read costs in a tenant where many memories are corrections of others.

A question that finds a memory a correction replaced finds the correction in its place
(docs/decisions/0073-a-correction-answers-what-its-fact-answered.md): the corrected memories
are candidates of both channels, and each found one brings its correction. This measures
``retrieve()`` on a tenant of ``--facts`` facts of which ``--corrected`` were each corrected
(``supersedes``), the first ``--again`` of those corrections corrected in turn (a chain of two,
which a question that finds the fact follows to its end), 100 questions asked ``--passes`` times
after a warm-up: p50, p95 and mean, and how many results a question returns and how many were
found through a corrected memory.

Another revision: run this script with ``PYTHONPATH=`` a worktree of it, on the same
``--data-dir`` (the tenant is stored once and read by both), alternately.

Usage: python benchmarks/reading/corrections.py --data-dir DIR [--facts 2000] [--corrected 1000]
       [--again 0] [--passes 3] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, summary_ms, write_result

SCHEMA = "corrections"
TENANT = "corrections"
SUBJECTS = ("server", "office", "team", "project", "budget", "client", "laptop", "meeting",
            "deploy", "invoice")  # fmt: skip
PLACES = ("Lisbon", "Porto", "Berlin", "Madrid", "Leeds", "Ghent", "Cork", "Brno", "Bath",
          "Turin")  # fmt: skip
QUESTIONS = tuple(f"Where is the {subject} in {place}?" for subject in SUBJECTS for place in PLACES)
STARTED = datetime(2026, 1, 1, tzinfo=UTC)


def store_tenant(store: Any, facts: int, corrected: int, again: int = 0) -> None:
    """The tenant's facts, then a correction of each of the first ``corrected`` a month later,
    then a correction of each of the first ``again`` corrections a month after that (seed 3);
    nothing when the tenant holds them already."""
    from retrieval.memory.records import MemoryInput

    if _count(store) == facts + corrected + again:
        return
    store.forget(tenant_id=TENANT, everything=True)
    rng = random.Random(3)
    ids = store.remember_many(
        MemoryInput(
            text=f"The {rng.choice(SUBJECTS)} number {n} is in {rng.choice(PLACES)} and costs "
            f"{rng.randint(1, 999)} euros.",
            tenant_id=TENANT,
            created_at=STARTED + timedelta(minutes=n),
        )
        for n in range(facts)
    )
    corrections = _correct(
        store, rng, ids[:corrected], 30, "Item {n} moved to {place} for {price} euros."
    )
    _correct(
        store, rng, corrections[:again], 60, "Item {n} moved again, to {place}, now {price} euros."
    )


def _correct(
    store: Any, rng: random.Random, replaced: Sequence[int], days: int, said: str
) -> list[int]:
    # A correction of each memory of ``replaced`` (in order), ``days`` after the facts began,
    # ``said`` with the item's number, a place and a price drawn from ``rng``; their ids.
    from retrieval.memory.records import MemoryInput

    return store.remember_many(
        MemoryInput(
            text=said.format(n=n, place=rng.choice(PLACES), price=rng.randint(1, 999)),
            tenant_id=TENANT,
            created_at=STARTED + timedelta(days=days, minutes=n),
            supersedes=[memory],
        )
        for n, memory in enumerate(replaced)
    )


def _count(store: Any) -> int:
    from sqlalchemy import text

    with store.engine.connect() as connection:
        return int(
            connection.execute(
                text(f"SELECT count(*) FROM {SCHEMA}.memories WHERE tenant_id = :t"),
                {"t": TENANT},
            ).scalar_one()
        )


def measure(store: Any, passes: int) -> dict[str, Any]:
    """``retrieve()``'s p50 and p95 over the questions, and what they return."""
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    times: list[float] = []
    returned: list[int] = []
    through: list[int] = []
    with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as reader:
        for question in QUESTIONS[:20]:
            reader.retrieve(question, tenant_id=TENANT)
        for _ in range(passes):
            for question in QUESTIONS:
                started = time.perf_counter()
                response = reader.retrieve(question, tenant_id=TENANT)
                times.append((time.perf_counter() - started) * 1000)
                returned.append(len(response.results))
                through.append(sum("found_through" in r.metadata for r in response.results))
    return {
        **summary_ms(times),
        "results_per_question": statistics.mean(returned),
        "found_through_per_question": statistics.mean(through),
        "calls": len(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="keep the server's data here")
    parser.add_argument("--facts", type=int, default=2000, help="the tenant's facts")
    parser.add_argument("--corrected", type=int, default=1000, help="how many were corrected")
    parser.add_argument(
        "--again", type=int, default=0, help="how many of the corrections were corrected in turn"
    )
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the questions")
    add_output(parser)
    args = parser.parse_args()
    if not 0 <= args.corrected <= args.facts:
        parser.error("--corrected must be between 0 and --facts")
    if not 0 <= args.again <= args.corrected:
        parser.error("--again must be between 0 and --corrected")

    from _server import embedded

    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.store import MemoryStore

    bench = embedded(args.data_dir, MigrationSettings(schema=SCHEMA, embedding_dim=384))
    store = MemoryStore(bench.engine, schema=SCHEMA)
    store_tenant(store, args.facts, args.corrected, args.again)
    results = {
        "facts": args.facts,
        "corrected": args.corrected,
        "again": args.again,
        **measure(store, args.passes),
    }
    write_result("corrections", results, args)
    print({key: round(value, 3) if isinstance(value, float) else value
           for key, value in results.items()})  # fmt: skip


if __name__ == "__main__":
    main()
