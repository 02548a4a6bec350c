"""Ingesting files of memories, decisions, tool calls and chat transcripts (JSON Lines or CSV).

Each line is one record. ``type`` says which (``memory`` by default, ``decision``,
``tool_call``, ``message``); the other columns are the fields of
:class:`~retrieval.memory.records.MemoryInput`, :class:`~retrieval.memory.records.DecisionInput`
or :class:`~retrieval.memory.records.ToolCallInput`. A decision may carry a ``ref`` that later
tool calls name in ``decision_ref``. A ``message`` (the type of a line with a ``speaker`` and no
``type``) is one turn of a chat transcript: ``speaker``, ``text``, ``time`` (or ``created_at``)
and ``session`` (the thread; default: the file's name), stored as a memory of kind ``message``
whose text is ``"{speaker}: {text}"``, with the speaker in its metadata and its place in the
session as its position (counted in file order after the session's stored turns, unless the line
gives ``position``; a line a keyed re-run skips is not counted). The whole file is parsed and
validated before anything is written; then it is written in batches, one transaction each.
"""

from __future__ import annotations

import csv
import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.ingest_keys import StoredKey, ingest_key, store_keys, stored_keys
from retrieval.memory.json_text import NESTED_TOO_DEEPLY, json_problem, number_too_long, parse_json
from retrieval.memory.records import DecisionInput, MemoryInput, StoredIds, ToolCallInput
from retrieval.memory.store import MemoryStore, StoreBatch
from retrieval.memory.validation import (
    ValidDecision,
    ValidMemory,
    ValidToolCall,
    as_input,
    valid_decision,
    valid_memory,
    valid_tool_call,
)

RECORD_TYPES = ("memory", "decision", "tool_call", "message")
# The id of a line of an export (retrieval.memory.export.line_id): its row's type and id.
_EXPORT_ID = re.compile(r"^(memory|decision|tool_call)-([1-9][0-9]{0,17})$")
_JSON_FIELDS = ("metadata", "params")
_MESSAGE_FIELDS = frozenset(
    {"speaker", "text", "time", "created_at", "session", "position", "tenant_id", "metadata"}
)
_DEFAULT_BATCH_SIZE = 1000

Valid = ValidMemory | ValidDecision | ValidToolCall


@dataclass(frozen=True)
class Record:
    """One validated line of a file."""

    line: int
    type: str
    valid: Valid
    ref: str | None = None
    decision_ref: str | None = None
    numbered: bool = False  # a message whose position is counted, not given
    key: str | None = None  # the line's id: its idempotency key
    supersedes_refs: tuple[str, ...] = ()  # the refs of earlier memory lines it corrects

    @property
    def tenant_key(self) -> tuple[str, str] | None:
        """(tenant, key) of a keyed record."""
        return None if self.key is None else (self.valid.tenant_id, self.key)


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


def read_file(
    path: Path,
    store: MemoryStore,
    *,
    tenant_id: str | None = None,
    file_format: str | None = None,
    override_tenant: bool = False,
) -> list[Record]:
    """Parse and validate every line of ``path``; raise ``ValidationError`` naming the line.

    ``tenant_id`` fills lines that have none; a line that names another tenant is refused,
    unless ``override_tenant`` (then every line is stored under ``tenant_id``). ``file_format``
    is ``jsonl`` or ``csv``; by default it follows the file's suffix (``.csv`` is CSV, anything
    else JSON Lines). The columns a line may carry: :mod:`retrieval.memory.file_columns`.
    """
    if override_tenant and tenant_id is None:
        raise ValidationError("override_tenant needs the tenant_id to store every line under")
    tenancy = _Tenancy(tenant_id, override_tenant)
    chosen = file_format or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
    if chosen not in ("jsonl", "csv"):
        raise ValidationError(f"unknown format {chosen!r}: use jsonl or csv")
    try:
        # utf-8-sig: a byte order mark that an editor wrote before the first field is dropped.
        with path.open(encoding="utf-8-sig", newline="") as handle:
            rows = _csv_rows(handle) if chosen == "csv" else _jsonl_rows(handle)
            records = [_record(line, fields, store, tenancy, path) for line, fields in rows]
    except UnicodeDecodeError as error:
        raise ValidationError(f"{path}: not UTF-8 text ({error})") from None
    except ValidationError as error:
        if error.reason.startswith(str(path)):
            raise
        raise ValidationError(f"{path} {error.reason}", field=error.field) from None
    except OSError as error:
        raise ValidationError(f"{path}: cannot read it ({error.strerror})") from None
    _check_refs(records, path)
    _check_keys(records, path)
    _check_decisions(records, store, path)
    return _superseded_in_the_file(records)


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
        found = _EXPORT_ID.match(record.key or "")
        if found and found[1] == record.type and record.valid.created_at is not None:
            wanted[(record.valid.tenant_id, record.type)][int(found[2])] = record
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


def _jsonl_rows(handle: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        try:
            fields = json.loads(raw.rstrip("\r\n"))
        except json.JSONDecodeError as error:
            problem = json_problem(error)
            raise ValidationError(f"line {line}, column {error.colno}: {problem}") from None
        except RecursionError:
            raise ValidationError(f"line {line}: {NESTED_TOO_DEEPLY}") from None
        except ValueError:
            raise ValidationError(f"line {line}: {number_too_long()}") from None
        if not isinstance(fields, dict):
            raise ValidationError(f"line {line}: expected a JSON object, got {raw.strip()[:40]}")
        yield line, fields


def _csv_rows(handle: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    # strict: a quote left open, or text after a closing quote, is an error, not a cell that
    # runs on to the end of the file.
    reader = csv.DictReader(handle, strict=True)
    ended = 1  # the last line of the header or of the last row read
    try:
        _check_header(reader.fieldnames or [])
        for fields in reader:
            line = reader.line_num
            if None in fields:
                raise ValidationError(f"line {line}: more cells than the header has columns")
            cells = {key: value for key, value in fields.items() if value not in (None, "")}
            yield line, {name: _csv_cell(name, value, line) for name, value in cells.items()}
            ended = line
    except csv.Error as error:
        if "unexpected end of data" in str(error):
            raise ValidationError(
                f'line {ended + 1}: a quoted cell that starts here never ends (a " without '
                'its closing "): close it, and write a " inside a quoted cell as ""'
            ) from None
        raise ValidationError(
            f"line {ended + 1}: not valid CSV ({error}); a field over "
            f"{csv.field_size_limit():,} characters is refused: use JSON Lines for long texts"
        ) from None


def _check_header(names: Sequence[str]) -> None:
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValidationError(
            f"line 1: column {twice[0]!r} appears more than once in the header: name each "
            "column once",
            field=twice[0],
        )


def _csv_cell(name: str, value: str, line: int) -> Any:
    # A cell as the type its field takes: JSON for metadata and params, a list of entities,
    # a number for importance, whole numbers for decision_id and position.
    try:
        if name in _JSON_FIELDS or (name == "entities" and value.strip().startswith("[")):
            return parse_json(value, name)
        if name == "entities":
            return value.strip().split(";")
        if name == "importance":
            return float(value)
        if name in ("decision_id", "position"):
            return int(value)
    except ValidationError as error:
        raise ValidationError(f"line {line}, {error.reason}", field=name) from None
    except ValueError:
        wanted = "a number" if name == "importance" else "a whole number"
        raise ValidationError(
            f"line {line}, {name}: {value[:40]!r} is not {wanted}", field=name
        ) from None
    return value


@dataclass(frozen=True)
class _Tenancy:
    """The tenant a run was given (``--tenant``), and whether it overrides the lines'."""

    tenant_id: str | None
    override: bool

    def of(self, fields: dict[str, Any]) -> None:
        """Fill (or override) ``fields``' tenant; refuse a line that names another one."""
        if self.tenant_id is None:
            return
        named = fields.get("tenant_id")
        if self.override or named is None:
            fields["tenant_id"] = self.tenant_id
        elif named != self.tenant_id:
            raise ValidationError(
                f"tenant_id {named!r} is not the tenant given ({self.tenant_id!r}): leave "
                "tenant_id out of the lines, or store every line under the given tenant "
                "(--override-tenant)",
                field="tenant_id",
            )


def _record(
    line: int, fields: dict[str, Any], store: MemoryStore, tenancy: _Tenancy, path: Path
) -> Record:
    try:
        return replace(_parse(fields, store, tenancy, path), line=line)
    except ValidationError as error:
        raise ValidationError(f"{path} line {line}: {error.reason}", field=error.field) from None


def _parse(fields: dict[str, Any], store: MemoryStore, tenancy: _Tenancy, path: Path) -> Record:
    fields = dict(fields)
    kind = fields.pop("type", "message" if "speaker" in fields else "memory")
    if kind not in RECORD_TYPES:
        raise ValidationError(f"type {kind!r} is not one of {', '.join(RECORD_TYPES)}")
    key = ingest_key(fields.pop("id", None))
    numbered = False
    time_field = "created_at"
    if kind == "message":
        numbered = fields.get("position") is None
        time_field = "time" if "time" in fields else "created_at"
        fields, kind = _message(fields, path.name), "memory"
    ref = fields.pop("ref", None) if kind in ("decision", "memory") else None
    decision_ref = fields.pop("decision_ref", None) if kind == "tool_call" else None
    supersedes_refs = _refs(fields.pop("supersedes_ref", None)) if kind == "memory" else ()
    retired_at = fields.pop("retired_at", None) if kind == "memory" else None
    if decision_ref is not None and fields.get("decision_id") is not None:
        raise ValidationError("give decision_id or decision_ref, not both")
    tenancy.of(fields)
    if "tenant_id" not in fields:
        raise ValidationError(
            "tenant_id is missing: add it to the line or pass --tenant", field="tenant_id"
        )
    if isinstance(fields.get("created_at"), str):
        fields["created_at"] = _timestamp(fields["created_at"], time_field)
    if isinstance(fields.get("expires_at"), str):
        fields["expires_at"] = _timestamp(fields["expires_at"], "expires_at")
    if isinstance(fields.get("thread_id"), int) and not isinstance(fields["thread_id"], bool):
        fields["thread_id"] = str(fields["thread_id"])  # a session numbered 1, 2, ...
    valid: Valid
    if kind == "memory":
        valid = valid_memory(as_input(fields, MemoryInput), store.limits)
        if retired_at is not None:
            valid = valid._replace(retired_at=_retired_at(retired_at, valid.created_at))
    elif kind == "decision":
        valid = valid_decision(as_input(fields, DecisionInput), store.limits)
    else:
        valid = valid_tool_call(as_input(fields, ToolCallInput), store.limits)
    return Record(
        line=0,
        type=kind,
        valid=valid,
        ref=None if ref is None else str(ref),
        decision_ref=None if decision_ref is None else str(decision_ref),
        numbered=numbered,
        key=key,
        supersedes_refs=supersedes_refs,
    )


def _retired_at(value: object, created_at: datetime | None) -> datetime:
    # A version stored retired: after it was told (after now, when the line gives no time).
    if not isinstance(value, str):
        raise ValidationError(
            f"retired_at must be an ISO 8601 time, got {value!r:.60}", field="retired_at"
        )
    moment = _timestamp(value, "retired_at")
    told = created_at or datetime.now(UTC)
    if moment <= told:
        raise ValidationError(
            f"retired_at: {moment.isoformat()} is not after created_at {told.isoformat()}: a "
            "memory must live for some time",
            field="retired_at",
        )
    return moment


def _superseded_in_the_file(records: list[Record]) -> list[Record]:
    """``records`` with the ``retired_at`` of a line a later line supersedes dropped: the
    correction retires it, at its own time."""
    named = {ref for record in records for ref in record.supersedes_refs}
    return [
        replace(record, valid=record.valid._replace(retired_at=None))
        if record.ref in named and isinstance(record.valid, ValidMemory)
        else record
        for record in records
    ]


def _refs(value: object) -> tuple[str, ...]:
    # supersedes_ref: one ref or a list of them.
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(one, str | int) and str(one).strip() for one in values):
        raise ValidationError(
            f"supersedes_ref must be the ref of an earlier memory line or a list of them, got "
            f"{value!r:.60}",
            field="supersedes_ref",
        )
    return tuple(str(one) for one in values)


def _message(fields: dict[str, Any], default_session: str) -> dict[str, Any]:
    """A transcript line's fields as a memory's."""
    unknown = sorted(set(fields) - _MESSAGE_FIELDS)
    if unknown:
        raise ValidationError(
            f"unknown field(s) of a message {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(sorted(_MESSAGE_FIELDS))}",
            field=unknown[0],
        )
    for name in ("speaker", "text"):
        value = fields.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(
                f"{name}: a message needs a non-empty {name}, got {value!r}", field=name
            )
    if "time" in fields and "created_at" in fields:
        raise ValidationError("give time or created_at, not both", field="time")
    speaker = fields["speaker"].strip()
    metadata = fields.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValidationError(
            f"metadata: must be a JSON object, got {type(metadata).__name__}", field="metadata"
        )
    tenant = {"tenant_id": fields["tenant_id"]} if "tenant_id" in fields else {}
    return {
        **tenant,
        "text": f"{speaker}: {fields['text']}",
        "kind": "message",
        "metadata": {**(metadata or {}), "speaker": speaker},
        "created_at": fields.get("time", fields.get("created_at")),
        "thread_id": fields.get("session", default_session),
        "position": fields.get("position"),
    }


def _timestamp(value: str, field: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(
            f"{field}: {value!r} is not an ISO 8601 timestamp (2026-11-25T09:30:00+00:00)",
            field=field,
        ) from None
    if moment.tzinfo is None:
        raise ValidationError(
            f"{field}: {value!r} has no time zone: add +00:00 or Z to it "
            f"({moment.isoformat()}+00:00 is UTC)",
            field=field,
        )
    return moment


def _check_refs(records: list[Record], path: Path) -> None:
    seen: dict[str, Record] = {}
    for record in records:
        if record.ref is not None:
            if record.ref in seen:
                raise ValidationError(
                    f"{path} line {record.line}: ref {record.ref!r} was already used on line "
                    f"{seen[record.ref].line}"
                )
            seen[record.ref] = record
        named = [("decision_ref", record.decision_ref, "decision")] if record.decision_ref else []
        named += [("supersedes_ref", ref, "memory") for ref in record.supersedes_refs]
        for field_name, ref, kind in named:
            earlier = seen.get(ref)
            if earlier is None or earlier.type != kind or earlier is record:
                raise ValidationError(
                    f"{path} line {record.line}: {field_name} {ref!r} names no {kind} on an "
                    "earlier line"
                )


def _check_keys(records: list[Record], path: Path) -> None:
    seen: dict[tuple[str, str], int] = {}
    for record in records:
        key = record.tenant_key
        if key is None:
            continue
        if key in seen:
            raise ValidationError(
                f"{path} line {record.line}: id {record.key!r} was already used on line "
                f"{seen[key]} (an id names one record of its tenant)",
                field="id",
            )
        seen[key] = record.line


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


def _check_decisions(records: list[Record], store: MemoryStore, path: Path) -> None:
    """Refuse, before anything is written, a tool call naming a decision its tenant does not
    hold (the write would fail in a later batch, after earlier batches committed)."""
    wanted: dict[str, dict[int, int]] = {}  # tenant -> decision id -> first line naming it
    for record in records:
        valid = record.valid
        if isinstance(valid, ValidToolCall) and valid.decision_id is not None:
            wanted.setdefault(valid.tenant_id, {}).setdefault(valid.decision_id, record.line)
    if not wanted:
        return
    lookup = Lookup(store.schema, store.cache)
    with translate_database_errors(str(store.engine.url)), store.engine.connect() as connection:
        for tenant, ids in wanted.items():
            missing = set(ids) - lookup.existing_decisions(connection, tenant, sorted(ids))
            if missing:
                decision_id = min(missing, key=ids.__getitem__)
                raise ValidationError(
                    f"{path} line {ids[decision_id]}: decision_id: decision {decision_id} does "
                    f"not exist for tenant {tenant!r}: record the decision first, name a "
                    "decision line of the file in decision_ref, or leave decision_id empty",
                    field="decision_id",
                )
