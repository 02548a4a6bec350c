-- Okapi BM25 in SQL, written once (retrieval.search.statement.bm25): a query term's factors, a
-- posting's contribution, and the best rows of a table's postings, exact and pruned. The
-- postings are {terms} (keyed by {key}, their row's length {length}), the statistics {stats}
-- and {corpus} (its size column {count}); the CTEs' names start with {prefix}.

-- name: idf
-- Lucene's idf of a term of document frequency {document_frequency} in the corpus row {corpus}.
ln(1.0 + ({corpus}.n - {document_frequency} + 0.5) / ({document_frequency} + 0.5))

-- name: factors
-- A query term's factors as select-list columns: idf {idf}, idf_k1 (the most the term adds
-- to a row), base and per_length.
{idf} AS idf,
           {idf} * (%(bm25_k1)s::float8 + 1.0) AS idf_k1,
           %(bm25_k1)s::float8 * (1.0 - %(bm25_b)s::float8) AS base,
           %(bm25_k1)s::float8 * %(bm25_b)s::float8 / {corpus}.average_length AS per_length

-- name: contribution
-- What one posting adds to its row's score, from the factors {factors}, the term's frequency
-- {term_frequency} in the row and the row's length {length}.
{factors}.idf_k1 * {term_frequency} / ({term_frequency} + {factors}.base + {factors}.per_length * {length})

-- name: lexemes
-- The query's lexemes, in the configuration %(text_search_config)s.
SELECT DISTINCT lexeme AS term
    FROM unnest(to_tsvector(CAST(%(text_search_config)s AS regconfig), %({query_text})s))

-- name: terms
-- The query's lexemes {lexemes}.
{prefix}_terms AS (
    {lexemes}
)

-- name: terms_capped
-- A query of more words than max_query_words: that many of its lexemes, those the rows hold,
-- rarest first, then those they do not hold.
{prefix}_terms AS MATERIALIZED (
    SELECT q.term
    FROM ({lexemes}) AS q
    LEFT JOIN {stats} AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    ORDER BY t.document_frequency IS NULL, t.document_frequency, q.term
    LIMIT %(max_query_words)s
)

-- name: corpus
-- The tenant's row count and mean length.
{prefix}_corpus AS (
    SELECT {count}::float8 AS n,
           total_terms::float8 / NULLIF({count}, 0) AS average_length
    FROM {corpus} WHERE tenant_id = %(tenant_id)s
)

-- name: weights
-- The query terms the rows hold, each with its factors {factors} and whether it is common.
{prefix}_weights AS MATERIALIZED (
    SELECT q.term,
           {factors},
           t.document_frequency > %(bm25_common_share)s::float8 * c.n AS common
    FROM {prefix}_terms AS q
    JOIN {stats} AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    CROSS JOIN {prefix}_corpus AS c
)

-- name: every_posting
-- Every row's exact BM25 from all the postings of the query's terms ({contribution}), the
-- postings filtered by {extra}, the whole select by {when}.
SELECT p.{key}, sum({contribution}) AS bm25
        FROM {prefix}_weights AS w
        JOIN {terms} AS p ON p.tenant_id = %(tenant_id)s AND p.term = w.term {extra}
        WHERE {when}
        GROUP BY p.{key}

-- name: common_of
-- The common terms' contributions (rest) to the rows of {rows}: each common term's postings
-- probed for all of them at once (one index scan per term).
SELECT p.{key}, sum({contribution}) AS rest
        FROM {prefix}_weights AS w
        JOIN {terms} AS p
          ON p.tenant_id = %(tenant_id)s AND p.term = w.term
             AND p.{key} = ANY (ARRAY({rows}))
        WHERE w.common
        GROUP BY p.{key}

-- name: partial
-- Each row's partial score from the rare terms' postings.
{prefix}_partial AS MATERIALIZED (
    SELECT p.{key}, sum({contribution}) AS partial
    FROM {prefix}_weights AS w
    JOIN {terms} AS p ON p.tenant_id = %(tenant_id)s AND p.term = w.term {extra}
    WHERE NOT w.common
    GROUP BY p.{key}
)

-- name: top
-- The seed ({seed} rows of best partial score), and one row more: the best outside it.
{prefix}_top AS MATERIALIZED (
    SELECT a.{key}, a.partial, row_number() OVER (ORDER BY a.partial DESC, a.{key}) AS place
    FROM (SELECT * FROM {prefix}_partial ORDER BY partial DESC, {key}
          LIMIT {seed} + 1) AS a
)

-- name: seed
-- The seed's exact scores: each common term's postings probed for the seed's rows at once
-- ({common}).
{prefix}_seed AS MATERIALIZED (
    SELECT a.{key}, a.partial + COALESCE(x.rest, 0.0) AS bm25
    FROM {prefix}_top AS a
    LEFT JOIN ({common}
    ) AS x ON x.{key} = a.{key}
    WHERE a.place <= {seed}
)

-- name: bound
-- rest: what the common terms can add at most; theta: the candidates-th best exact score in
-- the seed; outside: the best partial score outside the seed (NULL: the seed holds every row
-- the rare terms found).
{prefix}_bound AS MATERIALIZED (
    SELECT (SELECT COALESCE(sum(idf_k1), 0.0) FROM {prefix}_weights WHERE common) AS rest,
           (SELECT bm25 FROM {prefix}_seed ORDER BY bm25 DESC
            OFFSET %({candidates})s - 1 LIMIT 1) AS theta,
           (SELECT partial FROM {prefix}_top WHERE place = {seed} + 1)
               AS outside
)

-- name: reach
-- The rows the rare terms found that can still reach the top (read by tiers 2 and 3).
{prefix}_reach AS MATERIALIZED (
    SELECT a.{key}, a.partial
    FROM {prefix}_partial AS a, {prefix}_bound AS x
    WHERE a.partial + x.rest >= x.theta
)

-- name: tier
-- Which tier answers exactly: the seed (1), the rows in reach if at most {probe_limit} (2), or
-- every posting (3).
{prefix}_tier AS MATERIALIZED (
    SELECT CASE
               WHEN x.rest = 0.0 AND x.outside IS NULL THEN 1
               WHEN x.theta > x.rest AND (x.outside IS NULL OR x.outside + x.rest < x.theta)
               THEN 1
               WHEN x.theta > x.rest
                    AND (SELECT count(*) FROM {prefix}_reach) <= {probe_limit}
               THEN 2
               ELSE 3
           END AS tier
    FROM {prefix}_bound AS x
)

-- name: bm25
-- The best rows by exact BM25, from the tier that answers ({common}: the common terms of the
-- rows in reach; {every_posting}: tier 3).
{prefix}_bm25 AS (
    SELECT * FROM (
        SELECT s.{key}, s.bm25
        FROM {prefix}_seed AS s
        WHERE (SELECT tier FROM {prefix}_tier) = 1
        UNION ALL
        SELECT a.{key}, a.partial + COALESCE(x.rest, 0.0) AS bm25
        FROM {prefix}_reach AS a
        LEFT JOIN ({common}) AS x ON x.{key} = a.{key}
        WHERE (SELECT tier FROM {prefix}_tier) = 2
        UNION ALL
        {every_posting}
    ) AS scored
    ORDER BY scored.bm25 DESC, scored.{key}
    LIMIT %({candidates})s
)

-- name: seed_size
-- The seed's size: SEED rows per candidate wanted.
{seed} * %({candidates})s

-- name: seed_rows
-- The seed's rows.
SELECT {key} FROM {prefix}_top WHERE place <= {seed}

-- name: reach_rows
-- The rows in reach.
SELECT {key} FROM {prefix}_reach

-- name: tier_3
-- Every posting answers.
(SELECT tier FROM {prefix}_tier) = 3

-- name: posting_condition
-- The caller's condition on the postings p.
AND {condition}
