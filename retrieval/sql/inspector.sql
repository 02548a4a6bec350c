-- The inspector's reads (retrieval ui) besides the timeline: what each tenant holds, a
-- memory's thread, the size of a task. Loaded by retrieval.db.queries; {schema} is the quoted
-- schema, values are %(name)s.

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

-- name: decision_tool_calls
-- The tool calls that carried out a decision, oldest first.
SELECT id, tool_name, result, created_at
FROM {schema}.tool_calls
WHERE tenant_id = %(tenant_id)s AND decision_id = %(decision_id)s
ORDER BY created_at, id
LIMIT %(limit)s
