-- Documents: their chunks' BM25 statistics, kept in the transaction that writes them.
-- Loaded by retrieval.db.queries; {schema} is the quoted schema, values are %(name)s.

-- name: find
-- The tenant's document of a doc_id, locked for its replacement.
SELECT id, content_sha256 FROM {schema}.documents
WHERE tenant_id = %(tenant_id)s AND doc_id = %(doc_id)s FOR UPDATE

-- name: corpus_config
-- The text search configuration the tenant's documents were analysed with.
SELECT text_search_config FROM {schema}.document_corpus WHERE tenant_id = %(tenant_id)s FOR UPDATE

-- name: term_counts
-- How many lexemes (with repeats) each text holds, in order.
SELECT t.position, COALESCE(sum(cardinality(u.positions)), 0)::int
FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(body, position)
LEFT JOIN LATERAL unnest(to_tsvector(%(config)s::regconfig, t.body)) AS u ON true
GROUP BY t.position ORDER BY t.position

-- name: postings
-- One posting per (lexeme, chunk) of a document: its frequency and the chunk's length.
INSERT INTO {schema}.document_terms (tenant_id, term, chunk_id, term_frequency, chunk_length)
SELECT c.tenant_id, u.lexeme, c.id, cardinality(u.positions), c.term_count
FROM {schema}.document_chunks AS c,
     unnest(to_tsvector(%(config)s::regconfig, c.content)) AS u
WHERE c.tenant_id = %(tenant_id)s AND c.document_id = %(document_id)s

-- name: add_term_stats
-- Terms in sorted order: concurrent writers lock the same rows in the same order (no deadlock).
INSERT INTO {schema}.document_term_stats AS s (tenant_id, term, document_frequency)
SELECT tenant_id, term, count(*) FROM {schema}.document_terms
WHERE tenant_id = %(tenant_id)s AND chunk_id IN (
    SELECT id FROM {schema}.document_chunks
    WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s
)
GROUP BY tenant_id, term ORDER BY term
ON CONFLICT (tenant_id, term)
DO UPDATE SET document_frequency = s.document_frequency + excluded.document_frequency

-- name: add_corpus
INSERT INTO {schema}.document_corpus AS c (tenant_id, text_search_config, chunks, total_terms)
VALUES (%(tenant_id)s, %(config)s, %(chunks)s, %(terms)s)
ON CONFLICT (tenant_id)
DO UPDATE SET chunks = c.chunks + excluded.chunks,
              total_terms = c.total_terms + excluded.total_terms

-- name: old_terms
-- A document's terms and how many of its chunks hold each, before it goes.
SELECT term, count(*)::int FROM {schema}.document_terms
WHERE tenant_id = %(tenant_id)s AND chunk_id IN (
    SELECT id FROM {schema}.document_chunks
    WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s
)
GROUP BY term ORDER BY term

-- name: old_size
SELECT count(*), COALESCE(sum(term_count), 0) FROM {schema}.document_chunks
WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s

-- name: take_back_term_stats
WITH old AS (
    SELECT * FROM unnest(%(terms)s::text[], %(counts)s::int[]) AS o(term, n)
), gone AS (
    DELETE FROM {schema}.document_term_stats AS s USING old
    WHERE s.tenant_id = %(tenant_id)s AND s.term = old.term AND s.document_frequency <= old.n
)
UPDATE {schema}.document_term_stats AS s SET document_frequency = s.document_frequency - old.n
FROM old WHERE s.tenant_id = %(tenant_id)s AND s.term = old.term AND s.document_frequency > old.n

-- name: take_back_corpus
UPDATE {schema}.document_corpus
SET chunks = chunks - %(chunks)s, total_terms = total_terms - %(terms)s
WHERE tenant_id = %(tenant_id)s

-- name: delete
-- The document; its chunks and postings cascade.
DELETE FROM {schema}.documents WHERE tenant_id = %(tenant_id)s AND id = %(document_id)s

-- name: chunk_ids
SELECT id FROM {schema}.document_chunks
WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s ORDER BY chunk_index

-- name: dense
-- The tenant's chunks nearest a vector (the HNSW index, widened by the caller's settings).
SELECT id, embedding <-> %(vector)s::vector AS distance
FROM {schema}.document_chunks WHERE tenant_id = %(tenant_id)s
ORDER BY distance LIMIT %(limit)s

-- name: chunk_texts
-- A document's chunk texts and the model of their vectors (whose cache entries forget erases).
SELECT content, embedding_model FROM {schema}.document_chunks
WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s

-- name: bm25
-- Every chunk's exact Okapi BM25 for the query, the best %(limit)s (DocumentStore.bm25): the
-- query terms' weights {weights} and every posting of them {every_posting}
-- (retrieval/sql/read_bm25.sql).
WITH {weights}
{every_posting}
ORDER BY bm25 DESC, chunk_id
LIMIT %(limit)s
