-- The embedding cache: vectors keyed by the SHA-256 of the model id and the text, per tenant.
-- Loaded by retrieval.db.queries; {schema} is the quoted schema, values are %(name)s.

-- name: lookup
-- vector_send gives the binary encoding: decoding it is ~50x faster than parsing the text
-- form. Sent with the keys as a binary bytea[] and read in binary: for 20,000 keys, text
-- would hex-escape each key and each vector on the way.
SELECT key, vector_send(embedding) FROM {schema}.embedding_cache
WHERE tenant_id = %(tenant_id)s AND key = ANY(%(keys)b)

-- name: stored_keys
-- Which keys the table holds, for a writer that copies their vectors inside PostgreSQL.
SELECT key FROM {schema}.embedding_cache WHERE tenant_id = %(tenant_id)s AND key = ANY(%(keys)b)

-- name: create_staging
-- New vectors go through a per-connection staging table filled by binary COPY.
CREATE TEMP TABLE IF NOT EXISTS retrieval_cache_staging
    (tenant_id text, key bytea, embedding vector) ON COMMIT DELETE ROWS

-- name: insert
-- ON CONFLICT DO NOTHING keeps concurrent writers of the same texts safe; in key order, so that
-- two writers of overlapping texts wait for each other in one order instead of deadlocking.
INSERT INTO {schema}.embedding_cache (tenant_id, key, model_id, embedding)
SELECT tenant_id, key, %(model_id)s, embedding FROM pg_temp.retrieval_cache_staging
ORDER BY tenant_id, key ON CONFLICT (tenant_id, key) DO NOTHING

-- name: clear_staging
DELETE FROM pg_temp.retrieval_cache_staging
