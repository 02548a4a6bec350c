"""The parts the tables share: the tenant, id and time columns, the time ranges, the embedding
column and its HNSW index, GIN indexes, and the BM25 statistics tables (:mod:`retrieval.db.schema`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pgvector.sqlalchemy import HALFVEC, Vector
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    func,
)

from retrieval.db.vector_type import VectorType, operator_class

# Links per node of the HNSW graphs (pgvector's ``m``; its default is 16): inserts cost about
# 0.6x as much with the same recall on the benchmarks (migration 0008, docs/decisions/0004).
HNSW_LINKS = 12
SHA256_BYTES = 32


@dataclass(frozen=True)
class Embedding:
    """The stored embedding column of memories and document chunks, and its HNSW index."""

    vector_type: VectorType
    dim: int

    def column(self) -> Column[Any]:
        kind = HALFVEC(self.dim) if self.vector_type == "halfvec" else Vector(self.dim)
        return Column("embedding", kind, nullable=False)

    def index(self, name: str) -> Index:
        return Index(
            name,
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": operator_class(self.vector_type)},
            postgresql_with={"m": HNSW_LINKS},
        )


def gin(name: str, *columns: str, ops: str) -> Index:
    # A GIN index on ``columns``, the last with the operator class ``ops``.
    return Index(name, *columns, postgresql_using="gin", postgresql_ops={columns[-1]: ops})


def tenant() -> Column[str]:
    return Column("tenant_id", Text, nullable=False)


def identity() -> Column[int]:
    return Column("id", BigInteger, Identity(always=False), nullable=False)


def created_at() -> Column[object]:
    return Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now())


def term_statistics(
    metadata: MetaData, stats: str, corpus: str, count: str, *extra: Column[object]
) -> None:
    # BM25's document frequency per term, and the corpus size (``count`` rows, total length)
    # with the text search configuration its lexemes were made with.
    Table(
        stats,
        metadata,
        tenant(),
        Column("term", Text, nullable=False),
        Column("document_frequency", Integer, nullable=False),
        PrimaryKeyConstraint("tenant_id", "term", name=f"{stats}_pkey"),
        CheckConstraint("document_frequency > 0", name=f"{stats}_positive"),
    )
    Table(
        corpus,
        metadata,
        tenant(),
        Column("text_search_config", Text, nullable=False),
        Column(count, BigInteger, nullable=False),
        Column("total_terms", BigInteger, nullable=False),
        *extra,
        PrimaryKeyConstraint("tenant_id", name=f"{corpus}_pkey"),
        CheckConstraint(f"{count} >= 0 AND total_terms >= 0", name=f"{corpus}_nonnegative"),
    )
