-- The semantic source (retrieval.search.statement.semantic): memories found by meaning (HNSW)
-- and by their words (GIN). A memory's columns are {columns} (retrieval.memory.fields);
-- {live} is the predicate of a live memory; {kinds} the mode's kinds.

-- name: nearest_exact
-- The dense pool read exactly: the tenant's rows by its btree, each distance {distance}
-- computed once and only the ids sorted; the pool's rows then read whole by the primary key.
semantic_nearest AS MATERIALIZED (
    SELECT {columns}{vector_column}, x.distance
    FROM (
        SELECT y.id, y.distance FROM (
            SELECT m.id, {distance} AS distance FROM {schema}.memories AS m WHERE {where}
            OFFSET 0
        ) AS y
        ORDER BY y.distance
        LIMIT %(semantic_candidates)s
    ) AS x
    JOIN {schema}.memories AS m ON m.tenant_id = %(tenant_id)s AND m.id = x.id
    ORDER BY x.distance
)

-- name: nearest
-- The dense pool {cte}: the tenant's nearest memories through the HNSW graph (pgvector's
-- iterative scan keeps the tenant's filter {where} inside the walk). With a metadata filter
-- it is the walk (semantic_walk) that `nearest_checked` keeps or reads again: a walk may stop
-- short of the pool (hnsw.max_scan_tuples) where the filter keeps few of the rows it visits.
{cte} AS MATERIALIZED (
    SELECT {columns}{vector_column}, {distance} AS distance
    FROM {schema}.memories AS m
    WHERE {where}
    ORDER BY distance
    LIMIT %(semantic_candidates)s
)

-- name: nearest_checked
-- The dense pool of a call with a metadata filter: the walk's rows when it filled the pool;
-- else the rows that meet {where} read exactly, as `nearest_exact` does (the filter kept
-- fewer rows than the pool, or the walk stopped short of them). The planner prices a filter
-- from the table's statistics, not the tenant's: a value common in the table and rare in the
-- tenant walks the graph and may stop short (docs/decisions/0065). Each branch runs or not by
-- the count of the walk's rows (a one-time filter); the exact rows are ordered by their
-- distance plus 0, an order no index gives, so that they are sorted rather than walked again.
semantic_nearest AS MATERIALIZED (
    SELECT w.*
    FROM semantic_walk AS w
    WHERE (SELECT count(*) FROM semantic_walk) >= %(semantic_candidates)s
    UNION ALL
    (SELECT {columns}{vector_column}, x.distance
     FROM (
         SELECT y.id, y.distance FROM (
             SELECT m.id, {distance} AS distance FROM {schema}.memories AS m WHERE {where}
             OFFSET 0
         ) AS y
         WHERE (SELECT count(*) FROM semantic_walk) < %(semantic_candidates)s
         ORDER BY y.distance + 0.0
         LIMIT %(semantic_candidates)s
     ) AS x
     JOIN {schema}.memories AS m ON m.tenant_id = %(tenant_id)s AND m.id = x.id
     ORDER BY x.distance)
)

-- name: include_kinds
-- The row {alias} is of the mode's kinds.
{alias}.kind = ANY(%(include_kinds)s::text[])

-- name: exclude_kinds
-- The row {alias} is of none of the kinds the mode leaves out.
{alias}.kind <> ALL(%(exclude_kinds)s::text[])

-- name: entities
-- The memory n's entity ids among the query's.
ARRAY(SELECT e.entity_id FROM {schema}.memory_entities AS e WHERE e.tenant_id = %(tenant_id)s AND e.memory_id = n.id AND e.entity_id = ANY(%(entity_ids)s::text[]) ORDER BY e.entity_id)

-- name: entity_signal
-- The share of the query's entity ids that the memory links to ({entities}).
cardinality({entities})::float8 / cardinality(%(entity_ids)s::text[])

-- name: mem_corpus
-- The tenant's memory count, mean length and sampled share.
mem_corpus AS MATERIALIZED (
    SELECT memories::float8 AS n, total_terms::float8 / NULLIF(memories, 0) AS average_length,
           sampled_memories::float8 AS sampled_n, text_search_config
    FROM {schema}.memory_corpus WHERE tenant_id = %(tenant_id)s
)

-- name: mem_terms
-- The query's lexemes, in the configuration the tenant's memories were indexed with, and the
-- sample's estimate of their document frequencies ({capped}: the rarest max_query_words).
mem_terms AS MATERIALIZED (
    SELECT q.term, CAST(array_to_tsvector(ARRAY[q.term])::text AS tsquery) AS query,
           COALESCE(t.document_frequency, 0) AS sampled,
           COALESCE(t.document_frequency, 0) * c.n / NULLIF(c.sampled_n, 0.0) AS estimate
    FROM mem_corpus AS c
    CROSS JOIN LATERAL (
        SELECT DISTINCT lexeme AS term
        FROM unnest(to_tsvector(CAST(c.text_search_config AS regconfig), %(query_text)s))
    ) AS q
    LEFT JOIN {schema}.memory_term_stats AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    {capped}
)

-- name: capped
-- The rarest max_query_words lexemes, by the sample's estimate.
ORDER BY estimate, q.term LIMIT %(max_query_words)s

-- name: mem_probed
-- The rarest terms (fewer than {common_sampled} sampled), in ascending estimate, while their
-- estimated memories stay within the row budget.
mem_probed AS MATERIALIZED (
    SELECT term, query FROM (
        SELECT term, query,
               sum(GREATEST(estimate, 1.0)) OVER (ORDER BY estimate, term) AS rows
        FROM mem_terms WHERE sampled < {common_sampled}
    ) AS x
    WHERE rows <= %(memory_bm25_rows)s
)

-- name: mem_fetched
-- Each probed term's live memories and memories a correction replaced ({matching}), at most
-- {fetched} each, with what a candidate needs.
mem_fetched AS MATERIALIZED (
    SELECT w.term, r.*
    FROM mem_probed AS w
    CROSS JOIN LATERAL (
        SELECT {columns}, m.search_vector, {routed_to},
               m.embedding <-> %(query_vector)s::vector AS distance
        FROM {matching}
        LIMIT {fetched}
    ) AS r
)

-- name: matching
-- The tenant's live memories holding the term w, and those a correction replaced ({live}),
-- through the GIN index.
{schema}.memories AS m WHERE m.tenant_id = %(tenant_id)s AND m.search_vector @@ w.query AND {live}

-- name: matching_bound
-- The same for a role bound by row-level security, which cannot use the index for @@ (not
-- leakproof): the owner's function looks the ids up for the tenant the session names.
{schema}.memories_matching(%(tenant_id)s, w.query, {fetched}) AS m WHERE {live}

-- name: mem_weights
-- A probed term's document frequency is the number of its memories (exact below the cap
-- {count_cap}), any other term's the sample's estimate; a lexeme no memory holds has 0.
mem_weights AS MATERIALIZED (
    SELECT w.term, x.document_frequency, x.counted,
           {factors}
    FROM mem_terms AS w
    CROSS JOIN mem_corpus AS c
    LEFT JOIN (SELECT term, count(*) AS rows FROM mem_fetched GROUP BY term) AS r
           ON r.term = w.term
    CROSS JOIN LATERAL (
        SELECT CASE WHEN w.term IN (SELECT term FROM mem_probed)
                         AND COALESCE(r.rows, 0) <= {count_cap}
                    THEN COALESCE(r.rows, 0)
                    ELSE GREATEST(LEAST(w.estimate, c.n), COALESCE(r.rows, 0))
               END AS document_frequency,
               w.term IN (SELECT term FROM mem_probed) AND COALESCE(r.rows, 0) <= {count_cap}
                   AS counted
    ) AS x
)

-- name: mem_total
-- The query's summed idf, its terms, and how many were not counted.
mem_total AS MATERIALIZED (
    SELECT sum(idf) AS total_idf, array_agg(term) AS terms,
           count(*) FILTER (WHERE NOT counted) AS unprobed
    FROM mem_weights
)

-- name: mem_matched
-- The memories the rare terms found beyond the dense pool, in the mode's kinds ({kinds}).
mem_matched AS MATERIALIZED (
    SELECT DISTINCT ON (r.id) {columns}, r.search_vector, r.routed_to, r.distance
    FROM mem_fetched AS r
    WHERE {kinds} AND r.id <> ALL (ARRAY(SELECT id FROM semantic_nearest))
    ORDER BY r.id
)

-- name: mem_pool
-- The candidates of both channels, marked by the channel that found them.
mem_pool AS MATERIALIZED (
    SELECT *, true AS near FROM semantic_nearest
    UNION ALL
    SELECT *, false AS near FROM mem_matched
)

-- name: mem_scores
-- Each candidate's query lexemes (ts_filter keeps the lexemes setweight marked), and from
-- them its BM25 score ({contribution}) and the idf it covers. The marked copy (x.marked, kept
-- apart by OFFSET 0) is read once from the candidate's stored lexemes, which a long text keeps
-- compressed: its length is the candidate's, without reading them again for each term.
mem_scores AS MATERIALIZED (
    SELECT p.id,
           sum({contribution}) AS bm25,
           sum(w.idf) AS covered
    FROM mem_pool AS p
    CROSS JOIN LATERAL (
        SELECT setweight(p.search_vector, 'A', (SELECT terms FROM mem_total)) AS marked OFFSET 0
    ) AS x
    CROSS JOIN LATERAL unnest(ts_filter(x.marked, '{{a}}')) AS u
    JOIN mem_weights AS w ON w.term = u.lexeme
    GROUP BY p.id
)

-- name: mem_ranked
-- The candidates with their BM25 and dense ranks.
mem_ranked AS MATERIALIZED (
    SELECT p.*, COALESCE(s.bm25, 0.0) AS bm25,
           COALESCE(s.covered, 0.0) / NULLIF((SELECT total_idf FROM mem_total), 0.0)
               AS coverage,
           CASE WHEN s.bm25 > 0.0 THEN
               row_number() OVER (ORDER BY COALESCE(s.bm25, 0.0) DESC, p.id) END AS bm25_rank,
           row_number() OVER (ORDER BY p.distance, p.id) AS dense_rank
    FROM mem_pool AS p LEFT JOIN mem_scores AS s ON s.id = p.id
)

-- name: semantic_found
-- The dense pool and the lexical channel's best candidates.
semantic_found AS (
    SELECT * FROM mem_ranked
    WHERE near OR bm25_rank <= %(semantic_candidates)s
)

-- name: routed
-- The candidates of {found}, a memory that a correction replaced (routed_to) in the
-- correction's place: the correction's row, with the scores of the channels that found the
-- memory it replaced and that memory's id (found_through), if the correction is live and meets
-- the call's filters ({conditions}). A question that found a fact finds what corrected it; where
-- that correction was itself corrected by the call's moment, the chain of corrections is
-- followed to its live end (the later ones: each correction's successor, while it was retired
-- by then; a chain that ends in a forgotten or expired memory leads nowhere). A memory found
-- both ways keeps the way that ranks it higher ({better}).
semantic_routed AS MATERIALIZED (
    SELECT DISTINCT ON (n.id) n.*
    FROM (
        SELECT f.*, NULL::bigint AS found_through FROM {found} AS f WHERE f.routed_to IS NULL
        UNION ALL
        SELECT {columns}, {channels}, f.id AS found_through
        FROM {found} AS f
        CROSS JOIN LATERAL (
            WITH RECURSIVE later (id) AS (
                SELECT f.routed_to
                UNION
                SELECT c.superseded_by
                FROM later
                JOIN {schema}.memories AS c ON c.tenant_id = %(tenant_id)s AND c.id = later.id
                WHERE c.superseded_by IS NOT NULL AND c.retired_at <= %(as_of)s::timestamptz
            )
            SELECT later.id FROM later
        ) AS chain
        JOIN {schema}.memories AS s ON s.tenant_id = %(tenant_id)s AND s.id = chain.id
        WHERE f.routed_to IS NOT NULL AND {conditions}
    ) AS n
    ORDER BY n.id, {better}
)

-- name: routed_to
-- The correction that replaced the candidate {alias} by the call's moment, or NULL where it was
-- live then (a candidate is one or the other: live_or_replaced).
CASE WHEN {alias}.retired_at <= %(as_of)s::timestamptz THEN {alias}.superseded_by END AS routed_to

-- name: signals
-- A memory's importance (unset: {neutral}) and popularity signals, of a row n.
COALESCE(n.importance, {neutral}::float8) AS importance,
           LEAST(1.0::float8, log((n.access_count + 1)::float8) / log(101.0::float8))
               AS popularity

-- name: evidence
-- What every memory result carries as evidence (pairs of a json_build_object), of a row n
-- with its distance; c.dense its dense relevance, computed once. {metadata}: the memory's own
-- metadata first (metadata_evidence) where the mode's results carry it, else nothing.
{metadata}'importance', n.importance,
               'access_count', n.access_count, 'last_accessed_at', n.last_accessed_at,
               'embedding_model', n.embedding_model, 'thread_id', n.thread_id,
               'position', n.position, 'namespace', n.namespace, 'key', n.key,
               'inverse_distance', 1.0::float8 / (1.0::float8 + n.distance),
               'dense_relevance', c.dense

-- name: metadata_evidence
-- A memory's own metadata, the first pair of its evidence (a mode's results may leave it out).
'metadata', n.metadata,

-- name: bm25_evidence
-- Both channels' scores and ranks (c.lexical, computed once; its share {share} of the fusion),
-- for the metadata.
'fusion', %(fusion)s::text, 'bm25', n.bm25, 'bm25_rank', n.bm25_rank, 'bm25_relevance', c.lexical, 'lexical_share', {share}, 'coverage', n.coverage, 'dense_rank', n.dense_rank, 'found_by', CASE WHEN n.near THEN 'dense' ELSE 'bm25' END, 'bm25_complete', (SELECT unprobed FROM mem_total) = 0

-- name: cut_or_covered
-- The evidence gate with both channels: near enough by meaning, or covering enough idf.
n.distance <= %(max_distance)s::float8 OR n.coverage >= %(bm25_min_coverage)s::float8

-- name: cut
-- The evidence gate of the dense channel alone.
n.distance <= %(max_distance)s::float8

-- name: semantic
-- The memories' candidates from {found}: relevance, recency, signals and evidence, and whether
-- they pass the evidence gate ({gate}: those that do not are results only when they take an
-- older version's place or fill an answer that would be empty). When each was last told
-- ({told_at}), its channels and its age ({computed}) are computed once and read by name.
semantic AS (
    SELECT 'semantic'::text AS source, 'memory'::text AS item, n.id, n.content, n.kind,
           n.created_at,
           {relevance} AS relevance,
           {recency} AS recency,
           {signals},
           {entity} AS entity,
           n.distance, NULL::text[] AS matched, {entities} AS entities,
           json_build_object(
               {evidence}{lexical_details}{bm25_evidence}{found_through}
           ) AS details,
           {gate} AS evidence, NULL::bigint[] AS newer, NULL::boolean[] AS newer_near,
           n.thread_id, n.position, t.told_at
    FROM {found} AS n
    {told_at}
    {computed}
    {lexical_join}
)

-- name: mem_facts
-- The most relevant memory candidates that state facts in a short statement ({short_fact}:
-- conversation turns aside, and two long texts on one topic are two texts, not versions of
-- one), %(version_candidates)s of them, with when they were last told by the call's moment and
-- their namespaces, vectors and lexemes (read again by the primary key). The lexemes are
-- stripped of their positions here, once: a long text's are stored compressed or out of line,
-- and the pairs of mem_newer would read them again for each pair (what two facts share counts
-- lexemes, not positions). Whether each replaced a memory (under its key, or told so): that is
-- the fact it updates.
mem_facts AS MATERIALIZED (
    SELECT s.id, s.kind, m.namespace, s.told_at, m.embedding, strip(m.search_vector) AS lexemes,
           EXISTS (
               SELECT 1 FROM {schema}.memories AS r
               WHERE r.tenant_id = %(tenant_id)s AND r.superseded_by = s.id
           ) AS replaced
    FROM (
        SELECT s.id, s.kind, s.told_at FROM semantic AS s
        WHERE {short_fact}
        ORDER BY s.relevance DESC, s.id LIMIT %(version_candidates)s
    ) AS s
    JOIN {schema}.memories AS m ON m.tenant_id = %(tenant_id)s AND m.id = s.id
)

-- name: mem_newer
-- Each fact's possible newer versions among the candidates, newest first: of its kind and
-- namespace, told after it and by the call's moment (a memory dated later is no version yet),
-- at a cosine similarity of %(update_similarity)s or more (an update
-- in words may say it with others; a key names an item, as LangGraph's keys do, not a fact);
-- each marked near (TRUE) when its vector is at %(version_similarity)s or more, or from
-- %(version_words_similarity)s on it shares %(version_shared_words)s of their lexemes (the same
-- sentence with another value: the lexemes both hold counted from the lengths of their
-- tsvectors and of their merge, in one pass over each), else close (FALSE) from
-- %(version_words_similarity)s on, else NULL. A newer that is not near is a version only of the
-- facts it is nearest to, within %(version_nearest_margin)s of its highest similarity to any of
-- them, and of none when it replaced one (under its key, or told so): an update names one fact
-- ("Maria got married and her name is now Maria Silva." updates "Maria's last name is Lopez.",
-- not "Maria is vegetarian."). The rank stage keeps those that are versions for the query.
mem_newer AS MATERIALIZED (
    SELECT q.id, array_agg(q.newer ORDER BY q.told_at DESC, q.newer DESC) AS newer,
           array_agg(q.near ORDER BY q.told_at DESC, q.newer DESC) AS newer_near
    FROM (
        SELECT o.id, n.id AS newer, n.told_at, p.near, d.similarity,
               CASE WHEN n.replaced THEN 1.0::float8
                    ELSE max(d.similarity) OVER (PARTITION BY n.id) END AS nearest
        FROM mem_facts AS o
        JOIN mem_facts AS n
          ON n.kind = o.kind AND n.namespace = o.namespace AND n.told_at > o.told_at
         AND n.told_at <= %(as_of)s::timestamptz
        CROSS JOIN LATERAL (SELECT 1.0::float8 - (o.embedding <=> n.embedding) AS similarity) AS d
        CROSS JOIN LATERAL (
            SELECT length(o.lexemes) + length(n.lexemes) - length(o.lexemes || n.lexemes) AS shared
        ) AS w
        CROSS JOIN LATERAL (
            SELECT CASE
                WHEN d.similarity >= %(version_similarity)s::float8 THEN TRUE
                WHEN d.similarity >= %(version_words_similarity)s::float8 THEN
                    w.shared::float8 >= %(version_shared_words)s::float8
                    * (length(o.lexemes) + length(n.lexemes) - w.shared)
            END AS near
        ) AS p
        WHERE d.similarity >= %(update_similarity)s::float8
    ) AS q
    WHERE q.near IS TRUE OR q.similarity >= q.nearest - %(version_nearest_margin)s::float8
    GROUP BY q.id
)

-- name: semantic_versions
-- The memories' candidates, each with its newer versions among them (mem_newer), if any.
semantic_versions AS (
    SELECT {columns} FROM semantic AS s LEFT JOIN mem_newer AS v ON v.id = s.id
)

-- name: semantic_sent
-- The candidates of {rows} the ranking reads: those with the gate's evidence; beyond the gate,
-- the newer versions of a candidate{versions_note} and the %(fallback_results)s most relevant,
-- the nearest where relevance ties at 0 (an empty answer's weak matches).
semantic_sent AS (
    SELECT * FROM {rows} AS s
    WHERE s.evidence{or_newer}
       OR s.id IN (SELECT w.id FROM semantic AS w WHERE NOT w.evidence
                   ORDER BY w.relevance DESC, w.distance, w.id LIMIT %(fallback_results)s)
)

-- name: or_newer
-- A row beyond the gate that is a newer version of a candidate with evidence (mem_newer).
OR s.id IN (SELECT unnest(v.newer) FROM mem_newer AS v JOIN semantic AS e ON e.id = v.id AND e.evidence)
