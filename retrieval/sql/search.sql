-- The read path's fixed statements (the one statement over every source is built by
-- retrieval.search.sources). Loaded by retrieval.db.queries; {schema} is the quoted schema,
-- values are %(name)s.

-- name: neighbors
-- The turns around each hit: memories of its thread within `neighbors` positions of it.
SELECT h.hit_id, m.id, m.content, m.kind, m.position, m.created_at, m.metadata::text
FROM unnest(%(hit_ids)s::bigint[], %(threads)s::text[], %(positions)s::int[])
     AS h(hit_id, thread_id, position)
JOIN {schema}.memories AS m
  ON m.tenant_id = %(tenant_id)s AND m.thread_id = h.thread_id
     AND m.position BETWEEN h.position - %(neighbors)s AND h.position + %(neighbors)s
     AND m.id <> h.hit_id
ORDER BY h.hit_id, m.position, m.id

-- name: record_access
UPDATE {schema}.memories SET access_count = access_count + 1, last_accessed_at = now()
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])

-- name: timeline_window
-- The window of every branch of the timeline: the tenant, since <= created_at < until.
tenant_id = %(tenant_id)s
   AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)

-- name: timeline
-- Memories, decisions and tool calls of a window ({window}), newest first; each branch reads
-- its own (tenant, created_at) index and stops at the limit.
(SELECT 'semantic' AS source, 'memory' AS item, id, kind, content, created_at,
        jsonb_build_object('metadata', metadata, 'importance', importance) AS details
 FROM {schema}.memories
 WHERE {window} AND (%(kinds)s::text[] IS NULL OR kind = ANY(%(kinds)s::text[]))
 ORDER BY created_at DESC, id DESC LIMIT %(limit)s)
UNION ALL
(SELECT 'episodic', 'decision', id, 'decision', content, created_at,
        jsonb_build_object('task_id', task_id, 'action_type', action_type, 'status', status)
 FROM {schema}.decisions
 WHERE {window} AND (%(kinds)s::text[] IS NULL OR 'decision' = ANY(%(kinds)s::text[]))
 ORDER BY created_at DESC, id DESC LIMIT %(limit)s)
UNION ALL
(SELECT 'episodic', 'tool_call', id, 'tool_call',
        tool_name || ' ' || params::text || COALESCE(' -> ' || result, ''), created_at,
        jsonb_build_object('tool_name', tool_name, 'params', params, 'result', result,
                           'decision_id', decision_id)
 FROM {schema}.tool_calls
 WHERE {window} AND (%(kinds)s::text[] IS NULL OR 'tool_call' = ANY(%(kinds)s::text[]))
 ORDER BY created_at DESC, id DESC LIMIT %(limit)s)
ORDER BY created_at DESC, item, id DESC
LIMIT %(limit)s
