-- A read statement run on the Citus worker that holds its tenant's shards (retrieval.db.
-- shard_reads). Loaded by retrieval.db.queries; {schema} is the quoted schema, values are
-- %(name)s.

-- name: read_function_exists
-- Whether the schema has the read function (`retrieval db distribute` makes it).
SELECT to_regprocedure(%(signature)s) IS NOT NULL

-- name: read_function_usable
-- Whether the schema has the read function and this role may call it.
SELECT COALESCE(has_function_privilege(to_regprocedure(%(signature)s), 'EXECUTE'), false)

-- name: create_read_function
-- The read function: on the node that holds the tenant's shards (Citus delegates a call to it
-- by its first argument), the statement over those shards (``prepared``: its parameters' types
-- in parentheses, then AS and the statement) prepared once per session under its name (at most
-- 64 kept; the oldest goes first) and executed with the call's arguments (SQL literals), under
-- the plan cache mode the call asks for, read-only. ``shard_id`` is the tenant's shard of
-- memories the statement names: where it is no longer the tenant's (a split or an isolation
-- gave it new shards, and the old may linger until Citus cleans them up), the call fails as a
-- missing table does, before reading (without Citus, NULL: not checked). It runs with the
-- caller's rights and adds no privilege: what it runs, the caller could send itself.
CREATE FUNCTION {schema}.read_on_shard(
    tenant_id text, shard_id bigint, prepared_name text, prepared text, arguments text,
    plan_mode text
) RETURNS SETOF record
LANGUAGE plpgsql
AS $read$
DECLARE
    oldest text;
BEGIN
    PERFORM set_config('transaction_read_only', 'on', true);
    IF shard_id IS NOT NULL THEN  -- apart: an expression is planned when it is first reached
        IF shard_id IS DISTINCT FROM
           get_shard_id_for_distribution_column('{schema}.memories'::regclass, tenant_id) THEN
            RAISE EXCEPTION USING ERRCODE = 'undefined_table',
                MESSAGE = 'shard ' || shard_id || ' no longer holds tenant ' || tenant_id;
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_prepared_statements AS p
                   WHERE p.name = prepared_name) THEN
        IF (SELECT count(*) FROM pg_catalog.pg_prepared_statements AS p
            WHERE starts_with(p.name, 'retrieval_')) >= 64 THEN
            SELECT p.name INTO oldest FROM pg_catalog.pg_prepared_statements AS p
            WHERE starts_with(p.name, 'retrieval_') ORDER BY p.prepare_time LIMIT 1;
            EXECUTE 'DEALLOCATE ' || quote_ident(oldest);
        END IF;
        EXECUTE 'PREPARE ' || quote_ident(prepared_name) || prepared;
    END IF;
    PERFORM set_config('plan_cache_mode', plan_mode, true);
    RETURN QUERY EXECUTE 'EXECUTE ' || quote_ident(prepared_name) || '(' || arguments || ')';
END
$read$

-- name: distribute_read_function
-- Citus runs each call of the read function on the node holding the shard of its tenant,
-- within a transaction too (where the settings a call names go with it).
SELECT create_distributed_function(%(function)s::regprocedure, 'tenant_id',
                                   colocate_with => %(colocate_with)s,
                                   force_delegation => true)

-- name: shard_ids
-- The shard of each of the schema's tables that holds a tenant's rows.
SELECT t.name,
       get_shard_id_for_distribution_column(
           format('%%I.%%I', %(schema_name)s::text, t.name)::regclass, %(tenant_id)s::text)
FROM unnest(%(tables)s::text[]) AS t (name)

-- name: call
-- A read statement run through the read function ({columns}: its columns and their types).
SELECT * FROM {schema}.read_on_shard(%(tenant_id)s, %(shard_id)s, %(prepared_name)s,
                                     %(prepared)s, %(arguments)s, %(plan_mode)s)
    AS r ({columns})
