"""The memories' time index orders a tenant's rows by ``(created_at, id)``.

The btree on ``(tenant_id, created_at DESC)`` becomes one on ``(tenant_id, created_at, id)``.
A batch of memories written in one call shares its ``created_at``; the turns told just before
and after a message without a thread are read in ``(created_at, id)`` order from a row
comparison (``(created_at, id) < (t, id)``), which the new index answers as its bound, two rows
a hit. On the old one every row of the batch was read and sorted for each hit: 1,800 turns
added through Mem0's interface in three calls took a search 220 ms, 25 ms with this index
(benchmarks/peers/mem0_side_by_side.py, 2026-12-05). Listings newest first scan it backward.

Building it reads the memories once (a few seconds per 100,000); writes then keep it.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    op.execute(
        f"CREATE INDEX memories_tenant_created_id_idx ON {schema}.memories "
        "(tenant_id, created_at, id)"
    )
    op.execute(f"DROP INDEX {schema}.memories_tenant_created_idx")


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    op.execute(
        f"CREATE INDEX memories_tenant_created_idx ON {schema}.memories "
        "(tenant_id, created_at DESC)"
    )
    op.execute(f"DROP INDEX {schema}.memories_tenant_created_id_idx")
