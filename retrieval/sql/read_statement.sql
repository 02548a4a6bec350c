-- The read path's one statement (retrieval.search.statement.render): a CTE per source, their
-- rows in one UNION ALL.

-- name: statement
-- The CTEs {ctes}, then the rows of every source {selects}.
WITH {ctes}
{selects}

-- name: select
-- The rows of the CTE {cte}, in the statement's columns {columns}.
SELECT {columns} FROM {cte}

-- name: details_as_text
-- The evidence, out as JSON text: decoded only for the candidates that are returned.
details::text AS details

-- name: no_context
-- The two columns a context row adds (the hit it is next to, and how far), empty.
NULL::bigint AS hit_id, NULL::int AS "offset"
