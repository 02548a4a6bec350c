"""BM25 statistics of memories: postings, document frequencies and corpus size per tenant.

The same three statistics as the documents' (revision 0004), for memories: ``memory_terms``
(term, memory, term frequency, with the memory's length and kind so that a query reads the
postings index alone, mode filter included), ``memory_term_stats`` (how many memories hold each
term) and ``memory_corpus`` (memories and total length per tenant, and the text search
configuration the lexemes were made with). The write path fills them when the lexical index of
memories is on (``RETRIEVAL_MEMORY_BM25``); ``retrieval index-memories`` fills them for memories
stored before.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE {schema}.memory_terms (
    tenant_id text NOT NULL,
    term text NOT NULL,
    memory_id bigint NOT NULL,
    term_frequency integer NOT NULL,
    memory_length integer NOT NULL,
    kind text NOT NULL,
    CONSTRAINT memory_terms_pkey PRIMARY KEY (tenant_id, term, memory_id)
        INCLUDE (term_frequency, memory_length, kind),
    CONSTRAINT memory_terms_memory_fkey FOREIGN KEY (tenant_id, memory_id)
        REFERENCES {schema}.memories (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX memory_terms_tenant_memory_idx ON {schema}.memory_terms (tenant_id, memory_id);

CREATE TABLE {schema}.memory_term_stats (
    tenant_id text NOT NULL,
    term text NOT NULL,
    document_frequency integer NOT NULL,
    CONSTRAINT memory_term_stats_pkey PRIMARY KEY (tenant_id, term),
    CONSTRAINT memory_term_stats_positive CHECK (document_frequency > 0)
);

CREATE TABLE {schema}.memory_corpus (
    tenant_id text NOT NULL,
    text_search_config text NOT NULL,
    memories bigint NOT NULL,
    total_terms bigint NOT NULL,
    CONSTRAINT memory_corpus_pkey PRIMARY KEY (tenant_id),
    CONSTRAINT memory_corpus_nonnegative CHECK (memories >= 0 AND total_terms >= 0)
)
"""

DOWNGRADE = """
DROP TABLE {schema}.memory_corpus;
DROP TABLE {schema}.memory_term_stats;
DROP TABLE {schema}.memory_terms
"""


def upgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for statement in UPGRADE.format(schema=schema).split(";"):
        if statement.strip():
            op.execute(statement)


def downgrade() -> None:
    schema = f'"{current_settings().schema}"'
    for statement in DOWNGRADE.format(schema=schema).split(";"):
        if statement.strip():
            op.execute(statement)
