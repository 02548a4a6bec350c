"""The tables, as SQLAlchemy Core metadata: what the migrations create and Alembic checks against.

Every table carries ``tenant_id``, and every primary key and unique constraint starts with it, so
the schema can be distributed by tenant (Citus) without change. Indexes with operator classes
(HNSW, ``gin_trgm_ops``) are declared here and written by hand in the migrations.
"""

from __future__ import annotations

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR

from retrieval.db.queries import quote_schema
from retrieval.db.table_parts import (
    SHA256_BYTES,
    Embedding,
    created_at,
    gin,
    identity,
    tenant,
    term_statistics,
)
from retrieval.db.vector_type import VectorType

MEMORIES = "memories"
DECISIONS = "decisions"
TOOL_CALLS = "tool_calls"
EMBEDDING_CACHE = "embedding_cache"
MEMORY_ENTITIES = "memory_entities"
TABLES = (MEMORIES, MEMORY_ENTITIES, DECISIONS, TOOL_CALLS, EMBEDDING_CACHE)
DOCUMENTS = "documents"
DOCUMENT_CHUNKS = "document_chunks"
DOCUMENT_TERMS = "document_terms"
DOCUMENT_TERM_STATS = "document_term_stats"
DOCUMENT_CORPUS = "document_corpus"
DOCUMENT_TABLES = (DOCUMENTS, DOCUMENT_CHUNKS, DOCUMENT_TERMS, DOCUMENT_TERM_STATS, DOCUMENT_CORPUS)
MEMORY_TERM_STATS = "memory_term_stats"
MEMORY_CORPUS = "memory_corpus"
MEMORY_TERM_TABLES = (MEMORY_TERM_STATS, MEMORY_CORPUS)
EPISODIC_VOCABULARY = "episodic_vocabulary"
EPISODIC_POSTINGS = "episodic_postings"
EPISODIC_WORD_TABLES = (EPISODIC_VOCABULARY, EPISODIC_POSTINGS)
INGEST_KEYS = "ingest_keys"
ALL_TABLES = TABLES + DOCUMENT_TABLES + MEMORY_TERM_TABLES + EPISODIC_WORD_TABLES + (INGEST_KEYS,)


def build_metadata(
    schema: str,
    embedding_dim: int,
    text_search_config: str = "english",
    vector_type: VectorType = "vector",
) -> MetaData:
    """Return the metadata of every table in ``schema`` with ``vector(embedding_dim)`` columns
    (memories' and chunks' of ``vector_type``; the embedding cache keeps the model's own
    ``vector``), the memories' lexemes made with ``text_search_config``."""
    metadata = MetaData(schema=schema)
    _memories(metadata, Embedding(vector_type, embedding_dim), text_search_config)
    _memory_entities(metadata)
    _decisions(metadata)
    _tool_calls(metadata)
    _embedding_cache(metadata, embedding_dim)
    _documents(metadata)
    _document_chunks(metadata, Embedding(vector_type, embedding_dim))
    _document_terms(metadata)
    # Memories: the document frequencies count a sample of the memories (one in eight, by a
    # hash of the id; revision 0010), and the corpus how many are sampled.
    term_statistics(
        metadata,
        MEMORY_TERM_STATS,
        MEMORY_CORPUS,
        "memories",
        Column("sampled_memories", BigInteger, nullable=False),
    )
    _episodic_words(metadata)
    _ingest_keys(metadata)
    return metadata


# The times a row may hold (revision 0014): within the years 1 to 9999 with a day to spare at
# each end, so that every session time zone reads them back as a Python datetime; never
# infinity. retrieval.arguments reads the same range from here.
EARLIEST_TIME = "0001-01-02 00:00:00+00"
LATEST_TIME = "9999-12-30 00:00:00+00"
# The time columns the reads compute on, by table.
TIME_COLUMNS = {
    MEMORIES: ("created_at", "last_accessed_at", "expires_at", "retired_at", "last_seen_at"),
    DECISIONS: ("created_at",),
    TOOL_CALLS: ("created_at",),
    DOCUMENTS: ("created_at",),
    DOCUMENT_CHUNKS: ("created_at",),
}


def time_ranges(table: str) -> list[CheckConstraint]:
    return [
        CheckConstraint(
            f"{column} BETWEEN '{EARLIEST_TIME}'::timestamptz AND '{LATEST_TIME}'::timestamptz",
            name=f"{table}_{column}_range",
        )
        for column in TIME_COLUMNS[table]
    ]


def _memories(metadata: MetaData, embedding: Embedding, text_search_config: str) -> Table:
    return Table(
        MEMORIES,
        metadata,
        tenant(),
        identity(),
        Column("content", Text, nullable=False),
        Column("kind", Text, nullable=False, server_default=text("'fact'")),
        Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        Column("importance", Float(precision=53), nullable=True),
        Column("access_count", Integer, nullable=False, server_default=text("0")),
        Column("last_accessed_at", DateTime(timezone=True), nullable=True),
        created_at(),
        embedding.column(),
        Column("embedding_model", Text, nullable=False),
        # The conversation (or session) of a memory and its place in it (revision 0010).
        Column("thread_id", Text, nullable=True),
        Column("position", Integer, nullable=True),
        # The lexemes of the text, for the BM25 channel (revision 0010); its statistics are
        # kept in memory_term_stats and memory_corpus by triggers.
        Column(
            "search_vector",
            TSVECTOR,
            Computed(f"to_tsvector('{text_search_config}'::regconfig, content)", persisted=True),
        ),
        # A memory over time (revision 0016): how often it was told and when last; when it
        # expires; when a correction retired it and which memory did; the key of its text
        # (retrieval.memory.text_key), unique among the live rows that are not distinct copies.
        Column("seen_count", Integer, nullable=False, server_default=text("1")),
        Column("last_seen_at", DateTime(timezone=True), nullable=True),
        Column("expires_at", DateTime(timezone=True), nullable=True),
        Column("retired_at", DateTime(timezone=True), nullable=True),
        Column("superseded_by", BigInteger, nullable=True),
        Column("distinct_copy", Boolean, nullable=False, server_default=text("false")),
        Column(
            "content_key",
            LargeBinary,
            Computed(
                f"{quote_schema(metadata.schema or 'public')}.text_key(content)", persisted=True
            ),
        ),
        # Its scope below the tenant, a path of names (revision 0018; {}: the tenant's top).
        Column("namespace", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
        # A name for it within its namespace (revision 0019): a new memory under a live key
        # supersedes the memory that holds it.
        Column("key", Text, nullable=True),
        PrimaryKeyConstraint("tenant_id", "id", name="memories_pkey"),
        *time_ranges(MEMORIES),
        CheckConstraint(
            "coalesce(array_ndims(namespace), 1) = 1 AND array_position(namespace, NULL) IS NULL "
            "AND array_position(namespace, '') IS NULL",
            name="memories_namespace_names",
        ),
        CheckConstraint("key <> ''", name="memories_key_named"),
        CheckConstraint("seen_count >= 1", name="memories_seen_count_positive"),
        Index(
            "memories_live_key",
            "tenant_id",
            "content_key",
            "kind",
            text("(coalesce(thread_id, ''))"),
            text("(coalesce(position, -1))"),
            "namespace",
            unique=True,
            postgresql_where=text("retired_at IS NULL AND NOT distinct_copy"),
        ),
        Index(
            "memories_tenant_superseded_by_idx",
            "tenant_id",
            "superseded_by",
            postgresql_where=text("superseded_by IS NOT NULL"),
        ),
        Index(
            "memories_tenant_expires_idx",
            "tenant_id",
            "expires_at",
            postgresql_where=text("expires_at IS NOT NULL"),
        ),
        CheckConstraint(
            "importance IS NULL OR (importance >= 0 AND importance <= 1)",
            name="memories_importance_range",
        ),
        CheckConstraint("access_count >= 0", name="memories_access_count_nonnegative"),
        CheckConstraint("position >= 0", name="memories_position_nonnegative"),
        Index("memories_tenant_created_id_idx", "tenant_id", "created_at", "id"),
        Index("memories_tenant_kind_idx", "tenant_id", "kind"),
        Index(
            "memories_tenant_thread_idx",
            "tenant_id",
            "thread_id",
            "position",
            postgresql_where=text("thread_id IS NOT NULL"),
        ),
        Index("memories_search_vector_idx", "tenant_id", "search_vector", postgresql_using="gin"),
        # A metadata filter's containment (revision 0017): {"user": "u1"} found by the index.
        gin("memories_metadata_idx", "tenant_id", "metadata", ops="jsonb_path_ops"),
        # A namespace prefix's rows: those whose names contain its names (revision 0018).
        Index("memories_namespace_idx", "tenant_id", "namespace", postgresql_using="gin"),
        Index(
            "memories_tenant_key_idx",
            "tenant_id",
            "key",
            "namespace",
            postgresql_where=text("key IS NOT NULL"),
        ),
        embedding.index("memories_embedding_hnsw_idx"),
    )


def _memory_entities(metadata: MetaData) -> Table:
    return Table(
        MEMORY_ENTITIES,
        metadata,
        tenant(),
        Column("memory_id", BigInteger, nullable=False),
        Column("entity_id", Text, nullable=False),
        PrimaryKeyConstraint("tenant_id", "memory_id", "entity_id", name="memory_entities_pkey"),
        ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            [f"{metadata.schema}.{MEMORIES}.tenant_id", f"{metadata.schema}.{MEMORIES}.id"],
            name="memory_entities_memory_fkey",
            ondelete="CASCADE",
        ),
        Index("memory_entities_tenant_entity_idx", "tenant_id", "entity_id"),
    )


def _decisions(metadata: MetaData) -> Table:
    return Table(
        DECISIONS,
        metadata,
        tenant(),
        identity(),
        Column("task_id", Text, nullable=True),
        Column("action_type", Text, nullable=False),
        Column("content", Text, nullable=False),
        Column("status", Text, nullable=False),
        created_at(),
        # What the episodic source's keywords are matched against (revision 0006); its
        # tokens are indexed in episodic_vocabulary / episodic_postings (revision 0007).
        Column("search_text", Text, Computed("lower(content)", persisted=True)),
        PrimaryKeyConstraint("tenant_id", "id", name="decisions_pkey"),
        *time_ranges(DECISIONS),
        Index("decisions_tenant_created_idx", "tenant_id", text("created_at DESC")),
        Index("decisions_tenant_task_idx", "tenant_id", "task_id"),
    )


def _tool_calls(metadata: MetaData) -> Table:
    table = Table(
        TOOL_CALLS,
        metadata,
        tenant(),
        identity(),
        Column("decision_id", BigInteger, nullable=True),
        Column("tool_name", Text, nullable=False),
        Column("params", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        Column("result", Text, nullable=True),
        created_at(),
        # The name and the parameters, lower-cased, for the episodic keywords (revision 0006),
        # tokenized into the episodic word index by triggers (revision 0007).
        Column(
            "search_text",
            Text,
            Computed("lower(tool_name) || E'\\n' || lower(params::text)", persisted=True),
        ),
        PrimaryKeyConstraint("tenant_id", "id", name="tool_calls_pkey"),
        *time_ranges(TOOL_CALLS),
        ForeignKeyConstraint(
            ["tenant_id", "decision_id"],
            [f"{metadata.schema}.{DECISIONS}.tenant_id", f"{metadata.schema}.{DECISIONS}.id"],
            name="tool_calls_decision_fkey",
            ondelete="CASCADE",
        ),
        Index("tool_calls_tenant_created_idx", "tenant_id", text("created_at DESC")),
        Index("tool_calls_tenant_decision_idx", "tenant_id", "decision_id"),
        Index("tool_calls_tenant_tool_name_idx", "tenant_id", "tool_name"),
    )
    return table


def _embedding_cache(metadata: MetaData, dim: int) -> Table:
    return Table(
        EMBEDDING_CACHE,
        metadata,
        tenant(),
        Column("key", LargeBinary, nullable=False),
        Column("model_id", Text, nullable=False),
        Column("embedding", Vector(dim), nullable=False),
        created_at(),
        PrimaryKeyConstraint("tenant_id", "key", name="embedding_cache_pkey"),
        CheckConstraint(
            f"octet_length(key) = {SHA256_BYTES}", name="embedding_cache_key_is_sha256"
        ),
    )


def _ingest_keys(metadata: MetaData) -> Table:
    # The key a file gave each record it stored (``id`` in a JSONL line): a re-run of the same
    # file skips the records whose keys are here. The row's id lets a later line's
    # decision_ref name a decision stored by an earlier run. A forgotten row keeps its key (the
    # record was ingested once); forgetting a whole tenant drops its keys.
    return Table(
        INGEST_KEYS,
        metadata,
        tenant(),
        Column("key", Text, nullable=False),
        Column("item", Text, nullable=False),
        Column("row_id", BigInteger, nullable=False),
        created_at(),
        PrimaryKeyConstraint("tenant_id", "key", name="ingest_keys_pkey"),
        CheckConstraint(
            "item IN ('memory', 'decision', 'tool_call')", name="ingest_keys_item_known"
        ),
    )


def _documents(metadata: MetaData) -> Table:
    return Table(
        DOCUMENTS,
        metadata,
        tenant(),
        identity(),
        Column("doc_id", Text, nullable=False),
        Column("filename", Text, nullable=True),
        Column("content_sha256", LargeBinary, nullable=False),
        Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        created_at(),
        PrimaryKeyConstraint("tenant_id", "id", name="documents_pkey"),
        *time_ranges(DOCUMENTS),
        UniqueConstraint("tenant_id", "doc_id", name="documents_tenant_doc_id_key"),
        CheckConstraint(f"octet_length(content_sha256) = {SHA256_BYTES}", name="documents_sha256"),
    )


def _document_chunks(metadata: MetaData, embedding: Embedding) -> Table:
    return Table(
        DOCUMENT_CHUNKS,
        metadata,
        tenant(),
        identity(),
        Column("document_id", BigInteger, nullable=False),
        Column("chunk_index", Integer, nullable=False),
        Column("content", Text, nullable=False),
        Column("section_title", Text, nullable=True),
        Column("page_start", Integer, nullable=True),
        Column("page_end", Integer, nullable=True),
        Column("term_count", Integer, nullable=False),
        embedding.column(),
        Column("embedding_model", Text, nullable=False),
        created_at(),
        Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        PrimaryKeyConstraint("tenant_id", "id", name="document_chunks_pkey"),
        *time_ranges(DOCUMENT_CHUNKS),
        UniqueConstraint(
            "tenant_id", "document_id", "chunk_index", name="document_chunks_position_key"
        ),
        ForeignKeyConstraint(
            ["tenant_id", "document_id"],
            [f"{metadata.schema}.{DOCUMENTS}.tenant_id", f"{metadata.schema}.{DOCUMENTS}.id"],
            name="document_chunks_document_fkey",
            ondelete="CASCADE",
        ),
        CheckConstraint(
            "page_start IS NULL OR page_end >= page_start", name="document_chunks_pages"
        ),
        embedding.index("document_chunks_embedding_hnsw_idx"),
    )


def _document_terms(metadata: MetaData) -> None:
    chunks = f"{metadata.schema}.{DOCUMENT_CHUNKS}"
    Table(
        DOCUMENT_TERMS,
        metadata,
        tenant(),
        Column("term", Text, nullable=False),
        Column("chunk_id", BigInteger, nullable=False),
        Column("term_frequency", Integer, nullable=False),
        Column("chunk_length", Integer, nullable=False),
        PrimaryKeyConstraint(
            "tenant_id",
            "term",
            "chunk_id",
            name="document_terms_pkey",
            postgresql_include=["term_frequency", "chunk_length"],
        ),
        ForeignKeyConstraint(
            ["tenant_id", "chunk_id"],
            [f"{chunks}.tenant_id", f"{chunks}.id"],
            name="document_terms_chunk_fkey",
            ondelete="CASCADE",
        ),
        Index("document_terms_tenant_chunk_idx", "tenant_id", "chunk_id"),
    )
    term_statistics(metadata, DOCUMENT_TERM_STATS, DOCUMENT_CORPUS, "chunks")


def _episodic_words(metadata: MetaData) -> None:
    # The episodic source's word index (revision 0007, kept by triggers on decisions and tool
    # calls): each tenant's distinct tokens of search_text, keyed by their SHA-256, with how
    # many rows hold them; and a posting per (token, row), in time order per token.
    Table(
        EPISODIC_VOCABULARY,
        metadata,
        tenant(),
        identity(),
        Column("digest", LargeBinary, nullable=False),
        Column("token", Text, nullable=False),
        Column("rows", BigInteger, nullable=False),
        PrimaryKeyConstraint("tenant_id", "id", name="episodic_vocabulary_pkey"),
        UniqueConstraint("tenant_id", "digest", name="episodic_vocabulary_digest_key"),
        gin("episodic_vocabulary_token_trgm_idx", "token", ops="gin_trgm_ops"),
        # a tenant's own tokens, for tenants among many (btree_gin, revision 0009)
        gin("episodic_vocabulary_tenant_token_trgm_idx", "tenant_id", "token", ops="gin_trgm_ops"),
    )
    Table(
        EPISODIC_POSTINGS,
        metadata,
        tenant(),
        Column("token_id", BigInteger, nullable=False),
        Column("created_at", DateTime(timezone=True), nullable=False),
        Column("item", SmallInteger, nullable=False),  # 1 decision, 2 tool call
        Column("row_id", BigInteger, nullable=False),
        PrimaryKeyConstraint(
            "tenant_id", "token_id", "created_at", "item", "row_id", name="episodic_postings_pkey"
        ),
    )
