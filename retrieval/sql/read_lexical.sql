-- Exact and fuzzy matching (retrieval.search.statement.lexical): a row's text {column} against
-- the whole query, and how the scores combine with the source's own relevance {base}.

-- name: normalized
-- The text {column} lower-cased, its punctuation and runs of space made one space.
btrim(regexp_replace(lower({column}), '\W+', ' ', 'g'))

-- name: scores
-- lex.exact (exact 1.0, case-insensitive 0.98, normalized {normalized} 0.95), lex.fuzzy
-- (pg_trgm similarity) and lex.tokens (0.4 * jaccard + 0.6 * coverage of the query's words).
CROSS JOIN LATERAL (
        SELECT CASE
                   WHEN {column} = %(lexical_query)s THEN 1.0::float8
                   WHEN lower({column}) = lower(%(lexical_query)s) THEN 0.98::float8
                   WHEN %(query_normalized)s <> '' AND {normalized} = %(query_normalized)s
                   THEN 0.95::float8
                   ELSE 0.0::float8
               END AS exact,
               similarity({column}, %(lexical_query)s)::float8 AS fuzzy,
               CASE WHEN cardinality(%(query_words)s::text[]) = 0 THEN 0.0::float8 ELSE
                   0.4 * w.common / (cardinality(%(query_words)s::text[]) + w.own - w.common)
                   + 0.6 * w.common / cardinality(%(query_words)s::text[])
               END AS tokens
        FROM (
            SELECT count(*) FILTER (WHERE t.word = ANY(%(query_words)s::text[]))::float8
                       AS common,
                   count(*)::float8 AS own
            FROM (
                SELECT DISTINCT word
                FROM unnest(regexp_split_to_array({normalized}, ' ')) AS word
                WHERE word <> ''
            ) AS t
        ) AS w
    ) AS lex

-- name: max
-- The best of the three scores and {base}.
GREATEST(lex.exact, lex.fuzzy, lex.tokens, {base})

-- name: weighted
-- The scores and {base} weighted by lexical_weights, capped at 1.
LEAST(1.0::float8, %(lexical_exact)s::float8 * lex.exact + %(lexical_fuzzy)s::float8 * lex.fuzzy + %(lexical_tokens)s::float8 * lex.tokens + %(lexical_semantic)s::float8 * {base})

-- name: cascade
-- The first score that reaches its threshold, else {base}.
CASE WHEN lex.exact >= %(cascade_exact)s::float8 THEN lex.exact WHEN lex.fuzzy >= %(cascade_fuzzy)s::float8 THEN lex.fuzzy WHEN lex.tokens >= %(cascade_tokens)s::float8 THEN lex.tokens ELSE {base} END

-- name: evidence
-- 'lexical' and its scores, the source's own relevance {base} (named {base_name}) and how
-- they were combined ({how}), pairs of the result's json_build_object.
'lexical', json_build_object('exact', lex.exact, 'fuzzy', lex.fuzzy, 'tokens', lex.tokens, '{base_name}', {base}, 'combined_by', '{how}')
