"""The episodic source: the agent's decisions and tool calls, found by the query's keywords.

A decision matches on its content, a tool call on its tool name or its parameters (as JSON
text), each with ``ILIKE`` on a trigram index; ``%``, ``_`` and ``\\`` in a keyword match
literally (the patterns come from :func:`retrieval.scoring.like_pattern`). Relevance is the
fraction of the query's keywords a row matches; recency ``0.5 ^ (age / half_life)``. Each kind
of row is pre-ranked in SQL by the source's own relevance and recency weights so that the
candidate pool holds the best rows; Python computes the final scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.sources.common import recency_sql

SOURCE = "episodic"
DECISION = "decision"
TOOL_CALL = "tool_call"


@dataclass(frozen=True)
class EpisodicQuery:
    """The shape of the episodic CTEs: which kinds of rows, and whether one task only."""

    decisions: bool
    tool_calls: bool
    with_task: bool


def episodic_ctes(schema: str, query: EpisodicQuery) -> tuple[list[str], list[str]]:
    """The CTEs of the episodic source and the names of those to select from.

    Parameters: ``tenant_id``, ``keywords``, ``patterns``, ``episodic_candidates``,
    ``episodic_half_life``, ``episodic_relevance``, ``episodic_recency``, ``as_of``, and
    ``task_id`` when used.
    """
    ctes, names = [], []
    if query.decisions:
        task = "AND d.task_id = %(task_id)s" if query.with_task else ""
        ctes.append(
            _matches(
                "decision_matches",
                f"""SELECT d.id, d.content, d.created_at,
           {_matched("d.content ILIKE k.pattern")} AS matched,
           jsonb_build_object('task_id', d.task_id, 'action_type', d.action_type,
                              'status', d.status) AS details
    FROM "{schema}".decisions AS d
    WHERE d.tenant_id = %(tenant_id)s AND d.content ILIKE ANY(%(patterns)s::text[]) {task}""",
            )
        )
        ctes.append(_scored("episodic_decisions", "decision_matches", DECISION))
        names.append("episodic_decisions")
    if query.tool_calls:
        task = (
            f'AND t.decision_id IN (SELECT d.id FROM "{schema}".decisions AS d '
            "WHERE d.tenant_id = %(tenant_id)s AND d.task_id = %(task_id)s)"
            if query.with_task
            else ""
        )
        matches = "(t.tool_name ILIKE k.pattern OR t.params::text ILIKE k.pattern)"
        ctes.append(
            _matches(
                "tool_call_matches",
                f"""SELECT t.id, t.tool_name || ' ' || t.params::text
               || COALESCE(' -> ' || t.result, '') AS content,
           t.created_at,
           {_matched(matches)} AS matched,
           jsonb_build_object('tool_name', t.tool_name, 'params', t.params,
                              'result', t.result, 'decision_id', t.decision_id) AS details
    FROM "{schema}".tool_calls AS t
    WHERE t.tenant_id = %(tenant_id)s
      AND (t.tool_name ILIKE ANY(%(patterns)s::text[])
           OR t.params::text ILIKE ANY(%(patterns)s::text[])) {task}""",
            )
        )
        ctes.append(_scored("episodic_tool_calls", "tool_call_matches", TOOL_CALL))
        names.append("episodic_tool_calls")
    return ctes, names


def _matched(condition: str) -> str:
    # The query's keywords this row matches, in the query's order.
    return (
        "ARRAY(SELECT k.keyword FROM unnest(%(keywords)s::text[], %(patterns)s::text[]) "
        f"WITH ORDINALITY AS k(keyword, pattern, position) WHERE {condition} "
        "ORDER BY k.position)"
    )


def _matches(name: str, body: str) -> str:
    return f"{name} AS (\n    {body}\n)"


def _scored(name: str, matches: str, item: str) -> str:
    return f"""{name} AS (
    SELECT * FROM (
        SELECT 'episodic'::text AS source, '{item}'::text AS item, x.id, x.content,
               '{item}'::text AS kind, x.created_at,
               cardinality(x.matched)::float8 / cardinality(%(keywords)s::text[]) AS relevance,
               {recency_sql("x.created_at", "episodic_half_life")} AS recency,
               0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
               NULL::float8 AS distance, x.matched, NULL::text[] AS entities, x.details
        FROM {matches} AS x
    ) AS scored
    ORDER BY %(episodic_relevance)s::float8 * scored.relevance
             + %(episodic_recency)s::float8 * scored.recency DESC,
             scored.created_at DESC, scored.id DESC
    LIMIT %(episodic_candidates)s
)"""
