"""What goes into the store and what comes out of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class MemoryInput:
    """A memory to store. ``embedding`` is optional: without it the store embeds ``text``.

    ``embedding_model`` names the model of a precomputed ``embedding`` (default: the store's).
    ``thread_id`` names the conversation (or session) the memory belongs to and ``position``
    its place in it (a turn number, from 0): a retrieve with ``neighbors`` returns the turns
    around a hit.
    """

    text: str
    tenant_id: str
    kind: str = "fact"
    metadata: Mapping[str, Any] | None = None
    importance: float | None = None
    created_at: datetime | None = None
    entities: Sequence[str] = ()
    embedding: Sequence[float] | npt.NDArray[Any] | None = None
    embedding_model: str | None = None
    thread_id: str | None = None
    position: int | None = None


@dataclass(frozen=True)
class DecisionInput:
    """A decision the agent took, within a task."""

    tenant_id: str
    action_type: str
    content: str
    status: str
    task_id: str | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class ToolCallInput:
    """A tool call the agent made, optionally as part of a decision."""

    tenant_id: str
    tool_name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    result: str | None = None
    decision_id: int | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class Memory:
    """A stored memory."""

    id: int
    tenant_id: str
    content: str
    kind: str
    metadata: dict[str, Any]
    importance: float | None
    access_count: int
    last_accessed_at: datetime | None
    created_at: datetime
    embedding_model: str
    entities: tuple[str, ...]
    embedding: npt.NDArray[np.float32] = field(repr=False, compare=False)
    thread_id: str | None = None
    position: int | None = None


@dataclass(frozen=True)
class Decision:
    """A stored decision."""

    id: int
    tenant_id: str
    task_id: str | None
    action_type: str
    content: str
    status: str
    created_at: datetime


@dataclass(frozen=True)
class ToolCall:
    """A stored tool call."""

    id: int
    tenant_id: str
    decision_id: int | None
    tool_name: str
    params: dict[str, Any]
    result: str | None
    created_at: datetime


@dataclass(frozen=True)
class Forgotten:
    """What :meth:`~retrieval.memory.store.MemoryStore.forget` removed."""

    memory_ids: tuple[int, ...] = ()
    decision_ids: tuple[int, ...] = ()
    tool_call_ids: tuple[int, ...] = ()
    cache_entries: int = 0
    document_ids: tuple[str, ...] = ()  # doc_ids, with their chunks (everything=True only)

    @property
    def total(self) -> int:
        """Rows removed, cache entries and documents included."""
        return (
            len(self.memory_ids)
            + len(self.decision_ids)
            + len(self.tool_call_ids)
            + self.cache_entries
            + len(self.document_ids)
        )
