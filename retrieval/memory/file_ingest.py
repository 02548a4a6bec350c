"""Writing a file's validated records (:mod:`retrieval.memory.file_lines`) in batches, one
transaction each.

A record whose key (its line's ``id``) an earlier ingest stored is skipped, and so is a line of
an export that describes a row the tenant holds. A transcript line without a ``position`` is
numbered after the highest position its session holds (a line a keyed re-run skips is not
counted). A correction (``supersedes_ref``) is written after the lines it names.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.batch import StoreBatch
from retrieval.memory.export import exported_row
from retrieval.memory.file_lines import RECORD_TYPES, Record, Valid, read_file
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.ingest_keys import StoredKey, store_keys, stored_keys
from retrieval.memory.records import StoredIds
from retrieval.memory.store import MemoryStore
from retrieval.memory.validation import ValidDecision, ValidMemory, ValidToolCall

__all__ = ["IngestSummary", "Record", "ingest", "read_file"]

_DEFAULT_BATCH_SIZE = 1000


@dataclass(frozen=True)
class IngestSummary:
    """What an ingest wrote and how fast."""

    memories: int
    decisions: int
    tool_calls: int
    seconds: float
    cache_hits: int
    embedded: int
    skipped: int = 0  # records whose id an earlier ingest stored
    duplicates: int = 0  # memories that were copies of a live memory (refreshed, not stored)

    @property
    def rows(self) -> int:
        """Records written."""
        return self.memories + self.decisions + self.tool_calls

    @property
    def rows_per_second(self) -> float:
        """Records written per second of wall time."""
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def ingest(
    store: MemoryStore,
    records: Sequence[Record],
    *,
    batch_size: int = _DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
) -> IngestSummary:
    """Write ``records`` in batches of ``batch_size``, one transaction per batch.

    A record whose key (its line's ``id``) an earlier ingest stored is skipped; a transcript
    line without a ``position`` is numbered after the highest position its thread holds."""
    if batch_size < 1:
        raise ValidationError(f"batch_size must be >= 1, got {batch_size}")
    with store.tracing.span("retrieval.ingest") as span:
        summary = _ingest(store, records, batch_size, progress)
        span.set(
            {
                "retrieval.memories": summary.memories,
                "retrieval.decisions": summary.decisions,
                "retrieval.tool_calls": summary.tool_calls,
                "retrieval.skipped": summary.skipped,
                "retrieval.cache_hits": summary.cache_hits,
                "retrieval.embedded": summary.embedded,
            }
        )
        return summary


def _ingest(
    store: MemoryStore,
    records: Sequence[Record],
    batch_size: int,
    progress: Callable[[int], None] | None,
) -> IngestSummary:
    began = time.perf_counter()
    hits, embedded = store.cache_stats.hits, store.cache_stats.embedded
    counts = {name: 0 for name in RECORD_TYPES}
    decision_ids: dict[str, int] = {}
    memory_refs: dict[str, int] = {}
    duplicates = 0
    # Only the lines that will be stored are numbered: a re-run after an interruption carries
    # on from the last stored turn of each thread, with no gap at the seam.
    pending = _numbered(_not_yet_ingested(store, records, decision_ids, memory_refs), store)
    if progress is not None and len(pending) < len(records):
        progress(len(records) - len(pending))
    for start in range(0, len(pending), batch_size):
        chunk = pending[start : start + batch_size]
        with store.batch() as batch:
            memories = [r for r in chunk if r.type == "memory"]
            memory_ids = _write_memories(batch, memories, memory_refs)
            duplicates += memory_ids.duplicates
            decisions = [r for r in chunk if r.type == "decision"]
            ids = batch.write_decisions([r.valid for r in decisions])  # type: ignore[misc]
            decision_ids.update(
                (r.ref, i) for r, i in zip(decisions, ids, strict=True) if r.ref is not None
            )
            calls = [r for r in chunk if r.type == "tool_call"]
            call_ids = batch.write_tool_calls([_resolved(r, decision_ids) for r in calls])
            made = [
                (r.valid.tenant_id, r.key, r.type, row_id)
                for group, group_ids in (
                    (memories, memory_ids),
                    (decisions, ids),
                    (calls, call_ids),
                )
                for r, row_id in zip(group, group_ids, strict=True)
                if r.key is not None
            ]
            if made:
                store_keys(batch.connection, store.schema, made)
        for record in chunk:
            counts[record.type] += 1
        if progress is not None:
            progress(len(chunk))
    return IngestSummary(
        memories=counts["memory"],
        decisions=counts["decision"],
        tool_calls=counts["tool_call"],
        seconds=time.perf_counter() - began,
        cache_hits=store.cache_stats.hits - hits,
        embedded=store.cache_stats.embedded - embedded,
        skipped=len(records) - len(pending),
        duplicates=duplicates,
    )


def _write_memories(
    batch: StoreBatch, memories: Sequence[Record], refs: dict[str, int]
) -> StoredIds:
    """Write a chunk's memories in file order; a correction (``supersedes_ref``) is written
    on its own, after the lines before it and before the lines after it, so that what it
    retires is stored and a later copy of a retired text is a new memory."""
    ids: list[int] = []
    duplicates = 0
    run: list[Record] = []

    def flush() -> None:
        nonlocal duplicates
        if run:
            stored = batch.write_memories([r.valid for r in run])  # type: ignore[misc]
            ids.extend(stored)
            duplicates += stored.duplicates
            refs.update((r.ref, i) for r, i in zip(run, stored, strict=True) if r.ref is not None)
            run.clear()

    for record in memories:
        if not record.supersedes_refs:
            run.append(record)
            continue
        flush()
        valid = record.valid
        assert isinstance(valid, ValidMemory)
        named = tuple(refs[ref] for ref in record.supersedes_refs)
        run.append(replace(record, valid=valid._replace(supersedes=valid.supersedes + named)))
        flush()
    flush()
    return StoredIds(ids, duplicates=duplicates)


def _not_yet_ingested(
    store: MemoryStore,
    records: Sequence[Record],
    decision_ids: dict[str, int],
    memory_refs: dict[str, int],
) -> list[Record]:
    """``records`` without those an earlier ingest stored (by key); the refs of the skipped
    decisions go into ``decision_ids``, of the skipped memories into ``memory_refs``. A key
    stored for another type of record is refused."""
    wanted: dict[str, list[str]] = {}
    for record in records:
        if record.key is not None:
            wanted.setdefault(record.valid.tenant_id, []).append(record.key)
    if not wanted:
        return list(records)
    with translate_database_errors(str(store.engine.url)), store.engine.connect() as connection:
        stored = stored_keys(connection, store.schema, wanted)
        unknown = [r for r in records if r.tenant_key is not None and r.tenant_key not in stored]
        stored.update(_held_rows(connection, store, unknown))
    pending = []
    for record in records:
        known = stored.get(record.tenant_key) if record.tenant_key else None
        if known is None:
            pending.append(record)
            continue
        if known.item != record.type:
            raise ValidationError(
                f"line {record.line}: id {record.key!r} was ingested before as a "
                f"{known.item} (row {known.row_id}), this line is a {record.type}: give it "
                "another id",
                field="id",
            )
        if record.ref is not None:
            refs = decision_ids if record.type == "decision" else memory_refs
            refs[record.ref] = known.row_id
    return pending


def _held_rows(
    connection: Connection, store: MemoryStore, records: Sequence[Record]
) -> dict[tuple[str, str], StoredKey]:
    """The lines of an export (``id`` ``memory-12``, ``decision-3``, ``tool_call-7``) that
    describe a row the tenant holds: that id, with the same text (a tool call: tool) and
    time. Ingesting an export into the tenant it came from stores nothing."""
    wanted: dict[tuple[str, str], dict[int, Record]] = defaultdict(dict)
    for record in records:
        row = exported_row(record.key)
        if row is not None and row[0] == record.type and record.valid.created_at is not None:
            wanted[(record.valid.tenant_id, record.type)][row[1]] = record
    lookup = Lookup(store.schema, store.cache)
    held: dict[tuple[str, str], StoredKey] = {}
    for (tenant, item), by_id in sorted(wanted.items()):
        ids = sorted(by_id)
        rows: list[tuple[int, str, datetime]]
        if item == "memory":
            bind_tenant(connection, store.schema, tenant)
            query = statement("memory.held_memories", store.schema)
            params = {"tenant_id": tenant, "ids": ids}
            rows = [(r.id, r.content, r.created_at) for r in execute(connection, query, params)]
        elif item == "decision":
            rows = [
                (d.id, d.content, d.created_at) for d in lookup.decisions(connection, tenant, ids)
            ]
        else:
            rows = [
                (c.id, c.tool_name, c.created_at)
                for c in lookup.tool_calls(connection, tenant, ids)
            ]
        for row_id, said, created_at in rows:
            record = by_id[row_id]
            if (_said(record.valid), record.valid.created_at) == (said, created_at):
                held[(tenant, str(record.key))] = StoredKey(item, row_id)
    return held


def _said(valid: Valid) -> str:
    # What a line says, compared with the row of the same id: its text, content or tool.
    if isinstance(valid, ValidMemory):
        return valid.text
    if isinstance(valid, ValidDecision):
        return valid.content
    return valid.tool_name


def _resolved(record: Record, decision_ids: Mapping[str, int]) -> ValidToolCall:
    assert isinstance(record.valid, ValidToolCall)
    if record.decision_ref is None:
        return record.valid
    return record.valid._replace(decision_id=decision_ids[record.decision_ref])


def _numbered(records: list[Record], store: MemoryStore) -> list[Record]:
    """``records`` with the messages that gave no position numbered in file order, after the
    highest position their session holds already."""
    threads = sorted(
        {
            (r.valid.tenant_id, r.valid.thread_id)
            for r in records
            if r.numbered and isinstance(r.valid, ValidMemory) and r.valid.thread_id is not None
        }
    )
    if not threads:
        return records
    next_positions = statement("memory.next_positions", store.schema)
    following: dict[tuple[str, str], int] = {}
    with translate_database_errors(str(store.engine.url)), store.engine.connect() as connection:
        # One query per tenant: each names its tenant (routed to its shard on Citus; named
        # to the policies of row-level security).
        for tenant in sorted({t for t, _ in threads}):
            bind_tenant(connection, store.schema, tenant)
            rows = execute(
                connection,
                next_positions,
                {"tenant_id": tenant, "threads": [h for t, h in threads if t == tenant]},
            )
            following.update(((tenant, h), int(position)) for h, position in rows)
    numbered = []
    for record in records:
        valid = record.valid
        if record.numbered and isinstance(valid, ValidMemory) and valid.thread_id is not None:
            key = (valid.tenant_id, valid.thread_id)
            position = following.get(key, 0)
            following[key] = position + 1
            record = replace(record, valid=valid._replace(position=position))
        numbered.append(record)
    return numbered
