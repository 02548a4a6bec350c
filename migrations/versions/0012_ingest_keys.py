"""Idempotency keys of ingested records: a re-run of ``retrieval ingest`` stores nothing twice.

A line of a JSON Lines or CSV file may carry an ``id`` (any string unique in its tenant); the
ingest keeps it in ``ingest_keys`` with the row it made, in the same transaction, and skips a
line whose key is already there. Row-level security binds the table as every other.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE {schema}.ingest_keys (
    tenant_id text NOT NULL,
    key text NOT NULL,
    item text NOT NULL,
    row_id bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ingest_keys_pkey PRIMARY KEY (tenant_id, key),
    CONSTRAINT ingest_keys_item_known CHECK (item IN ('memory', 'decision', 'tool_call'))
);
ALTER TABLE {schema}.ingest_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON {schema}.ingest_keys
    USING (tenant_id = current_setting('retrieval.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('retrieval.tenant_id', true));
"""

DOWNGRADE = "DROP TABLE {schema}.ingest_keys"


def upgrade() -> None:
    op.execute(UPGRADE.format(schema=f'"{current_settings().schema}"'))


def downgrade() -> None:
    op.execute(DOWNGRADE.format(schema=f'"{current_settings().schema}"'))
