"""The values of a memory's row as the writer sends it (``MEMORY_FIELDS``, in order): its
defaults filled in (now, the model, its kind's lifetime), its copies counted, and whether it is
kept out of the live rows' unique key."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from retrieval.arguments import LATEST_TIME
from retrieval.db.copy_rows import encode_jsonb
from retrieval.memory.copies import Copies
from retrieval.memory.turn_context import untold
from retrieval.memory.validation import ValidMemory


def never_a_copy(memory: ValidMemory) -> bool:
    """Whether ``memory`` is a row of its own whatever it repeats: a message without a thread
    (a turn of its session), a version stored retired (history) or a memory with a key."""
    return untold(memory) is not None or memory.retired_at is not None or memory.key is not None


class RowFields:
    """The values of ``MEMORY_FIELDS`` of each memory of a write."""

    def __init__(
        self,
        now: datetime,
        model_id: str,
        lifetime: Callable[[str], timedelta | None] | None,
        copies: Copies | None,
        *,
        distinct: bool | None = None,
    ) -> None:
        self.now = now
        self.model_id = model_id
        self.lifetime = lifetime
        self.copies = copies
        # Rows kept out of the live rows' unique key: by default, those written without
        # collapsing copies.
        self.distinct = copies is None if distinct is None else distinct

    def created(self, memory: ValidMemory) -> datetime:
        return memory.created_at or self.now

    def of(self, row: int, memory: ValidMemory, memory_id: int) -> tuple[Any, ...]:
        """The fields of the ``row``-th memory written, with id ``memory_id``."""
        created_at = self.created(memory)
        expires_at = memory.expires_at
        if expires_at is None and self.lifetime is not None:
            lifetime = self.lifetime(memory.kind)
            if lifetime is not None:
                expires_at = _shifted(created_at, lifetime)
        seen, last_seen = 1, None
        if self.copies is not None:
            seen, last_seen = self.copies.seen[row], self.copies.last_seen[row]
        distinct = self.distinct or never_a_copy(memory)
        return (
            memory.tenant_id,
            memory_id,
            memory.text,
            memory.kind,
            encode_jsonb(memory.metadata_json),
            memory.importance,
            created_at,
            memory.embedding_model or self.model_id,
            memory.thread_id,
            memory.position,
            expires_at,
            list(memory.namespace),
            memory.key,
            distinct,
            seen,
            last_seen,
        )


def _shifted(moment: datetime, lifetime: timedelta) -> datetime:
    # A default expiry, kept within the times a row may hold.
    try:
        return min(moment + lifetime, LATEST_TIME)
    except OverflowError:
        return LATEST_TIME
