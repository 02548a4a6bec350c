"""What a long or hostile query costs against a short one, on the same tenant.

One tenant holds ``--rows`` SciFact sentences three times over: as memories, as decisions and as
tool calls (the sentence as a ``query`` parameter), so that every source has the query's words to
match. The queries, each asked once first (its vector cached, connections warm), then timed
``--runs`` times through ``retrieve()`` with the default config (the median is reported):

* ``short``: a SciFact claim;
* ``words_50``, ``words_500``, ``words_max``: that many distinct keywords of the tenant's own
  vocabulary (words long enough to be keywords, not stop words; the shortest first, so that
  ``words_max``, as many as fit in the 10,000 characters a query may have, holds the most);
* ``vocabulary_10k``: the tenant's keywords in their order of first use, as many as fit in
  10,000 characters;
* ``jun_10k``: ``"Jun " * 2500``, month names that the time parser reads one by one;
* ``jun_10k_parser``: the time parser alone on that text (``query_window``).

Reports each query's median and its ratio to ``short``. Target: every ratio at most 3.

Usage: python benchmarks/reading/long_queries.py [--data-dir DIR] [--rows 3000] [--runs 7]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import add_output, timed_ms, write_result
from _scifact import read_queries, scifact_sentences, sentence_memories
from sqlalchemy import text

from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.prepare.query_time import query_window
from retrieval.search.retriever import HybridRetriever

TENANT = "long-queries"
MAX_CHARS = 10_000


def _store_episodes(store: MemoryStore, rows: int) -> None:
    with store.engine.connect() as connection:
        have = connection.execute(
            text("SELECT count(*) FROM retrieval.decisions WHERE tenant_id = :t"), {"t": TENANT}
        ).scalar_one()
    if have == rows:
        return
    sentences = scifact_sentences(rows)
    print(f"storing {rows} decisions and {rows} tool calls", flush=True)
    for start in range(0, rows, 1000):
        batch = sentences[start : start + 1000]
        store.record_decisions(
            {"tenant_id": TENANT, "action_type": "note", "content": s, "status": "done"}
            for s in batch
        )
        store.record_tool_calls(
            {"tenant_id": TENANT, "tool_name": "search_papers", "params": {"query": s}}
            for s in batch
        )


def _fitting(words: list[str], count: int | None = None) -> str:
    chosen: list[str] = []
    length = 0
    for word in words[: count or len(words)]:
        if length + len(word) + 1 > MAX_CHARS:
            break
        chosen.append(word)
        length += len(word) + 1
    return " ".join(chosen)


def _queries(rows: int) -> dict[str, str]:
    config = RetrievalConfig()
    words = (w.lower() for s in scifact_sentences(rows) for w in re.findall(r"[A-Za-z]+", s))
    vocabulary = list(dict.fromkeys(
        w for w in words if len(w) >= config.keyword_min_length and w not in config.stop_words
    ))  # fmt: skip
    shortest = sorted(vocabulary, key=len)
    queries = {"short": read_queries()[0]}
    for count in (50, 500):
        queries[f"words_{count}"] = _fitting(shortest, count)
    queries["words_max"] = _fitting(shortest)
    queries["vocabulary_10k"] = _fitting(vocabulary)
    queries["jun_10k"] = ("Jun " * 2500).strip()
    return queries


def _median_ms(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        times.append(timed_ms(call)[1])
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help="embedded server data (default: a temp dir)")
    parser.add_argument("--rows", type=int, default=3000, help="sentences of each kind")
    parser.add_argument("--runs", type=int, default=7, help="timed calls per query")
    add_output(parser)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-long-")) / "pg"
    database, store = sentence_memories(data_dir, TENANT, args.rows)
    _store_episodes(store, args.rows)
    queries = _queries(args.rows)
    results: dict[str, Any] = {"queries": {}}
    as_of = datetime.now(UTC)
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        for name, query in queries.items():
            response = retriever.retrieve(query, tenant_id=TENANT)  # warm: vector cached
            median = _median_ms(lambda q=query: retriever.retrieve(q, tenant_id=TENANT), args.runs)
            results["queries"][name] = {
                "characters": len(query),
                "distinct_words": len(set(query.lower().split())),
                "keywords": len(response.diagnostics.keywords),
                "p50_ms": round(median, 2),
            }
            print(f"{name}: {median:.1f} ms", flush=True)
    parser_ms = _median_ms(lambda: query_window(queries["jun_10k"], as_of), args.runs)
    results["queries"]["jun_10k_parser"] = {"characters": MAX_CHARS, "p50_ms": round(parser_ms, 3)}
    short = results["queries"]["short"]["p50_ms"]
    for entry in results["queries"].values():
        entry["over_short"] = round(entry["p50_ms"] / short, 2)
    results["target_over_short"] = 3.0
    database.dispose()
    write_result("long-queries", results, args)


if __name__ == "__main__":
    main()
