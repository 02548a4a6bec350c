"""What every source's SQL shares: the select list of its rows, recency, the expressions a
candidate computes once, and when a memory is live.

Each source's CTE selects the same columns (:data:`retrieval.search.candidate.COLUMNS`) so that
one ``UNION ALL`` returns every candidate of every source in one statement.
"""

from __future__ import annotations

from collections.abc import Mapping

from retrieval.memory.fields import MEMORY, MEMORY_CANDIDATE_COLUMNS, select_list
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.search.candidate import COLUMNS
from retrieval.search.statement.template import template

# The select list of each source's rows in the statement's ``UNION ALL``: the evidence goes
# out as JSON text, decoded only for the candidates that are returned.
SELECT_LIST = ", ".join(
    template("read_statement.details_as_text") if column == "details" else column
    for column in COLUMNS
)

# The columns a memory candidate reads from its row (the semantic source's and the context
# turns'), in order: the memory's evidence and signals are computed from them.
MEMORY_COLUMNS = MEMORY_CANDIDATE_COLUMNS


def memory_columns(alias: str | None = None) -> str:
    """The select list of :data:`MEMORY_COLUMNS`, of the row ``alias`` (or unqualified)."""
    return select_list(MEMORY, alias or "", where="candidate")


# 0.5 ^ 1000 is about 1e-301; past that PostgreSQL's power() raises "underflow" where Python
# returns 0.0, so recency is 0 there (reference_scores.exponential_recency gives < 1e-300 at
# that age).
_MAX_HALVINGS = 1000


def halvings_sql(created_at: str, half_life_param: str) -> str:
    """SQL for ``max(as_of - created_at, 0) / half_life`` (seconds): the half-lives a row has
    aged by the call's moment ``%(as_of)s``; ``half_life_param`` names the bound parameter
    holding the half-life in seconds. A source computes it once per candidate
    (:func:`computed_once`) and reads it in :func:`recency_sql`."""
    return template("read_common.halvings", created_at=created_at, half_life=half_life_param)


def recency_sql(halvings: str) -> str:
    """SQL for ``0.5 ^ halvings`` as float8, ``halvings`` naming :func:`halvings_sql` computed
    once (0 where PostgreSQL's power() would underflow)."""
    return template("read_common.recency", halvings=halvings, max_halvings=_MAX_HALVINGS)


def computed_once(alias: str, expressions: Mapping[str, str]) -> str:
    """A ``CROSS JOIN LATERAL`` naming each of ``expressions`` (name: SQL of the row being
    scored) once, read as ``alias.name`` wherever the candidate's CTE needs it: a fragment is
    written once per source, and a change of it shows once in each statement."""
    listed = ", ".join(f"{sql} AS {name}" for name, sql in expressions.items())
    return template("read_common.computed_once", alias=alias, expressions=listed)


def live_sql(alias: str) -> str:
    """SQL: the memory ``alias`` was live at the call's moment (``%(as_of)s``): not retired
    nor expired then, and, when the call asked about a past moment (``%(known_at)s``, else
    NULL), stored by then. The one predicate every read of memories uses."""
    return template("read_common.live", alias=alias, known=known_sql(alias))


def live_or_replaced_sql(alias: str) -> str:
    """SQL: the memory ``alias`` was live at the call's moment (:func:`live_sql`), or a
    correction replaced it by then (``supersedes``; a memory under a key is an item, whose new
    value replaces it): a read that finds it finds the correction in its place, where that is
    live (the semantic source's ``semantic_routed``)."""
    return template(
        "read_common.live_or_replaced", alias=alias, live=live_sql(alias), known=known_sql(alias)
    )


def known_sql(alias: str) -> str:
    """SQL: the row ``alias`` (a memory, decision or tool call) was stored by the past moment
    a call asks about (``%(known_at)s``; NULL: now)."""
    return template("read_common.known", alias=alias)


def turn_sql(alias: str) -> str:
    """SQL: the memory ``alias`` is a conversation turn, as
    :func:`retrieval.memory.kinds.is_turn` says (a message, or a memory with a thread and a
    position)."""
    return template("read_common.turn", alias=alias, message=MESSAGE_KIND)


def short_fact_sql(alias: str) -> str:
    """SQL: the memory ``alias`` may be a version of a fact: not a conversation turn
    (:func:`turn_sql`) and a short statement (at most ``%(version_most_characters)s``
    characters), its length in bytes read first so that a long text is not read."""
    return template("read_common.short_fact", alias=alias, turn=turn_sql(alias))


def told_at_sql(alias: str) -> str:
    """SQL: when the memory ``alias`` was last told by the call's moment: its ``created_at``,
    or a later copy's time (``last_seen_at``) if that came by ``%(as_of)s``."""
    return template("read_common.told_at", alias=alias)
