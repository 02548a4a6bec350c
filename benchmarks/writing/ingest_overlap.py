"""Ideas for ingest with embedding (issue 3's 0.9x target), measured on a bare table.

``ingest.py --parts embed`` measures the library; this measures what the library could do
instead, on a table of ``(id, content, embedding vector(384))`` with an HNSW index, for
``--texts`` SciFact titles, interleaved over ``--runs`` runs (the table emptied before each):

* ``model``: the embedder alone (sentence-transformers, batches of 64 sorted by length);
* ``sequential``: embed all, then one binary ``COPY`` (what the library does);
* ``overlapped``: the same length-sorted batches of 64, each copied (through psycopg's queued
  writer, a thread) while the next is embedded;
* ``two_workers``: the embedder on two single-threaded workers instead of torch's two threads
  (model only);
* ``two_workers_copy``: the two workers, each batch copied as it comes (the copy in this thread);
* with ``--long-texts N``: ``model_long`` and ``two_workers_long``, the same two embedders on
  ``N`` whole abstracts (long inputs, where torch's threads share larger matrix products);
* ``halfvec_copy``: the ``COPY`` alone into a table whose HNSW index is on
  ``embedding::halfvec(384)``, against ``vector_copy`` (the vectors precomputed).

The HNSW graphs have the library's links per node (``schema.HNSW_LINKS``).

Usage: python benchmarks/writing/ingest_overlap.py [--texts 1000] [--long-texts 0] [--runs 5]
       [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from queue import Queue
from typing import Any

import numpy as np
import psycopg
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import scifact_texts
from _server import embedded
from psycopg.copy import QueuedLibpqWriter

from retrieval.db.copy_rows import encode_vectors
from retrieval.db.table_parts import HNSW_LINKS
from retrieval.embedding.models import SentenceTransformerEmbedder

BATCH = 64
TABLES = f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE plain (id bigint, content text, embedding vector(384));
CREATE INDEX ON plain USING hnsw (embedding vector_l2_ops) WITH (m = {HNSW_LINKS});
CREATE TABLE half (id bigint, content text, embedding vector(384));
CREATE INDEX ON half USING hnsw ((embedding::halfvec(384)) halfvec_l2_ops)
    WITH (m = {HNSW_LINKS});
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--long-texts", type=int, default=0, help="abstracts (0: none)")
    parser.add_argument("--runs", type=int, default=5)
    add_output(parser)
    args = parser.parse_args()

    url = embedded(None, prefix="rtv-overlap-").psycopg_url
    connection = psycopg.connect(url, autocommit=True)
    connection.execute(TABLES)  # type: ignore[call-overload]
    texts = scifact_texts(args.texts, long=False)
    long_texts = scifact_texts(args.long_texts, long=True) if args.long_texts else []
    model = SentenceTransformerEmbedder(backend="torch")._loaded()  # its measured backend

    def embed(batch: list[str]) -> np.ndarray:
        return np.asarray(
            model.encode(batch, batch_size=BATCH, normalize_embeddings=True,
                         convert_to_numpy=True, show_progress_bar=False),
            dtype=np.float32,
        )  # fmt: skip

    embed(texts[:16])  # load and warm up
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    batches = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]
    vectors = encode_vectors(embed(texts))

    def copy(table: str, rows: Iterable[tuple[Any, ...]], queued: bool = False) -> None:
        with connection.transaction(), connection.cursor() as cursor:
            writer = {"writer": QueuedLibpqWriter(cursor)} if queued else {}
            statement = f"COPY {table} (id, content, embedding) FROM STDIN WITH (FORMAT BINARY)"
            with cursor.copy(statement, **writer) as stream:  # type: ignore[arg-type]
                stream.set_types(["int8", "text", "bytea"])
                for row in rows:
                    stream.write_row(row)

    def sequential() -> None:
        encoded = encode_vectors(embed(texts))
        copy("plain", ((i, texts[i], encoded[i]) for i in range(len(texts))))

    def overlapped() -> None:
        def rows() -> Iterable[tuple[Any, ...]]:
            for batch in batches:
                encoded = encode_vectors(embed([texts[i] for i in batch]))
                yield from ((i, texts[i], e) for i, e in zip(batch, encoded, strict=True))

        copy("plain", rows(), queued=True)

    def two_workers(items: list[str], item_batches: list[list[int]]) -> None:
        queue: Queue[list[int] | None] = Queue()
        for batch in item_batches:
            queue.put(batch)

        def work() -> None:
            torch.set_num_threads(1)  # this thread's OpenMP setting only
            while (batch := queue.get()) is not None:
                embed([items[i] for i in batch])

        workers = [threading.Thread(target=work) for _ in range(2)]
        for worker in workers:
            queue.put(None)
            worker.start()
        for worker in workers:
            worker.join()

    def two_workers_copy() -> None:
        queue: Queue[list[int] | None] = Queue()
        done: Queue[list[tuple[Any, ...]] | None] = Queue()
        for batch in batches:
            queue.put(batch)

        def work() -> None:
            torch.set_num_threads(1)
            while (batch := queue.get()) is not None:
                encoded = encode_vectors(embed([texts[i] for i in batch]))
                done.put([(i, texts[i], e) for i, e in zip(batch, encoded, strict=True)])
            done.put(None)

        workers = [threading.Thread(target=work) for _ in range(2)]
        for worker in workers:
            queue.put(None)
            worker.start()

        def rows() -> Iterable[tuple[Any, ...]]:
            finished = 0
            while finished < len(workers):
                item = done.get()
                if item is None:
                    finished += 1
                else:
                    yield from item

        copy("plain", rows())
        for worker in workers:
            worker.join()

    cases: dict[str, Callable[[], object]] = {
        "model": lambda: embed(texts),
        "sequential": sequential,
        "overlapped": overlapped,
        "two_workers": lambda: two_workers(texts, batches),
        "two_workers_copy": two_workers_copy,
        "vector_copy": lambda: copy("plain", ((i, texts[i], vectors[i]) for i in order)),
        "halfvec_copy": lambda: copy("half", ((i, texts[i], vectors[i]) for i in order)),
    }
    sizes = dict.fromkeys(cases, len(texts))
    if long_texts:
        long_order = sorted(range(len(long_texts)), key=lambda i: -len(long_texts[i]))
        long_batches = [long_order[i : i + BATCH] for i in range(0, len(long_order), BATCH)]
        cases["model_long"] = lambda: embed(long_texts)
        cases["two_workers_long"] = lambda: two_workers(long_texts, long_batches)
        sizes |= {"model_long": len(long_texts), "two_workers_long": len(long_texts)}
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, case in cases.items():
            connection.execute("TRUNCATE plain, half")
            started = time.perf_counter()
            case()
            rates[name].append(sizes[name] / (time.perf_counter() - started))
    medians = {name: statistics.median(values) for name, values in rates.items()}
    summary = {
        "texts": len(texts),
        "runs": args.runs,
        "texts_per_second": medians,
        "per_run": rates,
        "sequential_ratio": medians["sequential"] / medians["model"],
        "overlapped_ratio": medians["overlapped"] / medians["model"],
        "two_workers_speedup": medians["two_workers"] / medians["model"],
        "two_workers_copy_ratio": medians["two_workers_copy"] / medians["two_workers"],
        "two_workers_copy_vs_model": medians["two_workers_copy"] / medians["model"],
        "halfvec_copy_speedup": medians["halfvec_copy"] / medians["vector_copy"],
    }
    if long_texts:
        summary["long_texts"] = len(long_texts)
        summary["two_workers_long_speedup"] = medians["two_workers_long"] / medians["model_long"]
    write_result("ingest-overlap", summary, args)


if __name__ == "__main__":
    main()
