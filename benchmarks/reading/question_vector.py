"""What a new question's vector costs the read: the model's call, and the cache table looked up
before it.

A store's embedding cache holds the vectors of the texts it stored (keyed by a SHA-256 of the
model and the text); a read never stores its question. On the embedded server, ``--memories``
SciFact sentences are stored through ``remember_many`` (their vectors in the cache table), then
each of SciFact's 300 claims is embedded as a question three ways, in turn claim by claim (the
order shuffled), each time as a text the in-process cache has not seen:

* **the read's way**: :meth:`EmbeddingCache.question
  <retrieval.embedding.cache.EmbeddingCache.question>`, as ``retrieve()`` gets its query's
  vector: the in-process LRU, else the model;
* **the table first**: a connection from the store's pool, the tenant bound, the cache table
  looked up for the question's key, then the model (``EmbeddingCache.embed(..., store=False,
  side="query")``): what the read did before;
* **the model alone**: the floor.

Reported: p50 / p95 of each and what each costs beyond the model. (The table holds a question's
vector only where the question is written exactly as a text stored, and a model with a query side,
e5's, keys its questions apart from its stored texts: there never.)

Usage: python benchmarks/reading/question_vector.py [--model NAME] [--memories 1000] [--passes 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, percentiles, write_result
from _scifact import read_queries, scifact_sentences
from _server import add_data_dir, embedded

from retrieval.db.migrate import MigrationSettings
from retrieval.memory.config import WriteConfig
from retrieval.memory.store import MemoryStore

TENANT = "questions"
WAYS = ("the read's way", "the table first", "the model alone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="RETRIEVAL_EMBEDDING_MODEL (default MiniLM)")
    parser.add_argument("--memories", type=int, default=1000, help="texts stored first")
    parser.add_argument("--passes", type=int, default=3, help="passes over the claims")
    add_data_dir(parser)
    add_output(parser)
    args = parser.parse_args()

    embedder = WriteConfig(embedding_model=args.model).embedder()
    schema = MigrationSettings(schema="questions", embedding_dim=embedder.dim)
    bench = embedded(args.data_dir, schema)
    store = MemoryStore(bench.engine, schema="questions", embedder=embedder)
    store.forget(tenant_id=TENANT, everything=True)
    texts = scifact_sentences(args.memories)
    store.remember_many({"text": text, "tenant_id": TENANT} for text in texts)
    cache = store.cache
    claims = read_queries()
    cache.model(["a question to load the model"], side="query")

    def table_first(text: str) -> Any:
        with store.engine.connect() as connection:
            return cache.embed(connection, TENANT, [text], store=False, side="query")

    ways: dict[str, Callable[[str], Any]] = {
        "the read's way": lambda text: cache.question(TENANT, text),
        "the table first": table_first,
        "the model alone": lambda text: cache.model([text], side="query"),
    }
    times: dict[str, list[float]] = {name: [] for name in WAYS}
    shuffled = random.Random(7)
    for number in range(args.passes):
        for claim in claims:
            order = list(WAYS)
            shuffled.shuffle(order)  # no way always first, last or after another's model call
            for name in order:
                # A question no cache has seen, as long as the other ways' (a longer text
                # costs the model more: e5 about 1 ms a token here).
                text = f"{claim} ({number}{WAYS.index(name)})"
                began = time.perf_counter()
                ways[name](text)
                times[name].append((time.perf_counter() - began) * 1000)
    results: dict[str, Any] = {
        "model": embedder.model_id,
        "memories": len(texts),
        "questions": len(claims) * args.passes,
        "p50_ms": {name: round(statistics.median(t), 3) for name, t in times.items()},
        "p95_ms": {name: round(percentiles(t)["p95"], 3) for name, t in times.items()},
    }
    floor = results["p50_ms"]["the model alone"]
    results["beyond_the_model_ms"] = {
        name: round(value - floor, 3) for name, value in results["p50_ms"].items()
    }
    write_result("question-vector", results, args)


if __name__ == "__main__":
    main()
