"""Where the read path's time goes: planning against execution, plan cache modes, BM25 postings.

Runs on the data of ``retrieve.py`` (schema ``bench_one``) and ``documents.py`` (schema
``bench_docs``), loaded there first, through the retriever itself (its statements, its
connection settings). Parts (``--parts``, comma-separated):

* ``plans``: for each source shape (all sources, semantic, episodic, documents on a tenant
  without documents), ``EXPLAIN (ANALYZE, TIMING OFF)`` of the retriever's statement: medians
  of planning and execution time.
* ``modes``: ``retrieve()`` with the connection's ``plan_cache_mode`` at
  ``force_custom_plan`` (the retriever's) and ``force_generic_plan``, interleaved claim by
  claim, each claim's fastest of 3, per shape, and for the documents source on the 100,000
  chunks of ``documents.py``.
* ``postings``: the cost of a claim's rare terms (document frequency at most
  ``bm25_common_share`` of the chunks) in steps: reading their postings, summing them per
  chunk, keeping the best ``SEED * candidates + 1``.
* ``tenants``: 100 tenants of 1,000 decisions each (SciFact sentences, schema
  ``bench_tenants``, loaded on first use) and the episodic source for one of them: latency, and
  the vocabulary lookup per keyword (server execution time).
* ``vocabulary-index``: on the same 100 tenants and on the one tenant of ``retrieve.py``, the
  vocabulary's trigram index on the token (revisions 0007-0008), the index on tenant and token
  alone, and both (revision 0009), swapped in turn on the same table for two rounds: the
  lookup per keyword (ten of the 100 tenants), and the episodic source's ``retrieve()`` (tenant
  t07; each claim's fastest of 3). The tables keep revision 0009's indexes afterwards.

Usage: python benchmarks/reading/read_anatomy.py --data-dir DIR
       [--parts plans,modes,postings,tenants,vocabulary-index]
       [--queries 60] [--json PATH]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, summary_ms, write_result
from _scifact import AS_OF, DOCUMENTS, ONE, TENANT, load_corpus, read_queries, shapes
from _server import add_data_dir, embedded
from sqlalchemy import text

from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.db.read_pool import ReadConnections
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import DecisionInput
from retrieval.memory.store import MemoryStore
from retrieval.search import scoring
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever, read_settings
from retrieval.search.statement.bm25 import SEED

TENANTS = MigrationSettings(schema="bench_tenants", embedding_dim=384)
MODES = ("force_custom_plan", "force_generic_plan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, required=True, what="the data of retrieve.py's and documents.py's runs")
    parser.add_argument("--parts", default="plans,modes,postings,tenants")
    parser.add_argument("--queries", type=int, default=60)
    add_output(parser)
    args = parser.parse_args()
    parts = set(args.parts.split(","))

    engine = embedded(args.data_dir).engine
    embedder = SentenceTransformerEmbedder()
    queries = read_queries()[: args.queries]
    one = MemoryStore(engine, schema=ONE.schema, embedder=embedder)
    docs = MemoryStore(engine, schema=DOCUMENTS.schema, embedder=embedder)
    results: dict[str, Any] = {"queries": len(queries)}
    if "plans" in parts:
        results["plans"] = {
            name: _plan_times(one, config, queries) for name, config in shapes().items()
        }
    if "modes" in parts:
        results["modes"] = {name: _modes(one, config, queries) for name, config in shapes().items()}
        results["modes"]["documents, 100,000 chunks"] = _modes(docs, shapes()["documents"], queries)
    if "postings" in parts:
        results["postings"] = _postings(engine, queries)
    if "tenants" in parts:
        results["tenants"] = _tenants(engine, embedder, args.data_dir, queries)
    if "vocabulary-index" in parts:
        results["vocabulary_index"] = _vocabulary_index(engine, embedder, args.data_dir, queries)
    write_result(
        "read-anatomy",
        results,
        args,
        variant=None
        if args.parts == "plans,modes,postings,tenants"
        else args.parts.replace(",", "-"),
    )


class _Captured:
    """A retriever whose statements are recorded (and still run) as it retrieves."""

    def __init__(self, store: MemoryStore, config: RetrievalConfig) -> None:
        self.retriever = HybridRetriever.from_store(store, config=config)
        connections = self.retriever._connections
        self.run: Callable[..., list[tuple[Any, ...]]] = connections.execute
        self.statement: tuple[str, dict[str, Any]] = ("", {})

        def capture(statement: str, params: Any, **options: Any) -> list[tuple[Any, ...]]:
            self.statement = (statement, params)
            return self.run(statement, params, **options)

        connections.execute = capture  # type: ignore[method-assign]

    def retrieve(self, query: str) -> None:
        self.retriever.retrieve(query, tenant_id=TENANT, as_of=AS_OF)


def _plan_times(
    store: MemoryStore, config: RetrievalConfig, queries: list[str]
) -> dict[str, float]:
    captured = _Captured(store, config)
    planning, execution = [], []
    for query in queries:
        captured.retrieve(query)
        statement, params = captured.statement
        plan = captured.run("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + statement, params)
        report = plan[0][0][0]
        planning.append(report["Planning Time"])
        execution.append(report["Execution Time"])
    captured.retriever.close()
    return {
        "planning_p50_ms": statistics.median(planning),
        "execution_p50_ms": statistics.median(execution),
        "statement_chars": len(captured.statement[0]),
    }


def _modes(
    store: MemoryStore, config: RetrievalConfig, queries: list[str]
) -> dict[str, dict[str, float]]:
    captured = _Captured(store, config)
    for query in queries:  # warm: vectors cached, statements prepared
        captured.retrieve(query)
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for query in queries:
        for mode in MODES:
            captured.run("SELECT set_config('plan_cache_mode', %(mode)s, false)", {"mode": mode})
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                captured.retrieve(query)
                best = min(best, (time.perf_counter() - started) * 1000)
            times[mode].append(best)
    captured.retriever.close()
    return {mode: summary_ms(values) for mode, values in times.items()}


def _postings(engine: Any, queries: list[str]) -> dict[str, Any]:
    config = RetrievalConfig()
    connections = ReadConnections(engine, list(read_settings(config).items()))
    schema = DOCUMENTS.schema
    where = "p.tenant_id = %(tenant)s AND p.term = ANY (%(terms)s::text[])"
    contribution = (
        "p.term_frequency::float8 / (p.term_frequency + %(base)s::float8 "
        "+ %(per_length)s::float8 * p.chunk_length)"
    )
    grouped = f"SELECT p.chunk_id, sum({contribution}) AS partial FROM {schema}.document_terms AS p WHERE {where} GROUP BY p.chunk_id"  # noqa: E501
    steps = {
        "read": f"SELECT count(*) FROM {schema}.document_terms AS p WHERE {where}",
        "read + sum per chunk": f"SELECT count(*) FROM ({grouped}) AS g",
        "read + sum + best": f"SELECT chunk_id FROM ({grouped}) AS g "
        f"ORDER BY partial DESC, chunk_id LIMIT {SEED} * %(candidates)s + 1",
    }
    corpus = connections.execute(
        f"SELECT chunks, total_terms FROM {schema}.document_corpus WHERE tenant_id = %(t)s",
        {"t": TENANT},
    )
    chunks, total = corpus[0]
    bound = {
        "tenant": TENANT,
        "base": config.bm25_k1 * (1 - config.bm25_b),
        "per_length": config.bm25_k1 * config.bm25_b * chunks / total,
        "candidates": config.candidate_pool,
    }
    times: dict[str, list[float]] = {step: [] for step in steps}
    postings = []
    for query in queries:
        rare = connections.execute(
            f"SELECT s.term FROM unnest(to_tsvector(%(config)s::regconfig, %(q)s)) AS u "
            f"JOIN {schema}.document_term_stats AS s ON s.tenant_id = %(t)s "
            "AND s.term = u.lexeme WHERE s.document_frequency <= %(share)s * %(n)s",
            {"config": config.text_search_config, "q": query, "t": TENANT,
             "share": config.bm25_common_share, "n": chunks},
        )  # fmt: skip
        if not rare:
            continue
        params = bound | {"terms": [row[0] for row in rare]}
        for step, statement in steps.items():
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                rows = connections.execute(statement, params)
                best = min(best, (time.perf_counter() - started) * 1000)
            times[step].append(best)
            if step == "read":
                postings.append(rows[0][0])
    connections.close()
    return {
        "claims": len(postings),
        "postings_p50": statistics.median(postings),
        **{step: summary_ms(values) for step, values in times.items()},
    }


def _latency(
    store: MemoryStore, config: RetrievalConfig, tenant: str, queries: list[str]
) -> dict[str, float]:
    # retrieve() for each claim after a warming pass, each claim's fastest of 3.
    retriever = HybridRetriever.from_store(store, config=config)
    for query in queries:
        retriever.retrieve(query, tenant_id=tenant, as_of=AS_OF)
    times = []
    for query in queries:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            retriever.retrieve(query, tenant_id=tenant, as_of=AS_OF)
            best = min(best, (time.perf_counter() - started) * 1000)
        times.append(best)
    retriever.close()
    return summary_ms(times)


def _tenants_loaded(engine: Any, embedder: SentenceTransformerEmbedder, data_dir: Path) -> None:
    # 100 tenants of 1,000 decisions each (SciFact sentences), loaded on first use.
    upgrade(engine, TENANTS)
    store = MemoryStore(engine, schema=TENANTS.schema, embedder=embedder)
    with engine.connect() as connection:
        loaded = connection.execute(text(f"SELECT count(*) FROM {TENANTS.schema}.decisions"))
        empty = loaded.scalar() == 0
    if empty:
        sentences = load_corpus(embedder, data_dir.parent / "scifact-title-vectors.npy").sentences
        rng = random.Random(5)
        for tenant in range(100):
            store.record_decisions(
                DecisionInput(
                    tenant_id=f"t{tenant:02d}",
                    task_id=f"task-{i % 50}",
                    action_type="plan",
                    content=sentences[rng.randrange(len(sentences))],
                    status="done",
                    created_at=AS_OF - timedelta(seconds=rng.randrange(90 * 86400)),
                )
                for i in range(1000)
            )
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            for table in ("decisions", "episodic_postings", "episodic_vocabulary"):
                connection.execute(text(f"VACUUM ANALYZE {TENANTS.schema}.{table}"))


def _tenants(
    engine: Any, embedder: SentenceTransformerEmbedder, data_dir: Path, queries: list[str]
) -> dict[str, Any]:
    _tenants_loaded(engine, embedder, data_dir)
    store = MemoryStore(engine, schema=TENANTS.schema, embedder=embedder)
    config = shapes()["episodic"]
    latency = _latency(store, config, "t07", queries)
    per_keyword = {
        "100 tenants (t07)": _lookups(engine, config, TENANTS.schema, "t07", queries),
        "one tenant (bench_one)": _lookups(engine, config, ONE.schema, TENANT, queries),
    }
    # An idea measured and not kept: the tenant in every entry of the trigram index.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(
            text(
                "CREATE INDEX IF NOT EXISTS vocabulary_tenant_token_experiment "
                f"ON {TENANTS.schema}.episodic_vocabulary "
                "USING gin ((tenant_id || E'\\x1f' || token) gin_trgm_ops)"
            )
        )
        connection.execute(text(f"ANALYZE {TENANTS.schema}.episodic_vocabulary"))
    try:
        per_keyword["100 tenants, tenant in the trigram index (not kept)"] = _lookups(
            engine, config, TENANTS.schema, "t07", queries, prefixed=True
        )
    finally:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(
                text(f"DROP INDEX {TENANTS.schema}.vocabulary_tenant_token_experiment")
            )
    with engine.connect() as connection:
        vocabulary = connection.execute(
            text(
                f"SELECT count(*), count(DISTINCT token) FROM {TENANTS.schema}.episodic_vocabulary"
            )
        ).one()
    return {
        "vocabulary_rows": vocabulary[0],
        "distinct_tokens": vocabulary[1],
        "episodic_one_tenant_of_100": latency,
        "vocabulary_lookup_per_keyword": per_keyword,
    }


# The vocabulary's trigram indexes: on the token (revision 0007), on tenant and token (an
# idea: alone it slows the one-tenant lookups), and both (revision 0009).
TOKEN_INDEX = ("episodic_vocabulary_token_trgm_idx", "(token gin_trgm_ops)")
TENANT_TOKEN_INDEX = (
    "episodic_vocabulary_tenant_token_trgm_idx",
    "(tenant_id, token gin_trgm_ops)",
)
VOCABULARY_INDEXES = {
    "token (0007)": [TOKEN_INDEX],
    "tenant, token alone": [TENANT_TOKEN_INDEX],
    "both (0009)": [TOKEN_INDEX, TENANT_TOKEN_INDEX],
}


def _vocabulary_index(
    engine: Any, embedder: SentenceTransformerEmbedder, data_dir: Path, queries: list[str]
) -> dict[str, Any]:
    _tenants_loaded(engine, embedder, data_dir)
    upgrade(engine, ONE)
    config = shapes()["episodic"]
    cases = {  # schema, the tenant whose calls are timed, the tenants whose lookups are timed
        "100 tenants": (TENANTS.schema, "t07", [f"t{n:02d}" for n in range(0, 100, 10)]),
        "one tenant": (ONE.schema, TENANT, [TENANT]),
    }
    results: dict[str, Any] = {}
    for case, (schema, timed, looked_up) in cases.items():
        store = MemoryStore(engine, schema=schema, embedder=embedder)
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in VOCABULARY_INDEXES}
        try:
            for _ in range(2):
                for name in VOCABULARY_INDEXES:
                    _use_vocabulary_index(engine, schema, name)
                    latency = _latency(store, config, timed, queries)
                    lookups = {
                        tenant: _lookups(engine, config, schema, tenant, queries)["p50_ms"]
                        for tenant in looked_up
                    }
                    rounds[name].append(
                        {
                            "lookup_per_keyword_p50_ms_by_tenant": lookups,
                            "lookup_per_keyword_median_of_tenants_ms": statistics.median(
                                lookups.values()
                            ),
                            f"episodic_{timed}": latency,
                        }
                    )
        finally:
            _use_vocabulary_index(engine, schema, "both (0009)")
        results[case] = rounds
    return results


def _use_vocabulary_index(engine: Any, schema: str, name: str) -> None:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        for index, _ in (TOKEN_INDEX, TENANT_TOKEN_INDEX):
            connection.execute(text(f"DROP INDEX IF EXISTS {schema}.{index}"))
        for index, columns in VOCABULARY_INDEXES[name]:
            connection.execute(
                text(f"CREATE INDEX {index} ON {schema}.episodic_vocabulary USING gin {columns}")
            )
        connection.execute(text(f"ANALYZE {schema}.episodic_vocabulary"))


def _lookups(
    engine: Any,
    config: RetrievalConfig,
    schema: str,
    tenant: str,
    queries: list[str],
    *,
    prefixed: bool = False,
) -> dict[str, float]:
    # A claim's keywords looked up in the tenant's vocabulary as the episodic source does (one
    # LATERAL lookup per keyword), timed inside the server (EXPLAIN ANALYZE's execution time,
    # each claim's fastest of 3) and divided by the claim's keywords: the round trip and the
    # planning, about 0.5 ms of a statement this small, would hide the lookups. ``prefixed``:
    # through the experimental index on the tenant and the token (LIKE metacharacters of the
    # tenant escaped).
    connections = ReadConnections(engine, list(read_settings(config).items()))
    match = (
        "(v.tenant_id || E'\\x1f' || v.token) LIKE %(prefix)s || k.pattern"
        if prefixed
        else "v.token LIKE k.pattern"
    )
    lookup = (
        "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) "
        "SELECT count(*) FROM unnest(%(patterns)s::text[]) AS k(pattern) "
        "CROSS JOIN LATERAL ("
        f"SELECT v.id FROM {schema}.episodic_vocabulary AS v "
        f"WHERE v.tenant_id = %(tenant)s AND {match} OFFSET 0) AS v"
    )
    prefix = scoring.like_pattern(tenant)[1:-1] + "\x1f"  # the tenant, matched literally
    times = []
    for query in queries:
        keywords = scoring.extract_keywords(query)
        if not keywords:
            continue
        patterns = [scoring.like_pattern(keyword).lower() for keyword in keywords]
        best = float("inf")
        for _ in range(3):
            plan = connections.execute(
                lookup, {"tenant": tenant, "patterns": patterns, "prefix": prefix}
            )
            best = min(best, plan[0][0][0]["Execution Time"])
        times.append(best / len(keywords))
    connections.close()
    return summary_ms(times)


if __name__ == "__main__":
    main()
