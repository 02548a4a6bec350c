"""The episodic source: the agent's decisions and tool calls, found by the query's keywords.

A decision matches on its content, a tool call on its tool name or its parameters (as JSON
text), case-insensitively, as ``ILIKE '%keyword%'`` would: on the lower-cased ``search_text``
(revision 0006) with ``LIKE`` and the pattern lower-cased once. ``%``, ``_`` and ``\\`` in a
keyword match literally (the patterns come from :func:`retrieval.search.scoring.like_pattern`).
Relevance is the fraction of the query's keywords a row matches (of the rarest
``max_query_words`` when the query has more, see :func:`episodic_ctes`); recency
``0.5 ^ (age / half_life)``.

Rows are found through the word index of revision 0007 (kept by triggers): each keyword finds
its tokens in the tenant's vocabulary (``LIKE`` on a trigram index; a keyword is a substring of
a text exactly when it is a substring of one of its tokens), and the tokens' postings give the
rows, in time order. Only the postings that can hold a row able to pass the threshold are read
(:mod:`retrieval.search.plan.keyword_bands`: by age, the rows need more hits, so only the rarest
keywords' postings are read for older rows). The rows found are counted exactly: from their
postings where their band read every keyword, else by checking their text against every
pattern. They are pre-ranked in SQL by the source's own relevance and recency weights so that
the candidate pool holds the best rows; Python computes the final scores. Why a word index:
docs/decisions/0007-episodic-word-index.md.
"""

from __future__ import annotations

from retrieval.db.queries import quote_schema
from retrieval.search.plan.shape import EpisodicQuery
from retrieval.search.statement.common import known_sql, recency_sql
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.lexical import lexical_evidence, lexical_relevance, lexical_scores

SOURCE = "episodic"
# What each CTE holds, printed above it in docs/statements/.
NOTES = {
    "episodic_patterns": "the query's keywords and their LIKE patterns, lower-cased once",
    "episodic_tokens": "each keyword's tokens in the tenant's vocabulary, with their row counts",
    "episodic_rarity": "the keywords ranked rarest first",
    "episodic_found": "the rows that can pass the threshold, from their bands' rarest postings",
    "decision_hits": "the decisions found, each with its exact count of keywords",
    "decision_top": "the decisions' candidate pool, by the source's relevance and recency",
    "episodic_decisions": "the decisions' candidates: relevance, recency and evidence",
    "tool_call_hits": "the tool calls found, each with its exact count of keywords",
    "tool_call_top": "the tool calls' candidate pool, by the source's relevance and recency",
    "episodic_tool_calls": "the tool calls' candidates: relevance, recency and evidence",
}


def episodic_ctes(schema: str, query: EpisodicQuery) -> tuple[list[Cte], list[str]]:
    """The CTEs of the episodic source and the names of those to select from.

    Parameters: ``tenant_id``, ``keywords``, ``patterns``, ``episodic_keywords`` (how many
    of them it reads: all, or when ``query.capped`` the rarest that many), ``episodic_candidates``,
    ``episodic_half_life``, ``episodic_relevance``, ``episodic_recency``, ``as_of``, the bands
    of :func:`retrieval.search.plan.parameters.band_parameters`, ``task_id`` when used, and the
    lexical parameters
    (:mod:`retrieval.search.statement.lexical`) when ``query.lexical`` is set: a decision's
    content and
    a tool call's tool name are then compared with the whole query, and the scores combined
    with the keyword relevance.
    """
    s = quote_schema(schema)
    ctes = [_patterns(schema, query.capped), *_found(schema, query.many_keywords, query.bound)]
    names: list[str] = []
    if query.decisions:
        task = "AND x.task_id = %(task_id)s" if query.with_task else ""
        ctes += [
            _hits("decision_hits", f"{s}.decisions", 1, task),
            _top("decision_top", "decision_hits"),
            f"""episodic_decisions AS (
    SELECT 'episodic'::text AS source, 'decision'::text AS item, d.id, d.content,
           'decision'::text AS kind, d.created_at, {_relevance(query)}, t.recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           NULL::float8 AS distance, {_matched("d")}, NULL::text[] AS entities,
           json_build_object('task_id', d.task_id, 'action_type', d.action_type,
                              'status', d.status{_evidence(query)}) AS details
    FROM decision_top AS t
    JOIN {s}.decisions AS d ON d.tenant_id = %(tenant_id)s AND d.id = t.id
    {_lexical_join(query, "d.content")}
)""",
        ]
        names.append("episodic_decisions")
    if query.tool_calls:
        task = (
            f"AND x.decision_id IN (SELECT d.id FROM {s}.decisions AS d "
            "WHERE d.tenant_id = %(tenant_id)s AND d.task_id = %(task_id)s)"
            if query.with_task
            else ""
        )
        ctes += [
            _hits("tool_call_hits", f"{s}.tool_calls", 2, task),
            _top("tool_call_top", "tool_call_hits"),
            f"""episodic_tool_calls AS (
    SELECT 'episodic'::text AS source, 'tool_call'::text AS item, c.id,
           c.tool_name || ' ' || c.params::text || COALESCE(' -> ' || c.result, '') AS content,
           'tool_call'::text AS kind, c.created_at, {_relevance(query)},
           t.recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           NULL::float8 AS distance, {_matched("c")}, NULL::text[] AS entities,
           json_build_object('tool_name', c.tool_name, 'params', c.params,
                              'result', c.result, 'decision_id', c.decision_id
                              {_evidence(query)}) AS details
    FROM tool_call_top AS t
    JOIN {s}.tool_calls AS c ON c.tenant_id = %(tenant_id)s AND c.id = t.id
    {_lexical_join(query, "c.tool_name")}
)""",
        ]
        names.append("episodic_tool_calls")
    return noted(ctes, NOTES), names


def _relevance(query: EpisodicQuery) -> str:
    if query.lexical is None:
        return "t.relevance"
    return f"{lexical_relevance(query.lexical, 't.relevance')} AS relevance"


def _lexical_join(query: EpisodicQuery, column: str) -> str:
    return "" if query.lexical is None else lexical_scores(column)


def _evidence(query: EpisodicQuery) -> str:
    if query.lexical is None:
        return ""
    return ", " + lexical_evidence(query.lexical, "keywords", "t.relevance")


def _patterns(schema: str, capped: bool) -> str:
    # The keywords' patterns, lower-cased by PostgreSQL once (as ILIKE lower-cases its
    # pattern). A query with more keywords than the source reads keeps the rarest the tenant
    # holds: those its vocabulary holds as a token, in the fewest rows first (one probe of its
    # unique key each), then the others (found only inside longer tokens, or not at all).
    if not capped:
        return """episodic_patterns AS MATERIALIZED (
    SELECT k.keyword, lower(k.pattern) AS pattern, k.position
    FROM unnest(%(keywords)s::text[], %(patterns)s::text[])
         WITH ORDINALITY AS k(keyword, pattern, position)
)"""
    return f"""episodic_patterns AS MATERIALIZED (
    SELECT k.keyword, lower(k.pattern) AS pattern,
           row_number() OVER (ORDER BY k.position) AS position
    FROM (
        SELECT k.keyword, k.pattern, k.position
        FROM unnest(%(keywords)s::text[], %(patterns)s::text[])
             WITH ORDINALITY AS k(keyword, pattern, position)
        LEFT JOIN {quote_schema(schema)}.episodic_vocabulary AS v
               ON v.tenant_id = %(tenant_id)s
              AND v.digest = sha256(convert_to(lower(k.keyword), 'UTF8'))
        ORDER BY v.rows IS NULL, v.rows, k.position
        LIMIT %(episodic_keywords)s
    ) AS k
)"""


def _found(schema: str, many_keywords: bool, bound: bool) -> list[str]:
    s = quote_schema(schema)
    # Each keyword's tokens and how many rows hold them; the keywords ranked rarest first;
    # then, per band, the postings of its rarest keywords in its time range: the rows that
    # can pass the threshold (and some that cannot), each once.
    return [
        f"""episodic_tokens AS MATERIALIZED (
    SELECT k.position, v.id AS token_id, v.rows
    FROM episodic_patterns AS k
    CROSS JOIN LATERAL (
        {_tokens(schema, bound)}
        OFFSET 0
    ) AS v
)""",
        """episodic_rarity AS MATERIALIZED (
    SELECT k.position,
           row_number() OVER (ORDER BY COALESCE(sum(t.rows), 0), k.position) AS rarity
    FROM episodic_patterns AS k
    LEFT JOIN episodic_tokens AS t ON t.position = k.position
    GROUP BY k.position
)""",
        # Each band reads one keyword more than the pigeonhole needs (the next rarest): a row
        # that passes needs ``need`` hits, at most ``keywords - read`` of them unread, so it
        # shows at least ``read - lists + 1`` of the keywords read; the rest are dropped here,
        # without reading their rows. Where a band reads every keyword, ``seen`` is the exact
        # count.
        f"""episodic_found AS MATERIALIZED (
    SELECT h.item, h.row_id, {_seen(many_keywords)} AS seen,
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
            SELECT p.item, p.row_id FROM {s}.episodic_postings AS p
            WHERE p.tenant_id = %(tenant_id)s AND p.token_id = t.token_id
              AND p.created_at >= b.since AND p.created_at < b.until
            OFFSET 0
        ) AS p
    ) AS h
    GROUP BY h.item, h.row_id  -- a row lies in one band: read and lists are the same
    HAVING {_seen(many_keywords)} >= min(h.read) - min(h.lists) + 1
)""",
    ]


def _tokens(schema: str, bound: bool) -> str:
    s = quote_schema(schema)
    # A keyword's tokens in the tenant's vocabulary, through the trigram index. A role bound by
    # row-level security cannot use the index for LIKE (not leakproof): the owner's function
    # looks them up for the tenant the session names (revision 0011).
    if bound:
        return f"SELECT v.id, v.rows FROM {s}.episodic_tokens_like(%(tenant_id)s, k.pattern) AS v"
    return (
        f"SELECT v.id, v.rows FROM {s}.episodic_vocabulary AS v\n"
        "        WHERE v.tenant_id = %(tenant_id)s AND v.token LIKE k.pattern"
    )


def _seen(many_keywords: bool) -> str:
    # How many distinct keywords a row's postings show (several of its tokens may match one
    # keyword): a bit per keyword OR-ed together, cheaper than count(DISTINCT), which sorts.
    if many_keywords:
        return "count(DISTINCT h.position)"
    return "bit_count(bit_or(1::bigint << (h.position::int - 1))::bit(64))"


def _hits(name: str, table: str, item: int, condition: str) -> str:
    # The rows found of one kind, each with its exact count of keywords: from the postings
    # where its band read every keyword, else its text checked against every pattern.
    return f"""{name} AS (
    SELECT x.id, x.created_at, x.hits
    FROM episodic_found AS f
    CROSS JOIN LATERAL (
        SELECT x.id, x.created_at,
               CASE WHEN f.exact THEN f.seen
                    ELSE (SELECT count(*) FROM episodic_patterns AS k
                          WHERE x.search_text LIKE k.pattern) END AS hits
        FROM {table} AS x
        WHERE x.tenant_id = %(tenant_id)s AND x.id = f.row_id AND {known_sql("x")} {condition}
        LIMIT 1
    ) AS x
    WHERE f.item = {item}
)"""


def _matched(alias: str) -> str:
    # The keywords a chosen row matches, in the query's order: its text checked against each
    # pattern again (a few rows), rather than an array built for every row the hits found.
    return f"""ARRAY(SELECT k.keyword FROM episodic_patterns AS k
                 WHERE {alias}.search_text LIKE k.pattern ORDER BY k.position) AS matched"""


def _top(name: str, hits: str) -> str:
    # Only the count of hits per row: the pool's rows get their matched keywords afterwards.
    return f"""{name} AS (
    SELECT * FROM (
        SELECT h.id,
               h.hits::float8 / %(episodic_keywords)s::int AS relevance,
               {recency_sql("h.created_at", "episodic_half_life")} AS recency,
               h.created_at
        FROM {hits} AS h
    ) AS scored
    ORDER BY %(episodic_relevance)s::float8 * scored.relevance
             + %(episodic_recency)s::float8 * scored.recency DESC,
             scored.created_at DESC, scored.id DESC
    LIMIT %(episodic_candidates)s
)"""
