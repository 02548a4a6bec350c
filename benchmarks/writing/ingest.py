"""Write-path throughput against baselines measured in the same run.

1. Bulk ingest with precomputed 384-d embeddings: ``MemoryStore.remember_many`` against a raw
   binary ``COPY`` of the same rows (psycopg + pgvector, nothing else), both into the memories
   table in the same state: first without its HNSW index (an initial load, the index built
   afterwards), then with it (every row inserted into the graph).
2. Ingest with embedding: ``remember_many`` on texts the cache has never seen, against the
   embedder alone on the same texts: memory-sized texts (SciFact titles) and whole abstracts.
   ``--embed-links 12,16`` also times the short texts into HNSW graphs of each ``m`` (links
   per node; the library's is ``schema.HNSW_LINKS``), interleaved with the embedder's runs.
   Each run also times the model followed by a bare binary ``COPY`` of the short texts' rows
   (``embed_short_bare_copy``): the ceiling the index insert leaves, without the library.
3. All-cache-hit ingest: ``remember_many`` of texts whose vectors are all in the PostgreSQL
   cache (a new store, so the in-process LRU is empty), with and without the HNSW index.
4. ``--parts bm25`` (not in the default set): bulk ingest of memory-sized texts into the
   memories as migrated (their lexemes, the GIN index on them and the triggers keeping their
   statistics; revision 0010) against the same table without any of it (schema
   ``bench_plain``) and the floor of any lexical index kept in the database, the generated
   lexemes and their GIN index without statistics (``bench_floor``), runs interleaved.
5. ``--parts history`` (not in the default set): decisions (SciFact sentences) and tool calls
   written in batches (``record_decisions`` / ``record_tool_calls``) and one by one, with the
   episodic word index's triggers (revision 0007) against the same with them disabled, and
   against the same without the vocabulary's index on tenant and token (revision 0009).
6. ``--parts turns`` (not in the default set): the short texts as conversation turns (threads
   of 20, each with its ``thread_id`` and ``position``, two speakers in runs of three
   messages) written with the model, then again with every vector in the cache (a new store),
   each with the default turn context (every turn embedded with the turn before its run)
   against ``WriteConfig(turn_context=0)``, interleaved.
7. ``--parts collapse`` (not in the default set): the bulk ingest of part 1 (no HNSW index)
   with copies collapsing (the default) against ``collapse_duplicates=False``, interleaved, and
   the same rows again when every one is a copy of a live memory.

Usage: python benchmarks/writing/ingest.py [--rows 100000] [--indexed-rows 5000] [--runs 3]
       [--embed-texts 2000] [--embed-long-texts 300] [--hit-texts 20000] [--database-url URL]
       [--backend onnx|onnx-int8|torch]
Without --database-url it runs on a throw-away embedded server.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, parts_variant, write_result
from _scifact import scifact_sentences, scifact_texts
from _server import add_database_url, reached
from pgvector import HalfVector, Vector
from sqlalchemy import Engine, text

from retrieval.db.engine import stored_vector_type
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.db.table_parts import HNSW_LINKS
from retrieval.db.vector_index import build_vector_index
from retrieval.db.vector_type import operator_class
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.config import DEFAULT_TURN_CONTEXT, WriteConfig
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore

SETTINGS = MigrationSettings(schema="bench", embedding_dim=384)
HNSW = (
    "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw_idx ON bench.memories "
    "USING hnsw (embedding {operators}) WITH (m = {links})"
)
NO_HNSW = "DROP INDEX IF EXISTS bench.memories_embedding_hnsw_idx"
# The memories and what refers to them, and with them the embedding cache.
MEMORY_ROWS = "TRUNCATE bench.memories, bench.memory_entities"
TRUNCATE = MEMORY_ROWS + ", bench.embedding_cache"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--indexed-rows", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--embed-texts", type=int, default=2000, help="short texts to embed")
    parser.add_argument("--embed-long-texts", type=int, default=300, help="abstracts to embed")
    parser.add_argument(
        "--embed-links",
        default=str(HNSW_LINKS),
        help=f"comma-separated HNSW m values for the short texts (default: {HNSW_LINKS})",
    )
    parser.add_argument("--hit-texts", type=int, default=20_000)
    parser.add_argument("--bm25-rows", type=int, default=20_000, help="rows of the bm25 part")
    parser.add_argument(
        "--history-rows", type=int, default=20_000, help="decisions of the history part"
    )
    add_database_url(parser)
    parser.add_argument(
        "--backend",
        choices=("onnx", "onnx-int8", "torch"),
        default="onnx",
        help="what runs the embedding model (the embedder alone and the ingest alike)",
    )
    add_output(parser)
    parser.add_argument(
        "--parts",
        default="bulk,embed,hits",
        help="comma-separated subset of bulk, embed, hits, bm25, history, turns, collapse "
        "(default: bulk, embed, hits)",
    )
    args = parser.parse_args()

    engine = reached(args.database_url, SETTINGS).engine
    embedder = SentenceTransformerEmbedder(backend=args.backend)
    results: dict[str, Any] = {
        "settings": vars(args) | {"json": str(args.json)},
    }
    rng = np.random.default_rng(42)
    parts = set(args.parts.split(","))

    if "bulk" in parts:
        vectors = rng.normal(size=(args.rows, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        results["bulk_no_index"] = _bulk(engine, embedder, vectors, args.runs, indexed=False)
        results["index_build"] = _index_build(engine, args.rows)
        results["bulk_with_index"] = _bulk(
            engine, embedder, vectors[: args.indexed_rows], args.runs, indexed=True
        )
    texts = scifact_texts(max(args.embed_texts, args.hit_texts), long=False)
    if "embed" in parts:
        links = [int(m) for m in args.embed_links.split(",")]
        by_links, bare = _embedding(
            engine, embedder, texts[: args.embed_texts], args.runs, links, ceiling=True
        )
        results["embed_short"] = by_links.get(HNSW_LINKS, next(iter(by_links.values())))
        results["embed_short_by_links"] = {f"m={m}": summary for m, summary in by_links.items()}
        results["embed_short_bare_copy"] = bare
        abstracts = scifact_texts(args.embed_long_texts, long=True)
        results["embed_long"] = _embedding(engine, embedder, abstracts, args.runs)[0][HNSW_LINKS]
    if "hits" in parts:
        results["cache_hits_no_index"] = _cache_hits(
            engine, embedder, texts[: args.hit_texts], args.runs, indexed=False
        )
        hit_texts = texts[: min(args.hit_texts, args.indexed_rows)]
        results["cache_hits_with_index"] = _cache_hits(
            engine, embedder, hit_texts, args.runs, indexed=True
        )
    if "bm25" in parts:
        results["memory_bm25"] = _memory_bm25(engine, embedder, args.bm25_rows, args.runs)
    if "history" in parts:
        results["history"] = _history(engine, embedder, args.history_rows, args.runs)
    if "turns" in parts:
        results["turns"] = _turns(engine, embedder, texts[: args.embed_texts], args.runs)
    if "collapse" in parts:
        vectors = rng.normal(size=(args.rows, 384)).astype(np.float32)
        results["collapse"] = _collapse(engine, embedder, vectors, args.runs)
    _execute(engine, _hnsw(engine, HNSW_LINKS))
    write_result(
        "ingest",
        results,
        args,
        variant=parts_variant(args.parts, "bulk,embed,hits"),
    )


def _bulk(
    engine: Engine,
    embedder: SentenceTransformerEmbedder,
    vectors: np.ndarray,
    runs: int,
    *,
    indexed: bool,
) -> dict[str, Any]:
    _execute(engine, _hnsw(engine, HNSW_LINKS) if indexed else NO_HNSW)
    n = len(vectors)
    items = [
        MemoryInput(text=f"memory {i}: precomputed", tenant_id="bench", embedding=vectors[i],
                    embedding_model="precomputed")
        for i in range(n)
    ]  # fmt: skip
    ours: list[float] = []
    raw: list[float] = []
    for run in range(runs):
        # Alternate the order so neither side always meets a freshly vacuumed table.
        for side in ("raw", "ours") if run % 2 == 0 else ("ours", "raw"):
            _execute(engine, TRUNCATE)
            began = time.perf_counter()
            if side == "raw":
                _raw_copy(engine, items)
            else:
                MemoryStore(engine, schema="bench", embedder=embedder).remember_many(items)
            (raw if side == "raw" else ours).append(n / (time.perf_counter() - began))
    return _summary(n, ours, raw, "rows/s")


def _collapse(
    engine: Engine, embedder: SentenceTransformerEmbedder, vectors: np.ndarray, runs: int
) -> dict[str, Any]:
    """Bulk ingest of new rows with precomputed vectors (no HNSW index) with copies collapsing
    (the default) against ``collapse_duplicates=False``, interleaved; then the same batch again
    with collapsing, when every row is a copy of a live memory (refreshed, not stored)."""
    _execute(engine, NO_HNSW)
    items = [
        MemoryInput(text=f"memory {i}: precomputed", tenant_id="bench", embedding=vectors[i],
                    embedding_model="precomputed")
        for i in range(len(vectors))
    ]  # fmt: skip
    rates: dict[str, list[float]] = {"collapsing": [], "not collapsing": [], "all copies": []}
    for run in range(runs):
        sides = (True, False) if run % 2 == 0 else (False, True)
        for collapse in sides:
            _execute(engine, TRUNCATE)
            store = MemoryStore(
                engine,
                schema="bench",
                embedder=embedder,
                config=WriteConfig(collapse_duplicates=collapse),
            )
            began = time.perf_counter()
            store.remember_many(items)
            rates["collapsing" if collapse else "not collapsing"].append(
                len(items) / (time.perf_counter() - began)
            )
            if collapse:
                began = time.perf_counter()
                again = store.remember_many(items)
                rates["all copies"].append(len(items) / (time.perf_counter() - began))
                assert again.duplicates == len(items)
    summary = _summary(len(items), rates["collapsing"], rates["not collapsing"], "rows/s")
    summary["baseline"] = "collapse_duplicates=False"
    summary["all_copies_median"] = statistics.median(rates["all copies"])
    summary["all_copies_runs"] = rates["all copies"]
    return summary


PLAIN = MigrationSettings(schema="bench_plain", embedding_dim=384)
FLOOR = MigrationSettings(schema="bench_floor", embedding_dim=384)
_TRIGGERS = ("added", "removed", "changed", "truncated")


def _strip(schema: str, *, lexemes: bool) -> list[str]:
    """What revision 0010 adds for the BM25 channel of memories, taken away: the triggers
    keeping the statistics, and with ``lexemes`` the generated lexemes and their GIN index too
    (and the HNSW index: every case loads without it)."""
    statements = [f"DROP TRIGGER IF EXISTS memories_words_{event} ON {schema}.memories"
                  for event in _TRIGGERS]  # fmt: skip
    if lexemes:
        statements += [
            f"DROP INDEX IF EXISTS {schema}.memories_search_vector_idx",
            f"ALTER TABLE {schema}.memories DROP COLUMN IF EXISTS search_vector",
        ]
    return [*statements, f"DROP INDEX IF EXISTS {schema}.memories_embedding_hnsw_idx"]


def _memory_bm25(
    engine: Engine, embedder: SentenceTransformerEmbedder, rows: int, runs: int
) -> dict[str, Any]:
    """Bulk ingest of memory-sized texts (SciFact titles) with precomputed vectors, without the
    HNSW index, in batches of 5,000: into the memories as migrated (lexemes, GIN index,
    statistics), into the same without any of it (``without``), and the floor of an in-database
    lexical index: the generated lexemes and their GIN index alone, no statistics."""
    _execute(engine, NO_HNSW)
    for settings, lexemes in ((PLAIN, True), (FLOOR, False)):
        upgrade(engine, settings)
        for statement in _strip(settings.schema, lexemes=lexemes):
            _execute(engine, statement)
    titles = scifact_texts(rows, long=False)
    vectors = np.random.default_rng(3).normal(size=(rows, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = [
        MemoryInput(text=f"{titles[i % len(titles)]} (note {i})", tenant_id="bench",
                    embedding=vectors[i], embedding_model="precomputed")
        for i in range(rows)
    ]  # fmt: skip
    cases = {"without": "bench_plain", "with": "bench", "floor": "bench_floor"}
    rates: dict[str, list[float]] = {case: [] for case in cases}
    for run in range(runs):
        for case in list(cases) if run % 2 == 0 else list(cases)[::-1]:
            schema = cases[case]
            _execute(engine, f"TRUNCATE {schema}.memories, {schema}.memory_entities")
            _execute(engine, "CHECKPOINT")
            store = MemoryStore(engine, schema=schema, embedder=embedder)
            began = time.perf_counter()
            for start in range(0, rows, 5000):
                store.remember_many(items[start : start + 5000])
            rates[case].append(rows / (time.perf_counter() - began))
    summary = _summary(rows, rates["with"], rates["without"], "rows/s", "without the index")
    summary["floor_median"] = statistics.median(rates["floor"])
    summary["floor"] = rates["floor"]
    summary["floor_ratio"] = summary["floor_median"] / summary["baseline_median"]
    return summary


def _index_build(engine: Engine, rows: int) -> dict[str, Any]:
    """Build the HNSW index over the rows the last bulk run left, as `ingest --defer-index` does."""
    seconds = build_vector_index(engine, SETTINGS.schema)
    return {"n": rows, "seconds": seconds, "rows_per_second": rows / seconds}


def _hnsw(engine: Engine, links: int) -> str:
    # The graph of the column's own type (halfvec, the default since revision 0013).
    operators = operator_class(stored_vector_type(engine, SETTINGS.schema))
    return HNSW.format(operators=operators, links=links)


def _raw_copy(engine: Engine, items: list[MemoryInput]) -> None:
    # The embeddings in the column's own type (halfvec, the default since revision 0013).
    kind = stored_vector_type(engine, SETTINGS.schema)
    with engine.begin() as connection:
        driver = connection.connection.driver_connection
        assert driver is not None
        with (
            driver.cursor() as cursor,
            cursor.copy(
                "COPY bench.memories (tenant_id, content, kind, metadata, embedding, "
                "embedding_model) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy,
        ):
            copy.set_types(["text", "text", "text", "jsonb", kind, "text"])
            wrap = HalfVector if kind == "halfvec" else Vector
            for item in items:
                copy.write_row(
                    (item.tenant_id, item.text, item.kind, {}, wrap(item.embedding),
                     item.embedding_model)
                )  # fmt: skip


def _embedding(
    engine: Engine,
    embedder: SentenceTransformerEmbedder,
    texts: list[str],
    runs: int,
    links: list[int] | None = None,
    *,
    ceiling: bool = False,
) -> tuple[dict[int, dict[str, Any]], dict[str, Any] | None]:
    """Per HNSW ``m``: ingest with embedding against the embedder alone, runs interleaved.

    With ``ceiling``, each run also times the model followed by a bare binary ``COPY`` of the
    rows (no cache, no validation) into a fresh graph of the library's ``m``: what the index
    insert alone leaves of the model's rate."""
    links = links or [HNSW_LINKS]
    cases: list[int | None] = [*links, None] if ceiling else list(links)  # None: bare COPY
    embedder.embed(texts[:16])  # load the model and warm it up outside the timings
    ours: dict[int, list[float]] = {m: [] for m in links}
    bare: list[float] = []
    model: list[float] = []
    for run in range(runs):
        began = time.perf_counter()
        embedder.embed(texts)
        model.append(len(texts) / (time.perf_counter() - began))
        for case in cases if run % 2 == 0 else cases[::-1]:  # alternate which goes first
            _execute(engine, TRUNCATE)
            _execute(engine, NO_HNSW)
            _execute(engine, _hnsw(engine, case or HNSW_LINKS))
            if case is None:
                began = time.perf_counter()
                vectors = embedder.embed(texts)
                _raw_copy(
                    engine,
                    [
                        MemoryInput(text=t, tenant_id=f"run-{run}", embedding=v,
                                    embedding_model=embedder.model_id)
                        for t, v in zip(texts, vectors, strict=True)
                    ],
                )  # fmt: skip
                bare.append(len(texts) / (time.perf_counter() - began))
                continue
            store = MemoryStore(engine, schema="bench", embedder=embedder)
            began = time.perf_counter()
            store.remember_many([{"text": t, "tenant_id": f"run-{run}"} for t in texts])
            ours[case].append(len(texts) / (time.perf_counter() - began))
            assert store.cache_stats.embedded == len(set(texts))
    _execute(engine, NO_HNSW)
    _execute(engine, _hnsw(engine, HNSW_LINKS))
    by_links = {m: _summary(len(texts), ours[m], model, "texts/s", "embedder alone") for m in links}
    bound = _summary(len(texts), bare, model, "texts/s", "embedder alone") if ceiling else None
    return by_links, bound


def _cache_hits(
    engine: Engine,
    embedder: SentenceTransformerEmbedder,
    texts: list[str],
    runs: int,
    *,
    indexed: bool,
) -> dict[str, Any]:
    _execute(engine, TRUNCATE)
    _execute(engine, NO_HNSW)
    MemoryStore(engine, schema="bench", embedder=embedder).remember_many(
        [{"text": t, "tenant_id": "hits"} for t in texts]
    )  # fills the cache
    _execute(engine, _hnsw(engine, HNSW_LINKS) if indexed else NO_HNSW)
    rates: list[float] = []
    for _ in range(runs):
        _execute(engine, MEMORY_ROWS)
        store = MemoryStore(engine, schema="bench", embedder=embedder)
        began = time.perf_counter()
        store.remember_many([{"text": t, "tenant_id": "hits"} for t in texts])
        rates.append(len(texts) / (time.perf_counter() - began))
        # (a text given twice is one memory, written once: SciFact repeats a few titles)
        distinct = len(set(texts))
        assert store.cache_stats.database_hits == distinct and store.cache_stats.embedded == 0
    return {
        "n": len(texts),
        "ours_median": statistics.median(rates),
        "ours": rates,
        "unit": "texts/s",
    }


def _turns(
    engine: Engine, embedder: SentenceTransformerEmbedder, texts: list[str], runs: int
) -> dict[str, Any]:
    """Conversation turns with the default turn context against none, new then cached."""
    # Two speakers taking turns of three messages each: every message but a run's first is
    # embedded with the turn before its run.
    turns = [
        MemoryInput(text=f"{('Ana', 'Bo')[i // 3 % 2]}: {t}", tenant_id="turns", kind="message",
                    thread_id=f"s{i // 20}", position=i % 20)
        for i, t in enumerate(texts)
    ]  # fmt: skip
    embedder.embed(texts[:16])  # load the model outside the timings
    rates: dict[str, dict[str, list[float]]] = {
        case: {"new": [], "cached": []} for case in ("context", "none")
    }
    for run in range(runs):
        for case in ("context", "none") if run % 2 == 0 else ("none", "context"):
            config = WriteConfig(turn_context=DEFAULT_TURN_CONTEXT if case == "context" else 0.0)
            _execute(engine, TRUNCATE)
            for stage in ("new", "cached"):
                if stage == "cached":
                    _execute(engine, MEMORY_ROWS)
                store = MemoryStore(engine, schema="bench", embedder=embedder, config=config)
                began = time.perf_counter()
                store.remember_many(turns)
                rates[case][stage].append(len(turns) / (time.perf_counter() - began))
                distinct = len({turn.text for turn in turns})
                assert store.cache_stats.embedded == (distinct if stage == "new" else 0)
    return {
        stage: _summary(len(turns), rates["context"][stage], rates["none"][stage], "turns/s",
                        "turn_context 0")
        for stage in ("new", "cached")
    }  # fmt: skip


HISTORY_TABLES = ("decisions", "tool_calls")
TENANT_TOKEN_INDEX = "episodic_vocabulary_tenant_token_trgm_idx"


def _history(
    engine: Engine, embedder: SentenceTransformerEmbedder, rows: int, runs: int
) -> dict[str, Any]:
    # Each run writes the same decisions and tool calls, from empty tables: with the word
    # index's triggers (revision 0007) and the vocabulary's two trigram indexes (0009); with
    # the triggers and the token index only (0007-0008); and with the triggers disabled (the
    # write path before revision 0007).
    sentences = scifact_sentences(rows)
    singles = min(500, rows)
    cases = ("", "_token_index_only", "_baseline")
    rates: dict[str, list[float]] = {
        kind + case: [] for kind in ("batch", "single") for case in cases
    }
    for _ in range(runs):
        for case in cases:
            for table in HISTORY_TABLES:
                state = "DISABLE" if case == "_baseline" else "ENABLE"
                _execute(engine, f"ALTER TABLE bench.{table} {state} TRIGGER USER")
            if case == "_token_index_only":
                _execute(engine, f"DROP INDEX bench.{TENANT_TOKEN_INDEX}")
            _execute(engine, "TRUNCATE bench.decisions, bench.tool_calls")
            store = MemoryStore(engine, schema="bench", embedder=embedder)
            began = time.perf_counter()
            ids = store.record_decisions(
                {"tenant_id": "history", "task_id": f"task-{i % 200}", "action_type": "plan",
                 "content": sentence, "status": "done"}
                for i, sentence in enumerate(sentences)
            )  # fmt: skip
            store.record_tool_calls(
                {"tenant_id": "history", "decision_id": ids[i], "tool_name": "search",
                 "params": {"query": " ".join(sentence.split()[:4]), "limit": 10},
                 "result": "ok"}
                for i, sentence in enumerate(sentences)
            )  # fmt: skip
            rates["batch" + case].append(2 * rows / (time.perf_counter() - began))
            began = time.perf_counter()
            for sentence in sentences[:singles]:
                store.record_decision(
                    tenant_id="history", task_id=None, action_type="note", content=sentence,
                    status="done",
                )  # fmt: skip
            rates["single" + case].append(singles / (time.perf_counter() - began))
            if case == "_token_index_only":
                _execute(
                    engine,
                    f"CREATE INDEX {TENANT_TOKEN_INDEX} ON bench.episodic_vocabulary "
                    "USING gin (tenant_id, token gin_trgm_ops)",
                )
    for table in HISTORY_TABLES:
        _execute(engine, f"ALTER TABLE bench.{table} ENABLE TRIGGER USER")
    return {
        "rows": 2 * rows,
        "single_rows": singles,
        "batch": _summary(2 * rows, rates["batch"], rates["batch_baseline"], "rows/s",
                          "the same without the word index"),
        "single": _summary(singles, rates["single"], rates["single_baseline"], "rows/s",
                           "the same without the word index"),
        "batch_against_token_index_only": _summary(
            2 * rows, rates["batch"], rates["batch_token_index_only"], "rows/s",
            "the same without the vocabulary's tenant and token index (revision 0009)"),
        "single_against_token_index_only": _summary(
            singles, rates["single"], rates["single_token_index_only"], "rows/s",
            "the same without the vocabulary's tenant and token index (revision 0009)"),
    }  # fmt: skip


def _summary(
    n: int, ours: list[float], baseline: list[float], unit: str, baseline_name: str = "raw COPY"
) -> dict[str, Any]:
    ours_median = statistics.median(ours)
    base_median = statistics.median(baseline)
    return {
        "n": n,
        "unit": unit,
        "ours_median": ours_median,
        "baseline": baseline_name,
        "baseline_median": base_median,
        "ratio": ours_median / base_median,
        "ours": ours,
        "baseline_runs": baseline,
    }


def _execute(engine: Engine, statement: str) -> None:
    with engine.begin() as connection:
        connection.execute(text(statement))


if __name__ == "__main__":
    main()
