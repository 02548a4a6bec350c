"""Knowledge updates: does the right version of a changing fact come first, now and in the past?

40 facts whose value changes twice in 2026 ("The staging cluster runs PostgreSQL 15." on 1
January, "... 16." on 1 April, "... 17." on 1 July), among 80 other memories of the same team.
Each fact is asked three times: now ("What PostgreSQL version does the staging cluster run?",
expecting the July version), as of 15 February (the January version) and as of 15 May (the
April version). A question is answered when the first memory ``retrieve()`` returns is the
expected version.

Two ways of keeping the facts, each through the public API with the defaults:

* ``supersedes``: each new value remembered with ``supersedes=`` the previous one (the caller
  names the correction); the past asked with ``as_of``;
* ``accumulate``: every value remembered as a memory of its own (what a store without
  corrections keeps), the past asked with ``as_of``.

Run with this checkout (both ways), and with another revision's package for the second way
(``--against REV``: its ``as_of`` moved only the point recency is measured from), in the same
run, each in its own embedded server's schema.

Usage: python benchmarks/quality/knowledge_updates.py [--against REV] [--json PATH]
"""

# ruff: noqa: E501 (the facts' table reads best one fact per line)
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common
from _common import add_output, write_result
from _revision import migrations_of, use_migrations, worker_result, worktree

ROOT = Path(__file__).resolve().parents[2]
PAIRS = ROOT / "tests" / "data" / "near_duplicates.jsonl"
TENANT = "updates"
CHANGED = (
    datetime(2026, 1, 1, 9, tzinfo=UTC),
    datetime(2026, 4, 1, 9, tzinfo=UTC),
    datetime(2026, 7, 1, 9, tzinfo=UTC),
)
ASKED = (  # when a question is asked, and the version then valid (None: now, the last one)
    (None, 2),
    (datetime(2026, 2, 15, tzinfo=UTC), 0),
    (datetime(2026, 5, 15, tzinfo=UTC), 1),
)
# (the statement with {v}, the question, the three values in time order)
FACTS = (
    ("The staging cluster runs PostgreSQL {v}.", "What PostgreSQL version does the staging cluster run?", ("15", "16", "17")),
    ("Maria lives in {v}.", "Where does Maria live?", ("Lisbon", "Porto", "Madrid")),
    ("The deploy window is on {v} mornings.", "On which day is the deploy window?", ("Tuesday", "Thursday", "Monday")),
    ("The API rate limit is {v} requests per minute.", "What is the API rate limit?", ("100", "250", "500")),
    ("The on-call engineer is {v}.", "Who is the on-call engineer?", ("Bob", "Carol", "Dmitri")),
    ("The nightly backup runs at {v}.", "When does the nightly backup run?", ("02:00", "03:30", "04:45")),
    ("The team standup is at {v}.", "What time is the team standup?", ("9:30", "10:15", "11:00")),
    ("The frontend is built with {v}.", "What is the frontend built with?", ("React 17", "React 18", "React 19")),
    ("The build takes about {v} minutes.", "How long does the build take?", ("12", "7", "4")),
    ("The payments service is written in {v}.", "What language is the payments service written in?", ("Java", "Go", "Rust")),
    ("The staging cluster has {v} nodes.", "How many nodes does the staging cluster have?", ("6", "10", "14")),
    ("Priya's favourite food is {v}.", "What is Priya's favourite food?", ("sushi", "ramen", "tacos")),
    ("Logs are kept for {v} days.", "How long are logs kept?", ("14", "30", "90")),
    ("The company VPN uses {v}.", "What does the company VPN use?", ("OpenVPN", "WireGuard", "Tailscale")),
    ("The mobile app requires iOS {v} or later.", "Which iOS version does the mobile app require?", ("15", "16", "17")),
    ("Tom drives a {v}.", "What car does Tom drive?", ("blue Volvo", "grey Audi", "red Tesla")),
    ("The monthly cloud budget is {v} dollars.", "What is the monthly cloud budget?", ("20,000", "15,000", "18,000")),
    ("The search index is rebuilt every {v}.", "How often is the search index rebuilt?", ("Sunday", "night", "hour")),
    ("Kenji's daughter is {v} years old.", "How old is Kenji's daughter?", ("6", "7", "8")),
    ("The CI pipeline runs on {v}.", "Where does the CI pipeline run?", ("Jenkins", "GitHub Actions", "GitLab CI")),
    ("The default HTTP timeout is {v} seconds.", "What is the default HTTP timeout?", ("30", "20", "10")),
    ("The data warehouse is {v}.", "Which data warehouse do we use?", ("Redshift", "Snowflake", "BigQuery")),
    ("The maximum upload size is {v} MB.", "What is the maximum upload size?", ("25", "50", "100")),
    ("The team lead is {v}.", "Who is the team lead?", ("Sarah", "David", "Amara")),
    ("Releases go out every {v}.", "How often do releases go out?", ("month", "two weeks", "week")),
    ("Our primary cloud region is {v}.", "What is our primary cloud region?", ("eu-west-1", "eu-central-1", "eu-north-1")),
    ("Jamal's favourite drink is {v}.", "What is Jamal's favourite drink?", ("green tea", "espresso", "mate")),
    ("Passwords must have at least {v} characters.", "How many characters must a password have?", ("10", "12", "16")),
    ("The coffee machine is on the {v} floor.", "On which floor is the coffee machine?", ("second", "ground", "fourth")),
    ("The product page cache lasts {v}.", "How long is the product page cache?", ("5 minutes", "30 minutes", "1 hour")),
    ("The message queue is {v}.", "Which message queue do we use?", ("RabbitMQ", "Kafka", "NATS")),
    ("The test coverage target is {v} percent.", "What is the test coverage target?", ("70", "80", "90")),
    ("Ravi works from the {v} office.", "Which office does Ravi work from?", ("Berlin", "Munich", "Hamburg")),
    ("The load balancer is {v}.", "Which load balancer do we use?", ("Nginx", "HAProxy", "Envoy")),
    ("A sprint lasts {v} weeks.", "How long is a sprint?", ("two", "three", "four")),
    ("Production runs Kubernetes {v}.", "Which Kubernetes version does production run?", ("1.28", "1.29", "1.31")),
    ("Hana's team works on {v}.", "What does Hana's team work on?", ("checkout", "search", "billing")),
    ("The website font is {v}.", "What font does the website use?", ("Inter", "Roboto", "Lato")),
    ("The database connection pool has {v} connections.", "How many connections does the database pool have?", ("20", "50", "80")),
    ("The support email is {v}.", "What is the support email?", ("help@example.com", "support@example.com", "care@example.com")),
)  # fmt: skip


def distractors() -> list[str]:
    """The other memories of the team: the related facts of the first 80 facts of the
    near-duplicate pairs (the set the benchmark was first measured with)."""
    pairs = [json.loads(line) for line in PAIRS.read_text("utf-8").splitlines()]
    return [pair["b"] for pair in pairs if pair["relation"] == "related" and pair["fact"] < 80]


def run(url: str, schema: str, ways: Sequence[str]) -> dict[str, Any]:
    """Store the facts each way (a tenant each) and ask every question; the shares answered."""
    from _server import reached

    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    engine = reached(url, MigrationSettings(schema=schema, embedding_dim=384)).engine
    store = MemoryStore(engine, schema=schema)
    results: dict[str, Any] = {}
    for way in ways:
        tenant = f"{TENANT}-{way}"
        store.forget(tenant_id=tenant, everything=True)
        store.remember_many(
            {"text": text, "tenant_id": tenant, "created_at": CHANGED[0] - timedelta(days=30)}
            for text in distractors()
        )
        versions: list[list[int]] = []
        for statement, _, values in FACTS:
            ids: list[int] = []
            for value, when in zip(values, CHANGED, strict=True):
                options: dict[str, Any] = {"tenant_id": tenant, "created_at": when}
                if way == "supersedes" and ids:
                    options["supersedes"] = ids[-1]
                ids.append(store.remember(statement.format(v=value), **options))
            versions.append(ids)
        config = RetrievalConfig(record_access=False)
        answered: dict[str, list[bool]] = {"now": [], "past": []}
        with HybridRetriever.from_store(store, config=config) as retriever:
            for (_, question, _), ids in zip(FACTS, versions, strict=True):
                for as_of, expected in ASKED:
                    response = retriever.retrieve(question, tenant_id=tenant, as_of=as_of)
                    first = next((r for r in response if r.source == "semantic"), None)
                    right = first is not None and first.metadata["id"] == ids[expected]
                    answered["now" if as_of is None else "past"].append(right)
        results[way] = {
            "now": round(sum(answered["now"]) / len(answered["now"]), 3),
            "past": round(sum(answered["past"]) / len(answered["past"]), 3),
            "all": round(
                sum(answered["now"] + answered["past"]) / len(answered["now"] + answered["past"]),
                3,
            ),
        }
    engine.dispose()
    return results


def against(revision: str, data_dir: Path) -> dict[str, Any]:
    """``accumulate`` with the package (and migrations) of ``revision``, in its own schema."""
    with worktree(revision) as tree:
        command = [sys.executable, __file__, "--worker", str(data_dir), "--migrations"]
        return worker_result(tree, [*command, str(migrations_of(tree))], revision)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="a git revision to run the accumulate way with too")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--migrations", type=Path, help=argparse.SUPPRESS)
    add_output(parser)
    args = parser.parse_args()
    if args.worker is not None:  # run by --against, with the other revision's package
        use_migrations(args.migrations)
        from _server import embedded

        print(json.dumps(run(embedded(args.worker).url, "updates_before", ["accumulate"])))
        return
    from _server import embedded

    bench = embedded(None, prefix="rtv-updates-")
    data_dir = bench.data_dir
    results: dict[str, Any] = {
        "facts": len(FACTS),
        "questions_per_way": len(FACTS) * len(ASKED),
        "other_memories": len(distractors()),
        "this_checkout": run(bench.url, "updates", ["supersedes", "accumulate"]),
    }
    if args.against:
        results["baseline"] = {"revision": args.against} | against(args.against, data_dir)
    write_result("knowledge-updates", results, args)


if __name__ == "__main__":
    main()
