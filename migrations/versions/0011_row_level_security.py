"""Row-level security on every table: a role bound by it sees and changes only the rows of the
tenant named in its session setting ``retrieval.tenant_id``.

Isolation rested only on each statement's ``WHERE tenant_id = ...``; a statement that forgot it
would read every tenant. Each table now has a policy ``tenant_id =
current_setting('retrieval.tenant_id', true)`` for reads and writes, and the library sets that
setting for the tenant of each call. PostgreSQL applies the policies to roles that neither own
the tables nor are superusers nor have ``BYPASSRLS``: the application's role (see
docs/row-level-security.md). The owner that runs the migrations, and the embedded server's
``postgres`` superuser, are not bound, so nothing changes for them.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from retrieval.migrate import current_settings
from retrieval.schema import ALL_TABLES

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

POLICY = "tenant_isolation"
SETTING = "retrieval.tenant_id"


def upgrade_sql(schema: str) -> str:
    """The whole upgrade for ``schema`` (quoted)."""
    parts = []
    for table in ALL_TABLES:
        parts.append(f"ALTER TABLE {schema}.{table} ENABLE ROW LEVEL SECURITY;")
        parts.append(
            f"CREATE POLICY {POLICY} ON {schema}.{table} "
            f"USING (tenant_id = current_setting('{SETTING}', true)) "
            f"WITH CHECK (tenant_id = current_setting('{SETTING}', true));"
        )
    return "\n".join(parts)


def downgrade_sql(schema: str) -> str:
    """The whole downgrade for ``schema`` (quoted)."""
    parts = []
    for table in ALL_TABLES:
        parts.append(f"DROP POLICY {POLICY} ON {schema}.{table};")
        parts.append(f"ALTER TABLE {schema}.{table} DISABLE ROW LEVEL SECURITY;")
    return "\n".join(parts)


def upgrade() -> None:
    op.execute(upgrade_sql(f'"{current_settings().schema}"'))


def downgrade() -> None:
    op.execute(downgrade_sql(f'"{current_settings().schema}"'))
