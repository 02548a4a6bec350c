"""What goes into the store and what comes out of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval.memory.same_fact import SAME_FACT_CURVE, same_fact_likelihood


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
    # The end of the memory's life (aware; default: its kind's lifetime in the settings, if
    # any), and the ids of live memories of the tenant that it corrects (retired at its time).
    expires_at: datetime | None = None
    supersedes: int | Sequence[int] | None = None
    # Its scope below the tenant, a path of names such as ("users", "u1", "preferences"): a
    # retrieve given a namespace reads that one and those below it. Default: the tenant's top.
    namespace: Sequence[str] | None = None
    # A name for it within its namespace: a new memory under the key of a live memory of the
    # namespace supersedes that memory (retired, kept in its history). Never a copy.
    key: str | None = None


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
    # Over time: how often it was told and when last (None: only at created_at); when it
    # expires; when a correction retired it and which memory did.
    seen_count: int = 1
    last_seen_at: datetime | None = None
    expires_at: datetime | None = None
    retired_at: datetime | None = None
    superseded_by: int | None = None
    namespace: tuple[str, ...] = ()  # its scope below the tenant (): the tenant's top
    key: str | None = None  # its name within its namespace

    def live_at(self, moment: datetime) -> bool:
        """Whether the memory took part in retrieval at ``moment``."""
        return (
            self.created_at <= moment
            and (self.retired_at is None or self.retired_at > moment)
            and (self.expires_at is None or self.expires_at > moment)
        )


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
class MemoryVersion:
    """One version of a memory's history: the memory, and when it was valid (from its
    ``created_at`` until it was retired or expired; ``None``: still valid)."""

    memory: Memory
    valid_from: datetime
    valid_until: datetime | None

    @property
    def superseded_by(self) -> int | None:
        """The memory that retired this one, if any."""
        return self.memory.superseded_by


@dataclass(frozen=True)
class SimilarMemory:
    """A live memory close to a text: its cosine ``similarity`` in [0, 1] (1: the same
    direction; two unrelated texts score about 0.1 with all-MiniLM-L6-v2, 0.8 with
    e5-small), and ``same_fact``,
    how likely it states the same fact as the text (a paraphrase, or another value of it:
    :mod:`retrieval.memory.same_fact`)."""

    memory: Memory
    similarity: float
    # The model's same-fact curve, (intercept, slope): all-MiniLM-L6-v2's unless given.
    curve: tuple[float, float] = field(default=SAME_FACT_CURVE, repr=False, compare=False)

    @property
    def same_fact(self) -> float:
        """How likely, in [0, 1], the memory states the same fact as the text."""
        return same_fact_likelihood(self.similarity, self.curve)


class StoredIds(list[int]):
    """The ids of a batch of memories, in order, and how many of them were duplicates: of a
    live memory already stored, or of an earlier item of the batch (each such item's id is
    the stored memory's)."""

    def __init__(self, ids: Sequence[int] = (), duplicates: int = 0) -> None:
        super().__init__(ids)
        self.duplicates = duplicates

    @property
    def new(self) -> int:
        """How many memories the batch stored."""
        return len(self) - self.duplicates


@dataclass(frozen=True)
class Forgotten:
    """What :meth:`~retrieval.memory.store.MemoryStore.forget` removed."""

    memory_ids: tuple[int, ...] = ()
    decision_ids: tuple[int, ...] = ()
    tool_call_ids: tuple[int, ...] = ()
    cache_entries: int = 0
    document_ids: tuple[str, ...] = ()  # doc_ids, with their chunks (everything=True only)
    # The cache keys of the forgotten texts' vectors that were erased.
    cache_keys: tuple[bytes, ...] = field(default=(), repr=False, compare=False)
    # The memories that forgotten corrections had superseded, live again (forget by id).
    revived_ids: tuple[int, ...] = ()
    # The ids asked for that the tenant does not hold (never stored, already forgotten, or
    # another tenant's): nothing was removed for them.
    missing_memory_ids: tuple[int, ...] = ()
    missing_decision_ids: tuple[int, ...] = ()
    missing_tool_call_ids: tuple[int, ...] = ()

    def __add__(self, other: Forgotten) -> Forgotten:
        return Forgotten(
            memory_ids=self.memory_ids + other.memory_ids,
            decision_ids=self.decision_ids + other.decision_ids,
            tool_call_ids=self.tool_call_ids + other.tool_call_ids,
            cache_entries=self.cache_entries + other.cache_entries,
            document_ids=self.document_ids + other.document_ids,
            cache_keys=self.cache_keys + other.cache_keys,
            revived_ids=self.revived_ids + other.revived_ids,
            missing_memory_ids=self.missing_memory_ids + other.missing_memory_ids,
            missing_decision_ids=self.missing_decision_ids + other.missing_decision_ids,
            missing_tool_call_ids=self.missing_tool_call_ids + other.missing_tool_call_ids,
        )

    @property
    def missing(self) -> list[str]:
        """The ids asked for and not held, each named with its kind ("memory 101")."""
        return [
            f"{kind} {row_id}"
            for kind, ids in (
                ("memory", self.missing_memory_ids),
                ("decision", self.missing_decision_ids),
                ("tool call", self.missing_tool_call_ids),
            )
            for row_id in ids
        ]

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
