"""What the read statement costs PostgreSQL to plan, and which part of it: each source and rule
left out in turn.

A plan cached on one server skips planning, but a statement planned for each call pays it (a
custom plan; on a Citus cluster twice, on the coordinator and again on the worker:
docs/scale-out.md). On the data ``retrieve.py`` loads (``--data-dir``; schema ``bench_one``: one
tenant with 100,000 memories, 100,000 decisions and 100,000 tool calls), each configuration's
statement for each SciFact claim is captured from its retriever (text and values), then run
bare by psycopg under ``EXPLAIN (ANALYZE, SUMMARY)`` with a custom plan, the configurations in
turn claim by claim, ``--passes`` times: per configuration the median planning and execution
times, and the statement's lines. Configurations: the defaults; the newer versions' part off;
the memories' BM25 off; the episodic source off; the documents source off; the semantic source
alone; the conversation lift off; and the defaults' statement with every CTE materialized (as
the library writes a call planned for its values), and with the episodic source's CTEs alone
materialized (PostgreSQL plans a materialized CTE apart, where it inlines one read once into the
query that reads it), each checked to return the same rows; and the defaults' statement with
each candidate's evidence sent as an empty object (what building it costs the execution).
What a part costs to plan is the defaults' planning time less the configuration's without it.

Usage: python benchmarks/reading/statement_planning.py --data-dir DIR [--queries 30]
       [--passes 3] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _captured import captured, evidence_left_out
from _common import add_output, write_result
from _scifact import AS_OF, ONE, TENANT, read_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="retrieve.py's data")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--passes", type=int, default=3)
    add_output(parser)
    args = parser.parse_args()

    import psycopg
    from pgvector.psycopg import register_vector

    from retrieval.db.embedded import start_embedded
    from retrieval.db.engine import make_engine
    from retrieval.embedding.models import SentenceTransformerEmbedder
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever, read_settings

    server = start_embedded(args.data_dir)
    store = MemoryStore(make_engine(server.url()), schema=ONE.schema,
                        embedder=SentenceTransformerEmbedder())  # fmt: skip
    base = RetrievalConfig(record_access=False)
    alone = replace(
        base,
        episodic=replace(base.episodic, enabled=False),
        documents=replace(base.documents, enabled=False),
    )
    variants = {
        "defaults": base,
        "no newer versions first": replace(base, newer_versions_first=False),
        "no memory BM25": replace(base, memory_bm25=False),
        "no episodic source": replace(base, episodic=replace(base.episodic, enabled=False)),
        "no documents source": replace(base, documents=replace(base.documents, enabled=False)),
        "the semantic source alone": alone,
        "no conversation lift": replace(base, context_lift=0.0),
    }
    queries = read_queries()[: args.queries]
    statements: dict[str, list[tuple[bytes, Any]]] = {}
    for name, config in variants.items():
        with HybridRetriever.from_store(store, config=config) as retriever:
            sent = [captured(retriever, query, TENANT, AS_OF, warm=True) for query in queries]
        statements[name] = [(one.text, one.values) for one in sent]
    # The defaults' statement as the library writes it on Citus, and with the episodic
    # source's CTEs alone materialized (rewritten here): each checked against the defaults.
    with HybridRetriever.from_store(store, config=base) as retriever:
        sent = [captured(retriever, query, TENANT, AS_OF, warm=True, materialized=True)
                for query in queries]  # fmt: skip
    statements[EVERY] = [(one.text, one.values) for one in sent]
    with HybridRetriever.from_store(store, config=base) as retriever:
        sent = [captured(retriever, query, TENANT, AS_OF, warm=True) for query in queries]
    statements[NO_EVIDENCE] = [(one.text, one.values) for one in map(evidence_left_out, sent)]
    statements[EPISODIC] = [
        (_episodic_materialized(text), values) for text, values in statements["defaults"]
    ]
    planning: dict[str, list[float]] = {name: [] for name in statements}
    execution: dict[str, list[float]] = {name: [] for name in statements}
    same: dict[str, int] = {name: 0 for name in (EVERY, EPISODIC)}
    with psycopg.connect(server.libpq_dsn(), autocommit=True) as connection:
        register_vector(connection)
        for setting, value in read_settings(base).items():
            connection.execute("SELECT set_config(%s, %s, false)", (setting, value))
        connection.execute("SET plan_cache_mode = force_custom_plan")
        cursor = psycopg.RawCursor(connection)
        names = list(statements)
        for index in range(len(queries)):
            rows = {name: cursor.execute(*statements[name][index]).fetchall() for name in names}
            for name in same:
                same[name] += rows[name] == rows["defaults"]
        for number in range(args.passes + 1):  # the first pass warms the caches
            for index in range(len(queries)):
                order = names if (index + number) % 2 == 0 else names[::-1]
                for name in order:
                    text, values = statements[name][index]
                    explain = b"EXPLAIN (ANALYZE, SUMMARY, FORMAT JSON) " + text
                    row = cursor.execute(explain, values).fetchone()
                    assert row is not None
                    if number:
                        planning[name].append(row[0][0]["Planning Time"])
                        execution[name].append(row[0][0]["Execution Time"])
    defaults = statistics.median(planning["defaults"])
    results: dict[str, Any] = {"queries": len(queries), "passes": args.passes}
    for name in statements:
        planned = statistics.median(planning[name])
        results[name] = {
            "lines": statements[name][0][0].count(b"\n") + 1,
            "planning_ms": round(planned, 3),
            "execution_ms": round(statistics.median(execution[name]), 3),
            "planning_saved_ms": round(defaults - planned, 3),
        }
        if name in same:
            results[name]["same_rows"] = f"{same[name]} of {len(queries)}"
        print(name, results[name], flush=True)
    write_result("statement-planning", results, args)


EVERY = "every CTE materialized"
NO_EVIDENCE = "the candidates' evidence not built"
EPISODIC = "the episodic CTEs materialized"
_EPISODIC_HEAD = re.compile(
    rb"^(decision_hits|decision_top|episodic_decisions|tool_call_hits|tool_call_top|"
    rb"episodic_tool_calls) AS \(",
    re.MULTILINE,
)


def _episodic_materialized(text: bytes) -> bytes:
    # ``text`` with the episodic source's CTEs written AS MATERIALIZED.
    return _EPISODIC_HEAD.sub(rb"\1 AS MATERIALIZED (", text)


if __name__ == "__main__":
    main()
