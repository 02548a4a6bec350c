"""Versions and mentions: does a later memory that only mentions a state leave it first?

An agent's memory holds states ("The API rate limit is 100 requests per minute.") and, later,
what happened to the things they name ("The client exceeded the API rate limit yesterday.").
Such an event changes nothing: asked about the state, the state must come first and must not be
marked ``possibly_outdated_by`` the event. The labelled versions
(``versions_for_a_question.py``) hold distinct facts and updates but no such mention, so a rule
that reads any event told after a state as its update wins there and misfires here
(docs/decisions/0070-an-event-after-a-state.md).

Each case is a tenant of its own: the state told on 2026-05-01, the mention on 2026-06-01,
stored through ``remember``, asked with ``retrieve()`` and the defaults. Reported per case and
in all: whether the state came first among the memories and was not marked outdated.

Usage: python benchmarks/quality/versions_mentions.py [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, write_result

STATE_TOLD = datetime(2026, 5, 1, tzinfo=UTC)
MENTION_TOLD = datetime(2026, 6, 1, tzinfo=UTC)
# (the state, a later memory that mentions it without changing it, a question about the state)
CASES = (
    ("The server runs Ubuntu 22.04.", "The assistant restarted the server after the outage.",
     "What OS does the server run?"),
    ("Alice's favourite editor is Vim.", "Alice opened a ticket about the editor crashing.",
     "What is Alice's favourite editor?"),
    ("The API rate limit is 100 requests per minute.",
     "The client exceeded the API rate limit yesterday.", "What is the API rate limit?"),
    ("The project uses Python 3.11.", "We fixed a bug in the project's Python code.",
     "Which Python does the project use?"),
    ("Bob is the on-call engineer this week.", "Bob fixed the login bug on Tuesday.",
     "Who is on call this week?"),
    ("The user prefers dark mode.", "The user asked how to change the theme.",
     "Does the user prefer dark mode?"),
    ("Our database is PostgreSQL 16.", "We backed up the database last night.",
     "What database do we use?"),
    ("The user lives in Lyon.", "The user visited Paris for a conference.",
     "Where does the user live?"),
    ("The staging cluster has three nodes.", "We restarted one node of the staging cluster.",
     "How many nodes does the staging cluster have?"),
    ("Maria's manager is Tom.", "Maria talked to Tom about her promotion.",
     "Who is Maria's manager?"),
    ("The office Wi-Fi password is sunflower42.", "A guest asked for the office Wi-Fi password.",
     "What is the office Wi-Fi password?"),
    ("The weekly report goes to the finance team.",
     "The finance team reviewed the weekly report on Monday.", "Who gets the weekly report?"),
)  # fmt: skip


def evaluate(store: Any, retriever: Any) -> dict[str, Any]:
    """Each case in a tenant of its own: whether the state comes first, not marked outdated."""
    cases: list[dict[str, Any]] = []
    for index, (state, mention, question) in enumerate(CASES):
        tenant = f"mention-{index}"
        store.forget(tenant_id=tenant, everything=True)
        state_id = store.remember(state, tenant_id=tenant, created_at=STATE_TOLD)
        store.remember(mention, tenant_id=tenant, created_at=MENTION_TOLD)
        memories = [
            r for r in retriever.retrieve(question, tenant_id=tenant).results
            if r.source == "semantic"
        ]  # fmt: skip
        first = bool(memories) and memories[0].metadata["id"] == state_id
        outdated = any(
            r.metadata["id"] == state_id and "possibly_outdated_by" in r.metadata for r in memories
        )
        cases.append(
            {"question": question, "state_first": first, "marked_outdated": outdated,
             "first": memories[0].content if memories else None}
        )  # fmt: skip
    kept = sum(c["state_first"] and not c["marked_outdated"] for c in cases)
    return {"cases": len(cases), "state_kept": kept, "share": round(kept / len(cases), 3),
            "per_case": cases}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output(parser)
    args = parser.parse_args()

    from _server import embedded

    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    bench = embedded(None, MigrationSettings(schema="mentions", embedding_dim=384))
    store = MemoryStore(bench.engine, schema="mentions")
    with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as r:
        results = evaluate(store, r)
    for case in results["per_case"]:
        kept = case["state_first"] and not case["marked_outdated"]
        print(("kept    " if kept else "DEMOTED ") + case["question"], "| first:", case["first"])
    print(f"the state kept first for {results['state_kept']} of {results['cases']}")
    write_result("versions-mentions", results, args)


if __name__ == "__main__":
    main()
