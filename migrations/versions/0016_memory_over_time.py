"""A memory over time: duplicates collapse, corrections retire, memories expire.

* ``memories.content_key``: the SHA-256 of the text in Unicode NFC with its runs of whitespace
  made one space and its ends trimmed (:func:`text_key`, a stored generated column, so every
  writer's rows are keyed, SQL of your own included); ``retrieval.memory.text_key`` computes
  the same key in Python.
* A partial unique index over the live rows' (tenant, key, kind, thread, position): a second
  copy of a live memory (of a turn: at the same place of its thread) is refused by the
  database, which the store turns into ``INSERT ... ON CONFLICT DO UPDATE`` (one row and one
  id for concurrent writers of one text). ``distinct_copy`` marks rows kept out of it: those
  written with duplicate collapsing off, and, here, every copy but the first of a text stored
  more than once before this revision (nothing is merged or removed).
* ``seen_count`` and ``last_seen_at``: how often the memory was told, and when last.
* ``expires_at``: the end of a memory's life, set by the caller or a kind's default lifetime.
* ``retired_at`` and ``superseded_by``: when a correction retired the memory, and which memory
  did. A retired memory stays for its history and takes no part in retrieval.
* The BM25 statistics (``memory_term_stats``, ``memory_corpus``) count live rows only: the
  triggers of revisions 0010 and 0015 now take a memory's words back when it is retired.

Adding the generated column rewrites the memories table and rebuilds its indexes (as revision
0010 did: about 20 s per 100,000 memories on two cores), during which it cannot be written.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from __future__ import annotations

import importlib

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_shards = importlib.import_module("retrieval.migrations.versions.0015_statistics_on_shards")

# Every character Python's str.isspace() accepts (and str.split() splits on), as one class of
# a PostgreSQL regular expression: the SQL key and retrieval.memory.text_key agree.
WHITESPACE = (
    "[\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a"
    "\\u2028\\u2029\\u202f\\u205f\\u3000]+"
)

TEXT_KEY = """
CREATE OR REPLACE FUNCTION {schema}.text_key(content text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $function$
    SELECT sha256(convert_to(
        btrim(regexp_replace(normalize(content, NFC), '{whitespace}', ' ', 'g'), ' '), 'UTF8'))
$function$
"""

# The rows the statistics count: live ones (an expired memory counts until it is forgotten).
COUNTED = "(SELECT * FROM {rows} AS c WHERE c.retired_at IS NULL)"
# The rows of an update that change the statistics: their words, tenant or retirement changed.
CHANGED = """
    SELECT {side}.tenant_id, {side}.id, {side}.search_vector, {side}.retired_at
    FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id
    WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.tenant_id <> n.tenant_id
       OR (o.retired_at IS NULL) <> (n.retired_at IS NULL)
"""

# The live rows' key, as the store's ON CONFLICT names it (retrieval/sql/memory.sql).
LIVE_KEY = (
    "(tenant_id, content_key, kind, (coalesce(thread_id, '')), (coalesce(position, -1))) "
    "WHERE retired_at IS NULL AND NOT distinct_copy"
)
TIMES = ("expires_at", "retired_at", "last_seen_at")
EARLIEST = "0001-01-02 00:00:00+00"
LATEST = "9999-12-30 00:00:00+00"


def upgrade() -> None:
    settings = current_settings()
    schema = f'"{settings.schema}"'
    table = f"{schema}.memories"
    op.execute(TEXT_KEY.format(schema=schema, whitespace=WHITESPACE))
    op.execute(
        f"ALTER TABLE {table} "
        "ADD COLUMN seen_count integer NOT NULL DEFAULT 1, "
        "ADD COLUMN last_seen_at timestamptz, "
        "ADD COLUMN expires_at timestamptz, "
        "ADD COLUMN retired_at timestamptz, "
        "ADD COLUMN superseded_by bigint, "
        "ADD COLUMN distinct_copy boolean NOT NULL DEFAULT false"
    )
    op.execute(
        f"ALTER TABLE {table} ADD COLUMN content_key bytea "
        f"GENERATED ALWAYS AS ({schema}.text_key(content)) STORED"
    )
    for column in TIMES:  # one statement per execute
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT memories_{column}_range CHECK "
            f"({column} BETWEEN '{EARLIEST}'::timestamptz AND '{LATEST}'::timestamptz)"
        )
    op.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT memories_seen_count_positive CHECK (seen_count >= 1)"
    )
    # Copies stored before this revision: the first (by id) of each text stays in the key.
    op.execute(
        f"""UPDATE {table} AS m SET distinct_copy = true
FROM (SELECT tenant_id, id, row_number() OVER (
          PARTITION BY tenant_id, content_key, kind, coalesce(thread_id, ''),
                       coalesce(position, -1)
          ORDER BY id) AS copy
      FROM {table}) AS d
WHERE d.copy > 1 AND m.tenant_id = d.tenant_id AND m.id = d.id"""
    )
    op.execute(f"CREATE UNIQUE INDEX memories_live_key ON {table} {LIVE_KEY}")
    op.execute(
        f"CREATE INDEX memories_tenant_superseded_by_idx ON {table} (tenant_id, superseded_by) "
        "WHERE superseded_by IS NOT NULL"
    )
    op.execute(
        f"CREATE INDEX memories_tenant_expires_idx ON {table} (tenant_id, expires_at) "
        "WHERE expires_at IS NOT NULL"
    )
    for function in _shards.memory_functions(
        schema, settings.text_search_config, counted=COUNTED, changed=CHANGED, any_changed=CHANGED
    ):
        op.execute(function)


def downgrade() -> None:
    settings = current_settings()
    schema = f'"{settings.schema}"'
    table = f"{schema}.memories"
    # Retired versions would come back as live memories: they go (a downgrade loss), while
    # the statistics still leave them out.
    op.execute(f"DELETE FROM {table} WHERE retired_at IS NOT NULL")
    for function in _shards.memory_functions(schema, settings.text_search_config):
        op.execute(function)
    op.execute(f"DROP INDEX {schema}.memories_tenant_expires_idx")
    op.execute(f"DROP INDEX {schema}.memories_tenant_superseded_by_idx")
    op.execute(f"DROP INDEX {schema}.memories_live_key")
    op.execute(
        f"ALTER TABLE {table} "
        + ", ".join(f"DROP CONSTRAINT memories_{column}_range" for column in TIMES)
        + ", DROP CONSTRAINT memories_seen_count_positive, "
        "DROP COLUMN content_key, DROP COLUMN distinct_copy, DROP COLUMN superseded_by, "
        "DROP COLUMN retired_at, DROP COLUMN expires_at, DROP COLUMN last_seen_at, "
        "DROP COLUMN seen_count"
    )
    op.execute(f"DROP FUNCTION {schema}.text_key(text)")
