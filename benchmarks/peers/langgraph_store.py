"""LangGraph's store side by side: retrieval's ``RetrievalStore`` against LangGraph's
``PostgresStore`` on the same embedded server and embedder.

Each store holds the SciFact corpus (``--docs`` abstracts, title then text) put through its own
interface as items ``{"text": ..., "doc": id}`` of namespace ``("scifact",)``, ``index`` on
``["text"]``, embedded by the same all-MiniLM-L6-v2 (the library's embedder; ``PostgresStore``
calls it as its ``embed``). For each store:

* puts per second: the corpus in ``store.batch`` calls of 100 puts (both stores' best), and
  ``--single`` documents put one ``store.put`` at a time (as LangGraph's docs show);
* search p50: the 300 test claims, ``store.search(("scifact",), query=claim, limit=10)``, one
  cold pass (each claim once: both embed it) and ``--passes`` warm passes (the library's
  embedding cache then holds the claim; ``PostgresStore`` embeds it again), p50/p95 of each
  claim's median;
* recall@10 and nDCG@10 of the first pass against SciFact's judgments;

then, with ``RetrievalStore`` and the documented ``PostgresStore`` both loaded, ``--passes``
warm passes side by side (each claim searched in one store then the other, the order
alternating): the ratio of their p50 in the same minutes, which the machine's hour does not move
as it moves two figures measured a quarter of an hour apart.

``PostgresStore`` runs at its documented settings (an HNSW index, cosine) and at its best for
recall (``ann_index_config={"kind": "flat"}``: every vector compared); ``RetrievalStore`` at
its defaults (the hybrid search: meaning, BM25 words, recency; no threshold). Needs
``pip install langgraph-checkpoint-postgres`` (not a dependency of the library).

Usage: python benchmarks/peers/langgraph_store.py [--data-dir DIR] [--docs 5183] [--single 300]
       [--passes 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, percentiles, timed_ms, write_result
from _scifact import CORPUS, DATA, abstract_text, evaluate, read_qrels
from _server import add_data_dir, embedded
from langgraph.store.base import BaseStore, PutOp
from sqlalchemy import text

from retrieval.db.migrate import MigrationSettings
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.integrations.langgraph import RetrievalStore
from retrieval.memory.store import MemoryStore

NAMESPACE = ("scifact",)
SCHEMA = "lg_retrieval"
BATCH = 100
OURS = "RetrievalStore (defaults)"
THEIRS = "PostgresStore (documented: HNSW, cosine)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    parser.add_argument("--docs", type=int, default=5183, help="abstracts put in each store")
    parser.add_argument("--single", type=int, default=300, help="documents put one at a time")
    parser.add_argument("--passes", type=int, default=3, help="warm timed passes of the claims")
    add_output(parser)
    args = parser.parse_args()

    bench = embedded(args.data_dir, MigrationSettings(schema=SCHEMA, embedding_dim=384))
    embedder = SentenceTransformerEmbedder()
    docs = [json.loads(line) for line in CORPUS.open()][: args.docs]
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    claims = {
        q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())
        if q["_id"] in qrels
    }  # fmt: skip
    results: dict[str, Any] = {"docs": len(docs), "claims": len(claims)}
    stores: dict[str, Callable[[], Any]] = {
        OURS: lambda: _ours(bench, embedder),
        "PostgresStore (best recall: flat)": lambda: _theirs(bench, embedder, "flat"),
        THEIRS: lambda: _theirs(bench, embedder, "hnsw"),
    }
    with ExitStack() as kept:
        opened: dict[str, BaseStore] = {}
        for name, made in stores.items():
            with ExitStack() as this:
                store = this.enter_context(made())
                print(f"{name}: putting {len(docs)} documents", flush=True)
                results[name] = _measured(store, docs, claims, qrels, args)
                print(name, json.dumps(results[name]), flush=True)
                if name in (OURS, THEIRS):  # kept loaded for the pass side by side
                    opened[name] = store
                    kept.push(this.pop_all())
        results["side by side"] = _side_by_side(opened[OURS], opened[THEIRS], claims, args)
        print("side by side", json.dumps(results["side by side"]), flush=True)
    write_result("langgraph-store", results, args)


def _side_by_side(
    ours: BaseStore, theirs: BaseStore, claims: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    # Both stores loaded, each claim searched in one then the other (the order alternating),
    # --passes times: the ratio of their warm p50 within the same minutes.
    times: dict[str, dict[str, list[float]]] = {
        name: {claim_id: [] for claim_id in claims} for name in (OURS, THEIRS)
    }
    pair = ((OURS, ours), (THEIRS, theirs))
    for number in range(args.passes):
        for index, (claim_id, claim) in enumerate(claims.items()):
            for name, store in pair if (index + number) % 2 == 0 else pair[::-1]:
                times[name][claim_id].append(
                    timed_ms(store.search, NAMESPACE, query=claim, limit=10)[1]
                )
    p50 = {
        name: percentiles([statistics.median(found) for found in by_claim.values()])["p50"]
        for name, by_claim in times.items()
    }
    return {
        "search_warm_p50_ms": {name: round(value, 2) for name, value in p50.items()},
        "ratio": round(p50[OURS] / p50[THEIRS], 3),
    }


def _measured(
    store: BaseStore,
    docs: list[dict[str, Any]],
    claims: dict[str, str],
    qrels: dict[str, dict[str, int]],
    args: argparse.Namespace,
) -> dict[str, Any]:
    items = [
        (str(doc["_id"]), {"text": abstract_text(doc), "doc": str(doc["_id"])}) for doc in docs
    ]
    single = items[: args.single]
    began = time.perf_counter()
    for key, value in single:
        store.put(NAMESPACE, f"single-{key}", value)
    single_rate = len(single) / (time.perf_counter() - began)
    for key, _ in single:
        store.delete(NAMESPACE, f"single-{key}")
    began = time.perf_counter()
    for start in range(0, len(items), BATCH):
        store.batch([PutOp(NAMESPACE, key, value) for key, value in items[start : start + BATCH]])
    batch_rate = len(items) / (time.perf_counter() - began)
    run: dict[str, list[tuple[str, float]]] = {}
    cold: list[float] = []
    for claim_id, claim in claims.items():
        found, elapsed = timed_ms(store.search, NAMESPACE, query=claim, limit=10)
        cold.append(elapsed)
        run[claim_id] = [(item.value["doc"], float(item.score or 0.0)) for item in found]
    warm: dict[str, list[float]] = {claim_id: [] for claim_id in claims}
    for _ in range(args.passes):
        for claim_id, claim in claims.items():
            warm[claim_id].append(timed_ms(store.search, NAMESPACE, query=claim, limit=10)[1])
    quality = evaluate(run, qrels)
    warm_summary = percentiles([statistics.median(times) for times in warm.values()])
    cold_summary = percentiles(cold)
    return {
        "puts_per_s_batch": round(batch_rate, 1),
        "puts_per_s_single": round(single_rate, 1),
        "search_cold_p50_ms": round(cold_summary["p50"], 2),
        "search_cold_p95_ms": round(cold_summary["p95"], 2),
        "search_warm_p50_ms": round(warm_summary["p50"], 2),
        "search_warm_p95_ms": round(warm_summary["p95"], 2),
        "recall@10": round(quality["recall@10"], 4),
        "ndcg@10": round(quality["ndcg@10"], 4),
        "full_top_10": round(sum(len(ranked) == 10 for ranked in run.values()) / len(run), 3),
    }


@contextmanager
def _ours(bench: Any, embedder: SentenceTransformerEmbedder) -> Iterator[RetrievalStore]:
    memory = MemoryStore(bench.engine, schema=SCHEMA, embedder=embedder)
    memory.forget(tenant_id="langgraph", everything=True)
    with RetrievalStore(memory, tenant_id="langgraph", index={"fields": ["text"]}) as store:
        yield store
    memory.forget(tenant_id="langgraph", everything=True)


@contextmanager
def _theirs(bench: Any, embedder: SentenceTransformerEmbedder, kind: str) -> Iterator[BaseStore]:
    from langgraph.store.postgres import PostgresStore

    with bench.engine.begin() as connection:  # a fresh store each time
        connection.execute(text("DROP TABLE IF EXISTS store_vectors, store, store_migrations, "
                                "vector_migrations CASCADE"))  # fmt: skip
    index = {
        "dims": embedder.dim,
        "embed": lambda texts: embedder.embed(list(texts)).tolist(),
        "fields": ["text"],
        "ann_index_config": {"kind": kind},
    }
    with PostgresStore.from_conn_string(bench.psycopg_url, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        yield store


if __name__ == "__main__":
    main()
