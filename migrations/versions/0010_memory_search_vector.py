"""Every memory searchable by its words, and placed in its conversation; chunks carry metadata.

* ``memories.search_vector``: the lexemes of the memory's text (``to_tsvector`` in the text
  search configuration of the migration, ``english`` unless ``RETRIEVAL_TEXT_SEARCH_CONFIG``
  says otherwise), a stored generated column, so that every memory is indexed whoever writes
  it, and a GIN index on ``(tenant_id, search_vector)`` (btree_gin), which finds a tenant's
  memories holding a word. This replaces revision 0005's postings table ``memory_terms``,
  whose B-tree entries (one per word of every memory) cut bulk ingest to a tenth: a GIN
  index buffers new entries and merges them in sorted runs.
* ``memory_term_stats`` (how many of a tenant's memories hold each lexeme) and
  ``memory_corpus`` (how many memories have lexemes, their total number of distinct lexemes,
  and the text search configuration) are kept by statement-level triggers (transition tables:
  a ``COPY`` of many rows costs one pass) on every insert, delete, update and truncate of
  memories, after a transaction-scoped advisory lock per tenant (the documents' statistics lock),
  so that concurrent writers of one tenant queue instead of deadlocking. They are rebuilt here
  from the stored memories. A memory's length, for BM25, is its number of distinct lexemes.
* ``memories.thread_id`` and ``memories.position``: the conversation (or session) a memory
  belongs to and its place in it, indexed by tenant, thread and position, so that a hit's
  neighbouring turns are one index range away.
* ``document_chunks.metadata``: a JSON object per chunk, like the documents'.

Adding the generated column rewrites the memories table and rebuilds its indexes (the HNSW
graph too: about 20 s per 100,000 memories on two cores), during which it cannot be written.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The memories that feed the term statistics: one in SAMPLE, chosen by a hash of the id (so
# that no way of interleaving tenants' ids can leave one out). The read statement
# (retrieval.search.sources.semantic.statement) counts the rarer terms exactly; the sample
# estimates the common ones.
SAMPLE = 8
SAMPLED = f"(hashint8({{alias}}.id) & {SAMPLE - 1}) = 0"

# The distinct lexemes of each sampled row of relation {rows} that has any.
LEXEMES = """
    SELECT r.tenant_id, u.lexeme
    FROM {rows} AS r, unnest(tsvector_to_array(r.search_vector)) AS u(lexeme)
    WHERE r.search_vector <> ''::tsvector AND {sampled}
"""

# Each tenant's rows of relation {rows} that hold lexemes, their distinct lexemes, and how
# many of them are sampled.
SIZES = """
    SELECT r.tenant_id, count(*) AS memories, sum(length(r.search_vector)) AS total_terms,
           count(*) FILTER (WHERE {sampled}) AS sampled
    FROM {rows} AS r
    WHERE r.search_vector <> ''::tsvector
    GROUP BY r.tenant_id
"""

# Adds the statistics of the rows of {rows}; terms and tenants in key order, so that
# concurrent writers lock the same rows in the same order.
ADD = """
    WITH terms AS (
        INSERT INTO {schema}.memory_term_stats AS t (tenant_id, term, document_frequency)
        SELECT tenant_id, lexeme, count(*) FROM ({lexemes}) AS l
        GROUP BY tenant_id, lexeme ORDER BY tenant_id, lexeme
        ON CONFLICT (tenant_id, term)
        DO UPDATE SET document_frequency = t.document_frequency + excluded.document_frequency
    )
    INSERT INTO {schema}.memory_corpus AS c
        (tenant_id, text_search_config, memories, total_terms, sampled_memories)
    SELECT tenant_id, {config}, memories, total_terms, sampled FROM ({sizes}) AS z
    ORDER BY tenant_id
    ON CONFLICT (tenant_id)
    DO UPDATE SET memories = c.memories + excluded.memories,
                  total_terms = c.total_terms + excluded.total_terms,
                  sampled_memories = c.sampled_memories + excluded.sampled_memories
"""

# Takes back the statistics of the rows of {rows}; a term or tenant left at zero goes (the
# rows updated and the rows deleted are distinct: one statement may not touch a row twice).
REMOVE = """
    WITH terms AS MATERIALIZED (
        SELECT t.tenant_id, t.term, t.document_frequency - r.n AS document_frequency
        FROM (SELECT tenant_id, lexeme, count(*) AS n FROM ({lexemes}) AS l
              GROUP BY tenant_id, lexeme) AS r
        JOIN {schema}.memory_term_stats AS t ON t.tenant_id = r.tenant_id AND t.term = r.lexeme
    ),
    lowered_terms AS (
        UPDATE {schema}.memory_term_stats AS t SET document_frequency = u.document_frequency
        FROM terms AS u
        WHERE u.document_frequency > 0 AND t.tenant_id = u.tenant_id AND t.term = u.term
    ),
    unused_terms AS (
        DELETE FROM {schema}.memory_term_stats AS t
        USING terms AS u
        WHERE u.document_frequency <= 0 AND t.tenant_id = u.tenant_id AND t.term = u.term
    ),
    corpus AS MATERIALIZED (
        SELECT c.tenant_id, c.memories - z.memories AS memories,
               c.total_terms - z.total_terms AS total_terms,
               c.sampled_memories - z.sampled AS sampled
        FROM ({sizes}) AS z
        JOIN {schema}.memory_corpus AS c ON c.tenant_id = z.tenant_id
    ),
    lowered_corpus AS (
        UPDATE {schema}.memory_corpus AS c
        SET memories = u.memories, total_terms = u.total_terms, sampled_memories = u.sampled
        FROM corpus AS u
        WHERE u.memories > 0 AND c.tenant_id = u.tenant_id
    )
    DELETE FROM {schema}.memory_corpus AS c
    USING corpus AS u
    WHERE u.memories <= 0 AND c.tenant_id = u.tenant_id
"""

# Rows of an update whose words (or tenant) changed; an update of access counts has none.
CHANGED = """
    SELECT {side}.tenant_id, {side}.id, {side}.search_vector
    FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id
    WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.tenant_id <> n.tenant_id
"""

# The statistics lock of retrieval.db.statistics_lock ("RTVS"), per tenant in name order.
LOCK = """PERFORM pg_advisory_xact_lock(1381258835, hashtext('{schema_name}:' || t.tenant_id))
    FROM (SELECT DISTINCT tenant_id FROM ({tenants}) AS r ORDER BY 1) AS t;"""

FUNCTION = """
CREATE FUNCTION {schema}.memory_words_{name}() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    {body}
    RETURN NULL;
END
$body$;
"""

TRIGGERS = """
CREATE TRIGGER memories_words_added AFTER INSERT ON {schema}.memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.memory_words_added();
CREATE TRIGGER memories_words_removed AFTER DELETE ON {schema}.memories
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.memory_words_removed();
CREATE TRIGGER memories_words_changed AFTER UPDATE ON {schema}.memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.memory_words_changed();
CREATE TRIGGER memories_words_truncated AFTER TRUNCATE ON {schema}.memories
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.memory_words_truncated();
"""

EVENTS = ("added", "removed", "changed", "truncated")


def _dynamic(statement: str) -> str:
    # Planned on every call: a plan cached for a large batch is slow for single rows.
    return f"EXECUTE $statement${statement}$statement$;"


def upgrade_sql(schema: str, text_search_config: str) -> str:
    """The whole upgrade for ``schema`` (quoted), with the lexemes of ``text_search_config``."""
    name = schema.strip('"')
    config = f"'{text_search_config}'"

    def pieces(rows: str) -> dict[str, str]:
        sampled = SAMPLED.format(alias="r")
        return {
            "schema": schema,
            "lexemes": LEXEMES.format(rows=rows, sampled=sampled),
            "sizes": SIZES.format(rows=rows, sampled=sampled),
        }

    def add(rows: str) -> str:
        return ADD.format(config=config, **pieces(rows))

    def remove(rows: str) -> str:
        return REMOVE.format(**pieces(rows))

    def lock(tenants: str) -> str:
        return LOCK.format(schema_name=name, tenants=tenants)

    changed_old = f"({CHANGED.format(side='o')})"
    changed_new = f"({CHANGED.format(side='n')})"
    both = "SELECT tenant_id FROM old_rows UNION SELECT tenant_id FROM new_rows"

    def on(tenants: str, *statements: str) -> str:
        return "\n    ".join([lock(tenants), *(_dynamic(statement) for statement in statements)])

    bodies = {
        "added": on("SELECT tenant_id FROM new_rows", add("new_rows")),
        "removed": on("SELECT tenant_id FROM old_rows", remove("old_rows")),
        "changed": f"IF NOT EXISTS {changed_new} THEN\n        RETURN NULL;\n    END IF;\n    "
        + on(both, remove(changed_old), add(changed_new)),
        "truncated": f"TRUNCATE {schema}.memory_term_stats, {schema}.memory_corpus;",
    }
    parts = [
        f"DROP TABLE {schema}.memory_terms;",
        f"TRUNCATE {schema}.memory_term_stats, {schema}.memory_corpus;",
        f"ALTER TABLE {schema}.memory_corpus ADD COLUMN sampled_memories bigint NOT NULL;",
        f"ALTER TABLE {schema}.memories "
        "ADD COLUMN thread_id text, "
        "ADD COLUMN position integer, "
        "ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
        f"(to_tsvector({config}::regconfig, content)) STORED, "
        "ADD CONSTRAINT memories_position_nonnegative CHECK (position >= 0);",
        f"CREATE INDEX memories_search_vector_idx ON {schema}.memories "
        "USING gin (tenant_id, search_vector);",
        f"CREATE INDEX memories_tenant_thread_idx ON {schema}.memories "
        "(tenant_id, thread_id, position) WHERE thread_id IS NOT NULL;",
        f"ALTER TABLE {schema}.document_chunks "
        "ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb;",
    ]
    parts += [FUNCTION.format(schema=schema, name=event, body=bodies[event]) for event in EVENTS]
    parts.append(TRIGGERS.format(schema=schema))
    parts.append(add(f"{schema}.memories") + ";")
    parts.append(f"ANALYZE {schema}.memory_term_stats;")
    return "\n".join(parts)


def downgrade_sql(schema: str) -> str:
    """The whole downgrade for ``schema`` (quoted): revision 0005's empty postings table."""
    parts = [f"DROP TRIGGER memories_words_{event} ON {schema}.memories;" for event in EVENTS]
    parts += [f"DROP FUNCTION {schema}.memory_words_{event}();" for event in EVENTS]
    parts += [
        f"ALTER TABLE {schema}.document_chunks DROP COLUMN metadata;",
        f"DROP INDEX {schema}.memories_tenant_thread_idx;",
        f"DROP INDEX {schema}.memories_search_vector_idx;",
        f"ALTER TABLE {schema}.memories DROP CONSTRAINT memories_position_nonnegative, "
        "DROP COLUMN search_vector, DROP COLUMN position, DROP COLUMN thread_id;",
        f"TRUNCATE {schema}.memory_term_stats, {schema}.memory_corpus;",
        f"ALTER TABLE {schema}.memory_corpus DROP COLUMN sampled_memories;",
        f"""CREATE TABLE {schema}.memory_terms (
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
);""",
        f"CREATE INDEX memory_terms_tenant_memory_idx ON {schema}.memory_terms "
        "(tenant_id, memory_id);",
    ]
    return "\n".join(parts)


def upgrade() -> None:
    settings = current_settings()
    op.execute(upgrade_sql(f'"{settings.schema}"', settings.text_search_config))


def downgrade() -> None:
    op.execute(downgrade_sql(f'"{current_settings().schema}"'))
