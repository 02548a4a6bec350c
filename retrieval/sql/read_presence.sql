-- The presence rows (retrieval.search.statement.presence): whether the tenant holds the sources
-- the plan left out, and its size, in the statement's columns.

-- name: documents
-- The tenant's chunk count.
COALESCE((SELECT c.chunks FROM {schema}.document_corpus AS c WHERE c.tenant_id = %(tenant_id)s), 0)

-- name: episodic
-- 1 when the tenant holds a decision or a tool call.
(EXISTS (SELECT FROM {schema}.decisions AS d WHERE d.tenant_id = %(tenant_id)s) OR EXISTS (SELECT FROM {schema}.tool_calls AS t WHERE t.tenant_id = %(tenant_id)s))::int

-- name: facts
-- The semantic candidates that may be versions of one another ({short_fact}), less one: above
-- zero when a pair may form.
(SELECT count(*) - 1 FROM semantic AS s WHERE {short_fact})

-- name: memories
-- The tenant's memory count.
COALESCE((SELECT c.memories FROM {schema}.memory_corpus AS c WHERE c.tenant_id = %(tenant_id)s), 0)

-- name: memory_table
-- The memories table's rows, as the planner's statistics estimate them.
GREATEST(COALESCE((SELECT t.reltuples FROM pg_catalog.pg_class AS t WHERE t.oid = to_regclass('{schema}.memories')), 0), 0)

-- name: memory_generic
-- The memories PostgreSQL expects of a tenant it does not know, as a generic plan prices
-- tenant_id = a parameter: the table's rows over its distinct tenants, at most the commonest
-- tenant's share (0 without statistics, or where row-level security hides them).
COALESCE((SELECT GREATEST(t.reltuples, 0) * LEAST((1 - s.null_frac) / GREATEST(CASE WHEN s.n_distinct < 0 THEN -s.n_distinct * GREATEST(t.reltuples, 1) ELSE s.n_distinct END, 1), COALESCE(s.most_common_freqs[1], 1)) FROM pg_catalog.pg_class AS t JOIN pg_catalog.pg_namespace AS n ON n.oid = t.relnamespace JOIN pg_catalog.pg_stats AS s ON s.schemaname = n.nspname AND s.tablename = t.relname AND s.attname = 'tenant_id' WHERE t.oid = to_regclass('{schema}.memories')), 0)

-- name: row
-- The presence row of {source}: its {count} as the id, the other columns empty.
SELECT '{source}'::text AS source, '{item}'::text AS item,
           {count}::bigint AS id,
           ''::text AS content, '{item}'::text AS kind,
           %(as_of)s::timestamptz AS created_at, 0.0::float8 AS relevance,
           0.0::float8 AS recency, 0.0::float8 AS importance, 0.0::float8 AS popularity,
           0.0::float8 AS entity, NULL::float8 AS distance, NULL::text[] AS matched,
           NULL::text[] AS entities, '{{}}'::json AS details,
           TRUE AS evidence, NULL::bigint[] AS newer, NULL::boolean[] AS newer_near

-- name: presence
-- The rows of the sources asked for, one CTE.
source_presence AS (
    {rows}
)
