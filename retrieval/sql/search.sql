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
     AND {live}
ORDER BY h.hit_id, m.position, m.id

-- name: record_access
UPDATE {schema}.memories SET access_count = access_count + 1, last_accessed_at = now()
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])

-- name: timeline_window
-- What every branch of the timeline keeps ({t}: its table's alias, {item}: its item, {kind}:
-- its kind): the tenant's rows with since <= created_at < until, of the kinds asked, and with
-- a cursor (after_at, after_item, after_id) only those after it in the timeline's order; with
-- a past moment asked about (known_at), those stored by then.
{t}.tenant_id = %(tenant_id)s
   AND (%(since)s::timestamptz IS NULL OR {t}.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR {t}.created_at < %(until)s)
   AND (%(after_at)s::timestamptz IS NULL OR {t}.created_at < %(after_at)s
        OR ({t}.created_at = %(after_at)s
            AND ('{item}' > %(after_item)s::text
                 OR ('{item}' = %(after_item)s::text AND {t}.id < %(after_id)s::bigint))))
   AND (%(kinds)s::text[] IS NULL OR {kind} = ANY(%(kinds)s::text[]))
   AND (%(known_at)s::timestamptz IS NULL OR {t}.created_at <= %(known_at)s::timestamptz)

-- name: timeline
-- A tenant's memories, decisions and tool calls, newest first (then by item, then newest id),
-- each branch kept by its window ({memory_window}, ...), filtered by a thread (memories) or a
-- task (decisions and their tool calls) or a namespace (memories in it or below it; decisions
-- and tool calls lie in none), memories live at as_of unless include_retired; each branch reads
-- its own (tenant, created_at) index and stops at the limit.
(SELECT 'semantic' AS source, 'memory' AS item, m.id, m.kind, m.content, m.created_at,
        jsonb_build_object('metadata', m.metadata, 'importance', m.importance,
                           'seen_count', m.seen_count, 'expires_at', m.expires_at,
                           'retired_at', m.retired_at, 'superseded_by', m.superseded_by,
                           'namespace', m.namespace, 'key', m.key)
            AS details,
        m.thread_id, m.position, NULL::text AS task_id
 FROM {schema}.memories AS m
 WHERE {memory_window}
   AND (%(include_retired)s OR ({memory_live}))
   AND (%(thread_id)s::text IS NULL OR m.thread_id = %(thread_id)s)
   AND %(task_id)s::text IS NULL
   AND (%(namespace)s::text[] IS NULL OR ({in_namespace}))
 ORDER BY m.created_at DESC, m.id DESC LIMIT %(limit)s)
UNION ALL
(SELECT 'episodic', 'decision', d.id, 'decision', d.content, d.created_at,
        jsonb_build_object('task_id', d.task_id, 'action_type', d.action_type,
                           'status', d.status),
        NULL, NULL, d.task_id
 FROM {schema}.decisions AS d
 WHERE {decision_window}
   AND %(thread_id)s::text IS NULL
   AND %(namespace)s::text[] IS NULL
   AND (%(task_id)s::text IS NULL OR d.task_id = %(task_id)s)
 ORDER BY d.created_at DESC, d.id DESC LIMIT %(limit)s)
UNION ALL
(SELECT 'episodic', 'tool_call', t.id, 'tool_call',
        t.tool_name || ' ' || t.params::text || COALESCE(' -> ' || t.result, ''), t.created_at,
        jsonb_build_object('tool_name', t.tool_name, 'params', t.params, 'result', t.result,
                           'decision_id', t.decision_id),
        NULL, NULL, d.task_id
 FROM {schema}.tool_calls AS t
 LEFT JOIN {schema}.decisions AS d ON d.tenant_id = t.tenant_id AND d.id = t.decision_id
 WHERE {tool_call_window}
   AND %(thread_id)s::text IS NULL
   AND %(namespace)s::text[] IS NULL
   AND (%(task_id)s::text IS NULL OR d.task_id = %(task_id)s)
 ORDER BY t.created_at DESC, t.id DESC LIMIT %(limit)s)
ORDER BY created_at DESC, item, id DESC
LIMIT %(limit)s

-- name: tenant_holds
-- Whether a tenant holds anything at all: asked only when a call found nothing, so that a
-- mistyped tenant is named as such rather than read as an empty answer.
SELECT EXISTS (SELECT FROM {schema}.memories WHERE tenant_id = %(tenant_id)s)
    OR EXISTS (SELECT FROM {schema}.decisions WHERE tenant_id = %(tenant_id)s)
    OR EXISTS (SELECT FROM {schema}.tool_calls WHERE tenant_id = %(tenant_id)s)
    OR EXISTS (SELECT FROM {schema}.documents WHERE tenant_id = %(tenant_id)s)
