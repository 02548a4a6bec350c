"""Leave room in the memories table's pages for access counts updated in place.

Every retrieve counts an access of the memories it returns (``access_count``,
``last_accessed_at``). With full pages each such update writes a new row version elsewhere and
inserts it into every index, the HNSW graph included (about a millisecond of server time per
row); with a fifth of each page free (room for a new version of a row
with a 384-d vector, about 1.6 kB), PostgreSQL updates the row in place (a HOT update: neither
column is indexed) and no index is touched. Pages written before this migration keep their
fill until they are rewritten (``VACUUM FULL`` or ``pg_repack``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

FILLFACTOR = 80


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    op.execute(f"ALTER TABLE {schema}.memories SET (fillfactor = {FILLFACTOR})")


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    op.execute(f"ALTER TABLE {schema}.memories RESET (fillfactor)")
