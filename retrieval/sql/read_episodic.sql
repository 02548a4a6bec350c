-- The episodic source (retrieval.search.statement.episodic): the agent's decisions and tool
-- calls, found by the query's keywords through the word index of revision 0007.

-- name: patterns
-- The keywords' patterns, lower-cased by PostgreSQL once (as ILIKE lower-cases its pattern).
episodic_patterns AS MATERIALIZED (
    SELECT k.keyword, lower(k.pattern) AS pattern, k.position
    FROM unnest(%(keywords)s::text[], %(patterns)s::text[])
         WITH ORDINALITY AS k(keyword, pattern, position)
)

-- name: patterns_capped
-- A query with more keywords than the source reads keeps the rarest the tenant holds: those
-- its vocabulary holds as a token, in the fewest rows first (one probe of its unique key
-- each), then the others (found only inside longer tokens, or not at all).
episodic_patterns AS MATERIALIZED (
    SELECT k.keyword, lower(k.pattern) AS pattern,
           row_number() OVER (ORDER BY k.position) AS position
    FROM (
        SELECT k.keyword, k.pattern, k.position
        FROM unnest(%(keywords)s::text[], %(patterns)s::text[])
             WITH ORDINALITY AS k(keyword, pattern, position)
        LEFT JOIN {schema}.episodic_vocabulary AS v
               ON v.tenant_id = %(tenant_id)s
              AND v.digest = sha256(convert_to(lower(k.keyword), 'UTF8'))
        ORDER BY v.rows IS NULL, v.rows, k.position
        LIMIT %(episodic_keywords)s
    ) AS k
)

-- name: tokens
-- Each keyword's tokens ({tokens}) and how many rows hold them.
episodic_tokens AS MATERIALIZED (
    SELECT k.position, v.id AS token_id, v.rows
    FROM episodic_patterns AS k
    CROSS JOIN LATERAL (
        {tokens}
        OFFSET 0
    ) AS v
)

-- name: vocabulary
-- A keyword's tokens in the tenant's vocabulary, through the trigram index.
SELECT v.id, v.rows FROM {schema}.episodic_vocabulary AS v
        WHERE v.tenant_id = %(tenant_id)s AND v.token LIKE k.pattern

-- name: vocabulary_bound
-- The same for a role bound by row-level security, which cannot use the index for LIKE (not
-- leakproof): the owner's function looks them up for the tenant the session names.
SELECT v.id, v.rows FROM {schema}.episodic_tokens_like(%(tenant_id)s, k.pattern) AS v

-- name: rarity
-- The keywords ranked rarest first.
episodic_rarity AS MATERIALIZED (
    SELECT k.position,
           row_number() OVER (ORDER BY COALESCE(sum(t.rows), 0), k.position) AS rarity
    FROM episodic_patterns AS k
    LEFT JOIN episodic_tokens AS t ON t.position = k.position
    GROUP BY k.position
)

-- name: found
-- Per band, the postings of its rarest keywords in its time range: the rows that can pass the
-- threshold, each once, with {seen} the keywords its postings show. Each band reads one
-- keyword more than the pigeonhole needs: a row that passes shows at least read - lists + 1 of
-- the keywords read; where a band reads every keyword, seen is the exact count.
episodic_found AS MATERIALIZED (
    SELECT h.item, h.row_id, {seen} AS seen,
           min(h.read) = %(episodic_keywords)s::int AS exact
    FROM (
        SELECT p.item, p.row_id, t.position, b.read, b.lists
        FROM (
            -- Open ends as infinities here, not in the postings' condition: under row-level
            -- security an index condition must be leakproof, and PostgreSQL counts COALESCE
            -- as leaky (OFFSET 0 keeps it from being pulled up into the condition).
            SELECT lists, COALESCE(since, '-infinity'::timestamptz) AS since,
                   COALESCE(until, 'infinity'::timestamptz) AS until,
                   LEAST(lists + 1, %(episodic_keywords)s::int) AS read
            FROM unnest(%(episodic_band_lists)s::int[],
                        %(episodic_band_since)s::timestamptz[],
                        %(episodic_band_until)s::timestamptz[]) AS b(lists, since, until)
            OFFSET 0
        ) AS b
        JOIN episodic_rarity AS r ON r.rarity <= b.read
        JOIN episodic_tokens AS t ON t.position = r.position
        CROSS JOIN LATERAL (
            SELECT p.item, p.row_id FROM {schema}.episodic_postings AS p
            WHERE p.tenant_id = %(tenant_id)s AND p.token_id = t.token_id
              AND p.created_at >= b.since AND p.created_at < b.until
            OFFSET 0
        ) AS p
    ) AS h
    GROUP BY h.item, h.row_id  -- a row lies in one band: read and lists are the same
    HAVING {seen} >= min(h.read) - min(h.lists) + 1
)

-- name: seen_bits
-- How many distinct keywords a row's postings show: a bit per keyword OR-ed together,
-- cheaper than count(DISTINCT), which sorts.
bit_count(bit_or(1::bigint << (h.position::int - 1))::bit(64))

-- name: seen_count
-- The same for more keywords than a bigint's bits.
count(DISTINCT h.position)

-- name: hits
-- The rows of {table} found (item {item}), each with its exact count of keywords: from the
-- postings where its band read every keyword, else its text checked against every pattern.
{cte} AS (
    SELECT x.id, x.created_at, x.hits
    FROM episodic_found AS f
    CROSS JOIN LATERAL (
        SELECT x.id, x.created_at,
               CASE WHEN f.exact THEN f.seen
                    ELSE (SELECT count(*) FROM episodic_patterns AS k
                          WHERE x.search_text LIKE k.pattern) END AS hits
        FROM {table} AS x
        WHERE x.tenant_id = %(tenant_id)s AND x.id = f.row_id AND {known} {condition}
        LIMIT 1
    ) AS x
    WHERE f.item = {item}
)

-- name: task_of_decision
-- The decision is of the task asked about.
AND x.task_id = %(task_id)s

-- name: task_of_tool_call
-- The tool call carried out a decision of the task asked about.
AND x.decision_id IN (SELECT d.id FROM {schema}.decisions AS d WHERE d.tenant_id = %(tenant_id)s AND d.task_id = %(task_id)s)

-- name: top
-- The candidate pool of {hits}, by the source's relevance and recency ({recency}, of the
-- row's age computed once: {computed}), of the rows matching at least episodic_min_hits
-- keywords (a common word alone carries no row); only the count of hits per row: the pool's
-- rows get their matched keywords afterwards.
{cte} AS (
    SELECT * FROM (
        SELECT h.id,
               h.hits::float8 / %(episodic_keywords)s::int AS relevance,
               {recency} AS recency,
               h.created_at
        FROM {hits} AS h
        {computed}
        WHERE h.hits >= %(episodic_min_hits)s
    ) AS scored
    ORDER BY %(episodic_relevance)s::float8 * scored.relevance
             + %(episodic_recency)s::float8 * scored.recency DESC,
             scored.created_at DESC, scored.id DESC
    LIMIT %(episodic_candidates)s
)

-- name: matched
-- The keywords the chosen row {alias} matches, in the query's order: its text checked against
-- each pattern again (a few rows), rather than an array built for every row the hits found.
ARRAY(SELECT k.keyword FROM episodic_patterns AS k
                 WHERE {alias}.search_text LIKE k.pattern ORDER BY k.position) AS matched

-- name: decisions
-- The decisions' candidates: relevance, recency and evidence.
episodic_decisions AS (
    SELECT 'episodic'::text AS source, 'decision'::text AS item, d.id, d.content,
           'decision'::text AS kind, d.created_at, {relevance}, t.recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           NULL::float8 AS distance, {matched}, NULL::text[] AS entities,
           json_build_object('task_id', d.task_id, 'action_type', d.action_type,
                              'status', d.status{evidence}) AS details,
           TRUE AS evidence, NULL::bigint[] AS newer, NULL::boolean[] AS newer_near
    FROM decision_top AS t
    JOIN {schema}.decisions AS d ON d.tenant_id = %(tenant_id)s AND d.id = t.id
    {lexical_join}
)

-- name: tool_calls
-- The tool calls' candidates: relevance, recency and evidence.
episodic_tool_calls AS (
    SELECT 'episodic'::text AS source, 'tool_call'::text AS item, c.id,
           c.tool_name || ' ' || c.params::text || COALESCE(' -> ' || c.result, '') AS content,
           'tool_call'::text AS kind, c.created_at, {relevance},
           t.recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           NULL::float8 AS distance, {matched}, NULL::text[] AS entities,
           json_build_object('tool_name', c.tool_name, 'params', c.params,
                              'result', c.result, 'decision_id', c.decision_id
                              {evidence}) AS details,
           TRUE AS evidence, NULL::bigint[] AS newer, NULL::boolean[] AS newer_near
    FROM tool_call_top AS t
    JOIN {schema}.tool_calls AS c ON c.tenant_id = %(tenant_id)s AND c.id = t.id
    {lexical_join}
)

-- name: lexical_relevance
-- The keyword relevance combined with the lexical scores ({combined}).
{combined} AS relevance
