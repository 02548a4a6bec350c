"""A GIN index on the memories' metadata, for the read path's metadata filters.

``retrieve(..., filter=...)`` keeps the memories whose metadata meets the filter, inside the
search (retrieval.search.statement.metadata). A condition by value (``{"user": "u1"}``, or
``$eq``) is JSON containment, ``metadata @> ...``, which this index answers for a tenant
(``tenant_id`` through btree_gin, ``metadata`` with ``jsonb_path_ops``): a selective filter at
100,000 memories reads its rows through it and sorts them by distance instead of scanning the
tenant (benchmarks/reading/filters.py, docs/decisions/0025-metadata-filters.md). Comparisons
(``$gt``, ``$in``, ...) are checked row by row.

Building it reads the memories once (a few seconds per 100,000); writes then keep it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    op.execute(
        f"CREATE INDEX memories_metadata_idx ON {schema}.memories "
        "USING gin (tenant_id, metadata jsonb_path_ops)"
    )


def downgrade() -> None:
    op.execute(f'DROP INDEX "{current_settings().schema}".memories_metadata_idx')
