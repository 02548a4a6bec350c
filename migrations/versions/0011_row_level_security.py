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

from retrieval.db.migrate import current_settings

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

POLICY = "tenant_isolation"
# The tables as of this revision (later revisions add their own tables' policies).
ALL_TABLES = (
    "memories",
    "memory_entities",
    "decisions",
    "tool_calls",
    "embedding_cache",
    "documents",
    "document_chunks",
    "document_terms",
    "document_term_stats",
    "document_corpus",
    "memory_term_stats",
    "memory_corpus",
    "episodic_vocabulary",
    "episodic_postings",
)
SETTING = "retrieval.tenant_id"


# Under a policy PostgreSQL evaluates a statement's own conditions after the policy's, and may
# use one for an index only if its operator is leakproof: the memories' ``@@`` (GIN) and the
# vocabulary's ``LIKE`` (trigram GIN) are not, so a bound role would scan the tenant's rows
# (20x the read path's p50 on 100,000 memories). These two lookups run as the tables' owner
# instead, inside functions that return only rows of the tenant the session names, as the
# policies would.
FUNCTIONS = """
CREATE FUNCTION {schema}.memories_matching(p_tenant text, p_query tsquery, p_limit integer)
RETURNS SETOF {schema}.memories
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.* FROM {schema}.memories AS m
    WHERE m.tenant_id = p_tenant AND m.search_vector @@ p_query
      AND p_tenant = current_setting('{setting}', true)
    LIMIT p_limit
$$;
CREATE FUNCTION {schema}.episodic_tokens_like(p_tenant text, p_pattern text)
RETURNS TABLE (id bigint, rows bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT v.id, v.rows FROM {schema}.episodic_vocabulary AS v
    WHERE v.tenant_id = p_tenant AND v.token LIKE p_pattern
      AND p_tenant = current_setting('{setting}', true)
$$;
REVOKE ALL ON FUNCTION {schema}.memories_matching(text, tsquery, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION {schema}.episodic_tokens_like(text, text) FROM PUBLIC;
"""


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
    parts.append(FUNCTIONS.format(schema=schema, setting=SETTING))
    return "\n".join(parts)


def downgrade_sql(schema: str) -> str:
    """The whole downgrade for ``schema`` (quoted)."""
    parts = [
        f"DROP FUNCTION {schema}.memories_matching(text, tsquery, integer);",
        f"DROP FUNCTION {schema}.episodic_tokens_like(text, text);",
    ]
    for table in ALL_TABLES:
        parts.append(f"DROP POLICY {POLICY} ON {schema}.{table};")
        parts.append(f"ALTER TABLE {schema}.{table} DISABLE ROW LEVEL SECURITY;")
    return "\n".join(parts)


def upgrade() -> None:
    op.execute(upgrade_sql(f'"{current_settings().schema}"'))


def downgrade() -> None:
    op.execute(downgrade_sql(f'"{current_settings().schema}"'))
