-- Mem0's interface (retrieval.integrations.mem0): a tenant's live memories under a key in the
-- facade's namespace, each a Mem0 memory whose id is its key. Loaded by retrieval.db.queries;
-- {schema} is the quoted schema, values are %(name)s.

-- name: memories
-- The live memories under some keys, each with when its key was first stored (its oldest
-- version's time) and when last (its own).
SELECT m.id, m.key, m.content, m.metadata, m.created_at AS updated_at,
       (SELECT min(v.created_at) FROM {schema}.memories AS v
         WHERE v.tenant_id = %(tenant_id)s AND v.key = m.key AND v.namespace = m.namespace)
           AS created_at
FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND m.namespace = %(namespace)s::text[]
  AND m.key = ANY(%(keys)s::text[])
  AND m.retired_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())

-- name: listed
-- The live memories meeting {conditions} (the scopes, a metadata filter), the last stored
-- first, at most %(limit)s.
SELECT m.id, m.key, m.content, m.metadata, m.created_at AS updated_at,
       (SELECT min(v.created_at) FROM {schema}.memories AS v
         WHERE v.tenant_id = %(tenant_id)s AND v.key = m.key AND v.namespace = m.namespace)
           AS created_at
FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND m.namespace = %(namespace)s::text[]
  AND m.key IS NOT NULL
  AND m.retired_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now()){conditions}
ORDER BY m.created_at DESC, m.id DESC
LIMIT %(limit)s

-- name: versions
-- Every version, live or retired, of the memories under some keys, or meeting the scopes'
-- conditions (each version holds its memory's scopes).
SELECT m.id FROM {schema}.memories AS m
WHERE m.tenant_id = %(tenant_id)s AND m.namespace = %(namespace)s::text[]
  AND m.key IS NOT NULL AND (m.key = ANY(%(keys)s::text[]){scoped})
ORDER BY m.id
