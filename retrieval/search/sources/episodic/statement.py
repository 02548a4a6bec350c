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

from typing import NamedTuple

from retrieval.db.queries import quote_schema
from retrieval.search.plan.shape import StatementShape
from retrieval.search.sources.episodic.plan import EpisodicQuery
from retrieval.search.statement.common import computed_once, halvings_sql, known_sql, recency_sql
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.lexical import lexical_evidence, lexical_relevance, lexical_scores
from retrieval.search.statement.source import StatementSource
from retrieval.search.statement.template import template

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


class _Kind(NamedTuple):
    """A kind of episodic row: its CTEs' item, its table (and the query's switch of it), its
    item number in the postings, its alias, the column a lexical match compares, and its
    templates (the candidates, the task filter)."""

    item: str
    table: str
    posting_item: int
    alias: str
    compared: str
    candidates: str
    task_filter: str


_KINDS = (
    _Kind("decision", "decisions", 1, "d", "d.content", "read_episodic.decisions",
          "read_episodic.task_of_decision"),
    _Kind("tool_call", "tool_calls", 2, "c", "c.tool_name", "read_episodic.tool_calls",
          "read_episodic.task_of_tool_call"),
)  # fmt: skip


def episodic_ctes(schema: str, query: EpisodicQuery) -> list[Cte]:
    """The CTEs of the episodic source (:func:`episodic_rows` names those to select from).

    Parameters: ``tenant_id``, ``keywords``, ``patterns``, ``episodic_keywords`` (how many of
    them it reads: all, or when ``query.capped`` the rarest that many), ``episodic_candidates``,
    ``episodic_half_life``, ``episodic_relevance``, ``episodic_recency``, ``as_of``, the bands
    of :func:`retrieval.search.sources.episodic.plan.band_parameters`, ``task_id`` when used,
    and the lexical parameters (:mod:`retrieval.search.statement.lexical`) when
    ``query.lexical`` is set: a decision's content and a tool call's tool name are then compared
    with the whole query, and the scores combined with the keyword relevance.
    """
    ctes = [_patterns(schema, query.capped), *_found(schema, query.many_keywords, query.bound)]
    for kind in _read_kinds(query):
        task = template(kind.task_filter, schema) if query.with_task else ""
        ctes += [
            _hits(f"{kind.item}_hits", schema, kind.table, kind.posting_item, task),
            _top(f"{kind.item}_top", f"{kind.item}_hits"),
            template(
                kind.candidates,
                schema,
                relevance=_relevance(query),
                matched=template("read_episodic.matched", alias=kind.alias),
                evidence=_evidence(query),
                lexical_join="" if query.lexical is None else lexical_scores(kind.compared),
            ),
        ]
    return noted(ctes, NOTES)


def episodic_rows(query: EpisodicQuery) -> list[str]:
    """The CTEs whose rows are the episodic source's candidates: a table's when it is read
    (its candidates' template names it ``episodic_<table>``)."""
    return [f"episodic_{kind.table}" for kind in _read_kinds(query)]


def _read_kinds(query: EpisodicQuery) -> list[_Kind]:
    # The kinds of row the query reads.
    return [kind for kind in _KINDS if getattr(query, kind.table)]


def _statement_ctes(schema: str, shape: StatementShape) -> list[Cte]:
    return [] if shape.episodic is None else episodic_ctes(schema, shape.episodic)


def _statement_rows(shape: StatementShape) -> list[str]:
    return [] if shape.episodic is None else episodic_rows(shape.episodic)


# The episodic source's part of the read statement; its presence row says whether the tenant
# holds a decision or a tool call.
STATEMENT = StatementSource(
    SOURCE, _statement_ctes, _statement_rows, presence="read_presence.episodic"
)


def _relevance(query: EpisodicQuery) -> str:
    if query.lexical is None:
        return "t.relevance"
    combined = lexical_relevance(query.lexical, "t.relevance")
    return template("read_episodic.lexical_relevance", combined=combined)


def _evidence(query: EpisodicQuery) -> str:
    if query.lexical is None:
        return ""
    return ", " + lexical_evidence(query.lexical, "keywords", "t.relevance")


def _patterns(schema: str, capped: bool) -> str:
    # The keywords' patterns, lower-cased once; with more keywords than the source reads, the
    # rarest the tenant holds.
    if not capped:
        return template("read_episodic.patterns")
    return template("read_episodic.patterns_capped", schema)


def _found(schema: str, many_keywords: bool, bound: bool) -> list[str]:
    # Each keyword's tokens and how many rows hold them; the keywords ranked rarest first;
    # then, per band, the postings of its rarest keywords in its time range: the rows that
    # can pass the threshold (and some that cannot), each once.
    tokens = template(
        "read_episodic.vocabulary_bound" if bound else "read_episodic.vocabulary", schema
    )
    seen = template("read_episodic.seen_count" if many_keywords else "read_episodic.seen_bits")
    return [
        template("read_episodic.tokens", tokens=tokens),
        template("read_episodic.rarity"),
        template("read_episodic.found", schema, seen=seen),
    ]


def _hits(name: str, schema: str, table: str, item: int, condition: str) -> str:
    # The rows found of one kind, each with its exact count of keywords.
    return template(
        "read_episodic.hits",
        cte=name,
        table=f"{quote_schema(schema)}.{table}",
        item=item,
        known=known_sql("x"),
        condition=condition,
    )


def _top(name: str, hits: str) -> str:
    # The candidate pool of one kind, by the source's relevance and recency.
    computed = computed_once("c", {"halvings": halvings_sql("h.created_at", "episodic_half_life")})
    return template(
        "read_episodic.top",
        cte=name,
        hits=hits,
        recency=recency_sql("c.halvings"),
        computed=computed,
    )
