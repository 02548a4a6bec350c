"""Vague questions: does a question find the memory that answers it when its words say little,
and what does answering an empty answer with weak matches cost in precision?

``tests/data/vague_questions.json`` holds four people's memories (eight each, a tenant each,
stored through ``remember``) and 28 questions: 20 answered by one memory but naming its topic
only loosely ("What food does the user like?" for "Alice is vegetarian and avoids
mushrooms."), 8 that no memory answers ("What is his blood type?"). Each is asked with
``retrieve()`` and the defaults, with ``fallback_results`` 0 (an answer under the thresholds
stays empty), 1, 3 and 5 (the weak matches an empty answer gets). Reported: the answered
questions whose answer is among the results (and first), the results per question, the share
of results marked ``below_threshold``, and precision: the share of all results that are an
answer.

Usage: python benchmarks/quality/vague_questions.py [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, write_result

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "vague_questions.json"
FALLBACK_RESULTS = (0, 1, 3, 5)


def evaluate(retriever: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``retriever`` returns for ``questions``: answers found, results, precision."""
    found = first = results = below = relevant = empty = 0
    answerable = [q for q in questions if q["answer"] is not None]
    noise: list[int] = []
    for question in questions:
        response = retriever.retrieve(question["query"], tenant_id=question["tenant"])
        contents = [r.content for r in response.results]
        results += len(contents)
        below += sum(1 for r in response.results if r.metadata.get("below_threshold"))
        empty += not contents
        if question["answer"] is None:
            noise.append(len(contents))
            continue
        found += question["answer"] in contents
        first += bool(contents) and contents[0] == question["answer"]
        relevant += question["answer"] in contents
    return {
        "answerable": len(answerable),
        "answer_returned": found,
        "answer_first": first,
        "empty_answers": empty,
        "results_per_question": round(results / len(questions), 2),
        "below_threshold_share": round(below / results, 3) if results else 0.0,
        "precision": round(relevant / results, 3) if results else 0.0,
        "results_for_unanswerable": sum(noise),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output(parser)
    args = parser.parse_args()

    from _server import embedded

    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    data = json.loads(DATA.read_text("utf-8"))
    bench = embedded(None, MigrationSettings(schema="vague", embedding_dim=384))
    store = MemoryStore(bench.engine, schema="vague")
    for tenant, memories in data["tenants"].items():
        store.remember_many({"text": text, "tenant_id": tenant} for text in memories)
    results: dict[str, Any] = {"questions": len(data["questions"])}
    for count in FALLBACK_RESULTS:
        config = replace(RetrievalConfig(record_access=False), fallback_results=count)
        with HybridRetriever.from_store(store, config=config) as retriever:
            results[f"fallback_results {count}"] = evaluate(retriever, data["questions"])
    write_result("vague-questions", results, args)


if __name__ == "__main__":
    main()
