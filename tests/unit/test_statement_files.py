"""The read statement of every pinned shape is on file, as it runs (docs/statements/*.sql).

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

from tests.statement_shapes import SCHEMA, format_statement, pinned_shapes

ROOT = Path(__file__).resolve().parents[2]
SHAPES = pinned_shapes()


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


@pytest.fixture
def statement_file(snapshot: Any) -> Any:
    return snapshot.use_extension(StatementFile)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_statement_of_each_shape_is_on_file(name: str, statement_file: Any) -> None:
    title, shape = SHAPES[name]
    rendered = format_statement(SCHEMA, shape, f"{name}: {title}")
    assert statement_file(name=name) == rendered
