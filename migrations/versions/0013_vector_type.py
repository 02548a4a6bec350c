"""The stored embeddings' type: ``halfvec`` (2-byte floats) when ``RETRIEVAL_VECTOR_TYPE`` says so.

With ``vector_type = "halfvec"`` the embeddings of memories and document chunks become pgvector's
``halfvec`` of the same dimension and their HNSW graphs are rebuilt with ``halfvec_l2_ops``: half
the bytes per vector in the table and in the graph (see docs/decisions/0009-halfvec.md for what
it does to recall and ranking). With ``vector`` (or on a schema already of the asked type) the
revision changes nothing. The embedding cache keeps the model's own ``vector`` values.

Converting rewrites both tables and rebuilds both graphs: minutes per million rows, during which
the tables cannot be written. Undoing the revision converts back to ``vector``; the values keep
the rounding they had as ``halfvec`` (about three significant digits), no row is lost.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from retrieval.db.migrate import current_settings
from retrieval.db.table_parts import HNSW_LINKS
from retrieval.db.vector_type import VectorType, operator_class

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

GRAPHS = (
    ("memories", "memories_embedding_hnsw_idx"),
    ("document_chunks", "document_chunks_embedding_hnsw_idx"),
)

COLUMN = """
SELECT t.typname, a.atttypmod FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = CAST(:table AS regclass) AND a.attname = 'embedding' AND NOT a.attisdropped
"""


def _convert(target: VectorType) -> None:
    schema = f'"{current_settings().schema}"'
    bind = op.get_bind()
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    for table, index in GRAPHS:
        stored, dim = bind.execute(text(COLUMN), {"table": f"{schema}.{table}"}).one()
        if stored == target:
            continue
        # A graph dropped for a deferred import stays dropped; the import builds it.
        had_index = bind.execute(
            text("SELECT to_regclass(:index) IS NOT NULL"), {"index": f"{schema}.{index}"}
        ).scalar_one()
        op.execute(f"DROP INDEX IF EXISTS {schema}.{index}")
        op.execute(
            f"ALTER TABLE {schema}.{table} ALTER COLUMN embedding TYPE {target}({int(dim)}) "
            f"USING embedding::{target}({int(dim)})"
        )
        if had_index:
            op.execute(
                f"CREATE INDEX {index} ON {schema}.{table} "
                f"USING hnsw (embedding {operator_class(target)}) WITH (m = {HNSW_LINKS})"
            )


def upgrade() -> None:
    if current_settings().vector_type == "halfvec":
        _convert("halfvec")


def downgrade() -> None:
    _convert("vector")
