"""Initial schema: extensions, memories, decisions, tool calls, embedding cache, their indexes.

Revision ID: 0001
Revises:
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from retrieval.errors import ExtensionError
from retrieval.migrate import current_settings

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

REQUIRED_EXTENSIONS = {
    "vector": "pgvector (https://github.com/pgvector/pgvector; Debian/Ubuntu package "
    "postgresql-NN-pgvector, Docker image pgvector/pgvector)",
    "pg_trgm": "PostgreSQL's contrib modules (Debian/Ubuntu: postgresql-contrib; "
    "most managed services include it)",
}

# Identifiers cannot be bound parameters; {schema} is a validated plain identifier
# (retrieval.config.DatabaseConfig) and is quoted here.
UPGRADE = """
CREATE TABLE {schema}.memories (
    tenant_id text NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    content text NOT NULL,
    kind text NOT NULL DEFAULT 'fact',
    metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    importance double precision,
    access_count integer NOT NULL DEFAULT 0,
    last_accessed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    embedding vector({dim}) NOT NULL,
    embedding_model text NOT NULL,
    CONSTRAINT memories_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT memories_importance_range
        CHECK (importance IS NULL OR (importance >= 0 AND importance <= 1)),
    CONSTRAINT memories_access_count_nonnegative CHECK (access_count >= 0)
);
CREATE INDEX memories_tenant_created_idx ON {schema}.memories (tenant_id, created_at DESC);
CREATE INDEX memories_tenant_kind_idx ON {schema}.memories (tenant_id, kind);
CREATE INDEX memories_embedding_hnsw_idx ON {schema}.memories
    USING hnsw (embedding vector_l2_ops);

CREATE TABLE {schema}.decisions (
    tenant_id text NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    task_id text,
    action_type text NOT NULL,
    content text NOT NULL,
    status text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT decisions_pkey PRIMARY KEY (tenant_id, id)
);
CREATE INDEX decisions_tenant_created_idx ON {schema}.decisions (tenant_id, created_at DESC);
CREATE INDEX decisions_tenant_task_idx ON {schema}.decisions (tenant_id, task_id);
CREATE INDEX decisions_content_trgm_idx ON {schema}.decisions USING gin (content gin_trgm_ops);

CREATE TABLE {schema}.tool_calls (
    tenant_id text NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    decision_id bigint,
    tool_name text NOT NULL,
    params jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    result text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tool_calls_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT tool_calls_decision_fkey FOREIGN KEY (tenant_id, decision_id)
        REFERENCES {schema}.decisions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX tool_calls_tenant_created_idx ON {schema}.tool_calls (tenant_id, created_at DESC);
CREATE INDEX tool_calls_tenant_decision_idx ON {schema}.tool_calls (tenant_id, decision_id);
CREATE INDEX tool_calls_tenant_tool_name_idx ON {schema}.tool_calls (tenant_id, tool_name);
CREATE INDEX tool_calls_tool_name_trgm_idx ON {schema}.tool_calls
    USING gin (tool_name gin_trgm_ops);
CREATE INDEX tool_calls_params_trgm_idx ON {schema}.tool_calls
    USING gin ((params::text) gin_trgm_ops);

CREATE TABLE {schema}.embedding_cache (
    tenant_id text NOT NULL,
    key bytea NOT NULL,
    model_id text NOT NULL,
    embedding vector({dim}) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT embedding_cache_pkey PRIMARY KEY (tenant_id, key),
    CONSTRAINT embedding_cache_key_is_sha256 CHECK (octet_length(key) = 32)
);
"""

DOWNGRADE = """
DROP TABLE {schema}.embedding_cache;
DROP TABLE {schema}.tool_calls;
DROP TABLE {schema}.decisions;
DROP TABLE {schema}.memories;
"""


def upgrade() -> None:
    settings = current_settings()
    for extension, package in REQUIRED_EXTENSIONS.items():
        _ensure_extension(extension, package)
    for statement in _statements(UPGRADE, settings.schema, settings.embedding_dim):
        op.execute(statement)


def downgrade() -> None:
    # Extensions stay: other schemas of the database may use them.
    settings = current_settings()
    for statement in _statements(DOWNGRADE, settings.schema, settings.embedding_dim):
        op.execute(statement)


def _statements(script: str, schema: str, dim: int) -> list[str]:
    rendered = script.format(schema=f'"{schema}"', dim=int(dim))
    return [statement.strip() for statement in rendered.split(";") if statement.strip()]


def _ensure_extension(name: str, package: str) -> None:
    if op.get_context().as_sql:  # offline (--sql): no database to ask
        op.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
        return
    bind: Connection = op.get_bind()
    if bind.execute(text("SELECT 1 FROM pg_extension WHERE extname = :n"), {"n": name}).scalar():
        return
    version = bind.execute(text("SHOW server_version")).scalar()
    database = bind.execute(text("SELECT current_database()")).scalar()
    role = bind.execute(text("SELECT current_user")).scalar()
    available = bind.execute(
        text("SELECT 1 FROM pg_available_extensions WHERE name = :n"), {"n": name}
    ).scalar()
    if not available:
        raise ExtensionError(
            f"PostgreSQL {version} has no extension {name!r} installed, and retrieval needs it. "
            f"Install {package} on the database server, then run the migration again."
        )
    try:
        with bind.begin_nested():
            bind.execute(text(f"CREATE EXTENSION IF NOT EXISTS {name}"))
    except DBAPIError as error:
        raise ExtensionError(
            f"Extension {name!r} could not be created in database {database!r} on PostgreSQL "
            f"{version} as role {role!r}: {str(error.orig).strip().splitlines()[0]}. Ask a "
            f"superuser to run `CREATE EXTENSION {name};` in {database!r} (or to grant the "
            "right to create it), then run the migration again."
        ) from error
