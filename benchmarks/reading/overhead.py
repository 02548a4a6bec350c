"""Where ``retrieve()``'s time goes beyond the floor, per tenant of the peers' data.

On the rows and tenants of ``benchmarks/peers/peers.py`` (run it first with the same
``--data-dir``: ``peers.py --libraries '' --ours ours --filtered-only --data-dir DIR``), the
semantic source ranking by its vector channel alone (what the peers' table compares), each of
the 300 claims, six ways interleaved claim by claim, ``--passes`` times (a claim's time is its
median, then the p50 over claims):

* **floor**: the bare filtered nearest-neighbour statement of our plan (the tenant's 40
  nearest, exactly or through the graph as the retriever would read it; psycopg, prepared,
  binary), as in the peers' table;
* **statement, generic plan** and **statement**: our call's own statement (captured from the
  retriever: its text and values) run bare by psycopg, prepared, binary, with PostgreSQL's
  generic plan and, as the retriever's sessions ask, a custom plan per execution;
* **statement without its evidence**: the same with each candidate's evidence (the
  ``json_build_object`` sent as ``details``) replaced by an empty object, run with the plan the
  retriever chose: what building the evidence of every candidate costs the server;
* **through the pool**: the same through the retriever's connections (``ReadConnections``);
* **retrieve()**: the whole call (the query's vector cached).

Also the server's own planning and execution times (``EXPLAIN (ANALYZE)``, median of 30) of the
statement. The differences say what each layer costs (from the bare statement run with the
plan the retriever chose for the tenant, ``retriever_plan``): the server's work beyond the
floor's, sending and decoding the rows, the pool, and the Python around the statement (the
call's plan, its parameters, the scoring and ranking, the results with their evidence).

Usage: python benchmarks/reading/overhead.py --data-dir DIR [--passes 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _captured import Captured, captured, evidence_left_out
from _common import add_output, write_result
from _scifact import AS_OF, OURS, TENANTS, floor_statement, read_queries, shapes, vector_alone
from pgvector import HalfVector
from pgvector.psycopg import register_vector

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever, read_settings

WAYS = (
    "floor",
    "statement, generic plan",
    "statement",
    "statement without its evidence",
    "through the pool",
    "retrieve()",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the peers' kept data")
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the claims")
    add_output(parser)
    args = parser.parse_args()

    database = connect(DatabaseConfig(data_dir=args.data_dir))
    assert database.embedded is not None
    schema = OURS["ours"][0]
    embedder = SentenceTransformerEmbedder()
    store = MemoryStore(database.engine, schema=schema, embedder=embedder)
    claims = read_queries()
    vectors = embedder.embed(claims)
    config = vector_alone(shapes()["semantic"])
    results: dict[str, Any] = {"claims": len(claims), "passes": args.passes}
    # The floor's connection as the peers' table has it; the statement's as the retriever's
    # (a custom plan per execution), and with PostgreSQL's generic plan.
    plans = {"floor": None, "custom": "force_custom_plan", "generic": "force_generic_plan"}
    connections = {name: psycopg.connect(database.embedded.libpq_dsn(), autocommit=True)
                   for name in plans}  # fmt: skip
    for name, plan in plans.items():
        register_vector(connections[name])
        for setting, value in read_settings(config).items():
            if setting == "plan_cache_mode":
                value = plan or "auto"
            connections[name].execute("SELECT set_config(%s, %s, false)", (setting, value))
    with HybridRetriever.from_store(store, config=config) as retriever:
        for tenant in TENANTS:
            results[tenant] = _tenant(retriever, connections, schema, tenant, claims, vectors, args)
            print(tenant, results[tenant], flush=True)
    for connection in connections.values():
        connection.close()
    write_result("overhead", results, args)
    database.dispose()


def _tenant(  # type: ignore[no-untyped-def]
    retriever: HybridRetriever, connections, schema, tenant, claims, vectors, args
) -> dict[str, Any]:
    statements = [captured(retriever, claim, tenant, AS_OF) for claim in claims]
    # The plan the retriever chose for this tenant's calls (the plan stage names it in the
    # statement's settings): the layers are taken from the bare statement run with that plan.
    plans = [(sent.settings or {}).get("plan_cache_mode") for sent in statements]
    generic = plans.count("force_generic_plan") > len(plans) / 2
    without_evidence = [evidence_left_out(sent) for sent in statements]
    bare = connections["floor"]
    floor, read_exactly = floor_statement(bare, schema, tenant, config=retriever.config)
    pool = retriever.config.pool
    cursors = {plan: psycopg.RawCursor(connections[plan]) for plan in ("custom", "generic")}

    def bare_statement(index: int, plan: str, sent_as: list[Captured] = statements) -> None:
        sent = sent_as[index]
        cursors[plan].execute(sent.text, sent.values, binary=True, prepare=True).fetchall()

    def through_pool(index: int) -> None:
        sent = statements[index]
        retriever._reads.execute(  # its own pool
            sent.query, sent.params, settings=sent.settings, columns=sent.columns
        )

    halves = [HalfVector(vector.astype(np.float16)) for vector in vectors]
    ways: dict[str, Callable[[int], object]] = {
        "floor": lambda i: bare.execute(
            floor, (halves[i], tenant, pool), prepare=True, binary=True
        ).fetchall(),
        "statement, generic plan": lambda i: bare_statement(i, "generic"),
        "statement": lambda i: bare_statement(i, "custom"),
        "statement without its evidence": lambda i: bare_statement(
            i, "generic" if generic else "custom", without_evidence
        ),
        "through the pool": through_pool,
        "retrieve()": lambda i: retriever.retrieve(claims[i], tenant_id=tenant, as_of=AS_OF),
    }
    times: dict[str, list[list[float]]] = {way: [[] for _ in claims] for way in WAYS}
    for number in range(args.passes + 1):  # the first pass warms and prepares
        for index in range(len(claims)):
            order = WAYS if (index + number) % 2 == 0 else WAYS[::-1]
            for way in order:
                began = time.perf_counter()
                ways[way](index)
                if number:
                    times[way][index].append((time.perf_counter() - began) * 1000)
    p50 = {
        way: statistics.median(statistics.median(claim) for claim in found)
        for way, found in times.items()
    }
    planning, execution = _explained(connections["custom"], statements[:30])
    as_planned = p50["statement, generic plan" if generic else "statement"]
    return {
        "read_exactly": read_exactly,
        "retriever_plan": "generic" if generic else "custom",
        "p50_ms": p50,
        "over_floor": {way: p50[way] / p50["floor"] for way in WAYS},
        "server_planning_ms": planning,
        "server_execution_ms": execution,
        "layers_ms": {
            "the statement beyond the floor": as_planned - p50["floor"],
            "of which the candidates' evidence": as_planned - p50["statement without its evidence"],
            "the pool": p50["through the pool"] - as_planned,
            "the Python around the statement": p50["retrieve()"] - p50["through the pool"],
        },
    }


def _explained(bare: psycopg.Connection, statements: list[Captured]) -> tuple[float, float]:
    planning, execution = [], []
    cursor = psycopg.RawCursor(bare)
    for sent in statements:
        explain = b"EXPLAIN (ANALYZE, FORMAT JSON) " + sent.text
        row = cursor.execute(explain, sent.values).fetchone()
        assert row is not None
        planning.append(row[0][0]["Planning Time"])
        execution.append(row[0][0]["Execution Time"])
    return statistics.median(planning), statistics.median(execution)


if __name__ == "__main__":
    main()
