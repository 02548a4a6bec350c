"""The episodic source: the agent's decisions and tool calls, found by the query's keywords.

A decision matches on its content, a tool call on its tool name or its parameters (as JSON
text), case-insensitively, as ``ILIKE`` would: each table keeps that text lower-cased in a
generated, trigram-indexed column ``search_text`` (revision 0006), compared with ``LIKE`` and the
pattern lower-cased once, which spares lower-casing every candidate row per keyword. ``%``,
``_`` and ``\\`` in a keyword match literally (the patterns come from
:func:`retrieval.scoring.like_pattern`). Relevance is the fraction of the query's keywords a
row matches; recency ``0.5 ^ (age / half_life)``.

Each keyword is looked up on its own (one trigram index scan per keyword, each row checked
against one pattern), and the hits are counted per row: a row matched by ``m`` of ``n``
keywords has relevance ``m / n``. Checking every matching row against every pattern instead
costs a case-insensitive comparison per row and keyword, several times slower on common words.
Each kind of row is pre-ranked in SQL by the source's own relevance and recency weights so that
the candidate pool holds the best rows; only those are joined back for their text; Python
computes the final scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.sources.common import recency_sql
from retrieval.sources.lexical import lexical_evidence, lexical_relevance, lexical_scores

SOURCE = "episodic"
DECISION = "decision"
TOOL_CALL = "tool_call"


@dataclass(frozen=True)
class EpisodicQuery:
    """The shape of the episodic CTEs: which kinds of rows, and whether one task only."""

    decisions: bool
    tool_calls: bool
    with_task: bool
    lexical: str | None = None  # None, or how lexical scores combine: max, weighted, cascade


def episodic_ctes(schema: str, query: EpisodicQuery) -> tuple[list[str], list[str]]:
    """The CTEs of the episodic source and the names of those to select from.

    Parameters: ``tenant_id``, ``keywords``, ``patterns``, ``episodic_candidates``,
    ``episodic_half_life``, ``episodic_relevance``, ``episodic_recency``, ``as_of``, and
    ``task_id`` when used, and the lexical parameters (:mod:`retrieval.sources.lexical`) when
    ``query.lexical`` is set: a decision's content and a tool call's tool name are then compared
    with the whole query, and the scores combined with the keyword relevance.
    """
    ctes, names = [_PATTERNS], []
    if query.decisions:
        task = "AND x.task_id = %(task_id)s" if query.with_task else ""
        ctes += [
            _hits(
                "decision_hits",
                f'"{schema}".decisions',
                f"x.search_text LIKE k.pattern {task}",
            ),
            _top("decision_top", "decision_hits"),
            f"""episodic_decisions AS (
    SELECT 'episodic'::text AS source, 'decision'::text AS item, d.id, d.content,
           'decision'::text AS kind, d.created_at, {_relevance(query)}, t.recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           NULL::float8 AS distance, {_matched("d")}, NULL::text[] AS entities,
           jsonb_build_object('task_id', d.task_id, 'action_type', d.action_type,
                              'status', d.status{_evidence(query)}) AS details
    FROM decision_top AS t
    JOIN "{schema}".decisions AS d ON d.tenant_id = %(tenant_id)s AND d.id = t.id
    {_lexical_join(query, "d.content")}
)""",
        ]
        names.append("episodic_decisions")
    if query.tool_calls:
        task = (
            f'AND x.decision_id IN (SELECT d.id FROM "{schema}".decisions AS d '
            "WHERE d.tenant_id = %(tenant_id)s AND d.task_id = %(task_id)s)"
            if query.with_task
            else ""
        )
        ctes += [
            _hits(
                "tool_call_hits",
                f'"{schema}".tool_calls',
                f"x.search_text LIKE k.pattern {task}",
            ),
            _top("tool_call_top", "tool_call_hits"),
            f"""episodic_tool_calls AS (
    SELECT 'episodic'::text AS source, 'tool_call'::text AS item, c.id,
           c.tool_name || ' ' || c.params::text || COALESCE(' -> ' || c.result, '') AS content,
           'tool_call'::text AS kind, c.created_at, {_relevance(query)},
           t.recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           NULL::float8 AS distance, {_matched("c")}, NULL::text[] AS entities,
           jsonb_build_object('tool_name', c.tool_name, 'params', c.params,
                              'result', c.result, 'decision_id', c.decision_id
                              {_evidence(query)}) AS details
    FROM tool_call_top AS t
    JOIN "{schema}".tool_calls AS c ON c.tenant_id = %(tenant_id)s AND c.id = t.id
    {_lexical_join(query, "c.tool_name")}
)""",
        ]
        names.append("episodic_tool_calls")
    return ctes, names


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


# The keywords' patterns, lower-cased by PostgreSQL once (as ILIKE lower-cases its pattern).
_PATTERNS = """episodic_patterns AS MATERIALIZED (
    SELECT k.keyword, lower(k.pattern) AS pattern, k.position
    FROM unnest(%(keywords)s::text[], %(patterns)s::text[])
         WITH ORDINALITY AS k(keyword, pattern, position)
)"""


def _hits(name: str, table: str, condition: str) -> str:
    # One row per (row, keyword it matches): one index scan per keyword.
    return f"""{name} AS (
    SELECT x.id, x.created_at
    FROM episodic_patterns AS k
    CROSS JOIN LATERAL (
        SELECT x.id, x.created_at FROM {table} AS x
        WHERE x.tenant_id = %(tenant_id)s AND {condition}
    ) AS x
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
               count(*)::float8 / cardinality(%(keywords)s::text[]) AS relevance,
               {recency_sql("h.created_at", "episodic_half_life")} AS recency,
               h.created_at
        FROM {hits} AS h
        GROUP BY h.id, h.created_at
    ) AS scored
    ORDER BY %(episodic_relevance)s::float8 * scored.relevance
             + %(episodic_recency)s::float8 * scored.recency DESC,
             scored.created_at DESC, scored.id DESC
    LIMIT %(episodic_candidates)s
)"""
