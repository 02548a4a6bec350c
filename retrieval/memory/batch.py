"""Writes that share one transaction: what :meth:`MemoryStore.batch
<retrieval.memory.store.MemoryStore.batch>` yields."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from retrieval.memory.episodic_writer import EpisodicWriter
from retrieval.memory.records import (
    DecisionInput,
    MemoryInput,
    StoredIds,
    ToolCallInput,
)
from retrieval.memory.validation import (
    Limits,
    ValidDecision,
    ValidMemory,
    ValidToolCall,
    as_input,
    batch_items,
    valid_decision,
    valid_memory,
    valid_tool_call,
)
from retrieval.memory.writer import Writer


class StoreBatch:
    """Writes that share one transaction (see :meth:`MemoryStore.batch`)."""

    def __init__(
        self, writer: Writer, episodic: EpisodicWriter, limits: Limits, connection: Connection
    ) -> None:
        self._writer = writer
        self._episodic = episodic
        self._limits = limits
        self.connection = connection

    def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> StoredIds:
        """Validate every memory, then write them all; return their ids in order."""
        inputs = [
            as_input(item, MemoryInput, index)
            for index, item in enumerate(batch_items(items, "remember_many"))
        ]
        if inputs and all(item.embedding is not None for item in inputs):
            return self._writer.memories_streamed(self.connection, inputs, self._limits)
        return self.write_memories(
            [valid_memory(item, self._limits, index) for index, item in enumerate(inputs)]
        )

    def record_decisions(self, items: Iterable[DecisionInput | Mapping[str, Any]]) -> list[int]:
        """Validate every decision, then write them all; return their ids in order."""
        inputs = [
            as_input(item, DecisionInput, index)
            for index, item in enumerate(batch_items(items, "record_decisions"))
        ]
        return self.write_decisions(
            [valid_decision(item, self._limits, index) for index, item in enumerate(inputs)]
        )

    def record_tool_calls(self, items: Iterable[ToolCallInput | Mapping[str, Any]]) -> list[int]:
        """Validate every tool call, then write them all; return their ids in order."""
        inputs = [
            as_input(item, ToolCallInput, index)
            for index, item in enumerate(batch_items(items, "record_tool_calls"))
        ]
        return self.write_tool_calls(
            [valid_tool_call(item, self._limits, index) for index, item in enumerate(inputs)]
        )

    def write_memories(self, memories: Sequence[ValidMemory]) -> StoredIds:
        """Write memories that were already validated."""
        return self._writer.memories(self.connection, memories)

    def write_decisions(self, decisions: Sequence[ValidDecision]) -> list[int]:
        """Write decisions that were already validated."""
        return self._episodic.decisions(self.connection, decisions)

    def write_tool_calls(
        self, calls: Sequence[ValidToolCall], *, single: bool = False
    ) -> list[int]:
        """Write tool calls that were already validated."""
        return self._episodic.tool_calls(self.connection, calls, single=single)
