"""The embedder quantized to int8 against the model as exported, on SciFact: speed and quality.

Both ONNX Runtime backends of all-MiniLM-L6-v2 are loaded in this process: ``onnx`` (the model
exported once, float32) and ``onnx-int8`` (that export with its weights quantized to int8 by
ONNX Runtime's dynamic quantization, per output channel). For each:

* speed, paired so that both see the same machine at the same moment: batches of 64 texts of
  similar length (as the embedder makes them) alternately, SciFact's titles and abstracts, both
  cores; each of the 300 claims embedded alone; the whole corpus of 5,183 abstracts embedded
  once (texts per second);
* the cosine similarity of the two backends' vectors of every abstract;
* quality through memories: the abstracts stored as memories in a schema of each backend
  (embedded by it, the claims too), nDCG@10 and recall@10 (BEIR's judgments) of ``retrieve()``
  with the defaults (semantic source alone, first 100 results) and of the vector channel alone.

``--mixed RESULT``: a database whose memories the exported model embedded, read with the claims
embedded by the int8 model (what a database filled before a switch to ``onnx-int8`` sees), on
the schema an earlier run kept in ``--data-dir``; written into RESULT's quality.

LoCoMo's dev R@k with each backend: ``benchmarks/quality/conversation_eval.py --backend``.

Usage: python benchmarks/writing/int8_embedder.py [--data-dir DIR] [--rounds 3] [--json PATH]
       [--mixed RESULT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import DATA, abstract_text, dense_alone, evaluate, read_qrels, shapes

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.embedding.models import Backend, SentenceTransformerEmbedder
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

TENANT = "scifact"
BACKENDS: tuple[Backend, ...] = ("onnx", "onnx-int8")
BATCH = 64


def _seconds(embedder: SentenceTransformerEmbedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="keep the server's data here")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the paired timings")
    parser.add_argument(
        "--mixed",
        type=Path,
        help="read the kept memories of the exported model with int8 queries, into this result",
    )
    add_output(parser)
    args = parser.parse_args()
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    if args.mixed is not None:
        if args.data_dir is None:
            raise SystemExit("--mixed reads the memories kept in --data-dir by an earlier run")
        database = connect(DatabaseConfig(data_dir=args.data_dir))
        int8 = SentenceTransformerEmbedder(backend="onnx-int8")
        store = MemoryStore(database.engine, schema=_schema("onnx"), embedder=int8)
        kept = json.loads(args.mixed.read_text())
        kept["results"]["quality"]["onnx memories, onnx-int8 queries"] = found = _quality(
            store, queries, qrels
        )
        print(json.dumps(found), flush=True)
        args.mixed.write_text(json.dumps(kept, indent=2) + "\n")
        database.dispose()
        return

    embedders: dict[str, SentenceTransformerEmbedder] = {
        name: SentenceTransformerEmbedder(backend=name) for name in BACKENDS
    }
    load_s = {name: _seconds(embedder, ["load"]) for name, embedder in embedders.items()}
    assert [e.backend for e in embedders.values()] == list(BACKENDS)
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    titles = [doc["title"] for doc in corpus]
    abstracts = [abstract_text(doc) for doc in corpus]
    claims = [queries[query_id] for query_id in sorted(qrels)]

    speed = _paired_speed(embedders, titles[:2048], abstracts[:512], claims, args.rounds)
    vectors: dict[str, np.ndarray] = {}
    corpus_s: dict[str, float] = {}
    for name, embedder in embedders.items():
        started = time.perf_counter()
        vectors[name] = embedder.embed(abstracts)
        corpus_s[name] = time.perf_counter() - started
        print(name, f"{len(abstracts) / corpus_s[name]:.1f} abstracts/s", flush=True)
    cosine = (vectors["onnx"] * vectors["onnx-int8"]).sum(axis=1)

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-int8-")) / "pg"
    database = connect(DatabaseConfig(data_dir=data_dir))
    quality: dict[str, Any] = {}
    for name, embedder in embedders.items():
        upgrade(database.engine, MigrationSettings(schema=_schema(name), embedding_dim=384))
        database.engine.dispose()
        store = MemoryStore(database.engine, schema=_schema(name), embedder=embedder)
        store.forget(tenant_id=TENANT, everything=True)
        store.remember_many(
            MemoryInput(text=text, tenant_id=TENANT, embedding=vectors[name][i],
                        metadata={"doc_id": doc["_id"]})
            for i, (doc, text) in enumerate(zip(corpus, abstracts, strict=True))
        )  # fmt: skip
        quality[name] = _quality(store, queries, qrels)
        print(name, json.dumps(quality[name]), flush=True)

    results: dict[str, Any] = {
        "model": embedders["onnx"].model_id,
        "load_s": load_s,
        "speed": speed,
        "corpus": {
            name: {
                "abstracts": len(abstracts),
                "seconds": seconds,
                "texts_per_s": len(abstracts) / seconds,
            }
            for name, seconds in corpus_s.items()
        },
        "cosine_abstracts": {"min": float(cosine.min()), "mean": float(cosine.mean())},
        "quality": quality,
        "int8_minus_onnx": {
            setting: {
                metric: quality["onnx-int8"][setting][metric] - quality["onnx"][setting][metric]
                for metric in ("ndcg@10", "recall@10")
            }
            for setting in quality["onnx"]
        },
    }
    write_result("int8-embedder", results, args)
    database.dispose()


def _schema(backend: str) -> str:
    return "int8_" + backend.replace("-", "_")


def _paired_speed(
    embedders: dict[str, SentenceTransformerEmbedder],
    titles: list[str],
    abstracts: list[str],
    claims: list[str],
    rounds: int,
) -> dict[str, Any]:
    """Batches of 64 of similar length and single claims, the backends alternating."""
    names = list(embedders)
    batches: dict[str, dict[str, list[float]]] = {}
    single: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        for kind, texts in (("titles", titles), ("abstracts", abstracts)):
            ordered = sorted(texts, key=len)
            found = batches.setdefault(kind, {name: [] for name in names})
            for number, start in enumerate(range(0, len(ordered), BATCH)):
                batch = ordered[start : start + BATCH]
                turn = names if (number + round_) % 2 == 0 else names[::-1]
                for name in turn:
                    found[name].append(_seconds(embedders[name], batch))
        for number, claim in enumerate(claims):
            turn = names if (number + round_) % 2 == 0 else names[::-1]
            for name in turn:
                single[name].append(_seconds(embedders[name], [claim]) * 1000)
    return {
        "batches_of_64": {
            kind: {
                **{
                    f"{name}_texts_per_s": len(times[name]) * BATCH / sum(times[name])
                    for name in names
                },
                "median_batch_speedup": statistics.median(
                    f / q for f, q in zip(times["onnx"], times["onnx-int8"], strict=True)
                ),
            }
            for kind, times in batches.items()
        },
        "single_claim_ms_p50": {name: statistics.median(times) for name, times in single.items()},
    }


def _quality(
    store: MemoryStore, queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> dict[str, dict[str, float]]:
    alone = shapes()["semantic"]
    dense = dense_alone(alone)
    found: dict[str, dict[str, float]] = {}
    for name, config in (("defaults", alone), ("dense alone", dense)):
        run = {}
        with HybridRetriever.from_store(store, config=config) as retriever:
            for query_id in sorted(qrels):
                response = retriever.retrieve(queries[query_id], tenant_id=TENANT, limit=100)
                run[query_id] = [
                    (r.metadata["metadata"]["doc_id"], r.final_score) for r in response
                ]
        found[name] = evaluate(run, qrels)
    return found


if __name__ == "__main__":
    main()
