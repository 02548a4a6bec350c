"""A memory's namespace: a scope below its tenant.

* ``memories.namespace``: a path of names (``{users,u1,preferences}``; ``{}``, the tenant's
  top, for every memory stored before). ``retrieve(..., namespace=...)`` reads the memories of
  that namespace and of every namespace below it; ``forget(namespace=...)`` erases them.
  Tenancy stays the security boundary: row-level security and the Citus distribution are by
  tenant as before, and a namespace only narrows what a tenant's call reads.
* A check keeps the path one-dimensional, without empty or null names.
* A GIN index on (tenant, namespace) (``tenant_id`` through btree_gin): a namespace prefix is
  the rows whose names contain the prefix's (``namespace @> prefix``, which the index answers)
  and begin with them.
* The live rows' unique key (revision 0016) gains the namespace: the same text in two
  namespaces is two memories, a copy within one namespace refreshes the first.

Adding the column with its default does not rewrite the table; the two indexes read the
memories once (a few seconds per 100,000).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_LIVE_WHERE = "WHERE retired_at IS NULL AND NOT distinct_copy"
_PLACE = "(coalesce(thread_id, '')), (coalesce(position, -1))"


def _live_key(table: str, *, namespace: bool) -> str:
    columns = f"tenant_id, content_key, kind, {_PLACE}" + (", namespace" if namespace else "")
    return f"CREATE UNIQUE INDEX memories_live_key ON {table} ({columns}) {_LIVE_WHERE}"


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    table = f"{schema}.memories"
    op.execute(f"ALTER TABLE {table} ADD COLUMN namespace text[] NOT NULL DEFAULT '{{}}'")
    op.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT memories_namespace_names CHECK "
        "(coalesce(array_ndims(namespace), 1) = 1 AND array_position(namespace, NULL) IS NULL "
        "AND array_position(namespace, '') IS NULL)"
    )
    op.execute(f"CREATE INDEX memories_namespace_idx ON {table} USING gin (tenant_id, namespace)")
    op.execute(f"DROP INDEX {schema}.memories_live_key")
    op.execute(_live_key(table, namespace=True))


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    table = f"{schema}.memories"
    # The same text stored live in two namespaces would break the narrower key: every copy but
    # the first (by id) is kept out of it, as revision 0016 did with copies stored before it.
    op.execute(
        f"""UPDATE {table} AS m SET distinct_copy = true
FROM (SELECT tenant_id, id, row_number() OVER (
          PARTITION BY tenant_id, content_key, kind, coalesce(thread_id, ''),
                       coalesce(position, -1)
          ORDER BY id) AS copy
      FROM {table} WHERE retired_at IS NULL AND NOT distinct_copy) AS d
WHERE d.copy > 1 AND m.tenant_id = d.tenant_id AND m.id = d.id"""
    )
    op.execute(f"DROP INDEX {schema}.memories_live_key")
    op.execute(_live_key(table, namespace=False))
    op.execute(f"DROP INDEX {schema}.memories_namespace_idx")
    op.execute(f"ALTER TABLE {table} DROP CONSTRAINT memories_namespace_names")
    op.execute(f"ALTER TABLE {table} DROP COLUMN namespace")
