"""A file's lines as validated records: what ``retrieval ingest`` reads before it writes.

Each line is one record. ``type`` says which (``memory`` by default, ``decision``,
``tool_call``, ``message``); the other columns are the fields of
:class:`~retrieval.memory.records.MemoryInput`, :class:`~retrieval.memory.records.DecisionInput`
or :class:`~retrieval.memory.records.ToolCallInput` (every column:
:mod:`retrieval.memory.file_columns`). A decision may carry a ``ref`` that later tool calls
name in ``decision_ref``. A ``message`` (the type of a line with a ``speaker`` and no ``type``)
is one turn of a chat transcript: ``speaker``, ``text``, ``time`` (or ``created_at``) and
``session`` (the thread; default: the file's name), stored as a memory of kind ``message`` whose
text is ``"{speaker}: {text}"``, with the speaker in its metadata. The whole file is parsed and
validated before anything is written (:mod:`retrieval.memory.file_ingest` writes it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.file_formats import Row, csv_rows, jsonl_rows
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.ingest_keys import ingest_key
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.memory.records import DecisionInput, MemoryInput, ToolCallInput
from retrieval.memory.speakers import speaker_of
from retrieval.memory.store import MemoryStore
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
_MESSAGE_FIELDS = frozenset(
    {"speaker", "text", "time", "created_at", "session", "position", "tenant_id", "metadata"}
)

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
            rows = csv_rows(handle) if chosen == "csv" else jsonl_rows(handle)
            records, refused = _records(rows, store, tenancy, path)
    except UnicodeDecodeError as error:
        raise ValidationError(f"{path}: not UTF-8 text ({error})") from None
    except ValidationError as error:
        if error.reason.startswith(str(path)):
            raise
        raise ValidationError(f"{path} {error.reason}", field=error.field) from None
    except OSError as error:
        raise ValidationError(f"{path}: cannot read it ({error.strerror})") from None
    if refused:
        raise _refused(path, refused)
    _check_refs(records, path)
    _check_keys(records, path)
    _check_decisions(records, store, path)
    return _superseded_in_the_file(records)


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


# The most bad lines a refusal lists; the rest are counted.
MAX_REPORTED_LINES = 20


def _records(
    rows: Iterable[Row], store: MemoryStore, tenancy: _Tenancy, path: Path
) -> tuple[list[Record], list[ValidationError]]:
    """The records of ``rows``, and the error of every line that is not one (each error's
    reason opens with ``line N``)."""
    records: list[Record] = []
    refused: list[ValidationError] = []
    for line, fields in rows:
        if isinstance(fields, ValidationError):
            refused.append(fields)
            continue
        try:
            records.append(replace(_parse(fields, store, tenancy, path), line=line))
        except ValidationError as error:
            refused.append(ValidationError(f"line {line}: {error.reason}", field=error.field))
    return records, refused


def _refused(path: Path, refused: list[ValidationError]) -> ValidationError:
    """One error for the bad lines of ``path``: the line and why, for one; for several, each
    of the first :data:`MAX_REPORTED_LINES` on a line of its own, then how many more."""
    if len(refused) == 1:
        (only,) = refused
        return ValidationError(f"{path} {only.reason}", field=only.field)
    listed = "\n".join(f"  {error.reason}" for error in refused[:MAX_REPORTED_LINES])
    more = len(refused) - MAX_REPORTED_LINES
    rest = f"\n  ... and {more:,} more" if more > 0 else ""
    return ValidationError(
        f"{path}: {len(refused):,} lines are not records (nothing was stored):\n{listed}{rest}",
        field=refused[0].field,
    )


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


def unread_speakers(records: Sequence[Record]) -> list[str]:
    """The transcript speakers among ``records`` whose name the conversation rules cannot read
    back from a message's text (:func:`retrieval.memory.speakers.speaker_of`: one to three
    words, those after the first not in lower case), in the order they first speak: their
    messages are stored as given, with no known speaker."""
    unread: dict[str, None] = {}
    for record in records:
        valid = record.valid
        if not isinstance(valid, ValidMemory) or valid.kind != MESSAGE_KIND:
            continue
        speaker = json.loads(valid.metadata_json).get("speaker")
        if isinstance(speaker, str) and speaker_of(valid.text) != speaker:
            unread[speaker] = None
    return list(unread)
