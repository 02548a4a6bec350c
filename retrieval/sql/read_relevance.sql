-- Absolute relevance (retrieval.search.statement.relevance): each channel in [0, 1], and the
-- fusions of the dense and lexical channels, chosen by the bound parameter %(fusion)s.

-- name: dense
-- The embedding model's calibrated relevance of the L2 distance {distance}.
LEAST(1.0::float8, GREATEST(0.0::float8, (%(dense_zero_squared)s::float8 - ({distance}) * ({distance})) / %(dense_span_squared)s::float8))

-- name: lexical
-- The BM25 score {bm25} over the query's summed idf {total_idf}, capped at 1 (0 without terms).
LEAST(1.0::float8, COALESCE(({bm25}) / NULLIF({total_idf}, 0.0::float8), 0.0))

-- name: rrf_term
-- A channel's term of reciprocal rank fusion: its weight %({weight})s over rrf_k plus its rank
-- {rank} (0 without a rank).
COALESCE(%({weight})s::float8 / (%(rrf_k)s + {rank}), 0.0)

-- name: fused
-- The channels {lexical} and {dense} fused by %(fusion)s: convex, max, cascade, or rank fusion
-- of {lexical_rrf} and {dense_rrf} over its best possible value.
CASE %(fusion)s
               WHEN 'convex' THEN LEAST(1.0::float8,
                   %(bm25_weight)s::float8 * {lexical} + %(dense_weight)s::float8 * {dense})
               WHEN 'max' THEN GREATEST({lexical}, {dense})
               WHEN 'cascade' THEN CASE WHEN {lexical} >= %(cascade_threshold)s::float8
                                        THEN {lexical} ELSE {dense} END
               WHEN 'rrf' THEN LEAST(1.0::float8, ({lexical_rrf} + {dense_rrf}) / ((%(bm25_weight)s::float8 + %(dense_weight)s::float8) / (%(rrf_k)s + 1)))
           END

-- name: lexical_share
-- The share of the fused relevance that the lexical channel {lexical} gave, in [0, 1].
CASE %(fusion)s
               WHEN 'convex' THEN COALESCE(%(bm25_weight)s::float8 * {lexical}
                   / NULLIF(%(bm25_weight)s::float8 * {lexical} + %(dense_weight)s::float8 * {dense}, 0.0), 0.0)
               WHEN 'max' THEN CASE WHEN {lexical} > {dense} THEN 1.0
                                    WHEN {lexical} < {dense} THEN 0.0 ELSE 0.5 END
               WHEN 'cascade' THEN CASE WHEN {lexical} >= %(cascade_threshold)s::float8
                                        THEN 1.0 ELSE 0.0 END
               WHEN 'rrf' THEN COALESCE({lexical_rrf} / NULLIF({lexical_rrf} + {dense_rrf}, 0.0),
                                        0.0)
           END::float8
