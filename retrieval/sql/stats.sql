-- `retrieval stats`: what a database holds. Loaded by retrieval.db.queries; {schema} is the
-- quoted schema, {table} one of the fixed table names, values are %(name)s.

-- name: server_version
SHOW server_version

-- name: extensions
SELECT extname, extversion FROM pg_extension
WHERE extname = ANY(%(names)s::text[]) ORDER BY extname

-- name: indexes
SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = %(schema_name)s
ORDER BY tablename, indexname

-- name: rows_per_tenant
SELECT tenant_id, count(*) FROM {schema}.{table} GROUP BY tenant_id ORDER BY tenant_id

-- name: kinds
SELECT tenant_id, kind, count(*) FROM {schema}.memories
GROUP BY tenant_id, kind ORDER BY tenant_id, kind

-- name: models
SELECT embedding_model, count(*) FROM {schema}.memories
GROUP BY embedding_model ORDER BY embedding_model

-- name: relation_bytes
SELECT pg_total_relation_size(%(relation)s::regclass)

-- name: documents
SELECT d.tenant_id, count(DISTINCT d.id), count(c.id),
       (SELECT text_search_config FROM {schema}.document_corpus AS k
        WHERE k.tenant_id = d.tenant_id)
FROM {schema}.documents AS d
LEFT JOIN {schema}.document_chunks AS c ON c.tenant_id = d.tenant_id AND c.document_id = d.id
GROUP BY d.tenant_id ORDER BY d.tenant_id

-- name: memory_bm25
SELECT k.tenant_id, k.memories, k.text_search_config FROM {schema}.memory_corpus AS k
ORDER BY k.tenant_id
