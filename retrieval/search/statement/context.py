"""The turns around the best memories: the candidates a thread's relevance lifts.

An answer in a conversation often sits next to the turn that matches the question ("Where did
you go?" ... "To the coast, with the kids."). For the best memories of a call that belong to
a thread (``thread_id``) at a ``position``, one statement reads the memories of the same thread
within ``context_window`` positions of each. A message (kind ``message``) stored without a
thread has as neighbours the messages without a thread of its tenant told just before and
after it, in the order of ``created_at`` (then id), up to ``context_window`` each way and
while less than ``session_gap`` passes between two of them: the session is inferred from the
time between messages. Each neighbour comes with the same signals as the semantic source's
candidates (its own dense relevance, recency, importance, popularity) and, first, the hit it
is next to and how far (``offset``). :mod:`retrieval.search.rank.context_lift` scores them.
"""

from __future__ import annotations

from retrieval.search.config import SIGNALS
from retrieval.search.modes import Mode
from retrieval.search.sources.semantic.statement import (
    MEMORY_SIGNALS,
    MEMORY_TOLD_AT,
    kind_filters,
    memory_evidence,
    memory_once,
)
from retrieval.search.statement.common import (
    SELECT_LIST,
    live_sql,
    memory_columns,
    recency_sql,
)
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.metadata import memory_conditions
from retrieval.search.statement.template import template

# What each CTE holds, printed above it in docs/statements/.
NOTES = {
    "context_hits": "the leading memory candidates that are turns of a conversation",
    "untold": "those hits that are messages without a thread, with their times",
    "told_before": "the messages without a thread told just before each such hit, and pauses",
    "told_after": "the messages without a thread told just after each such hit, and pauses",
    "told": "those messages with the widest pause between them and their hit",
    "turns": "the turns within the window of each hit: its thread's, or its session's in time",
    "context": "the turns as memory candidates, each with the hit it is next to and how far",
}

# The hits of a separate context statement: the arrays the retriever binds.
_BOUND_HITS = template("read_context.bound_hits")

# The hits within the read's own statement: of the semantic candidates ranked as the retriever
# ranks them (its final score, the weighted sum of their signals, then relevance, distance,
# recency and id), the first ``%(context_hits)s`` (the source's limit: the retriever lifts from
# its first ``limit``, :func:`~retrieval.search.candidate.leading_hits`, whose sum is the same
# float8 sum of the same terms in the same order, the weights of 0 adding exact zeros) that are
# turns of a thread, or (with ``%(untold_sessions)s``) messages without a thread, as
# context_lift places them.
# The source's weighted sum of a candidate's signals, with the weights bound per call.
_WEIGHTED_SUM = "\n                     + ".join(
    template("read_context.weighted_signal", signal=name) for name in SIGNALS
)
_STATEMENT_HITS = template("read_context.statement_hits", weighted_sum=_WEIGHTED_SUM)

# The two columns a context row adds to the source's (the hit it is next to, and how far); the
# read's other rows carry them empty.
CONTEXT_COLUMNS = 'hit_id, "offset"'
CONTEXT_COLUMN_TYPES = (("hit_id", "bigint"), ("offset", "bigint"))  # and their SQL types
NO_CONTEXT = template("read_statement.no_context")


def context_statement(schema: str, mode: Mode, filter_operators: tuple[str, ...] = ()) -> str:
    """The context turns of the hits ``%(hit_ids)s`` (threads ``%(threads)s``, positions
    ``%(positions)s``; a hit with neither is a message, of kind ``%(message_kind)s``, without a
    thread) within ``%(context_window)s`` positions (``%(session_gap)s`` the longest pause
    within a session of messages without a thread), in the mode's kinds: rows of ``hit_id,
    offset`` then the source's columns."""
    ctes = ",\n".join(context_ctes(schema, mode, _BOUND_HITS, filter_operators, worth=""))
    return template("read_context.statement", ctes=ctes, select_list=SELECT_LIST)


def statement_context_ctes(
    schema: str, mode: Mode, filter_operators: tuple[str, ...] = ()
) -> list[Cte]:
    """The CTEs that read, within the read's statement (after its ``semantic`` CTE), the
    context turns of every semantic candidate that is a turn: a CTE ``context`` of rows of
    ``hit_id, offset`` then the source's columns. Its parameters are the context statement's
    but the hits, and ``%(untold_sessions)s`` and ``%(context_lift)s``: only the turns the lift
    may raise come out (a semantic candidate, or a turn its hit lifts above its own relevance;
    the rank stage passes over the others, :mod:`retrieval.search.rank.context_lift`)."""
    worth = template("read_context.worth_lifting")
    return noted(context_ctes(schema, mode, _STATEMENT_HITS, filter_operators, worth), NOTES)


def context_ctes(
    schema: str, mode: Mode, hits: str, filter_operators: tuple[str, ...] = (), worth: str = ""
) -> list[str]:
    """The CTEs from ``hits`` (a query of ``hit_id, thread_id, position``, and in the read's
    statement ``hit_relevance``) to ``context``, the turns of ``mode``'s kinds meeting a
    metadata filter of ``filter_operators`` and the condition ``worth`` (on a turn ``n`` and
    its computed ``c``; empty: every turn)."""
    conditions = [*kind_filters(mode, "m"), *memory_conditions(filter_operators, "m")]
    kinds = "".join(f" AND {condition}" for condition in conditions)
    # The fragments every read of a hit's turns fills (its memory ``m``).
    turn = {
        "columns": memory_columns("m"),
        "distance": "(m.embedding <-> %(query_vector)s)",
        "kinds": kinds,
        "live": live_sql("m"),
    }
    told = [_told_side(schema, turn, earlier) for earlier in (True, False)]
    return [
        template("read_context.context_hits", hits=hits),
        template("read_context.untold", schema),
        *told,
        template("read_context.told"),
        template("read_context.turns", schema, told_columns=memory_columns(), **turn),
        template(
            "read_context.context",
            relevance="c.dense",
            recency=recency_sql("c.halvings"),
            signals=MEMORY_SIGNALS,
            evidence=memory_evidence(mode),
            told_at=MEMORY_TOLD_AT,
            computed=memory_once(),
            worth=worth,
        ),
    ]


def _told_side(schema: str, turn: dict[str, str], earlier: bool) -> str:
    # The messages without a thread told just before (or after) each such hit, nearest first,
    # with their pause from the one nearer the hit (``gap``) and their signed offset.
    return template(
        "read_context.told_side",
        schema,
        side="before" if earlier else "after",
        order="DESC" if earlier else "ASC",
        sign="-" if earlier else "",
        compare="<" if earlier else ">",
        bound=">=" if earlier else "<=",
        shift="-" if earlier else "+",
        pause=template("read_context.pause_before" if earlier else "read_context.pause_after"),
        told_columns=memory_columns("x"),
        **turn,
    )
