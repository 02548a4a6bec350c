"""Copies of a memory: one stored row per live text, however often and by whom it is told.

A memory is a copy of another when their tenant, namespace, kind and text key
(:mod:`retrieval.memory.text_key`) are equal and, for a turn of a thread, their thread and
position too (a second "ok" later in a conversation is a new turn). A message without a thread
(a turn of a session inferred from time) is never a copy: the writer stores each as a distinct
row (``distinct_copy``), outside the key. The database keeps one live row per key (the partial
unique index ``memories_live_key``, revisions 0016 and 0018) and a write of a copy refreshes
that row instead of storing another (``memory.refresh_copies``: ``INSERT ... ON CONFLICT DO
UPDATE``, so concurrent writers of one text get one row and one id).

Here the copies within one batch are folded first (one statement may not touch a row twice):
the first copy leads, with the largest importance, the later expiry (none: never), the union of
the entities and of what they supersede, and a seen count of its copies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.db.statistics_lock import lock_term_statistics
from retrieval.errors import DatabaseError
from retrieval.memory.validation import ValidMemory

# The unique index of the live rows' keys (revision 0016).
LIVE_KEY = "memories_live_key"
# tenant, text key, kind, thread ('' for none), position (-1 for none), namespace: the index's
# columns.
CopyKey = tuple[str, bytes, str, str, int, tuple[str, ...]]


def copy_key(memory: ValidMemory, key: bytes) -> CopyKey:
    """The key under which ``memory``, whose text has the text key ``key``, is a copy of a
    live memory."""
    return (
        memory.tenant_id,
        key,
        memory.kind,
        memory.thread_id or "",
        -1 if memory.position is None else memory.position,
        memory.namespace,
    )


def returned_key(row: Sequence[Any]) -> CopyKey:
    """The key of a row ``memory.refresh_copies`` returned (tenant, id, key, kind, thread,
    position, inserted, stored text, namespace)."""
    tenant, _, key, kind, thread, position = row[:6]
    place = -1 if position is None else position
    return (tenant, bytes(key), kind, thread or "", place, tuple(row[8]))


@dataclass(frozen=True)
class Copies:
    """A batch folded: each distinct memory once (``leads``), how many copies of it the batch
    holds and when it was last told among them, and each item's lead."""

    leads: list[ValidMemory]
    keys: list[CopyKey]
    seen: list[int]
    last_seen: list[datetime | None]
    lead_of: list[int]

    @property
    def folded(self) -> int:
        """Items of the batch that were copies of an earlier item."""
        return len(self.lead_of) - len(self.leads)


def fold_copies(memories: Sequence[ValidMemory], text_keys: Sequence[bytes]) -> Copies:
    """The distinct memories of a batch (see the module), whose texts have ``text_keys``
    (:class:`~retrieval.memory.text_key.TextKeys`)."""
    index_of: dict[CopyKey, int] = {}
    groups: list[list[ValidMemory]] = []
    keys: list[CopyKey] = []
    lead_of = []
    for memory, text_key in zip(memories, text_keys, strict=True):
        key = copy_key(memory, text_key)
        lead = index_of.get(key)
        if lead is None:
            lead = index_of[key] = len(groups)
            groups.append([])
            keys.append(key)
        groups[lead].append(memory)
        lead_of.append(lead)
    return Copies(
        leads=[_merged(group) for group in groups],
        keys=keys,
        seen=[len(group) for group in groups],
        last_seen=[_last_told(group) for group in groups],
        lead_of=lead_of,
    )


def _merged(group: list[ValidMemory]) -> ValidMemory:
    first = group[0]
    if len(group) == 1:
        return first
    importances = [m.importance for m in group if m.importance is not None]
    expiries = [m.expires_at for m in group]
    entities = sorted({entity for m in group for entity in m.entities})
    supersedes = tuple(dict.fromkeys(one for m in group for one in m.supersedes))
    return first._replace(
        importance=max(importances) if importances else None,
        expires_at=None if None in expiries else max(e for e in expiries if e is not None),
        entities=tuple(entities),
        supersedes=supersedes,
    )


def _last_told(group: list[ValidMemory]) -> datetime | None:
    # The latest time among the copies (None: only once, or one copy is told now).
    times = [m.created_at for m in group]
    if len(group) == 1 or None in times:
        return None
    return max(t for t in times if t is not None)


def retire_expired_copies(connection: Connection, schema: str, keys: Iterable[CopyKey]) -> None:
    """Retire, at their expiry, the expired live memories whose text a key of ``keys`` has
    (whatever their kind or place: an expired memory takes no part in reads either way), so
    that a new copy is stored as a new memory and the past stays as it was."""
    by_tenant: dict[str, list[CopyKey]] = {}
    for key in keys:
        by_tenant.setdefault(key[0], []).append(key)
    retire = statement("memory.retire_expired_copies", schema)
    expired = statement("memory.has_expired", schema)
    for tenant, tenant_keys in sorted(by_tenant.items()):
        bind_tenant(connection, schema, tenant)
        if execute(connection, expired, {"tenant_id": tenant}).first() is None:
            continue  # the common case: nothing of the tenant has expired and is still live
        # The statistics lock before the rows' locks, in the order forget takes them.
        lock_term_statistics(connection, schema, [tenant])
        texts = sorted({key[1] for key in tenant_keys})
        execute(connection, retire, {"tenant_id": tenant, "keys": texts})


class StoredRows(NamedTuple):
    """Each key's stored id, whether its row is new, and the text the row holds."""

    ids: list[int]
    new: list[bool]
    texts: list[str]


def stored_rows(keys: Sequence[CopyKey], returned: Iterable[Sequence[Any]]) -> StoredRows:
    """Each key's stored row, from the rows the writes returned."""
    found = {returned_key(row): (int(row[1]), bool(row[6]), str(row[7])) for row in returned}
    missing = [key for key in keys if key not in found]
    if missing:
        raise DatabaseError(
            f"{len(missing)} of {len(keys)} memories came back from the database under another "
            "text key than the one computed here: nothing was written (report this, with the "
            "texts)"
        )
    rows = [found[key] for key in keys]
    return StoredRows([row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows])
