-- The database's own statements: catalog lookups, ids, locks, row-level security, the vector
-- index. Loaded by retrieval.db.queries; {schema} is the quoted schema, values are %(name)s.

-- name: relation_exists
SELECT to_regclass(%(relation)s) IS NOT NULL

-- name: embedding_column
-- The type (vector or halfvec) and dimension (its type modifier) of memories.embedding, fixed
-- when the schema was migrated.
SELECT t.typname, a.atttypmod FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema_name)s AND c.relname = 'memories' AND a.attname = 'embedding'
  AND NOT a.attisdropped

-- name: embedding_models_seen
-- The embedding models the planner's statistics saw in the memories and the document chunks
-- (the most common values of embedding_model, read from pg_stats at no cost: none before the
-- tables are analyzed, nor for a role that may not read them).
SELECT DISTINCT v.model FROM pg_stats AS s,
     unnest(s.most_common_vals::text::text[]) AS v(model)
WHERE s.schemaname = %(schema_name)s AND s.tablename IN ('memories', 'document_chunks')
  AND s.attname = 'embedding_model'
ORDER BY v.model

-- name: unicode_version
-- The Unicode version of the server's normalize() (PostgreSQL 17 and later).
SELECT unicode_version()

-- name: reserve_ids
-- COPY cannot return generated ids: they are taken from the table's identity sequence first.
-- The sequence is looked up once (an InitPlan), not once per id: eight times faster.
SELECT now(), array_agg(nextval((SELECT pg_get_serial_sequence(%(table)s, 'id')::regclass)))
FROM generate_series(1, %(count)s)

-- name: lock_term_statistics
-- One transaction-scoped advisory lock per tenant, in name order (no deadlock between writers
-- of several tenants).
SELECT pg_advisory_xact_lock(%(namespace)s, hashtext(%(schema_name)s || ':' || tenant))
FROM unnest(%(tenants)s::text[]) AS tenant ORDER BY tenant

-- name: lock_holders
-- The sessions holding locks on the schema's tables (a migration that could not get its lock
-- names them).
SELECT a.pid, a.state, coalesce(a.application_name, ''), left(a.query, 120),
       string_agg(DISTINCT c.relname, ', ' ORDER BY c.relname)
FROM pg_locks AS l
JOIN pg_class AS c ON c.oid = l.relation
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE n.nspname = %(schema_name)s AND l.granted AND a.pid <> pg_backend_pid()
GROUP BY a.pid, a.state, a.application_name, a.query
ORDER BY a.pid

-- name: row_security_active
-- Whether the policies bind this role; NULL (no such table yet) counts as not bound.
SELECT COALESCE(row_security_active(to_regclass(%(relation)s)), false)

-- name: role_binding
-- Whether a role would escape row-level security: superuser, BYPASSRLS, or the tables' owner.
SELECT r.rolsuper, r.rolbypassrls, r.rolname = t.tableowner
FROM pg_roles AS r, pg_tables AS t
WHERE r.rolname = %(role)s AND t.schemaname = %(schema_name)s AND t.tablename = 'memories'

-- name: drop_vector_index
DROP INDEX IF EXISTS {schema}.memories_embedding_hnsw_idx

-- name: build_vector_index
-- The definition the migrations create (0008, 0013), so that `alembic check` sees no drift.
CREATE INDEX IF NOT EXISTS memories_embedding_hnsw_idx ON {schema}.memories
USING hnsw (embedding {operator_class}) WITH (m = {links})

-- name: index_build_memory
-- The graph is built fastest when it fits in memory; pgvector warns when it does not.
SET LOCAL maintenance_work_mem = '1GB'

-- name: extension_installed
SELECT 1 FROM pg_extension WHERE extname = %(name)s

-- name: extension_available
SELECT 1 FROM pg_available_extensions WHERE name = %(name)s

-- name: who_and_where
SELECT current_setting('server_version'), current_database(), current_user

-- name: count_rows
-- Rows a downgrade would drop; {table} and {where} come from the fixed list of losses.
SELECT count(*) FROM {schema}.{table} WHERE {where}

-- name: set_session
-- A setting of the read path's connections, for the session (hnsw.ef_search, say).
SELECT set_config(%(name)s, %(value)s, false)

-- name: database_exists
SELECT 1 FROM pg_database WHERE datname = %(name)s

-- name: citus_version
-- The citus extension's version in this database (no row without Citus).
SELECT extversion FROM pg_extension WHERE extname = 'citus'

-- name: propagate_set_commands
-- On a Citus database: send the transaction's SET LOCAL commands on to the workers it opens.
SET citus.propagate_set_commands = 'local'

-- name: distributed_tables
-- The tables of a schema that Citus distributes (only asked where the citus extension is).
SELECT c.relname
FROM pg_dist_partition AS p
JOIN pg_class AS c ON c.oid = p.logicalrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema_name)s

-- name: allow_statistics_triggers
-- For this transaction: Citus may distribute tables that have triggers.
SELECT set_config('citus.enable_unsafe_triggers', 'on', true)

-- name: create_distributed_table
SELECT create_distributed_table(%(relation)s::regclass, %(column)s,
                                colocate_with => %(colocate_with)s)

-- name: undistributed_functions
-- The functions of a schema that are not yet distributed objects (created on every node).
SELECT p.oid::regprocedure::text
FROM pg_proc AS p
JOIN pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = %(schema_name)s
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object AS d
                  WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid)
ORDER BY 1

-- name: create_distributed_function
SELECT create_distributed_function(%(function)s::regprocedure)

-- name: column_types
-- The type oid of each column of a table (what a binary parameter declares itself as).
SELECT attname, atttypid FROM pg_attribute
WHERE attrelid = %(relation)s::regclass AND attnum > 0 AND NOT attisdropped

-- name: run_on_workers
-- One command on every worker of a Citus cluster; an error on any of them is raised.
SELECT nodename, nodeport, result FROM run_command_on_workers(%(command)s)
WHERE NOT success

-- name: settings_on_workers
-- A command's one value on every worker of a Citus cluster, as a new connection of this role
-- finds it there (the role's and the database's defaults), and whether each worker answered.
SELECT success, result FROM run_command_on_workers(%(command)s)

-- name: versions
-- The server's version and pgvector's: installed in this database, else the one CREATE
-- EXTENSION would install (NULL when the server has none).
SELECT current_setting('server_version_num')::int, current_setting('server_version'),
       (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
       (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')

-- name: analyze_written
-- The planner's statistics of the tables a bulk load wrote, brought up to date at once
-- (autovacuum would, within about a minute): a table that grew from nothing is planned as
-- nearly empty until then.
ANALYZE {schema}.memories, {schema}.decisions, {schema}.tool_calls, {schema}.episodic_vocabulary, {schema}.episodic_postings
