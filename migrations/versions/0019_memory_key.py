"""A memory's key: a name for it within its namespace.

* ``memories.key``: optional text. Remembering a memory under a key that a live memory of the
  same tenant and namespace holds supersedes that memory (retired at the new one's time, kept
  for its history): the key names one fact that changes, as a LangGraph store's item key does
  (retrieval.integrations.langgraph). A memory with a key is never a copy of another (its
  row is its own, whatever its text).
* A btree on (tenant, key, namespace) of the rows that have a key: a key is read, and a new
  version finds the one it replaces, through it.

Adding the column does not rewrite the table; the index holds only the keyed rows.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    table = f"{schema}.memories"
    op.execute(f"ALTER TABLE {table} ADD COLUMN key text")
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT memories_key_named CHECK (key <> '')")
    op.execute(
        f"CREATE INDEX memories_tenant_key_idx ON {table} (tenant_id, key, namespace) "
        "WHERE key IS NOT NULL"
    )


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    op.execute(f"DROP INDEX {schema}.memories_tenant_key_idx")
    op.execute(f"ALTER TABLE {schema}.memories DROP COLUMN key")
