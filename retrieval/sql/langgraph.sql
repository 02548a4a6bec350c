-- The LangGraph store's items (retrieval.integrations.langgraph): a tenant's live memories that
-- have a key, each an item of its namespace. Loaded by retrieval.db.queries; {schema} is the
-- quoted schema, values are %(name)s.

-- name: item
-- The live item under a key of a namespace, with when its key was first put (its oldest
-- version's time) and when last (its own).
SELECT m.id, m.key, m.namespace, m.metadata, m.created_at AS updated_at,
       (SELECT min(v.created_at) FROM {schema}.memories AS v
         WHERE v.tenant_id = m.tenant_id AND v.key = m.key AND v.namespace = m.namespace)
           AS created_at
FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND m.key = %(key)s AND m.namespace = %(namespace)s::text[]
  AND m.retired_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
ORDER BY m.id DESC
LIMIT 1

-- name: items
-- The live items of a tenant meeting {conditions} (a namespace prefix, a metadata filter),
-- the last put first, a page of %(limit)s from %(offset)s.
SELECT m.id, m.key, m.namespace, m.metadata, m.created_at AS updated_at,
       (SELECT min(v.created_at) FROM {schema}.memories AS v
         WHERE v.tenant_id = m.tenant_id AND v.key = m.key AND v.namespace = m.namespace)
           AS created_at
FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND m.key IS NOT NULL
  AND m.retired_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now()){conditions}
ORDER BY m.created_at DESC, m.id DESC
LIMIT %(limit)s OFFSET %(offset)s

-- name: values_and_first_puts
-- Some keyed memories' values (their metadata), and when each one's key was first put in its
-- namespace.
SELECT m.id, m.metadata,
       (SELECT min(v.created_at) FROM {schema}.memories AS v
        WHERE v.tenant_id = m.tenant_id AND v.key = m.key AND v.namespace = m.namespace)
FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND m.id = ANY(%(ids)s::bigint[])

-- name: versions
-- Every version, live or retired, of the items under some keys (in any namespace: the caller
-- keeps those of the namespaces it deletes from), with their keys and namespaces.
SELECT m.id, m.key, m.namespace FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND m.key = ANY(%(keys)s::text[])

-- name: refresh
-- Items read, their time to live started again: the time between when they were last told
-- (put, or refreshed) and their expiry, from now; now is when they were last told.
UPDATE {schema}.memories
SET expires_at = now() + (expires_at - coalesce(last_seen_at, created_at)), last_seen_at = now()
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])
  AND expires_at IS NOT NULL AND expires_at > now()
