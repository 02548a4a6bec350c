-- The agent's memory: reading rows back by id, forgetting them, re-embedding, positions.
-- Loaded by retrieval.db.queries; {schema} is the quoted schema, values are %(name)s.

-- name: memories_by_id
-- Memories by id with their entity ids and vectors; {memory} is a stored memory's columns
-- (retrieval.memory.fields).
SELECT {memory},
       coalesce((SELECT array_agg(e.entity_id ORDER BY e.entity_id)
                   FROM {schema}.memory_entities e
                  WHERE e.tenant_id = %(tenant_id)s AND e.memory_id = m.id), '{{}}') AS entities
FROM {schema}.memories m
WHERE m.tenant_id = %(tenant_id)s AND m.id = ANY(%(ids)s::bigint[])
ORDER BY m.id

-- name: version_links
-- The memories linked to some of a tenant's memories by a correction: those they superseded,
-- and those that superseded them (retrieval.memory.history walks the links).
SELECT id, superseded_by FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s
  AND (id = ANY(%(ids)s::bigint[]) OR superseded_by = ANY(%(ids)s::bigint[]))

-- name: decisions_by_id
-- Decisions by id; {decision} is a stored decision's columns (retrieval.memory.fields).
SELECT {decision}
FROM {schema}.decisions
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])
ORDER BY id

-- name: tool_calls_by_id
-- Tool calls by id; {tool_call} is a stored tool call's columns (retrieval.memory.fields).
SELECT {tool_call}
FROM {schema}.tool_calls
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])
ORDER BY id

-- name: existing_decisions
-- Which of the ids are stored decisions of the tenant.
SELECT id FROM {schema}.decisions
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])

-- name: forget
-- One statement per call: the selected decisions (by id or task) go with their tool calls;
-- everything = true takes all three kinds of rows (and forget_the_rest the tenant's other rows).
WITH chosen_decisions AS (
    SELECT id FROM {schema}.decisions
    WHERE tenant_id = %(tenant_id)s
      AND (%(everything)s OR id = ANY(%(decision_ids)s::bigint[]) OR task_id = %(task_id)s)
), removed_tool_calls AS (
    DELETE FROM {schema}.tool_calls
    WHERE tenant_id = %(tenant_id)s
      AND (%(everything)s OR id = ANY(%(tool_call_ids)s::bigint[])
           OR decision_id IN (SELECT id FROM chosen_decisions))
    RETURNING id
), removed_decisions AS (
    DELETE FROM {schema}.decisions
    WHERE tenant_id = %(tenant_id)s AND id IN (SELECT id FROM chosen_decisions)
    RETURNING id
), removed_memories AS (
    -- Their BM25 statistics are taken back by the memories' triggers (revision 0010).
    DELETE FROM {schema}.memories
    WHERE tenant_id = %(tenant_id)s
      AND (%(everything)s OR id = ANY(%(memory_ids)s::bigint[]))
    RETURNING id, content, embedding_model, thread_id, position, kind, created_at
)
SELECT (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM removed_memories),
       (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM removed_decisions),
       (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM removed_tool_calls),
       (SELECT coalesce(array_agg(content ORDER BY id), '{{}}') FROM removed_memories),
       (SELECT coalesce(array_agg(embedding_model ORDER BY id), '{{}}') FROM removed_memories),
       (SELECT coalesce(array_agg(thread_id ORDER BY id)
                        FILTER (WHERE thread_id IS NOT NULL AND position IS NOT NULL), '{{}}')
        FROM removed_memories),
       (SELECT coalesce(array_agg(position ORDER BY id)
                        FILTER (WHERE thread_id IS NOT NULL AND position IS NOT NULL), '{{}}')
        FROM removed_memories),
       (SELECT coalesce(array_agg(id ORDER BY id)
                        FILTER (WHERE kind = %(message_kind)s AND thread_id IS NULL), '{{}}')
        FROM removed_memories),
       (SELECT coalesce(array_agg(created_at ORDER BY id)
                        FILTER (WHERE kind = %(message_kind)s AND thread_id IS NULL), '{{}}')
        FROM removed_memories)

-- name: forget_expired
-- The next batch of a tenant's expired memories (retired ones too), removed; their BM25
-- statistics are taken back by the memories' triggers.
WITH removed AS (
    DELETE FROM {schema}.memories
    WHERE tenant_id = %(tenant_id)s AND id IN (
        SELECT id FROM {schema}.memories
        WHERE tenant_id = %(tenant_id)s AND expires_at <= now()
        ORDER BY expires_at, id
        LIMIT %(batch)s
    )
    RETURNING id, content, embedding_model, thread_id, position, kind, created_at
)
SELECT coalesce(array_agg(id ORDER BY id), '{{}}'),
       coalesce(array_agg(content ORDER BY id), '{{}}'),
       coalesce(array_agg(embedding_model ORDER BY id), '{{}}'),
       coalesce(array_agg(thread_id ORDER BY id)
                FILTER (WHERE thread_id IS NOT NULL AND position IS NOT NULL), '{{}}'),
       coalesce(array_agg(position ORDER BY id)
                FILTER (WHERE thread_id IS NOT NULL AND position IS NOT NULL), '{{}}'),
       coalesce(array_agg(id ORDER BY id)
                FILTER (WHERE kind = %(message_kind)s AND thread_id IS NULL), '{{}}'),
       coalesce(array_agg(created_at ORDER BY id)
                FILTER (WHERE kind = %(message_kind)s AND thread_id IS NULL), '{{}}')
FROM removed

-- name: revive_superseded
-- After forget by id: the memories that the forgotten ones superseded are live again (the
-- correction is erased, as if it had never been told), but those whose text a live memory now
-- holds at the same place (of several with one text, all but the newest), which stay retired
-- with no newer version. Every such memory comes back with whether it lives again.
WITH retired AS (
    SELECT m.id, m.content_key, m.kind, m.thread_id, m.position, m.distinct_copy,
           row_number() OVER (
               PARTITION BY m.distinct_copy, m.content_key, m.kind, coalesce(m.thread_id, ''),
                            coalesce(m.position, -1)
               ORDER BY m.created_at DESC, m.id DESC) AS newest
    FROM {schema}.memories AS m
    WHERE m.tenant_id = %(tenant_id)s AND m.superseded_by = ANY(%(ids)s::bigint[])
), revivable AS (
    SELECT r.id FROM retired AS r
    WHERE r.distinct_copy OR (r.newest = 1 AND NOT EXISTS (
        SELECT 1 FROM {schema}.memories AS l
        WHERE l.tenant_id = %(tenant_id)s AND l.content_key = r.content_key AND l.kind = r.kind
          AND coalesce(l.thread_id, '') = coalesce(r.thread_id, '')
          AND coalesce(l.position, -1) = coalesce(r.position, -1)
          AND l.retired_at IS NULL AND NOT l.distinct_copy))
)
UPDATE {schema}.memories AS m
SET superseded_by = NULL,
    retired_at = CASE WHEN m.id IN (SELECT id FROM revivable) THEN NULL ELSE m.retired_at END
WHERE m.tenant_id = %(tenant_id)s AND m.id IN (SELECT id FROM retired)
RETURNING m.id, m.retired_at IS NULL AS revived

-- name: orphan_superseded
-- After forget of the expired: the memories that an expired correction now forgotten had
-- superseded stay retired (they ended when it came), with no newer version.
UPDATE {schema}.memories SET superseded_by = NULL
WHERE tenant_id = %(tenant_id)s AND superseded_by = ANY(%(ids)s::bigint[])

-- name: live_texts
-- Which of the texts a live memory of the tenant still holds (found by their text keys).
SELECT DISTINCT content FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s
  AND content_key = ANY(ARRAY(SELECT {schema}.text_key(t) FROM unnest(%(texts)s::text[]) AS t))
  AND content = ANY(%(texts)s::text[]) AND retired_at IS NULL AND NOT distinct_copy

-- name: text_keys
-- The server's text keys (the memories' content_key) of texts, in the order given: for the
-- texts whose key Python does not compute as the server does (retrieval.memory.text_key).
SELECT {schema}.text_key(t.content)
FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(content, n)
ORDER BY t.n

-- name: turns_after
-- The turns within %(reach)s places after the given (thread, position) places of a tenant's
-- threads, with their kinds and the model of their vectors.
SELECT DISTINCT m.thread_id, m.position, m.id, m.content, m.kind, m.embedding_model
FROM unnest(%(threads)s::text[], %(positions)s::int[]) AS p(thread_id, position)
JOIN {schema}.memories AS m
  ON m.tenant_id = %(tenant_id)s AND m.thread_id = p.thread_id
 AND m.position BETWEEN p.position + 1 AND p.position + %(reach)s

-- name: messages_after
-- The tenant's messages without a thread told after each removed one (%(times)s, %(ids)s) that
-- may hold its share (retired ones too): those told at most %(gap)s later, and the first
-- %(reach)s after it (a run of one speaker that goes on past the gap), in any namespace (a vector
-- written before sessions kept to a namespace may hold it), with the model of their vectors and
-- their namespaces: rows of (ordinal, ...), each removed one's in the order told.
SELECT t.ordinal, m.id, m.content, m.created_at, m.embedding_model, m.namespace
FROM unnest(%(times)s::timestamptz[], %(ids)s::bigint[]) WITH ORDINALITY AS t(at, id, ordinal)
CROSS JOIN LATERAL (
    (SELECT m.id, m.content, m.created_at, m.embedding_model, m.namespace
     FROM {schema}.memories AS m
     WHERE m.tenant_id = %(tenant_id)s AND m.kind = %(kind)s AND m.thread_id IS NULL
       AND (m.created_at, m.id) > (t.at, t.id) AND m.created_at <= t.at + %(gap)s)
    UNION
    (SELECT m.id, m.content, m.created_at, m.embedding_model, m.namespace
     FROM {schema}.memories AS m
     WHERE m.tenant_id = %(tenant_id)s AND m.kind = %(kind)s AND m.thread_id IS NULL
       AND (m.created_at, m.id) > (t.at, t.id)
     ORDER BY m.created_at, m.id
     LIMIT %(reach)s)
) AS m
ORDER BY t.ordinal, m.created_at, m.id

-- name: set_embedding
UPDATE {schema}.memories SET embedding = %(embedding)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s

-- name: forget_cache_entries
DELETE FROM {schema}.embedding_cache WHERE tenant_id = %(tenant_id)s AND key = ANY(%(keys)s::bytea[])

-- name: forget_the_rest
-- After forget with everything = true: the tenant's cache, documents (their chunks and postings
-- go with them, ON DELETE CASCADE), their statistics and its ingest keys (a forgotten row keeps
-- its key, so its file would not store it again; a forgotten tenant does not). A statement of
-- its own, sent only then: a CTE whose condition is false leaves Citus no shard to name.
WITH removed_cache AS (
    DELETE FROM {schema}.embedding_cache WHERE tenant_id = %(tenant_id)s
    RETURNING 1
), removed_documents AS (
    DELETE FROM {schema}.documents WHERE tenant_id = %(tenant_id)s
    RETURNING doc_id
), removed_term_stats AS (
    DELETE FROM {schema}.document_term_stats WHERE tenant_id = %(tenant_id)s
), removed_corpus AS (
    DELETE FROM {schema}.document_corpus WHERE tenant_id = %(tenant_id)s
), removed_ingest_keys AS (
    DELETE FROM {schema}.ingest_keys WHERE tenant_id = %(tenant_id)s
)
SELECT (SELECT count(*) FROM removed_cache),
       (SELECT coalesce(array_agg(doc_id ORDER BY doc_id), '{{}}') FROM removed_documents)

-- name: insert_cached
-- A tenant's memories whose vectors the cache holds, sent as arrays without them and each
-- joined to its cached vector (retrieval.memory.cached_memories). The lateral lookup keeps the
-- order sent (by text key: concurrent writers of the same texts lock them in one order) with
-- no sort of the vectors (an ORDER BY spilled 5,000 of them to disk). {refresh_copies}: a copy
-- of a live memory refreshes it (retrieval.memory.copies), every row coming back with its key.
-- {columns}, {values}, {arrays} and {names}: the fields sent as arrays (retrieval.memory.fields).
INSERT INTO {schema}.memories (tenant_id, {columns}, embedding)
SELECT c.tenant_id, {values}, c.embedding
FROM unnest({arrays}, %(keys)b::bytea[]) WITH ORDINALITY AS s ({names}, cache_key, sent)
CROSS JOIN LATERAL (
    SELECT c.tenant_id, c.embedding FROM {schema}.embedding_cache AS c
    WHERE c.tenant_id = %(tenant_id)s AND c.key = s.cache_key
) AS c
{refresh_copies}

-- name: insert_sent
-- A tenant's memories sent with their vectors, as arrays (one parameter per column: a batch of
-- a thousand rows is one short statement), in the order sent (unnest's); copies of live
-- memories refresh them ({refresh_copies}). {vector_type} is the column's type; {columns},
-- {values}, {arrays} and {names}: the fields sent as arrays (retrieval.memory.fields).
INSERT INTO {schema}.memories (tenant_id, {columns}, embedding)
SELECT %(tenant_id)s, {values}, s.embedding
FROM unnest({arrays}, %(embeddings)b::{vector_type}[]) WITH ORDINALITY
     AS s ({names}, embedding, sent)
{refresh_copies}

-- name: refresh_copies
-- The end of a write of memories: a copy of a live memory (the same tenant, text key, kind,
-- place in its thread and namespace: the memories_live_key index, revisions 0016 and 0018)
-- stores no row but refreshes that memory: told once more, last seen at the copy's time, the
-- larger importance, and the later expiry (none: never). Every row comes back with its key, whether it was new, and the
-- stored text (a copy told in other whitespace does not keep a cache entry of its own).
ON CONFLICT (tenant_id, content_key, kind, (coalesce(thread_id, '')), (coalesce(position, -1)),
             namespace)
    WHERE retired_at IS NULL AND NOT distinct_copy
DO UPDATE SET
    seen_count = memories.seen_count + excluded.seen_count,
    last_seen_at = greatest(memories.last_seen_at, excluded.last_seen_at, excluded.created_at),
    importance = greatest(memories.importance, excluded.importance),
    expires_at = CASE WHEN memories.expires_at IS NULL OR excluded.expires_at IS NULL THEN NULL
                      ELSE greatest(memories.expires_at, excluded.expires_at) END
RETURNING tenant_id, id, content_key, kind, thread_id, position, xmax = 0 AS inserted, content,
          namespace

-- name: retire_expired_copies
-- Before a batch of a tenant's memories is written: a live memory of the same text key that
-- has expired is retired at its expiry (for reads nothing changes: it ended then), so that a
-- new copy is stored as a new memory instead of reviving it, and the past stays as it was.
UPDATE {schema}.memories SET retired_at = expires_at
WHERE tenant_id = %(tenant_id)s AND content_key = ANY(%(keys)b::bytea[])
  AND retired_at IS NULL AND NOT distinct_copy AND expires_at <= now()

-- name: has_expired
-- Whether a tenant holds a live memory that has expired (its expiry index).
SELECT 1 FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s AND expires_at <= now() AND retired_at IS NULL
LIMIT 1

-- name: superseded_targets
-- The memories a batch supersedes, locked until it commits.
SELECT id, created_at, retired_at, superseded_by FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])
ORDER BY id
FOR UPDATE

-- name: retire
-- Retire memories at a time, naming the memory that supersedes them.
UPDATE {schema}.memories SET retired_at = %(at)s, superseded_by = %(by)s
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[]) AND retired_at IS NULL

-- name: reembed_pending
-- Memories (of a tenant, or all) not embedded by the model.
SELECT count(*) FROM {schema}.memories
WHERE embedding_model <> %(model)s
  AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)

-- name: reembed_next_batch
-- The next rows to re-embed after (after_tenant, after_id), skipping rows another run holds.
SELECT tenant_id, id, content, thread_id, position, kind, created_at, namespace
FROM {schema}.memories
WHERE embedding_model <> %(model)s
  AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
  AND (tenant_id, id) > (%(after_tenant)s::text, %(after_id)s::bigint)
ORDER BY tenant_id, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: reembed_update
UPDATE {schema}.memories AS m
SET embedding = u.embedding, embedding_model = %(model)s
FROM unnest(%(ids)s::bigint[], %(embeddings)s::vector[]) AS u(id, embedding)
WHERE m.tenant_id = %(tenant_id)s AND m.id = u.id

-- name: next_positions
-- The position after the last stored turn of each of a tenant's threads.
SELECT thread_id, max(position) + 1 FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s AND thread_id = ANY(%(threads)s::text[])
GROUP BY thread_id

-- name: export_memories
-- A tenant's memories in the order they were stored, with their entity ids; {memory} is the
-- columns an export writes (retrieval.memory.fields).
SELECT m.id, m.created_at, m.retired_at, m.superseded_by, {memory},
       coalesce((SELECT array_agg(e.entity_id ORDER BY e.entity_id)
                   FROM {schema}.memory_entities e
                  WHERE e.tenant_id = %(tenant_id)s AND e.memory_id = m.id), '{{}}') AS entities
FROM {schema}.memories m
WHERE m.tenant_id = %(tenant_id)s
ORDER BY m.created_at, m.id

-- name: export_corrections
-- A tenant's retired memories and the memory that superseded each.
SELECT id, superseded_by FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s AND superseded_by IS NOT NULL

-- name: held_memories
-- Which of the ids are memories of the tenant, with their text and time (an export's line
-- that describes a row the tenant holds is that row).
SELECT id, content, created_at FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])

-- name: export_decisions
-- A tenant's decisions; {decision} is the columns an export writes (retrieval.memory.fields).
SELECT id, created_at, {decision} FROM {schema}.decisions
WHERE tenant_id = %(tenant_id)s
ORDER BY created_at, id

-- name: export_tool_calls
-- A tenant's tool calls; {tool_call} is the columns an export writes (retrieval.memory.fields).
SELECT id, created_at, decision_id, {tool_call} FROM {schema}.tool_calls
WHERE tenant_id = %(tenant_id)s
ORDER BY created_at, id

-- name: known_ingest_keys
-- The keys among %(keys)s a tenant's earlier ingests stored, with the rows they made.
SELECT key, item, row_id FROM {schema}.ingest_keys
WHERE tenant_id = %(tenant_id)s AND key = ANY(%(keys)s::text[])

-- name: turns_at
-- The texts and kinds of a tenant's memories of one namespace at the given (thread, position)
-- places, but those that have expired (a new turn does not take the share of one that
-- forget(expired) will remove).
SELECT m.thread_id, m.position, m.content, m.kind
FROM unnest(%(threads)s::text[], %(positions)s::int[]) AS p(thread_id, position)
JOIN {schema}.memories AS m
  ON m.tenant_id = %(tenant_id)s AND m.thread_id = p.thread_id AND m.position = p.position
 AND m.namespace = %(namespace)s::text[]
 AND (m.expires_at IS NULL OR m.expires_at > now())

-- name: messages_before
-- For each time of %(times)s (NULL: now), stored id of %(ids)s (NULL: a message not yet
-- stored) and count of %(reaches)s, the texts of the tenant's latest live messages without a
-- thread of the namespace %(namespace)s told before it, at most that many, none more than that many gaps (%(gap)s) earlier,
-- that were live then and have not expired since: rows of (ordinal, text, created_at), the
-- latest first.
SELECT t.ordinal, p.content, p.created_at
FROM unnest(%(times)s::timestamptz[], %(ids)s::bigint[], %(reaches)s::int[])
     WITH ORDINALITY AS t(at, id, reach, ordinal)
CROSS JOIN LATERAL (
    SELECT m.content, m.created_at, m.id FROM {schema}.memories AS m
    WHERE m.tenant_id = %(tenant_id)s AND m.kind = %(kind)s AND m.thread_id IS NULL
      AND m.namespace = %(namespace)s::text[] AND m.retired_at IS NULL
      AND (m.expires_at IS NULL OR m.expires_at > greatest(now(), t.at))
      AND (m.created_at, m.id) < (coalesce(t.at, now()), coalesce(t.id, 9223372036854775807))
      AND m.created_at >= coalesce(t.at, now()) - %(gap)s * t.reach
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT t.reach
) AS p
ORDER BY t.ordinal, p.created_at DESC, p.id DESC

-- name: similar
-- A tenant's live memories (of a kind, of a namespace, when given) nearest a vector by L2 on the
-- HNSW graph (iterating until the pool is full), with their cosine similarity; those at or
-- above the threshold, most similar first.
-- Live as a search without as_of sees them: neither retired nor expired by now (a memory whose
-- correction is dated later is live until then).
SELECT n.id, n.similarity FROM (
    SELECT m.id, 1.0::float8 - (m.embedding <=> %(vector)s::vector)::float8 AS similarity,
           m.embedding <-> %(vector)s::vector AS distance
    FROM {schema}.memories AS m
    WHERE m.tenant_id = %(tenant_id)s AND (m.retired_at IS NULL OR m.retired_at > now())
      AND (m.expires_at IS NULL OR m.expires_at > now())
      AND (%(kind)s::text IS NULL OR m.kind = %(kind)s::text)
      AND (%(namespace)s::text[] IS NULL OR m.namespace = %(namespace)s::text[])
      AND m.id <> ALL(%(exclude)s::bigint[])
    ORDER BY distance
    LIMIT %(pool)s
) AS n
WHERE n.similarity >= %(threshold)s::float8
ORDER BY n.similarity DESC, n.id
LIMIT %(limit)s

-- name: namespace_ids
-- The ids of a tenant's memories, live or retired, in a namespace or below it
-- ({in_namespace}: read_metadata.namespace on m).
SELECT m.id FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND {in_namespace}

-- name: namespaces
-- A tenant's namespaces that hold live memories, each cut to its first %(max_depth)s names
-- (NULL: all of them), among those that begin with %(prefix)s and end with %(suffix)s ('*'
-- stands for any one name), in order, a page of %(limit)s from %(offset)s.
SELECT DISTINCT m.namespace[1:coalesce(%(max_depth)s::int, cardinality(m.namespace))] AS namespace
FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND cardinality(m.namespace) > 0
  AND m.retired_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
  AND cardinality(m.namespace) >= greatest(cardinality(%(prefix)s::text[]),
                                           cardinality(%(suffix)s::text[]))
  AND NOT EXISTS (
      SELECT 1 FROM unnest(%(prefix)s::text[]) WITH ORDINALITY AS p (name, i)
      WHERE p.name <> '*' AND p.name IS DISTINCT FROM m.namespace[p.i])
  AND NOT EXISTS (
      SELECT 1 FROM unnest(%(suffix)s::text[]) WITH ORDINALITY AS p (name, i)
      WHERE p.name <> '*' AND p.name IS DISTINCT FROM
            m.namespace[cardinality(m.namespace) - cardinality(%(suffix)s::text[]) + p.i])
ORDER BY 1
LIMIT %(limit)s OFFSET %(offset)s

-- name: keyed_live
-- A tenant's memories under some keys that are not retired, with their namespaces, whether they
-- have expired and when they were stored, and the transaction's time, locked until the
-- transaction ends (a new version retires them).
SELECT id, key, namespace, coalesce(expires_at <= now(), false) AS expired, created_at,
       now() AS now
FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s AND key = ANY(%(keys)s::text[]) AND retired_at IS NULL
ORDER BY id
FOR UPDATE

-- name: retire_at_expiry
-- Expired memories retired at their expiry (they ended then: for reads nothing changes), with
-- no newer version.
UPDATE {schema}.memories SET retired_at = expires_at
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[]) AND retired_at IS NULL
