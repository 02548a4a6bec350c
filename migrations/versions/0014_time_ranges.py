"""Times within the range every reader can use: a CHECK per time column the reads compute on.

A row written outside the library (by SQL) with a ``created_at`` of year 10000 or
``infinity`` made every read of its tenant fail (Python's datetime ends at year 9999). Each time
column that recency, the timeline, export or a read by id computes on now holds only times
between 0001-01-02 and 9999-12-30 UTC (a day to spare at each end, so that any session time
zone reads them back); the library's own validation accepts the same range. Adding a
constraint checks the rows already stored: a row outside the range stops the upgrade, naming
the constraint, and nothing changes (fix or delete the row, then upgrade again).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

EARLIEST = "0001-01-02 00:00:00+00"
LATEST = "9999-12-30 00:00:00+00"
COLUMNS = (
    ("memories", "created_at"),
    ("memories", "last_accessed_at"),
    ("decisions", "created_at"),
    ("tool_calls", "created_at"),
    ("documents", "created_at"),
    ("document_chunks", "created_at"),
)


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for table, column in COLUMNS:  # one statement per execute
        op.execute(
            f"ALTER TABLE {schema}.{table} ADD CONSTRAINT {table}_{column}_range CHECK "
            f"({column} BETWEEN '{EARLIEST}'::timestamptz AND '{LATEST}'::timestamptz)"
        )


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for table, column in COLUMNS:
        op.execute(f"ALTER TABLE {schema}.{table} DROP CONSTRAINT {table}_{column}_range")
