"""Every GIN index of the schema keeps a short pending list (``gin_pending_list_limit``).

A GIN index takes new rows into an unsorted pending list (``fastupdate``), merged into the
index when it outgrows ``gin_pending_list_limit`` (4 MB by default) or when (auto)vacuum
reaches the table. Every scan of the index reads the whole list: after a bulk load, until
autovacuum came by, each BM25 term, metadata filter and namespace prefix read up to 4 MB more.
The same statement on the same data took one server 12 or 34 ms by whether autovacuum had run,
and a Citus worker's shards, too small for autovacuum to reach soon, kept their lists
(benchmarks/scale/citus.py; docs/decisions/0038-a-stable-read-statement.md). A limit of
64 kB bounds what a scan reads past the index; writes merge their rows in small sorted
batches instead of large ones.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from retrieval.db.migrate import current_settings

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

PENDING_LIST_KB = 64


def _gin_indexes() -> list[str]:
    schema = current_settings().schema
    rows = op.get_bind().execute(
        text(
            "SELECT i.relname FROM pg_catalog.pg_class AS i "
            "JOIN pg_catalog.pg_am AS a ON a.oid = i.relam "
            "JOIN pg_catalog.pg_index AS x ON x.indexrelid = i.oid "
            "JOIN pg_catalog.pg_class AS t ON t.oid = x.indrelid "
            "WHERE a.amname = 'gin' AND i.relnamespace = to_regnamespace(:schema) "
            "AND t.relkind IN ('r', 'p') ORDER BY i.relname"
        ),
        {"schema": f'"{schema}"'},
    )
    return [str(name) for name in rows.scalars()]


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for name in _gin_indexes():
        op.execute(
            f'ALTER INDEX {schema}."{name}" SET (gin_pending_list_limit = {PENDING_LIST_KB})'
        )


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for name in _gin_indexes():
        op.execute(f'ALTER INDEX {schema}."{name}" RESET (gin_pending_list_limit)')
