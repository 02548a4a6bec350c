"""The HNSW index on memory embeddings: dropped and rebuilt around a large first import.

Inserting one vector into the HNSW graph costs about 0.8 ms of server CPU (m = 12); building the
graph once with ``CREATE INDEX`` over rows already loaded is several times faster. Without the
index, nearest-neighbour queries scan the table, so do this while nobody searches.
"""

from __future__ import annotations

import time

from sqlalchemy import Engine

from retrieval.db.engine import stored_vector_type
from retrieval.db.queries import execute, quote_schema, statement
from retrieval.db.table_parts import HNSW_LINKS
from retrieval.db.vector_type import operator_class
from retrieval.errors import translate_database_errors

INDEX_NAME = "memories_embedding_hnsw_idx"


def has_vector_index(engine: Engine, schema: str) -> bool:
    """Whether ``schema.memories`` has its HNSW index."""
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        relation = f"{quote_schema(schema)}.{INDEX_NAME}"
        found = execute(connection, statement("db.relation_exists"), {"relation": relation})
        return bool(found.scalar())


def drop_vector_index(engine: Engine, schema: str) -> None:
    """Drop the HNSW index of ``schema.memories`` (no error if it is not there)."""
    with translate_database_errors(str(engine.url)), engine.begin() as connection:
        execute(connection, statement("db.drop_vector_index", schema))


def build_vector_index(engine: Engine, schema: str) -> float:
    """Build the HNSW index of ``schema.memories`` if missing; return the seconds it took."""
    operators = operator_class(stored_vector_type(engine, schema))
    began = time.perf_counter()
    with translate_database_errors(str(engine.url)), engine.begin() as connection:
        execute(connection, statement("db.index_build_memory"))
        build = statement(
            "db.build_vector_index", schema, links=str(HNSW_LINKS), operator_class=operators
        )
        execute(connection, build)
    return time.perf_counter() - began
