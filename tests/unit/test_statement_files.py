"""The read statement of every pinned shape is on file, as it runs (docs/statements/*.sql), and
each source's part of the default one by itself (docs/statements/sources/*.sql).

A rendering that changes a statement fails here with the SQL diff; ``make statements`` rewrites
the files after an intended change (pytest's ``--snapshot-update``, syrupy), so that a change to
the product's SQL is reviewed as a change of these files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation
from syrupy.types import SnapshotIndex

from tests.statement_shapes import (
    SCHEMA,
    format_source,
    format_statement,
    pinned_shapes,
    source_parts,
)

ROOT = Path(__file__).resolve().parents[2]
SHAPES = pinned_shapes()
SOURCES = source_parts()


class StatementFile(SingleFileSnapshotExtension):
    """A snapshot per shape: ``docs/statements/<shape>.sql``, as text."""

    _write_mode = WriteMode.TEXT
    file_extension = "sql"

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(ROOT / "docs" / "statements")

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        return str(index)


class SourceFile(StatementFile):
    """A snapshot per source: ``docs/statements/sources/<source>.sql``, as text."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(ROOT / "docs" / "statements" / "sources")


@pytest.fixture
def statement_file(snapshot: Any) -> Any:
    return snapshot.use_extension(StatementFile)


@pytest.fixture
def source_file(snapshot: Any) -> Any:
    return snapshot.use_extension(SourceFile)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_statement_of_each_shape_is_on_file(name: str, statement_file: Any) -> None:
    title, shape = SHAPES[name]
    rendered = format_statement(SCHEMA, shape, f"{name}: {title}")
    assert statement_file(name=name) == rendered


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_source_s_part_of_the_default_statement_is_on_file(
    name: str, source_file: Any
) -> None:
    title, parts = SOURCES[name]
    assert source_file(name=name) == format_source(f"{name}: {title}", parts)
