"""HNSW graph parameters: what an insert costs against what a search finds.

For each graph definition (``--variants``, pgvector's ``m`` and ``ef_construction``):

1. ``copy``: a binary ``COPY`` of ``--texts`` SciFact titles with their all-MiniLM-L6-v2 vectors
   into an empty table holding that graph, the variants interleaved over ``--runs`` runs (rows
   per second; this is the server's part of ingest with embedding);
2. ``recall``: the graph built with ``CREATE INDEX`` over a corpus, then for the first
   ``--queries`` SciFact test claims recall@10 against exact search in numpy, at each
   ``hnsw.ef_search`` of ``--ef-search``, and the median query time. ``--corpus memories``: the
   read benchmark's 100,000 memories (``retrieve.py``'s ``bench_one`` schema: run it once with
   the same ``--data-dir`` first; near-copies of the titles, in tight clusters);
   ``--corpus sentences``: up to ``--sentences`` real sentences of SciFact's abstracts, embedded
   by the model (once; the vectors are kept beside the data directory).

Usage: python benchmarks/writing/hnsw_links.py --data-dir /tmp/rb/pg [--variants 16,12,10,8]
       [--texts 1000] [--runs 5] [--queries 300] [--ef-search 40,100]
       [--corpus memories|sentences] [--sentences 50000] [--json PATH]
A variant is ``M`` or ``M:EF_CONSTRUCTION`` (default ef_construction 64).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, parts_variant, write_result
from _scifact import load_corpus, scifact_sentences, scifact_texts
from _server import add_data_dir, embedded
from pgvector.psycopg import register_vector

from retrieval.db.copy_rows import encode_vectors
from retrieval.embedding.models import SentenceTransformerEmbedder

SCHEMA = "bench_hnsw"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, required=True, what="the data of a retrieve.py run")
    parser.add_argument("--variants", default="16,12,10,8")
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--ef-search", default="40,100")
    parser.add_argument("--parts", default="copy,recall", help="copy, recall or both")
    parser.add_argument("--corpus", choices=("memories", "sentences"), default="memories")
    parser.add_argument("--sentences", type=int, default=50_000)
    add_output(parser)
    args = parser.parse_args()
    variants = [_variant(v) for v in args.variants.split(",")]
    parts = set(args.parts.split(","))

    connection = psycopg.connect(embedded(args.data_dir).psycopg_url, autocommit=True)
    register_vector(connection)
    connection.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    embedder = SentenceTransformerEmbedder()
    results: dict[str, Any] = {
        "settings": {k: str(v) for k, v in vars(args).items()},
    }
    if "copy" in parts:
        results["copy_rows_per_second"] = copy_rates(connection, embedder, variants, args)
    if "recall" in parts:
        results["recall"] = recall(connection, embedder, variants, args)
    write_result(
        "hnsw-links",
        results,
        args,
        variant=parts_variant(args.parts, "copy,recall"),
    )


def _variant(spec: str) -> tuple[int, int]:
    links, _, construction = spec.partition(":")
    return int(links), int(construction or 64)


def _name(variant: tuple[int, int]) -> str:
    return f"m{variant[0]}_efc{variant[1]}"


def _graph(table: str, variant: tuple[int, int]) -> str:
    return (
        f"CREATE INDEX ON {SCHEMA}.{table} USING hnsw (embedding vector_l2_ops) "
        f"WITH (m = {variant[0]}, ef_construction = {variant[1]})"
    )


def _fresh_table(connection: psycopg.Connection[Any], table: str, definition: str) -> None:
    connection.execute(f"DROP TABLE IF EXISTS {SCHEMA}.{table}")
    connection.execute(f"CREATE TABLE {SCHEMA}.{table} {definition}")


def copy_rates(
    connection: psycopg.Connection[Any],
    embedder: SentenceTransformerEmbedder,
    variants: list[tuple[int, int]],
    args: argparse.Namespace,
) -> dict[str, dict[str, Any]]:
    texts = scifact_texts(args.texts, long=False)
    vectors = encode_vectors(embedder.embed(texts))
    for variant in variants:
        table = f"copy_{_name(variant)}"
        _fresh_table(connection, table, "(id bigint, content text, embedding vector(384))")
        connection.execute(_graph(table, variant))
    rates: dict[str, list[float]] = {_name(v): [] for v in variants}
    for run in range(args.runs):
        for variant in variants if run % 2 == 0 else variants[::-1]:
            table = f"copy_{_name(variant)}"
            connection.execute(f"TRUNCATE {SCHEMA}.{table}")
            began = time.perf_counter()
            with connection.transaction(), connection.cursor() as cursor:
                statement = (
                    f"COPY {SCHEMA}.{table} (id, content, embedding) FROM STDIN (FORMAT BINARY)"
                )
                with cursor.copy(statement) as stream:
                    stream.set_types(["int8", "text", "bytea"])
                    for i, content in enumerate(texts):
                        stream.write_row((i, content, vectors[i]))
            rates[_name(variant)].append(len(texts) / (time.perf_counter() - began))
    return {
        name: {"median": statistics.median(values), "runs": values}
        for name, values in rates.items()
    }


def recall(
    connection: psycopg.Connection[Any],
    embedder: SentenceTransformerEmbedder,
    variants: list[tuple[int, int]],
    args: argparse.Namespace,
) -> dict[str, dict[str, Any]]:
    source = _recall_corpus(connection, embedder, args)
    rows = connection.execute(f"SELECT id, embedding FROM {source} ORDER BY id").fetchall()
    ids = np.array([row[0] for row in rows])
    matrix = np.stack([row[1].to_numpy() for row in rows])
    corpus = load_corpus(embedder, args.data_dir.parent / "scifact-title-vectors.npy")
    queries = embedder.embed(corpus.queries[: args.queries])
    exact = [
        set(ids[np.argsort(np.linalg.norm(matrix - query, axis=1))[:10]].tolist())
        for query in queries
    ]
    connection.execute("SET maintenance_work_mem = '1GB'")
    connection.execute("SET hnsw.iterative_scan = relaxed_order")  # as the retriever does
    out: dict[str, dict[str, Any]] = {}
    for variant in variants:
        table = f"recall_{_name(variant)}"
        _fresh_table(connection, table, f"AS SELECT id, embedding FROM {source}")
        began = time.perf_counter()
        connection.execute(_graph(table, variant))
        built = time.perf_counter() - began
        connection.execute(f"VACUUM ANALYZE {SCHEMA}.{table}")
        by_ef: dict[str, Any] = {}
        for ef in (int(e) for e in args.ef_search.split(",")):
            connection.execute(f"SET hnsw.ef_search = {ef}")
            statement = f"SELECT id FROM {SCHEMA}.{table} ORDER BY embedding <-> %s LIMIT 10"
            recalls, times = [], []
            for query, truth in zip(queries, exact, strict=True):
                connection.execute(statement, (query,)).fetchall()  # warm
                began = time.perf_counter()
                found = {row[0] for row in connection.execute(statement, (query,)).fetchall()}
                times.append((time.perf_counter() - began) * 1000)
                recalls.append(len(found & truth) / 10)
            by_ef[str(ef)] = {
                "mean_recall_at_10": statistics.mean(recalls),
                "queries_with_recall_below_0_5": sum(r < 0.5 for r in recalls),
                "median_query_ms": statistics.median(times),
            }
        out[_name(variant)] = {"build_seconds": built, "ef_search": by_ef}
        connection.execute(f"DROP TABLE {SCHEMA}.{table}")
        print(_name(variant), json.dumps(out[_name(variant)]), flush=True)
    return out


def _recall_corpus(
    connection: psycopg.Connection[Any],
    embedder: SentenceTransformerEmbedder,
    args: argparse.Namespace,
) -> str:
    # The table the graphs are built over: the read benchmark's memories, or SciFact sentences
    # embedded once (their vectors cached beside the data directory) in a table of this schema.
    if args.corpus == "memories":
        if not connection.execute("SELECT 1 FROM bench_one.memories LIMIT 1").fetchall():
            raise SystemExit("no bench_one.memories here: run retrieve.py with this --data-dir")
        return "bench_one.memories"
    sentences = scifact_sentences(args.sentences)
    cache = args.data_dir.parent / f"scifact-sentence-vectors-{len(sentences)}.npy"
    if cache.exists():
        vectors = np.load(cache)
    else:
        vectors = embedder.embed(sentences)
        np.save(cache, vectors)
    _fresh_table(connection, "sentences", "(id bigint, embedding vector(384))")
    with (
        connection.cursor() as cursor,
        cursor.copy(
            f"COPY {SCHEMA}.sentences (id, embedding) FROM STDIN (FORMAT BINARY)"
        ) as stream,
    ):
        stream.set_types(["int8", "bytea"])
        encoded = encode_vectors(vectors)
        for i in range(len(sentences)):
            stream.write_row((i, encoded[i]))
    return f"{SCHEMA}.sentences"


if __name__ == "__main__":
    main()
