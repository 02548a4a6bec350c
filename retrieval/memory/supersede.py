"""Corrections: a memory that supersedes others retires them at its own time.

A retired memory keeps its row (its text, its vector, ``retired_at`` and ``superseded_by``) for
its history (:mod:`retrieval.memory.history`) and takes no part in retrieval, the BM25
statistics or ``similar()`` from then on. The library never decides that two memories
contradict each other: the caller names what a new memory supersedes.

The memories named are read and locked before anything is written, so that a wrong id is
refused with a clear error (nothing written) and two concurrent corrections of one memory
cannot both succeed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError
from retrieval.memory.validation import ValidMemory


class Target(NamedTuple):
    """A memory named by ``supersedes``, as it stood when the write began."""

    id: int
    created_at: datetime


class _Written(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def created_at(self) -> datetime: ...


# (tenant, id) -> the memory
Targets = Mapping[tuple[str, int], Target]


def check_superseded(
    connection: Connection, schema: str, memories: Sequence[ValidMemory]
) -> Targets:
    """Lock the memories that ``memories`` supersede and refuse what cannot be superseded:
    an id the tenant has no memory under, a memory already retired, one named twice."""
    wanted: dict[str, dict[int, int]] = defaultdict(dict)  # tenant -> id -> item
    for index, memory in enumerate(memories):
        for memory_id in memory.supersedes:
            other = wanted[memory.tenant_id].setdefault(memory_id, index)
            if other != index:
                raise ValidationError(
                    f"supersedes: memory {memory_id} is superseded by items {other} and {index} "
                    "of the batch: one memory supersedes it (name both in one item's text)",
                    item=index,
                    field="supersedes",
                )
    targets: dict[tuple[str, int], Target] = {}
    query = statement("memory.superseded_targets", schema)
    single = len(memories) == 1
    for tenant, items in sorted(wanted.items()):
        bind_tenant(connection, schema, tenant)
        rows = execute(connection, query, {"tenant_id": tenant, "ids": sorted(items)}).all()
        found = {row.id: row for row in rows}
        for memory_id, index in sorted(items.items()):
            _check_one(tenant, memory_id, found.get(memory_id), None if single else index)
            targets[(tenant, memory_id)] = Target(memory_id, found[memory_id].created_at)
    return targets


def _check_one(tenant: str, memory_id: int, row: Any, item: int | None) -> None:
    if row is None:
        raise ValidationError(
            f"supersedes: tenant {tenant!r} has no memory {memory_id}: name a memory of the "
            "same tenant (search, or list them with retrieval timeline)",
            item=item,
            field="supersedes",
        )
    if row.retired_at is not None and row.superseded_by is None:
        raise ValidationError(
            f"supersedes: memory {memory_id} was retired at {row.retired_at.isoformat()} and "
            "has no newer version (it expired, or the correction that retired it expired and "
            "was forgotten): nothing to supersede; remember the new text without supersedes",
            item=item,
            field="supersedes",
        )
    if row.retired_at is not None:
        raise ValidationError(
            f"supersedes: memory {memory_id} was already superseded by memory "
            f"{row.superseded_by} at {row.retired_at.isoformat()}: supersede the newest "
            "version instead (see history())",
            item=item,
            field="supersedes",
        )


def retire_superseded(
    connection: Connection,
    schema: str,
    targets: Targets,
    written: Sequence[tuple[ValidMemory, _Written]],
) -> None:
    """Retire what each written memory supersedes, at the memory's time."""
    if not targets:
        return
    retire = statement("memory.retire", schema)
    for index, (memory, row) in enumerate(written):
        if not memory.supersedes:
            continue
        item = None if len(written) == 1 else index
        for memory_id in memory.supersedes:
            target = targets[(memory.tenant_id, memory_id)]
            if memory_id == row.id:
                raise ValidationError(
                    f"supersedes: memory {memory_id} has this text already: a memory cannot "
                    "supersede itself (change the text, or leave supersedes out)",
                    item=item,
                    field="supersedes",
                )
            if target.created_at > row.created_at:
                raise ValidationError(
                    f"supersedes: memory {memory_id} was stored at "
                    f"{target.created_at.isoformat()}, after the memory that would supersede "
                    f"it ({row.created_at.isoformat()}): give the correction a later created_at",
                    item=item,
                    field="supersedes",
                )
        bind_tenant(connection, schema, memory.tenant_id)
        params = {
            "tenant_id": memory.tenant_id,
            "ids": list(memory.supersedes),
            "at": row.created_at,
            "by": row.id,
        }
        if execute(connection, retire, params).rowcount != len(memory.supersedes):
            raise ValidationError(
                f"supersedes: memories {list(memory.supersedes)} changed while the batch was "
                "written: nothing was written; retry",
                item=item,
                field="supersedes",
            )


def retire_alone(
    connection: Connection, schema: str, written: Sequence[tuple[ValidMemory, _Written]]
) -> None:
    """Retire, at their ``retired_at``, the written memories stored as versions with no newer
    one (an export's lines)."""
    retire = statement("memory.retire", schema)
    for memory, row in written:
        if memory.retired_at is not None:
            bind_tenant(connection, schema, memory.tenant_id)
            params = {"tenant_id": memory.tenant_id, "ids": [row.id], "at": memory.retired_at}
            execute(connection, retire, {**params, "by": None})
