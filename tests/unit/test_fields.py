"""A memory's, a decision's and a tool call's fields are declared once (retrieval.memory.fields):
what Python or SQLAlchemy declares apart (the dataclasses, ``remember``'s keywords, the MCP
tools, the ingested file's columns, the tables) is held to that declaration here."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from retrieval.db.schema import DECISIONS, MEMORIES, TOOL_CALLS, build_metadata
from retrieval.integrations.mcp_server import memory_server
from retrieval.memory.cached_memories import MEMORY_FIELDS
from retrieval.memory.fields import (
    DECISION,
    MEMORY,
    MEMORY_ARRAYS,
    TOOL_CALL,
    Field,
    copy_columns,
    given,
    insert_fragments,
    read_names,
    select_list,
)
from retrieval.memory.file_columns import COLUMNS
from retrieval.memory.records import (
    Decision,
    DecisionInput,
    Memory,
    MemoryInput,
    ToolCall,
    ToolCallInput,
)
from retrieval.memory.row_fields import RowFields
from retrieval.memory.store import MemoryStore
from retrieval.memory.validation import ValidDecision, ValidMemory, ValidToolCall
from retrieval.search.statement.common import MEMORY_COLUMNS

RECORDS = {"memory": MEMORY, "decision": DECISION, "tool_call": TOOL_CALL}
TABLES = {"memory": MEMORIES, "decision": DECISIONS, "tool_call": TOOL_CALLS}
# Columns the database computes from others, which no caller gives and no record reads.
COMPUTED = {"memory": {"search_vector", "content_key"}, "decision": {"search_text"},
            "tool_call": {"search_text"}}  # fmt: skip
# The MCP tool that stores each record.
TOOLS = {"memory": "remember", "decision": "record_decision", "tool_call": "record_tool_call"}


def names(dataclass: Any) -> set[str]:
    return {field.name for field in dataclasses.fields(dataclass)}


@pytest.mark.parametrize(
    ("record", "stored", "given_as"),
    [
        ("memory", Memory, MemoryInput),
        ("decision", Decision, DecisionInput),
        ("tool_call", ToolCall, ToolCallInput),
    ],
)
def test_the_records_have_the_declared_fields(record: str, stored: Any, given_as: Any) -> None:
    fields = RECORDS[record]
    assert names(stored) == set(read_names(fields))
    assert names(given_as) == set(given(fields))


def test_the_checked_records_carry_what_a_caller_gives() -> None:
    # A checked memory keeps its metadata as JSON text, and may be a version stored retired.
    memory = {name if name != "metadata" else "metadata_json" for name in given(MEMORY)}
    assert set(ValidMemory._fields) == memory | {"retired_at"}
    assert set(ValidDecision._fields) == set(given(DECISION))
    tool_call = {name if name != "params" else "params_json" for name in given(TOOL_CALL)}
    assert set(ValidToolCall._fields) == tool_call


def test_remember_takes_every_field_a_caller_gives() -> None:
    keywords = set(inspect.signature(MemoryStore.remember).parameters) - {"self"}
    assert keywords == set(given(MEMORY))
    decision = set(inspect.signature(MemoryStore.record_decision).parameters) - {"self"}
    assert decision == set(given(DECISION))
    tool_call = set(inspect.signature(MemoryStore.record_tool_call).parameters) - {"self"}
    assert tool_call == set(given(TOOL_CALL))


@pytest.mark.parametrize("record", list(TABLES))
def test_the_tables_have_the_declared_columns(record: str) -> None:
    table = build_metadata("retrieval", 384).tables[f"retrieval.{TABLES[record]}"]
    declared = {field.name for field in RECORDS[record] if field.column}
    assert set(table.columns.keys()) == declared | COMPUTED[record]


@pytest.mark.parametrize("record", list(TOOLS))
def test_the_mcp_tools_take_the_declared_fields(record: str) -> None:
    server = memory_server(None, None, lambda context: "tenant")  # type: ignore[arg-type]
    tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    parameters = set(tools[TOOLS[record]].input_schema["properties"])
    assert parameters == {str(field.given) for field in RECORDS[record] if field.tool}


def test_an_ingested_line_names_every_field_a_caller_gives() -> None:
    columns = {name for column in COLUMNS for name in column.names}
    # A line gives no vector: ingest embeds its text with the store's model.
    memory = set(given(MEMORY)) - {"embedding", "embedding_model"}
    assert memory <= columns
    assert set(given(DECISION)) | set(given(TOOL_CALL)) <= columns
    exported = {str(f.given) for fields in RECORDS.values() for f in fields if f.exported}
    assert exported <= columns


def test_the_writer_sends_its_rows_in_the_declared_order() -> None:
    memory = ValidMemory(
        tenant_id="acme",
        text="The deploy failed",
        kind="fact",
        metadata_json='{"source": "ci"}',
        importance=0.5,
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
        entities=("deploy",),
        embedding=np.zeros(384, dtype=np.float32),
        embedding_model="model",
        thread_id="chat",
        position=3,
        expires_at=datetime(2026, 12, 1, tzinfo=UTC),
        namespace=("users", "u1"),
    )
    row = RowFields(datetime(2026, 11, 29, tzinfo=UTC), "store-model", None, None).of(0, memory, 7)
    sent = dict(zip([name for name, _ in MEMORY_FIELDS], row, strict=True))
    assert sent == {
        "tenant_id": "acme",
        "id": 7,
        "content": "The deploy failed",
        "kind": "fact",
        "metadata": sent["metadata"],
        "importance": 0.5,
        "created_at": memory.created_at,
        "embedding_model": "model",
        "thread_id": "chat",
        "position": 3,
        "expires_at": memory.expires_at,
        "namespace": ["users", "u1"],
        "key": None,
        "distinct_copy": True,
        "seen_count": 1,
        "last_seen_at": None,
    }
    assert sent["metadata"].endswith(b'{"source": "ci"}')  # binary jsonb: a version byte first
    # The insert statements' arrays are the same columns but the tenant, bound once.
    assert [field.name for field in MEMORY_ARRAYS] == [name for name, _ in MEMORY_FIELDS[1:]]


def test_the_statements_read_the_declared_columns() -> None:
    assert tuple(field.name for field in MEMORY if field.candidate) == MEMORY_COLUMNS
    stored = select_list(MEMORY, "m").split(", ")
    assert "m.embedding" in stored and "m.distinct_copy" not in stored
    assert "m.entities" not in stored  # kept in memory_entities, read by a subquery
    assert copy_columns(DECISION)[0] == ("tenant_id", "text")
    assert dict(copy_columns(TOOL_CALL))["params"] == "bytea"  # binary jsonb in COPY
    fragments = insert_fragments()
    assert "s.metadata::jsonb" in fragments["values"]
    assert "%(metadata)b::text[]" in fragments["arrays"]
    assert fragments["columns"] == fragments["names"]


def test_a_field_is_given_under_one_name() -> None:
    for fields in RECORDS.values():
        keywords = [field.given for field in fields if field.given is not None]
        assert len(keywords) == len(set(keywords))
        assert all(isinstance(field, Field) for field in fields)
