"""The commands that read a tenant's memory: ``retrieval search`` (ranked context for a
query, with each result's scores) and ``retrieval timeline`` (what happened, newest first)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from retrieval.cli.parsers import aware_time, command, namespace_path
from retrieval.counts import counted
from retrieval.db.engine import Database
from retrieval.memory.config import WriteConfig
from retrieval.memory.json_text import parse_json
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.timeline import TimelineEvent


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = command(commands, "search", _search)
    search.add_argument("query", help="what to find context for")
    search.add_argument("--tenant", required=True, help="tenant_id to search")
    search.add_argument("--task", help="only this task's decisions and tool calls")
    search.add_argument(
        "--mode",
        default="semantic",
        help="filter preset: semantic (default), session_recovery, knowledge_lookup",
    )
    search.add_argument(
        "--as-of",
        type=aware_time,
        help="read the memory as it stood at this ISO 8601 time with a zone: only what was "
        "stored and live then, recency measured from it (default: now)",
    )
    search.add_argument(
        "--limit",
        type=int,
        help="most results (default: RETRIEVAL_TOTAL_LIMIT, 10); each source's limit scales "
        "with it",
    )
    search.add_argument(
        "--neighbors",
        type=int,
        default=0,
        help="with each memory of a conversation, up to this many turns before and after it "
        "(0 to 20; default 0)",
    )
    search.add_argument(
        "--namespace",
        type=namespace_path,
        help="only memories in this namespace and below it (names joined by /, e.g. users/u1)",
    )
    search.add_argument(
        "--filter",
        help='only memories and chunks whose metadata meets it, a JSON object: {"user": "u1"}, '
        '{"score": {"$gte": 3}}, {"$or": [{"user": "u1"}, {"user": "u2"}]} (docs/api.md)',
    )
    search.add_argument(
        "--read-your-writes",
        action="store_true",
        help="read the primary even when RETRIEVAL_READ_DATABASE_URL names a replica (which "
        "may not have replayed the latest writes yet)",
    )
    search.add_argument("--json", action="store_true", help="print results and diagnostics as JSON")
    timeline = command(commands, "timeline", _timeline)
    timeline.add_argument("--tenant", required=True, help="tenant_id to list")
    timeline.add_argument("--since", type=aware_time, help="ISO 8601 time with a zone")
    timeline.add_argument("--until", type=aware_time, help="ISO 8601 time with a zone")
    timeline.add_argument(
        "--kind",
        action="append",
        dest="kinds",
        help="only this kind (a memory kind, decision or tool_call); repeatable",
    )
    timeline.add_argument("--limit", type=int, default=50, help="most events (default: 50)")
    timeline.add_argument("--json", action="store_true", help="print the events as JSON")
    timeline.add_argument(
        "--as-of", type=aware_time, help="the timeline as it stood at this ISO 8601 time"
    )
    timeline.add_argument(
        "--include-retired",
        action="store_true",
        help="also memories retired by a correction or expired (marked)",
    )
    timeline.add_argument(
        "--namespace",
        type=namespace_path,
        help="only memories in this namespace and below it (names joined by /, e.g. users/u1; "
        "no decisions or tool calls then)",
    )


def _search(args: argparse.Namespace, database: Database) -> int:
    """find the best context for a query in a tenant's memory

    Run the hybrid retriever: memories by meaning (pgvector), decisions and tool calls by
    keywords (case-insensitive, through a word index), documents by BM25 and vectors, each
    scored for relevance and recency, weighted, thresholded and ranked. Weights, limits and the
    threshold come from the RETRIEVAL_* variables (retrieval config lists them). Prints a table,
    or JSON with --json."""
    from retrieval.search.context import to_markdown, to_table
    from retrieval.search.retriever import HybridRetriever

    conditions = None if args.filter is None else parse_json(args.filter, "--filter")
    store = MemoryStore.from_database(database, config=WriteConfig.from_env())
    config = RetrievalConfig.from_env()
    with HybridRetriever.from_store(
        store, config=config, background_writes=False, read_engine=database.read_engine
    ) as retriever:
        response = retriever.retrieve(
            args.query,
            tenant_id=args.tenant,
            task_id=args.task,
            mode=args.mode,
            as_of=args.as_of,
            limit=args.limit,
            neighbors=args.neighbors,
            read_your_writes=args.read_your_writes,
            namespace=args.namespace,
            filter=conditions,
        )
    if args.json:
        document = {
            "query": args.query,
            "tenant_id": args.tenant,
            "results": [
                {
                    "source": r.source,
                    "final_score": r.final_score,
                    "relevance_score": r.relevance_score,
                    "recency_score": r.recency_score,
                    "content": r.content,
                    "metadata": r.metadata,
                }
                for r in response
            ],
            "diagnostics": response.diagnostics.to_dict(),
        }
        print(json.dumps(document, indent=2, default=str))
    else:
        print(to_markdown(response) if args.neighbors else to_table(response))
        d = response.diagnostics
        print(
            f"{counted(len(response), 'result')} in {d.total_ms:.1f} ms (embedding "
            f"{d.embedding_ms:.1f}, SQL {d.sql_ms:.1f}, fusion {d.fusion_ms:.1f}); keywords: "
            f"{', '.join(d.keywords) or '(none)'}"
        )
    for note in response.diagnostics.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _retired_mark(event: TimelineEvent, at: datetime) -> str:
    # How a memory retired or expired by ``at`` (the timeline's moment) is marked in its lines.
    if event.retired(at):
        newer = event.superseded_by
        return "  [retired]" if newer is None else f"  [superseded by {newer}]"
    return "  [expired]" if event.expired(at) else ""


def _json_value(value: object) -> str:
    # A time as ISO 8601 (2026-11-20T09:30:00+00:00), anything else as its text.
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _timeline(args: argparse.Namespace, database: Database) -> int:
    """what happened in a tenant's memory in a window of time, newest first

    List the memories stored, decisions taken and tool calls made by a tenant between --since
    and --until, newest first, across the three tables, each with its id (what --supersedes
    and forget name)."""
    from retrieval.search.present.tenants import tenant_holds, unknown_tenant_note
    from retrieval.search.timeline import timeline

    events = timeline(
        database.read_engine or database.engine,
        database.config.schema,
        args.tenant,
        since=args.since,
        until=args.until,
        kinds=args.kinds,
        limit=args.limit,
        memory_kinds=WriteConfig.from_env().memory_kinds(),
        as_of=args.as_of,
        include_retired=args.include_retired,
        namespace=args.namespace,
    )
    if args.json:
        print(json.dumps([vars(event) for event in events], indent=2, default=_json_value))
        return 0
    at = args.as_of or datetime.now(UTC)
    for event in events:
        text = " ".join(event.content.split())
        when = event.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
        label = f"memory/{event.kind}" if event.item == "memory" else event.item
        mark = _retired_mark(event, at)
        print(f"{when} UTC  {label:<24} {event.id:>7}  {text[:80]}{mark}")
    if not events:
        print("(nothing in this window)")
        schema = database.config.schema
        if not tenant_holds(database.read_engine or database.engine, schema, args.tenant):
            print(f"note: {unknown_tenant_note(args.tenant)}", file=sys.stderr)
    return 0
