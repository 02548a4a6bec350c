"""Entity links of memories: which questions, papers, people... a memory is about.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE {schema}.memory_entities (
    tenant_id text NOT NULL,
    memory_id bigint NOT NULL,
    entity_id text NOT NULL,
    CONSTRAINT memory_entities_pkey PRIMARY KEY (tenant_id, memory_id, entity_id),
    CONSTRAINT memory_entities_memory_fkey FOREIGN KEY (tenant_id, memory_id)
        REFERENCES {schema}.memories (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX memory_entities_tenant_entity_idx ON {schema}.memory_entities (tenant_id, entity_id);
"""

DOWNGRADE = "DROP TABLE {schema}.memory_entities"


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for statement in UPGRADE.format(schema=schema).split(";"):
        if statement.strip():
            op.execute(statement)


def downgrade() -> None:
    op.execute(DOWNGRADE.format(schema=f'"{current_settings().schema}"'))
