"""Keyword-only matches against answers: does a decision or tool call that shares only a common
word of the question outrank the memory that answers it?

``tests/data/keyword_matches.jsonl`` is an agent's history (tenant ``agent``): 16 memories, each
the answer to one question, among 20 decisions and 18 tool calls written later, full of the
questions' common words ("time", "deploy", "run", "check", "disk", "queue").
``tests/data/keyword_matches_questions.json`` holds the 16 questions, and 4 more whose answer
is a decision (a fix must not bury those). Each question is asked with the defaults as of the
fixture's date; a question is answered at k when its answer is among the first k results. Also
counted: the episodic results above the answer that matched fewer than half of the question's
keywords (the keyword-only matches), and those that matched a single keyword of a question of
several (a word alone).

Usage: python benchmarks/quality/keyword_matches.py [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, write_result
from _server import embedded

from retrieval.db.migrate import MigrationSettings
from retrieval.memory.file_ingest import ingest
from retrieval.memory.file_lines import read_file
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
SCHEMA = MigrationSettings(schema="keyword_matches", embedding_dim=384)
KS = (1, 3, 5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output(parser)
    args = parser.parse_args()
    fixture = json.loads((DATA / "keyword_matches_questions.json").read_text("utf-8"))
    engine = embedded(None, SCHEMA, prefix="rtv-keywords-").engine
    store = MemoryStore(engine, schema=SCHEMA.schema)
    ingest(store, read_file(DATA / "keyword_matches.jsonl", store))
    as_of = datetime.fromisoformat(fixture["as_of"])
    config = RetrievalConfig(record_access=False)
    rows = []
    with HybridRetriever.from_store(store, config=config) as retriever:
        for question in fixture["questions"]:
            response = retriever.retrieve(question["query"], tenant_id="agent", as_of=as_of)
            contents = [result.content for result in response.results]
            rank = (
                contents.index(question["answer"]) + 1 if question["answer"] in contents else None
            )
            above = response.results[: (rank or len(contents) + 1) - 1]
            keywords = response.diagnostics.keywords
            keyword_only = [
                r for r in above if r.source == "episodic" and _matched_share(r, keywords) < 0.5
            ]
            one_word = [
                r
                for r in above
                if r.source == "episodic"
                and len(keywords) > 1
                and len(r.metadata.get("matched_keywords") or []) == 1
            ]
            rows.append(
                {
                    "query": question["query"],
                    "source": question["source"],
                    "rank": rank,
                    "answer_score": None
                    if rank is None
                    else round(response.results[rank - 1].final_score, 3),
                    "keywords": list(keywords),
                    "keyword_only_above": len(keyword_only),
                    "one_word_above": len(one_word),
                    "first": f"{response.results[0].source}: {response.results[0].content}"
                    if contents
                    else None,
                }
            )
    results = {
        "questions": len(rows),
        "by_source": {
            source: _summary([row for row in rows if row["source"] == source])
            for source in ("semantic", "episodic")
        },
        "questions_detail": rows,
    }
    write_result("keyword-matches", results, args)
    engine.dispose()


def _matched_share(result: Any, keywords: tuple[str, ...]) -> float:
    # The share of the question's keywords the episodic row matched.
    matched = result.metadata.get("matched_keywords") or []
    return len(matched) / len(keywords) if keywords else 0.0


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ranks = [row["rank"] for row in rows]
    return {
        "questions": len(rows),
        **{f"answered_at_{k}": sum(1 for r in ranks if r is not None and r <= k) for k in KS},
        "median_rank": statistics.median(r if r is not None else 99 for r in ranks),
        "with_keyword_only_matches_above": sum(1 for row in rows if row["keyword_only_above"]),
        "with_one_word_matches_above": sum(1 for row in rows if row["one_word_above"]),
    }


if __name__ == "__main__":
    main()
