"""HNSW graphs with 12 links per node instead of pgvector's default 16.

Inserting a vector into an HNSW graph links it to its nearest nodes and re-checks each of
those nodes' own links (up to ``2 * m`` of them in the graph's bottom layer); with the server
profiled (``perf``), 38% of an insert is distance computations, most of them in that re-check.
With ``m = 12`` a ``COPY`` of 1,000 memories costs 0.78 instead of 1.2 ms of server time per
row (1.6x the rows per second) and a build over 100,000 memories about 13-30% less time, while
recall@10 against exact search on the read benchmark's 100,000 memories stays within the
spread between two builds of the default graph (``hnsw.ef_search = 40``: 0.826 and 0.802
against 0.829 and 0.834; 100: 0.919 and 0.924 against 0.901 and 0.921). See
docs/decisions/0004-hnsw-twelve-links.md.

Both graphs (memories and document chunks) are rebuilt: this takes a while on large tables
(about 17 s per 100,000 rows on two cores), during which the table cannot be written.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings
from retrieval.db.table_parts import HNSW_LINKS

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

GRAPHS = (
    ("memories", "memories_embedding_hnsw_idx"),
    ("document_chunks", "document_chunks_embedding_hnsw_idx"),
)


def _rebuild(links: int | None) -> None:
    schema = f'"{current_settings().schema}"'
    options = "" if links is None else f" WITH (m = {links})"
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    for table, index in GRAPHS:
        op.execute(f"DROP INDEX {schema}.{index}")
        op.execute(
            f"CREATE INDEX {index} ON {schema}.{table} "
            f"USING hnsw (embedding vector_l2_ops){options}"
        )


def upgrade() -> None:
    _rebuild(HNSW_LINKS)


def downgrade() -> None:
    _rebuild(None)
