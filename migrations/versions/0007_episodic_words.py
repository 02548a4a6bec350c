"""A word index for the episodic source: a vocabulary per tenant and postings, kept by triggers.

The episodic source matches each query keyword as ``ILIKE '%keyword%'`` on a decision's content
and on a tool call's name and parameters (since revision 0006: ``LIKE`` on the lower-cased
``search_text``). Through a trigram index every candidate row is re-checked, for every keyword:
thousands of rows per query for common words. This revision indexes the words instead, without
changing a single match:

* a keyword is a run of word characters (``\\w+``, lower-cased); so it is a substring of a text
  exactly when it is a substring of one of the text's *tokens*, the pieces of ``search_text``
  between runs of ASCII characters that are not letters, digits or ``_`` (no keyword contains
  one, so no match spans them; other characters stay inside tokens);
* ``episodic_vocabulary`` holds each tenant's distinct tokens (trigram-indexed: a keyword finds
  its tokens with ``LIKE``), keyed by the SHA-256 of the token (a token may exceed a btree
  entry) and with ``rows``, how many decisions and tool calls hold it;
* ``episodic_postings`` holds (token, row, ``created_at``), ordered by token and time, so that a
  query reads only the part of a keyword's rows whose age can still pass the threshold.

Statement-level triggers (with transition tables, so a ``COPY`` of many rows costs one pass)
keep both tables in step with every insert, update, delete and truncate of decisions and tool
calls, from this library or any other writer; a token no row holds any more is removed from the
vocabulary. Each trigger first takes a transaction-scoped advisory lock per tenant, so
concurrent writers of one tenant queue instead of deadlocking on vocabulary rows. For a batch
of over 1,000 rows the trigger functions raise ``work_mem`` to 64 MB while they run: 20,000
decisions make about 440,000 postings, whose sorts and hashes would otherwise spill to disk.
The trigram indexes on ``search_text`` are dropped: the source no longer scans them.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# ASCII characters that no keyword contains: everything but letters, digits and "_".
SEPARATORS = r"[\x01-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]+"

# The tokens of the rows of relation {rows}: one row per (row, distinct token of it).
WORDS = """
    SELECT r.tenant_id, r.id AS row_id, r.created_at, w.token
    FROM {rows} AS r,
         LATERAL (SELECT DISTINCT t AS token
                  FROM regexp_split_to_table(r.search_text, '{separators}') AS t
                  WHERE t <> '') AS w
"""

# Adds the postings of the rows in {words} (item {item}: 1 decisions, 2 tool calls). The
# vocabulary is written in key order (no deadlock between concurrent writers); each distinct
# token is hashed once.
ADD = """
    WITH words AS MATERIALIZED ({words}),
    vocabulary AS (
        INSERT INTO {schema}.episodic_vocabulary AS v (tenant_id, digest, token, rows)
        SELECT c.tenant_id, sha256(convert_to(c.token, 'UTF8')), c.token, c.n
        FROM (SELECT tenant_id, token, count(*) AS n FROM words GROUP BY tenant_id, token) AS c
        ORDER BY 1, 2
        ON CONFLICT (tenant_id, digest) DO UPDATE SET rows = v.rows + excluded.rows
        RETURNING v.tenant_id, v.token, v.id
    )
    INSERT INTO {schema}.episodic_postings (tenant_id, token_id, created_at, item, row_id)
    SELECT w.tenant_id, v.id, w.created_at, {item}, w.row_id
    FROM words AS w JOIN vocabulary AS v ON v.tenant_id = w.tenant_id AND v.token = w.token
"""

# Removes the postings of the rows in {words}; returns the tokens left without rows.
REMOVE = """
    WITH words AS MATERIALIZED ({words}),
    locked AS MATERIALIZED (
        SELECT v.tenant_id, v.token, v.id
        FROM (SELECT DISTINCT tenant_id, sha256(convert_to(token, 'UTF8')) AS digest
              FROM words ORDER BY 1, 2) AS d
        CROSS JOIN LATERAL (
            SELECT v.tenant_id, v.token, v.id FROM {schema}.episodic_vocabulary AS v
            WHERE v.tenant_id = d.tenant_id AND v.digest = d.digest
            FOR UPDATE
        ) AS v
    ),
    keys AS MATERIALIZED (
        SELECT w.tenant_id, v.id AS token_id, w.created_at, w.row_id
        FROM words AS w JOIN locked AS v ON v.tenant_id = w.tenant_id AND v.token = w.token
    ),
    removed AS (
        DELETE FROM {schema}.episodic_postings AS p
        USING keys AS k
        WHERE p.tenant_id = k.tenant_id AND p.token_id = k.token_id
          AND p.created_at = k.created_at AND p.item = {item} AND p.row_id = k.row_id
        RETURNING p.tenant_id, p.token_id
    )
    , counted AS (
        UPDATE {schema}.episodic_vocabulary AS v SET rows = v.rows - r.n
        FROM (SELECT tenant_id, token_id, count(*) AS n FROM removed GROUP BY 1, 2) AS r
        WHERE v.tenant_id = r.tenant_id AND v.id = r.token_id
        RETURNING v.tenant_id, v.id, v.rows
    )
    SELECT array_agg(tenant_id), array_agg(id) FROM counted WHERE rows <= 0
"""

# Removes the tokens that REMOVE left without rows ($1: their tenants, $2: their ids).
FORGET_UNUSED = """
    DELETE FROM {schema}.episodic_vocabulary AS v
    USING unnest($1::text[], $2::bigint[]) AS u(tenant_id, id)
    WHERE v.tenant_id = u.tenant_id AND v.id = u.id AND v.rows <= 0
"""

# After a TRUNCATE (no row-level trace): drop the table's postings and recount the vocabulary.
TRUNCATED = """
    IF NOT EXISTS (SELECT FROM {schema}.{other}) THEN
        -- both tables are empty now (truncating decisions cascades to tool calls)
        TRUNCATE {schema}.episodic_postings, {schema}.episodic_vocabulary;
        RETURN NULL;
    END IF;
    DELETE FROM {schema}.episodic_postings WHERE item = {item};
    UPDATE {schema}.episodic_vocabulary AS v SET rows = c.n
    FROM (SELECT tenant_id, token_id, count(*) AS n FROM {schema}.episodic_postings
          GROUP BY tenant_id, token_id) AS c
    WHERE v.tenant_id = c.tenant_id AND v.id = c.token_id AND v.rows <> c.n;
    DELETE FROM {schema}.episodic_vocabulary AS v
    WHERE NOT EXISTS (SELECT FROM {schema}.episodic_postings AS p
                      WHERE p.tenant_id = v.tenant_id AND p.token_id = v.id)
"""

# No index may cover the vocabulary's ``rows``, and its pages keep 30% free (fillfactor 70):
# updates of the counts stay HOT, in place, without new entries in its three indexes.
TABLES = """
CREATE TABLE {schema}.episodic_vocabulary (
    tenant_id text NOT NULL,
    id bigint GENERATED BY DEFAULT AS IDENTITY,
    digest bytea NOT NULL,
    token text NOT NULL,
    rows bigint NOT NULL,
    CONSTRAINT episodic_vocabulary_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT episodic_vocabulary_digest_key UNIQUE (tenant_id, digest)
) WITH (fillfactor = 70);
CREATE INDEX episodic_vocabulary_token_trgm_idx ON {schema}.episodic_vocabulary
    USING gin (token gin_trgm_ops);
CREATE TABLE {schema}.episodic_postings (
    tenant_id text NOT NULL,
    token_id bigint NOT NULL,
    created_at timestamptz NOT NULL,
    item smallint NOT NULL,
    row_id bigint NOT NULL,
    CONSTRAINT episodic_postings_pkey PRIMARY KEY (tenant_id, token_id, created_at, item, row_id)
);
"""

FUNCTION = """
CREATE FUNCTION {schema}.episodic_words_{name}() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    unused_tenants text[];  -- the tokens a delete left without rows, removed at its end
    unused_ids bigint[];
    previous_work_mem text := current_setting('work_mem');
    large boolean := false;
BEGIN
    {prologue}
    {lock}
    {body};
    IF large THEN
        PERFORM set_config('work_mem', previous_work_mem, true);
    END IF;
    RETURN NULL;
END
$body$;
"""

# Writers of a tenant's word index queue on this transaction-scoped lock (tenants in name
# order): a transaction that writes twice (a forget deletes decisions, then by cascade tool
# calls) would otherwise hold vocabulary rows while it asks for others, and deadlock with a
# writer that holds those. Namespace 0x52545657 ("RTVW"); the BM25 statistics use "RTVS".
LOCK = """PERFORM pg_advisory_xact_lock(1381258839, hashtext('{schema_name}:' || t.tenant_id))
    FROM (SELECT DISTINCT tenant_id FROM ({tenants}) AS r ORDER BY 1) AS t;"""

# A large batch gets more memory for its sorts and hashes, for this function only. (Not a
# SET clause on the function: that costs about 10 ms on every call, one row or many.)
LARGE_BATCH = """
    IF (SELECT count(*) FROM {rows}) > 1000 THEN
        large := true;
        PERFORM set_config('work_mem', '64MB', true);
    END IF;"""

TRIGGERS = """
CREATE TRIGGER {table}_words_added AFTER INSERT ON {schema}.{table}
    REFERENCING NEW TABLE AS added_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.episodic_words_added_{item}();
CREATE TRIGGER {table}_words_removed AFTER DELETE ON {schema}.{table}
    REFERENCING OLD TABLE AS removed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.episodic_words_removed_{item}();
CREATE TRIGGER {table}_words_changed AFTER UPDATE ON {schema}.{table}
    REFERENCING OLD TABLE AS removed_rows NEW TABLE AS added_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.episodic_words_changed_{item}();
CREATE TRIGGER {table}_words_truncated AFTER TRUNCATE ON {schema}.{table}
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.episodic_words_truncated_{item}();
"""

ITEMS = (("decisions", 1), ("tool_calls", 2))
OTHER = {"decisions": "tool_calls", "tool_calls": "decisions"}


def _statement(template: str, schema: str, rows: str, item: int) -> str:
    # ADD or REMOVE for the rows of relation ``rows``.
    words = WORDS.format(rows=rows, separators=SEPARATORS)
    return template.format(schema=schema, item=item, words=words)


def _dynamic(statement: str, tail: str = "") -> str:
    # Planned on every call: a plan cached for a batch of 20,000 rows made later single-row
    # calls 20 times slower (24 ms instead of 1 ms).
    return f"EXECUTE $statement${statement}$statement${tail}"


def upgrade_sql(schema: str) -> str:
    """The whole upgrade for ``schema`` (quoted): tables, functions, triggers, backfill."""
    parts = [TABLES.format(schema=schema)]
    for table, item in ITEMS:
        other = OTHER[table]
        add = _dynamic(_statement(ADD, schema, "added_rows", item))
        remove = (
            _dynamic(
                _statement(REMOVE, schema, "removed_rows", item),
                " INTO unused_tenants, unused_ids",
            )
            + ";\n    "
            + _dynamic(FORGET_UNUSED.format(schema=schema), " USING unused_tenants, unused_ids")
        )
        both = "SELECT tenant_id FROM added_rows UNION SELECT tenant_id FROM removed_rows"
        for name, rows, tenants, body in (
            (f"added_{item}", "added_rows", "SELECT tenant_id FROM added_rows", add),
            (f"removed_{item}", "removed_rows", "SELECT tenant_id FROM removed_rows", remove),
            (f"changed_{item}", "added_rows", both, f"{remove};\n{add}"),
            (
                f"truncated_{item}",
                None,
                None,
                TRUNCATED.format(schema=schema, item=item, other=other),
            ),
        ):
            prologue = LARGE_BATCH.format(rows=rows) if rows else ""
            lock = LOCK.format(schema_name=schema.strip('"'), tenants=tenants) if tenants else ""
            parts.append(
                FUNCTION.format(schema=schema, name=name, prologue=prologue, lock=lock, body=body)
            )
        parts.append(TRIGGERS.format(schema=schema, table=table, item=item))
        parts.append(_statement(ADD, schema, f"{schema}.{table}", item) + ";")
        parts.append(f"DROP INDEX {schema}.{table}_search_text_trgm_idx;")
    parts.append(f"ANALYZE {schema}.episodic_vocabulary;")
    parts.append(f"ANALYZE {schema}.episodic_postings;")
    return "\n".join(parts)


def downgrade_sql(schema: str) -> str:
    """The whole downgrade for ``schema`` (quoted)."""
    parts = []
    for table, item in ITEMS:
        parts.append(
            f"CREATE INDEX {table}_search_text_trgm_idx ON {schema}.{table} "
            "USING gin (search_text gin_trgm_ops);"
        )
        for event in ("added", "removed", "changed", "truncated"):
            parts.append(f"DROP TRIGGER {table}_words_{event} ON {schema}.{table};")
            parts.append(f"DROP FUNCTION {schema}.episodic_words_{event}_{item}();")
    parts.append(f"DROP TABLE {schema}.episodic_postings, {schema}.episodic_vocabulary;")
    return "\n".join(parts)


def upgrade() -> None:
    op.execute(upgrade_sql(f'"{current_settings().schema}"'))


def downgrade() -> None:
    op.execute(downgrade_sql(f'"{current_settings().schema}"'))
