"""What a user does by hand: ``retrieval remember``, ``retrieval forget``, ``retrieval export``.

Each call starts a process and, for ``remember``, loads the embedding model (seconds of CPU):
for many writes use ``retrieval ingest`` or the Python API.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from retrieval.cli.parsers import aware_time, command, namespace_path
from retrieval.cli.terminal import confirmed, shown
from retrieval.counts import counted
from retrieval.db.engine import Database
from retrieval.embedding.calibration import calibration_for
from retrieval.errors import ValidationError
from retrieval.memory.config import WriteConfig
from retrieval.memory.json_text import parse_json
from retrieval.memory.records import MemoryInput, StoredIds
from retrieval.memory.store import MemoryStore


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parsers of ``remember``, ``forget`` and ``export``."""
    remember = command(commands, "remember", _remember)
    remember.add_argument("text", help="the memory")
    remember.add_argument("--tenant", required=True, help="tenant_id to store it in")
    remember.add_argument("--kind", default="fact", help="memory kind (default: fact)")
    remember.add_argument("--importance", type=float, help="0 to 1 (default: 0.5)")
    remember.add_argument("--entity", action="append", default=[], help="an entity id (repeat)")
    remember.add_argument("--metadata", help='a JSON object, e.g. {"source": "chat"}')
    remember.add_argument("--thread", help="the conversation (or session) it belongs to")
    remember.add_argument("--position", type=int, help="its turn in the thread, from 0")
    remember.add_argument(
        "--namespace",
        type=namespace_path,
        help="its scope below the tenant: names joined by /, such as users/u1 (default: none)",
    )
    remember.add_argument(
        "--key",
        help="a name for it in its namespace: a later memory under the same key supersedes it",
    )
    remember.add_argument(
        "--supersedes",
        type=int,
        action="append",
        default=[],
        metavar="ID",
        help="the id of a live memory it corrects (retired, kept in its history); repeat for "
        "several. search and timeline print ids. A memory unrelated to the text is refused "
        "unless --force",
    )
    remember.add_argument(
        "--force",
        action="store_true",
        help="supersede what --supersedes names even when its text is unrelated to this one",
    )
    remember.add_argument(
        "--created-at",
        type=aware_time,
        help="when it was told (default: now; ISO 8601 with a time zone, or a date: midnight UTC)",
    )
    remember.add_argument(
        "--expires-at",
        type=aware_time,
        help="when it stops being true (ISO 8601 with a time zone, e.g. 2027-01-01T00:00Z, or "
        "a date: midnight UTC); later than --created-at, or than now",
    )

    forget = command(commands, "forget", _forget)
    forget.add_argument("--tenant", required=True, help="tenant_id to delete from")
    forget.add_argument("--memory", type=int, nargs="+", default=[], help="memory ids")
    forget.add_argument("--decision", type=int, nargs="+", default=[], help="decision ids")
    forget.add_argument("--tool-call", type=int, nargs="+", default=[], help="tool call ids")
    forget.add_argument("--task", help="a task: its decisions and their tool calls")
    forget.add_argument("--document", help="a document's doc_id (its chunks go with it)")
    forget.add_argument(
        "--namespace",
        type=namespace_path,
        help="the memories in this namespace and below it (names joined by /, e.g. users/u1)",
    )
    forget.add_argument(
        "--expired", action="store_true", help="every memory whose expires_at has passed"
    )
    forget.add_argument(
        "--everything",
        action="store_true",
        help="every row of the tenant: memories, history, documents, cached embeddings",
    )
    forget.add_argument("--yes", action="store_true", help="confirm --everything")

    export = command(commands, "export", _export)
    export.add_argument("--tenant", required=True, help="tenant_id to export")
    export.add_argument("--output", type=Path, help="file to write (default: standard output)")
    export.add_argument("--format", choices=("jsonl",), default="jsonl", help="jsonl")


def _remember(args: argparse.Namespace, database: Database) -> int:
    """store one memory

    Store one memory (embedded by the model) and print its id: the stored memory's when it is a
    copy of a live one (then refreshed). --supersedes retires the memories it corrects."""
    metadata: dict[str, Any] = {}
    if args.metadata is not None:
        try:
            metadata = parse_json(args.metadata, "--metadata")
        except ValidationError as error:
            raise ValidationError(
                f"{error.reason}: give an object such as '{{\"a\": 1}}'", field="metadata"
            ) from None
    store = MemoryStore.from_database(database, config=WriteConfig.from_env())
    retired = _checked_targets(store, args) if args.supersedes else {}
    options: dict[str, Any] = {} if args.importance is None else {"importance": args.importance}
    stored = _one(
        store,
        MemoryInput(
            args.text,
            tenant_id=args.tenant,
            kind=args.kind,
            metadata=metadata,
            entities=args.entity,
            thread_id=args.thread,
            position=args.position,
            supersedes=args.supersedes or None,
            created_at=args.created_at,
            expires_at=args.expires_at,
            namespace=args.namespace,
            key=args.key,
            **options,
        ),
    )
    print(stored[0])
    if stored.duplicates:
        print(f"memory {stored[0]} was already stored: told once more", file=sys.stderr)
    for memory_id, content in retired.items():
        print(f"superseded (retired) memory {memory_id}: {shown(content)}", file=sys.stderr)
    return 0


def _one(store: MemoryStore, memory: MemoryInput) -> StoredIds:
    # One memory written as a batch (which counts a copy), its errors said as for one memory.
    try:
        return store.remember_many([memory])
    except ValidationError as error:
        raise ValidationError(error.reason, field=error.field) from None


def _checked_targets(store: MemoryStore, args: argparse.Namespace) -> dict[int, str]:
    """The texts of the memories ``--supersedes`` names, by id; a memory whose text is
    unrelated to the new one (a mistyped id) refused unless ``--force``."""
    named = store.similarity(args.text, args.supersedes, tenant_id=args.tenant)
    unrelated_below = calibration_for(store.embedder.model_id).thresholds.unrelated_below
    for memory, score in ((one.memory, one.similarity) for one in named):
        # (a retired one is refused by the write itself, saying why)
        if memory.retired_at is None and score < unrelated_below and not args.force:
            raise ValidationError(
                f"--supersedes {memory.id}: memory {memory.id} ({_shown(memory.content)}) is "
                f"unrelated to the new text (cosine similarity {score:.2f}, under "
                f"{unrelated_below}): check the id (retrieval search and retrieval timeline "
                "print ids), or pass --force to supersede it anyway; nothing was written",
                field="supersedes",
            )
    return {one.memory.id: one.memory.content for one in named}


def _shown(text: str, width: int = 60) -> str:
    # A stored text in one line, cut to ``width``, quoted.
    line = " ".join(text.split())
    return repr(line if len(line) <= width else line[: width - 1] + "…")


def _forget(args: argparse.Namespace, database: Database) -> int:
    """delete memories, decisions, tool calls, a task, a document or a whole tenant

    Delete rows of one tenant, by id, by task, by document, by namespace, the expired memories,
    or all of them (--everything, which asks for --yes or a typed yes on a terminal), with
    their cached vectors. Prints what went."""
    chosen = (args.memory, args.decision, args.tool_call, args.task, args.expired, args.namespace)
    by_rows = any(chosen)
    if not (by_rows or args.document or args.everything):
        raise ValidationError(
            "say what to forget: --memory, --decision, --tool-call, --task, --document, "
            "--namespace, --expired or --everything",
            field="forget",
        )
    question = f"Type yes to delete every row of {args.tenant!r}"
    if args.everything and not (args.yes or confirmed(question)):
        print(f"nothing deleted: --everything of {args.tenant!r} needs --yes", file=sys.stderr)
        return 1
    store = MemoryStore.from_database(database, config=WriteConfig.from_env())
    gone: list[str] = []
    if args.document:
        from retrieval.documents.store import DocumentStore

        if DocumentStore(store).forget(tenant_id=args.tenant, doc_id=args.document):
            gone.append(f"document {args.document!r}")
    if by_rows or args.everything:
        forgotten = store.forget(
            tenant_id=args.tenant,
            memory_ids=args.memory,
            decision_ids=args.decision,
            tool_call_ids=args.tool_call,
            task_id=args.task,
            everything=args.everything,
            expired=args.expired,
            namespace=args.namespace,
        )
        gone += [
            counted(len(forgotten.memory_ids), "memory"),
            counted(len(forgotten.decision_ids), "decision"),
            counted(len(forgotten.tool_call_ids), "tool call"),
        ]
        if args.everything:
            gone += [
                counted(len(forgotten.document_ids), "document"),
                counted(forgotten.cache_entries, "cached embedding"),
            ]
    print(f"forgot from tenant {args.tenant!r}: {', '.join(gone) or 'nothing'}")
    if by_rows and forgotten.revived_ids:
        revived = ", ".join(str(one) for one in forgotten.revived_ids)
        print(f"live again (their correction forgotten): {revived}")
    if by_rows and forgotten.missing:
        print(
            f"error: not found in tenant {args.tenant!r}: {', '.join(forgotten.missing)} (never "
            "stored, already forgotten, or another tenant's)",
            file=sys.stderr,
        )
        return 1
    return 0


def _export(args: argparse.Namespace, database: Database) -> int:
    """write a tenant's memories, decisions and tool calls as JSON Lines

    Write a tenant's decisions, tool calls and memories as JSON Lines that `retrieval ingest`
    reads back to the same rows (new ids; documents are not included)."""
    from retrieval.memory.export import export_records

    store = MemoryStore.from_database(database, config=WriteConfig.from_env())
    handle = sys.stdout if args.output is None else args.output.open("w", encoding="utf-8")
    written = 0
    try:
        for record in export_records(store, args.tenant):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
    finally:
        if args.output is not None:
            handle.close()
    print(f"exported {counted(written, 'line')} of tenant {args.tenant!r}", file=sys.stderr)
    return 0
