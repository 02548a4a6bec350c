-- The inspector's reads (retrieval ui): what each tenant holds, its events by day, a memory's
-- thread. Loaded by retrieval.db.queries; {schema} is the quoted schema, values are %(name)s.

-- name: holdings
-- Per tenant (every tenant, or only %(tenant_id)s): memories by kind, decisions, tool calls
-- and documents, each with its count and its newest row's time.
(SELECT 'memory' AS item, tenant_id, kind, count(*), max(created_at)
 FROM {schema}.memories
 WHERE %(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s
 GROUP BY tenant_id, kind)
UNION ALL
(SELECT 'decision', tenant_id, NULL, count(*), max(created_at)
 FROM {schema}.decisions
 WHERE %(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s
 GROUP BY tenant_id)
UNION ALL
(SELECT 'tool_call', tenant_id, NULL, count(*), max(created_at)
 FROM {schema}.tool_calls
 WHERE %(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s
 GROUP BY tenant_id)
UNION ALL
(SELECT 'document', tenant_id, NULL, count(*), max(created_at)
 FROM {schema}.documents
 WHERE %(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s
 GROUP BY tenant_id)

-- name: events
-- A tenant's memories, decisions and tool calls with since <= created_at < until, newest
-- first (then by item, then newest id), filtered by kinds, a thread (memories) or a task
-- (decisions and their tool calls); with a cursor (after_at, after_item, after_id), only the
-- events after it in that order: the next page, where rows written together share a time.
(SELECT 'memory' AS item, m.id, m.kind, m.content, m.created_at, m.thread_id, m.position,
        NULL::text AS task_id
 FROM {schema}.memories AS m
 WHERE m.tenant_id = %(tenant_id)s
   AND (%(since)s::timestamptz IS NULL OR m.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR m.created_at < %(until)s)
   AND (%(after_at)s::timestamptz IS NULL OR m.created_at < %(after_at)s
        OR (m.created_at = %(after_at)s
            AND ('memory' > %(after_item)s::text
                 OR ('memory' = %(after_item)s::text AND m.id < %(after_id)s::bigint))))
   AND (%(kinds)s::text[] IS NULL OR m.kind = ANY(%(kinds)s::text[]))
   AND (%(thread_id)s::text IS NULL OR m.thread_id = %(thread_id)s)
   AND %(task_id)s::text IS NULL
 ORDER BY m.created_at DESC, m.id DESC LIMIT %(limit)s)
UNION ALL
(SELECT 'decision', d.id, 'decision', d.action_type || ' (' || d.status || '): ' || d.content,
        d.created_at, NULL, NULL, d.task_id
 FROM {schema}.decisions AS d
 WHERE d.tenant_id = %(tenant_id)s
   AND (%(since)s::timestamptz IS NULL OR d.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR d.created_at < %(until)s)
   AND (%(after_at)s::timestamptz IS NULL OR d.created_at < %(after_at)s
        OR (d.created_at = %(after_at)s
            AND ('decision' > %(after_item)s::text
                 OR ('decision' = %(after_item)s::text AND d.id < %(after_id)s::bigint))))
   AND (%(kinds)s::text[] IS NULL OR 'decision' = ANY(%(kinds)s::text[]))
   AND %(thread_id)s::text IS NULL
   AND (%(task_id)s::text IS NULL OR d.task_id = %(task_id)s)
 ORDER BY d.created_at DESC, d.id DESC LIMIT %(limit)s)
UNION ALL
(SELECT 'tool_call', t.id, 'tool_call',
        t.tool_name || ' ' || t.params::text || COALESCE(' -> ' || t.result, ''),
        t.created_at, NULL, NULL, d.task_id
 FROM {schema}.tool_calls AS t
 LEFT JOIN {schema}.decisions AS d ON d.tenant_id = t.tenant_id AND d.id = t.decision_id
 WHERE t.tenant_id = %(tenant_id)s
   AND (%(since)s::timestamptz IS NULL OR t.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR t.created_at < %(until)s)
   AND (%(after_at)s::timestamptz IS NULL OR t.created_at < %(after_at)s
        OR (t.created_at = %(after_at)s
            AND ('tool_call' > %(after_item)s::text
                 OR ('tool_call' = %(after_item)s::text AND t.id < %(after_id)s::bigint))))
   AND (%(kinds)s::text[] IS NULL OR 'tool_call' = ANY(%(kinds)s::text[]))
   AND %(thread_id)s::text IS NULL
   AND (%(task_id)s::text IS NULL OR d.task_id = %(task_id)s)
 ORDER BY t.created_at DESC, t.id DESC LIMIT %(limit)s)
ORDER BY created_at DESC, item, id DESC
LIMIT %(limit)s

-- name: thread_turns
-- The turns of a thread within %(around)s positions of %(position)s.
SELECT id, kind, content, position, created_at
FROM {schema}.memories
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
  AND position BETWEEN %(position)s - %(around)s AND %(position)s + %(around)s
ORDER BY position, id

-- name: task_size
-- How many decisions of a task there are, and how many tool calls carry them out.
SELECT count(DISTINCT d.id), count(t.id)
FROM {schema}.decisions AS d
LEFT JOIN {schema}.tool_calls AS t ON t.tenant_id = d.tenant_id AND t.decision_id = d.id
WHERE d.tenant_id = %(tenant_id)s AND d.task_id = %(task_id)s
