"""Planner statistics of a namespace's first names, so that a namespace filter is priced right.

A read under a namespace keeps the rows whose namespace starts with it:
``namespace @> %(namespace)s AND namespace[1:cardinality(%(namespace)s)] = %(namespace)s``
(the first for the GIN index, the second for the order of the names). PostgreSQL has no
statistics of the slice, so it prices the equality at 0.5% of the rows: for LangGraph's store
with every item under ``("scifact",)`` it expected 26 of 5,183 rows, read them all by a
sequential scan and sorted them by distance instead of walking the HNSW graph (7.5 ms of a
12.3 ms statement). Extended statistics on the slices of one and two names (PostgreSQL 14 and
later: statistics on an expression) give the planner their real frequencies; a custom plan folds
``cardinality`` of the bound namespace to a constant, so the statement's slice is the same
expression. ``ANALYZE`` (autovacuum's or ``retrieval ingest``'s) fills them.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

DEPTHS = (1, 2)


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for depth in DEPTHS:
        op.execute(
            f"CREATE STATISTICS {schema}.memories_namespace_head_{depth} "
            f"ON (namespace[1:{depth}]) FROM {schema}.memories"
        )


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for depth in DEPTHS:
        op.execute(f"DROP STATISTICS {schema}.memories_namespace_head_{depth}")
