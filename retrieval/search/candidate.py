"""A candidate: one row of the read statement, with its SQL-computed signals and evidence.

The statement's every source selects :data:`COLUMNS` (:mod:`retrieval.search.statement`); the
read stage decodes each row into a :class:`Candidate`; the rank stage scores them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import NamedTuple

from retrieval.memory.kinds import MESSAGE_KIND, is_turn
from retrieval.search import scoring


class Lift(NamedTuple):
    """What lifted a turn's relevance (:mod:`~retrieval.search.rank.context_lift`): the leading
    hit, the turn's offset from it, and the turn's own relevance."""

    id: int
    offset: int
    own_relevance: float


class Candidate(NamedTuple):
    """One row of the statement: a candidate with its SQL-computed signals and evidence.

    A named tuple: the rows of every call become candidates, and a tuple is made faster than
    a dataclass instance.
    """

    source: str  # semantic, episodic, documents
    item: str  # memory, decision, tool_call, chunk
    id: int
    content: str
    kind: str
    created_at: datetime
    relevance: float
    recency: float
    importance: float
    popularity: float
    entity: float
    distance: float | None  # L2 distance (semantic, documents), else NULL
    matched: list[str] | None  # keywords matched (episodic), else NULL
    entities: list[str] | None  # query entity ids the memory links to (semantic), else NULL
    details: str  # the evidence, a JSON object (json_build_object: text, decoded when returned)
    # Whether it passes its source's evidence gate (semantic: near enough by meaning or covering
    # enough of the query's words); one that does not is a result only as an older memory's
    # newer version or to fill an answer that would be empty.
    evidence: bool = True
    # The candidates that may be newer versions of the same fact, newest first (semantic, when
    # newer_versions_first), else NULL; and for each, whether the statement found it near
    # (True), close (False: at version_words_similarity or more) or neither (None)
    # (retrieval.search.rank.versions_asked decides with the query).
    newer: list[int] | None = None
    newer_near: list[bool | None] | None = None
    # Set by the rank stage, not a column: the hit whose relevance lifted this turn's.
    lifted_by: Lift | None = None

    @property
    def signals(self) -> dict[str, float]:
        """The scores the source's weights apply to, by weight name."""
        return {
            "relevance": self.relevance,
            "recency": self.recency,
            "importance": self.importance,
            "popularity": self.popularity,
            "entity": self.entity,
        }


# The columns of every source's rows, in order: the candidate's fields up to the lift, which
# the rank stage sets.
COLUMNS: tuple[str, ...] = Candidate._fields[: Candidate._fields.index("lifted_by")]
# Each column's SQL type in the statement, in order (what a call that runs the statement
# through a function declares of its rows: retrieval.db.shard_reads).
COLUMN_TYPES: tuple[tuple[str, str], ...] = tuple(
    zip(
        COLUMNS,
        (
            "text", "text", "bigint", "text", "text", "timestamptz", "float8", "float8",
            "float8", "float8", "float8", "float8", "text[]", "text[]", "text", "boolean",
            "bigint[]", "boolean[]",
        ),
        strict=True,
    )
)  # fmt: skip


def leading_hits(
    candidates: Iterable[Candidate], weights: Mapping[str, float], limit: int
) -> list[Candidate]:
    """The first ``limit`` of the semantic ``candidates`` with evidence as the ranking orders
    them by their source's ``weights``: final score, relevance, the smaller distance,
    recency, then id."""
    semantic = [c for c in candidates if c.source == "semantic" and c.evidence]
    semantic.sort(
        key=lambda c: (
            -scoring.weighted_fields(c, weights),
            -c.relevance,
            math.inf if c.distance is None else c.distance,
            -c.recency,
            c.id,
        )
    )
    return semantic[:limit]


def is_turn_candidate(candidate: Candidate) -> bool:
    """Whether a semantic candidate is a conversation turn (:func:`retrieval.memory.kinds.is_turn`:
    a message, a memory with a thread and a position, or one that names who said it)."""
    if candidate.source != "semantic":
        return False
    if candidate.kind == MESSAGE_KIND:
        return True
    thread, position = _thread_and_position(candidate.details)
    return is_turn(candidate.kind, thread, position, candidate.content)


# How the statement's json_build_object writes a memory's thread and position (its own keys have
# a space before the colon; the jsonb of a memory's metadata has none, and a string escapes its
# quotes): read without decoding the rest of the evidence, which holds the call's own scores.
_NO_THREAD = '"thread_id" : null,'
_PLACE = re.compile(r'"thread_id" : ("(?:[^"\\]|\\.)*"), "position" : (-?\d+)[,}]')


def _thread_and_position(details: str) -> tuple[str | None, int | None]:
    # A memory candidate's thread and position, from its evidence (JSON text); no position
    # is read without a thread, as no caller places a turn by its position alone.
    if _NO_THREAD in details:
        return None, None
    found = _PLACE.search(details)
    if found is not None:
        thread = json.loads(found[1])
        return thread, int(found[2])
    decoded = json.loads(details)  # written otherwise, or a thread without a position
    thread, position = decoded.get("thread_id"), decoded.get("position")
    return (
        thread if isinstance(thread, str) else None,
        position if isinstance(position, int) else None,
    )


def place(candidate: Candidate, untold_sessions: bool) -> tuple[str | None, int | None] | None:
    """The (thread, position) of a semantic candidate in its conversation, from its evidence;
    (None, None) for a message without a thread when ``untold_sessions`` (its session is
    inferred from time); None when it has no neighbours."""
    if candidate.source != "semantic":
        return None
    thread, position = _thread_and_position(candidate.details)
    if thread is not None and position is not None:
        return thread, position
    if untold_sessions and thread is None and candidate.kind == MESSAGE_KIND:
        return None, None
    return None
