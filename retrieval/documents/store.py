"""Documents: chunked texts with embeddings and the BM25 statistics, written in one transaction.

``DocumentStore.add`` stores a document's chunks (embedded through the hashed cache), their
postings (term, chunk, term frequency) made by PostgreSQL's own text analysis
(``to_tsvector`` with the store's text search configuration), and updates the document
frequency of each term and the tenant's corpus size and length, all in the transaction that
writes the chunks. Adding a document whose content is unchanged is a no-op; a changed one
replaces its chunks, and its old statistics are taken back, in one transaction.
:func:`bm25_search` ranks a tenant's chunks by Okapi BM25 computed in SQL from those statistics.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection

from retrieval import arguments
from retrieval.arguments import check_tenant
from retrieval.db.config import DatabaseConfig, require_text_search_config
from retrieval.db.copy_rows import copy_rows, encode_jsonb, encode_vectors, reserve_ids
from retrieval.db.local_settings import set_local
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.db.statistics_lock import lock_term_statistics
from retrieval.db.versions import has_iterative_scan
from retrieval.documents.inputs import (
    ChunkInput,
    DocumentInput,
    DocumentWrite,
    check_doc_id,
    check_query,
    content_digest,
    validate_document,
)
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.erasure import erase_cached_texts
from retrieval.memory.store import MemoryStore
from retrieval.search.defaults import BM25_B, BM25_K1, DEFAULT_BM25_B, DEFAULT_BM25_K1
from retrieval.search.sources.documents.statement import document_postings
from retrieval.search.statement.bm25 import bm25_every_posting, bm25_weight_ctes

# The inputs, refused or accepted before a write, are imported from here too.
__all__ = ["ChunkInput", "DocumentInput", "DocumentStore", "DocumentWrite", "validate_document"]

_CHUNK_COLUMNS = (
    ("tenant_id", "text"),
    ("id", "int8"),
    ("document_id", "int8"),
    ("chunk_index", "int4"),
    ("content", "text"),
    ("section_title", "text"),
    ("page_start", "int4"),
    ("page_end", "int4"),
    ("term_count", "int4"),
    ("embedding", "bytea"),  # binary vector, see retrieval.db.copy_rows
    ("embedding_model", "text"),
    ("created_at", "timestamptz"),
    ("metadata", "bytea"),  # binary jsonb, see retrieval.db.copy_rows
)
_DOCUMENT_COLUMNS = (
    ("tenant_id", "text"),
    ("id", "int8"),
    ("doc_id", "text"),
    ("filename", "text"),
    ("content_sha256", "bytea"),
    ("metadata", "bytea"),  # binary jsonb, see retrieval.db.copy_rows
    ("created_at", "timestamptz"),
)


class DocumentStore:
    """Stores documents as chunks with embeddings and BM25 statistics, beside a memory store.

    It embeds through ``memory_store``'s embedder and hashed cache. ``text_search_config`` is
    the PostgreSQL configuration that cuts text into lexemes (``english`` stems and drops stop
    words; default ``RETRIEVAL_TEXT_SEARCH_CONFIG``, else ``english``); a tenant's statistics
    are made with one configuration, and another is refused.
    """

    def __init__(self, memory_store: MemoryStore, *, text_search_config: str | None = None) -> None:
        self.memories = memory_store
        self.engine = memory_store.engine
        self.schema = memory_store.schema
        if text_search_config is None:
            text_search_config = DatabaseConfig.from_env().text_search_config
        require_text_search_config(text_search_config)
        self.text_search_config = text_search_config

    def add(self, document: DocumentInput) -> DocumentWrite:
        """Store ``document`` (or replace the tenant's document of the same ``doc_id``)."""
        validate_document(document, self.memories.config.max_text_chars, self.memories.dim)
        digest = content_digest(document)
        with translate_database_errors(str(self.engine.url)), self.engine.begin() as connection:
            bind_tenant(connection, self.schema, document.tenant_id)
            lock_term_statistics(connection, self.schema, [document.tenant_id])
            self._check_config(connection, document.tenant_id)
            found = execute(
                connection,
                self._sql("find"),
                {"tenant_id": document.tenant_id, "doc_id": document.doc_id},
            ).one_or_none()
            if found is not None and bytes(found.content_sha256) == digest:
                return DocumentWrite(
                    found.id, self._chunk_ids(connection, document.tenant_id, found.id), "unchanged"
                )
            if found is not None:
                self._remove(connection, document.tenant_id, found.id)
            document_id, chunk_ids = self._insert(connection, document, digest)
        return DocumentWrite(
            document_id, tuple(chunk_ids), "added" if found is None else "replaced"
        )

    def forget(self, *, tenant_id: str, doc_id: str) -> bool:
        """Remove a document, its chunks, their statistics and their cached vectors (unless a
        live memory of the tenant has the same text); False if there was none."""
        check_tenant(tenant_id)
        check_doc_id(doc_id)
        with translate_database_errors(str(self.engine.url)), self.engine.begin() as connection:
            bind_tenant(connection, self.schema, tenant_id)
            lock_term_statistics(connection, self.schema, [tenant_id])
            found = execute(
                connection, self._sql("find"), {"tenant_id": tenant_id, "doc_id": doc_id}
            ).one_or_none()
            if found is None:
                return False
            keys = {"tenant_id": tenant_id, "document_id": found.id}
            chunks = execute(connection, self._sql("chunk_texts"), keys).all()
            self._remove(connection, tenant_id, found.id)
            erased, _ = erase_cached_texts(
                connection,
                self.schema,
                tenant_id,
                [chunk.content for chunk in chunks],
                [chunk.embedding_model for chunk in chunks],
            )
        self.memories.cache.forget_keys(tenant_id, erased)
        return True

    def bm25(
        self,
        query: str,
        *,
        tenant_id: str,
        limit: int = 100,
        k1: float = DEFAULT_BM25_K1,
        b: float = DEFAULT_BM25_B,
    ) -> list[tuple[int, float]]:
        """``(chunk_id, score)`` of the tenant's best chunks for ``query`` by Okapi BM25, from
        every posting of its terms (the documents source's channel prunes; this reads all)."""
        check_query(query)
        check_tenant(tenant_id)
        limit = arguments.count("limit", limit, maximum=arguments.MAX_RESULTS)
        for name, value, within in (("k1", k1, BM25_K1), ("b", b, BM25_B)):
            problem = within.problem(name, value)
            if problem is not None:
                raise ValidationError(problem, field=name)
        params = {
            "query_text": query,
            "tenant_id": tenant_id,
            "text_search_config": self.text_search_config,
            "limit": limit,
            "bm25_k1": k1,
            "bm25_b": b,
            "bm25_common_share": 1.0,  # no term is common: every posting is read
        }
        postings = document_postings(self.schema)
        query_sql = statement(
            "documents.bm25",
            weights=",\n".join(bm25_weight_ctes("doc", postings, "query_text")),
            every_posting=bm25_every_posting("doc", postings),
        )
        with translate_database_errors(str(self.engine.url)), self.engine.connect() as connection:
            bind_tenant(connection, self.schema, tenant_id)
            rows = execute(connection, query_sql, params).all()
        return [(int(row.chunk_id), float(row.bm25)) for row in rows]

    def dense(self, query: str, *, tenant_id: str, limit: int = 100) -> list[tuple[int, float]]:
        """``(chunk_id, L2 distance)`` of the tenant's chunks nearest ``query``'s embedding.

        The HNSW index is walked with ``hnsw.ef_search`` raised to ``limit`` and the iterative
        scan on, so a small tenant still gets ``limit`` chunks.
        """
        check_query(query)
        check_tenant(tenant_id)
        limit = arguments.count("limit", limit, maximum=arguments.MAX_RESULTS)
        # Embedded before the transaction (the model's first call checks its dimensions in the
        # database), so that no connection is held while the model runs.
        url = str(self.engine.url)
        with translate_database_errors(url):
            vector = self.memories.cache.question(tenant_id, query)
        with translate_database_errors(url), self.engine.begin() as connection:
            bind_tenant(connection, self.schema, tenant_id)
            # The HNSW search widened to the chunks asked for, and pgvector's iterative scan
            # (a small tenant still gets its chunks through the index), for this transaction.
            set_local(connection, "hnsw.ef_search", str(max(limit, 40)))
            if has_iterative_scan(connection):  # pgvector 0.8.0 or newer
                set_local(connection, "hnsw.iterative_scan", "relaxed_order")
            rows = execute(
                connection,
                self._sql("dense"),
                {"vector": str(vector.tolist()), "tenant_id": tenant_id, "limit": limit},
            ).all()
        return sorted(((int(r.id), float(r.distance)) for r in rows), key=lambda r: (r[1], r[0]))

    def _insert(
        self, connection: Connection, document: DocumentInput, digest: bytes
    ) -> tuple[int, list[int]]:
        tenant = document.tenant_id
        texts = [chunk.text for chunk in document.chunks]
        vectors = self._vectors(connection, tenant, document.chunks)
        counts = [
            int(count)
            for _, count in execute(
                connection,
                self._sql("term_counts"),
                {"texts": texts, "config": self.text_search_config},
            )
        ]
        now, (document_id,) = reserve_ids(connection, self.schema, "documents", 1)
        _, chunk_ids = reserve_ids(connection, self.schema, "document_chunks", len(texts))
        metadata = encode_jsonb(json.dumps(dict(document.metadata)))
        written = document.created_at or now
        copy_rows(
            connection,
            self.schema,
            "documents",
            [name for name, _ in _DOCUMENT_COLUMNS],
            [kind for _, kind in _DOCUMENT_COLUMNS],
            [(tenant, document_id, document.doc_id, document.filename, digest, metadata, written)],
        )
        model = self.memories.embedder.model_id
        blobs = encode_vectors(vectors, self.memories.vector_type)
        rows = (
            (
                tenant,
                chunk_id,
                document_id,
                index,
                chunk.text,
                chunk.section_title,
                chunk.page_start,
                chunk.page_end,
                count,
                blob,
                model,
                chunk.created_at or written,
                encode_jsonb(json.dumps(dict(chunk.metadata))),
            )
            for index, (chunk_id, chunk, count, blob) in enumerate(
                zip(chunk_ids, document.chunks, counts, blobs, strict=True)
            )
        )
        copy_rows(
            connection,
            self.schema,
            "document_chunks",
            [name for name, _ in _CHUNK_COLUMNS],
            [kind for _, kind in _CHUNK_COLUMNS],
            rows,
        )
        keys = {"tenant_id": tenant, "document_id": document_id}
        execute(connection, self._sql("postings"), {**keys, "config": self.text_search_config})
        execute(connection, self._sql("add_term_stats"), keys)
        execute(
            connection,
            self._sql("add_corpus"),
            {
                "tenant_id": tenant,
                "config": self.text_search_config,
                "chunks": len(texts),
                "terms": sum(counts),
            },
        )
        return document_id, chunk_ids

    def _vectors(
        self, connection: Connection, tenant_id: str, chunks: Sequence[ChunkInput]
    ) -> npt.NDArray[np.float32]:
        # The given embeddings (checked by validate_document), the others through the cache.
        missing = [index for index, chunk in enumerate(chunks) if chunk.embedding is None]
        vectors = np.zeros((len(chunks), self.memories.dim), dtype=np.float32)
        if missing:
            texts = [chunks[index].text for index in missing]
            vectors[missing] = self.memories.cache.embed(connection, tenant_id, texts)
        for index, chunk in enumerate(chunks):
            if chunk.embedding is not None:
                vectors[index] = np.asarray(chunk.embedding, dtype=np.float32)
        return vectors

    def _remove(self, connection: Connection, tenant_id: str, document_id: int) -> None:
        keys = {"tenant_id": tenant_id, "document_id": document_id}
        old = execute(connection, self._sql("old_terms"), keys).all()
        chunks, terms = execute(connection, self._sql("old_size"), keys).one()
        execute(
            connection,
            self._sql("take_back_term_stats"),
            {
                "tenant_id": tenant_id,
                "terms": [row[0] for row in old],
                "counts": [row[1] for row in old],
            },
        )
        execute(
            connection,
            self._sql("take_back_corpus"),
            {"tenant_id": tenant_id, "chunks": chunks, "terms": terms},
        )
        execute(connection, self._sql("delete"), keys)  # chunks and postings cascade

    def _check_config(self, connection: Connection, tenant_id: str) -> None:
        stored = execute(
            connection, self._sql("corpus_config"), {"tenant_id": tenant_id}
        ).scalar_one_or_none()
        if stored is not None and stored != self.text_search_config:
            raise ValidationError(
                f"tenant {tenant_id!r} has documents analysed with text search configuration "
                f"{stored!r}, not {self.text_search_config!r}: use {stored!r}, or forget the "
                "tenant's documents first",
                field="text_search_config",
            )

    def _chunk_ids(
        self, connection: Connection, tenant_id: str, document_id: int
    ) -> tuple[int, ...]:
        rows = execute(
            connection,
            self._sql("chunk_ids"),
            {"tenant_id": tenant_id, "document_id": document_id},
        )
        return tuple(int(row[0]) for row in rows)

    def _sql(self, name: str) -> str:
        return statement(f"documents.{name}", self.schema)
