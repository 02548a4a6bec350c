"""The word statistics' triggers write the co-located shards when they run on a Citus shard.

Revisions 0007 and 0010 keep the memories' BM25 statistics (``memory_term_stats``,
``memory_corpus``) and the episodic word index (``episodic_vocabulary``,
``episodic_postings``) with statement-level triggers that read their transition tables. On a
Citus cluster whose tables are distributed by tenant (``retrieval db distribute``) the triggers
run on each shard of ``memories``, ``decisions`` and ``tool_calls``, and a statement that reads
the transition table and names another *distributed* table fails there ("executor could not
find named tuplestore"). Each function now resolves, at its start, the relations it writes: on
one server (or a table that is not distributed) they are the tables themselves, as before; on a
shard (its name is the table's with ``_<shardid>`` appended) they are the shards of the
statistics tables that hold the same hash range (co-located: the same tenants), found in
Citus's ``pg_dist_shard``, and written by name, on the same node, in the same transaction. The
statements are otherwise those of revisions 0007 and 0010, so the statistics equal one
server's, and every writer (the library, or SQL of your own) keeps them. See
docs/decisions/0011-statistics-on-shards.md.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

import importlib

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# The SQL of the statistics is the earlier revisions' own (frozen with them).
_memory = importlib.import_module("retrieval.migrations.versions.0010_memory_search_vector")
_words = importlib.import_module("retrieval.migrations.versions.0007_episodic_words")
_rls = importlib.import_module("retrieval.migrations.versions.0011_row_level_security")

_MARK = "@schema@"  # stands for the schema while a statement's relations become placeholders

# Revision 0007's ADD with the vocabulary's id taken from its identity sequence by name: a
# shard has the table's columns but not their defaults (on a worker the sequence hands out
# that node's own range, so ids stay unique across the cluster).
ADD_WORDS = """
    WITH words AS MATERIALIZED ({words}),
    vocabulary AS (
        INSERT INTO {schema}.episodic_vocabulary AS v (tenant_id, id, digest, token, rows)
        SELECT c.tenant_id, nextval({sequence}::regclass), sha256(convert_to(c.token, 'UTF8')),
               c.token, c.n
        FROM (SELECT tenant_id, token, count(*) AS n FROM words GROUP BY tenant_id, token) AS c
        ORDER BY 1, 3
        ON CONFLICT (tenant_id, digest) DO UPDATE SET rows = v.rows + excluded.rows
        RETURNING v.tenant_id, v.token, v.id
    )
    INSERT INTO {schema}.episodic_postings (tenant_id, token_id, created_at, item, row_id)
    SELECT w.tenant_id, v.id, w.created_at, {item}, w.row_id
    FROM words AS w JOIN vocabulary AS v ON v.tenant_id = w.tenant_id AND v.token = w.token
"""

# The relation a function writes: the table on one server, its co-located shard on a shard.
RESOLVE = """
        {variable} := (SELECT shard_name(o.logicalrelid, o.shardid)
                       FROM pg_dist_shard AS s JOIN pg_dist_shard AS o
                         ON o.shardminvalue = s.shardminvalue
                       WHERE s.shardid = substring(TG_TABLE_NAME FROM '_(\\d+)$')::bigint
                         AND o.logicalrelid = '{schema}.{relation}'::regclass);"""

FUNCTION = """
CREATE OR REPLACE FUNCTION {schema}.{name}() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
{declarations}
BEGIN
    IF TG_TABLE_NAME <> '{table}' THEN  -- a Citus shard: write the co-located shards{resolve}
    END IF;
    {body}
    RETURN NULL;
END
$body$
"""

# After a TRUNCATE of decisions or tool calls (no row-level trace), as revision 0007 does it.
TRUNCATED = """
    EXECUTE format($statement$SELECT EXISTS (SELECT FROM %3$s)$statement$, {arguments})
        INTO other_has_rows;
    IF NOT other_has_rows THEN  -- both tables are empty now
        EXECUTE format($statement$TRUNCATE %2$s, %1$s$statement$, {arguments});
        RETURN NULL;
    END IF;
    EXECUTE format($statement$DELETE FROM %2$s WHERE item = {item}$statement$, {arguments});
    EXECUTE format($statement$
        UPDATE %1$s AS v SET rows = c.n
        FROM (SELECT tenant_id, token_id, count(*) AS n FROM %2$s
              GROUP BY tenant_id, token_id) AS c
        WHERE v.tenant_id = c.tenant_id AND v.id = c.token_id AND v.rows <> c.n
    $statement$, {arguments});
    EXECUTE format($statement$
        DELETE FROM %1$s AS v
        WHERE NOT EXISTS (SELECT FROM %2$s AS p
                          WHERE p.tenant_id = v.tenant_id AND p.token_id = v.id)
    $statement$, {arguments});"""


# Revision 0011's lookups for a role bound by row-level security, which run as the tables'
# owner. Inside a statement that Citus routes to a worker they run on the shard: a query there
# naming the distributed table would be a distributed query inside a shard's (refused), so they
# read the tenant's shard by name; on one server, the table.
LOOKUPS = """
CREATE OR REPLACE FUNCTION {schema}.memories_matching(p_tenant text, p_query tsquery,
                                                       p_limit integer)
RETURNS SETOF {schema}.memories
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_tenant IS DISTINCT FROM current_setting('{setting}', true) THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT m.* FROM %s AS m WHERE m.tenant_id = $1 AND m.search_vector @@ $2 LIMIT $3',
        {schema}.tenant_relation('{schema}.memories', p_tenant)
    ) USING p_tenant, p_query, p_limit;
END
$function$;

CREATE OR REPLACE FUNCTION {schema}.episodic_tokens_like(p_tenant text, p_pattern text)
RETURNS TABLE (id bigint, rows bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_tenant IS DISTINCT FROM current_setting('{setting}', true) THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT v.id, v.rows FROM %s AS v WHERE v.tenant_id = $1 AND v.token LIKE $2',
        {schema}.tenant_relation('{schema}.episodic_vocabulary', p_tenant)
    ) USING p_tenant, p_pattern;
END
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenant_relation(p_relation regclass, p_tenant text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    shard text;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN  -- Citus is installed
        EXECUTE 'SELECT shard_name(logicalrelid, '
                '    get_shard_id_for_distribution_column(logicalrelid, $2)) '
                'FROM pg_dist_partition WHERE logicalrelid = $1'
            INTO shard USING p_relation, p_tenant;
    END IF;
    RETURN coalesce(shard, p_relation::text);
END
$function$;
"""


def _dynamic(statement: str, schema: str, relations: tuple[str, ...], tail: str = "") -> str:
    """``statement`` (written for the schema ``_MARK``) run with its relations as format()
    arguments, so that a shard's function names the co-located shards."""
    for number, relation in enumerate(relations, start=1):
        statement = statement.replace(f"{_MARK}.{relation}", f"%{number}$s")
    if _MARK in statement:
        raise ValueError(f"a statement names a relation it does not resolve: {statement}")
    return f"EXECUTE format($statement${statement}$statement$, {_targets(relations)}){tail};"


def _targets(relations: tuple[str, ...]) -> str:
    # The function's variables that hold the relations' names.
    return ", ".join(f"target_{relation}" for relation in relations)


def _function(
    schema: str,
    name: str,
    table: str,
    relations: tuple[str, ...],
    body: str,
    extra: str = "",
) -> str:
    declarations = "\n".join(
        f"    target_{relation} text := '{schema}.{relation}';" for relation in relations
    )
    resolve = "".join(
        RESOLVE.format(variable=f"target_{relation}", schema=schema, relation=relation)
        for relation in relations
    )
    return FUNCTION.format(
        schema=schema,
        name=name,
        table=table,
        declarations=declarations + extra,
        resolve=resolve,
        body=body,
    )


def memory_functions(
    schema: str,
    text_search_config: str,
    *,
    counted: str = "{rows}",
    changed: str = _memory.CHANGED,
    any_changed: str = _memory.CHANGED,
) -> list[str]:
    """Revision 0010's four functions, resolving their relations.

    A later revision may narrow which rows the statistics count (``counted``: the relation
    of rows ``{rows}`` to count), and which rows of an update change them (``changed``, for a
    ``{side}``; ``any_changed``: whether any did)."""
    relations = ("memory_term_stats", "memory_corpus")
    name = schema.strip('"')
    config = f"'{text_search_config}'"
    sampled = _memory.SAMPLED.format(alias="r")

    def run(template: str, rows: str) -> str:
        rows = counted.format(rows=rows)
        pieces = {
            "schema": _MARK,
            "lexemes": _memory.LEXEMES.format(rows=rows, sampled=sampled),
            "sizes": _memory.SIZES.format(rows=rows, sampled=sampled),
        }
        if template is _memory.ADD:
            pieces["config"] = config
        return _dynamic(template.format(**pieces), schema, relations)

    def lock(tenants: str) -> str:
        return _memory.LOCK.format(schema_name=name, tenants=tenants)

    changed_old = f"({changed.format(side='o')})"
    changed_new = f"({changed.format(side='n')})"
    any_change = f"({any_changed.format(side='n')})"
    both = "SELECT tenant_id FROM old_rows UNION SELECT tenant_id FROM new_rows"
    bodies = {
        "added": "\n    ".join(
            [lock("SELECT tenant_id FROM new_rows"), run(_memory.ADD, "new_rows")]
        ),
        "removed": "\n    ".join(
            [lock("SELECT tenant_id FROM old_rows"), run(_memory.REMOVE, "old_rows")]
        ),
        "changed": f"IF NOT EXISTS {any_change} THEN\n        RETURN NULL;\n    END IF;\n    "
        + "\n    ".join(
            [lock(both), run(_memory.REMOVE, changed_old), run(_memory.ADD, changed_new)]
        ),
        "truncated": _dynamic(
            f"TRUNCATE {_MARK}.memory_term_stats, {_MARK}.memory_corpus", schema, relations
        ),
    }
    return [
        _function(schema, f"memory_words_{event}", "memories", relations, body)
        for event, body in bodies.items()
    ]


def episodic_functions(schema: str) -> list[str]:
    """Revision 0007's eight functions (four per table), resolving their relations."""
    relations = ("episodic_vocabulary", "episodic_postings")
    functions = []
    for table, item in _words.ITEMS:
        other = _words.OTHER[table]

        def run(template: str, rows: str, tail: str = "", item: int = item) -> str:
            words = _words.WORDS.format(rows=rows, separators=_words.SEPARATORS)
            sequence = f"pg_get_serial_sequence('{schema}.episodic_vocabulary', 'id')"
            statement = template.format(schema=_MARK, item=item, words=words, sequence=sequence)
            return _dynamic(statement, schema, relations, tail)

        add = run(ADD_WORDS, "added_rows")
        remove = (
            run(_words.REMOVE, "removed_rows", " INTO unused_tenants, unused_ids")
            + "\n    "
            + _dynamic(
                _words.FORGET_UNUSED.format(schema=_MARK),
                schema,
                relations,
                " USING unused_tenants, unused_ids",
            )
        )
        both = "SELECT tenant_id FROM added_rows UNION SELECT tenant_id FROM removed_rows"
        for event, rows, tenants, body in (
            ("added", "added_rows", "SELECT tenant_id FROM added_rows", add),
            ("removed", "removed_rows", "SELECT tenant_id FROM removed_rows", remove),
            ("changed", "added_rows", both, f"{remove}\n    {add}"),
        ):
            prologue = _words.LARGE_BATCH.format(rows=rows)
            lock = _words.LOCK.format(schema_name=schema.strip('"'), tenants=tenants)
            work_mem = "\n    ".join(
                [
                    "IF large THEN",
                    "    PERFORM set_config('work_mem', previous_work_mem, true);",
                    "END IF;",
                ]
            )
            functions.append(
                _function(
                    schema,
                    f"episodic_words_{event}_{item}",
                    table,
                    relations,
                    "\n    ".join([prologue, lock, body, work_mem]),
                    extra=(
                        "\n    unused_tenants text[];\n    unused_ids bigint[];"
                        "\n    previous_work_mem text := current_setting('work_mem');"
                        "\n    large boolean := false;"
                    ),
                )
            )
        truncated = (*relations, other)
        functions.append(
            _function(
                schema,
                f"episodic_words_truncated_{item}",
                table,
                truncated,
                TRUNCATED.format(item=item, arguments=_targets(truncated)),
                extra="\n    other_has_rows boolean;",
            )
        )
    return functions


def lookup_functions(schema: str) -> list[str]:
    """Revision 0011's two lookups (and the relation they read), one statement each."""
    text = LOOKUPS.format(schema=schema, setting="retrieval.tenant_id")
    tenant_relation = text.index(f"CREATE OR REPLACE FUNCTION {schema}.tenant_relation")
    first = text.index(f"CREATE OR REPLACE FUNCTION {schema}.episodic_tokens_like")
    # The function they call is made first.
    return [text[tenant_relation:], text[:first], text[first:tenant_relation]]


def upgrade() -> None:
    settings = current_settings()
    schema = f'"{settings.schema}"'
    for function in [
        *memory_functions(schema, settings.text_search_config),
        *episodic_functions(schema),
        *lookup_functions(schema),
    ]:
        op.execute(function)  # one statement per execute


def downgrade() -> None:
    # The statistics' functions keep working on one server as they are; the lookups go back to
    # revision 0011's, which do not need the relation function.
    schema = f'"{current_settings().schema}"'
    lookups = _rls.FUNCTIONS.format(schema=schema, setting=_rls.SETTING)
    for part in lookups.split(";"):
        if part.strip().startswith("CREATE FUNCTION"):
            op.execute(part.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.execute(f"DROP FUNCTION {schema}.tenant_relation(regclass, text)")
