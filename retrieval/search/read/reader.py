"""The read stage: the plan's statement run on the read connections, its rows decoded.

One statement for every database source (:mod:`retrieval.search.statement`). Its presence rows
say what the tenant holds (:mod:`retrieval.search.knowledge`): learnt here for the next plans,
and when a source the
plan left out now has rows, the plan's full statement runs, once. When the call lifts the
turns around its leading hits (:mod:`retrieval.search.rank.context_lift`), their rows come
with the statement's, or, when the statement did not read them, from a statement of their own.
Rows become :class:`~retrieval.search.candidate.Candidate` named tuples; their evidence stays
JSON text, decoded only for the leading hits here and for the results the ranking returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from retrieval.db.read_pool import ReadConnections
from retrieval.search.candidate import Candidate, leading_hits, place
from retrieval.search.knowledge import TURNS, TenantKnowledge
from retrieval.search.plan.read_plan import ReadPlan
from retrieval.search.plan.shape import StatementShape
from retrieval.search.statement.presence import PRESENCE_ITEM
from retrieval.search.statement.render import Statements, result_columns

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Read:
    """What the read stage found: the candidates; the leading semantic hits (best first, when
    the call lifts their turns) and the turns around those that are turns (``hit_id,
    offset``, then a candidate's columns); the statements it sent."""

    candidates: list[Candidate]
    leading: list[Candidate]
    turns: list[Row]
    statements: int
    placed: frozenset[int] = frozenset()  # the leading hits that are turns (their ids)


class Reader:
    """Runs plans' statements in one schema and learns what its tenants hold."""

    def __init__(self, statements: Statements, knowledge: TenantKnowledge) -> None:
        self.statements = statements
        self.knowledge = knowledge

    def read(self, plan: ReadPlan, reads: ReadConnections) -> Read:
        """The candidates of ``plan``, read on ``reads``."""
        shape = plan.shape
        if shape is None:
            return Read([], [], [], 0)
        tenant_id = plan.call.tenant_id
        candidates, counts, turns = self._run(plan, shape, reads)
        self.knowledge.learn(tenant_id, counts)
        sent = 1
        arrived = any(counts.get(source, 0) > 0 for source in plan.left_out)
        if arrived and plan.full_shape is not None:  # a source's first rows: every source in
            candidates, _, turns = self._run(plan, plan.full_shape, reads)
            sent = 2
        if not plan.lifts or not any(c.source == "semantic" for c in candidates):
            return Read(candidates, [], [], sent)
        config = plan.config
        leading = leading_hits(candidates, config.semantic.weights, config.semantic.limit)
        untold = config.session_gap_minutes > 0
        placed = [(hit.id, where) for hit in leading if (where := place(hit, untold)) is not None]
        # The next statements read the turns in while the tenant's leading hits are turns.
        self.knowledge.learn(tenant_id, {TURNS: int(bool(placed))})
        ids = frozenset(hit_id for hit_id, _ in placed)
        if not placed:
            return Read(candidates, leading, [], sent)
        if turns is None:  # the statement did not read them: one statement more
            found = {
                "hit_ids": [hit_id for hit_id, _ in placed],
                "threads": [where[0] for _, where in placed],
                "positions": [where[1] for _, where in placed],
            }
            statement = self.statements.context(plan.call.mode, plan.call.filter_operators)
            rows = reads.execute(statement, plan.parameters | found, settings=plan.settings)
            return Read(candidates, leading, rows, sent + 1, ids)
        rows = sorted((row for row in turns if row[0] in ids), key=lambda row: row[:3])
        return Read(candidates, leading, rows, sent, ids)

    def _run(
        self, plan: ReadPlan, shape: StatementShape, reads: ReadConnections
    ) -> tuple[list[Candidate], dict[str, int], list[Row] | None]:
        # The statement's candidates, what its presence rows counted per source, and the
        # context turns' rows (hit, offset, then a candidate's columns) when it read them.
        rows = reads.execute(
            self.statements.of(shape),
            plan.parameters,
            settings=plan.settings,
            columns=result_columns(shape),
        )
        candidates: list[Candidate] = []
        counts: dict[str, int] = {}
        turns: list[Row] | None = [] if shape.context else None
        for row in rows:
            if turns is not None:
                *columns, hit_id, offset = row
                if hit_id is not None:
                    turns.append((hit_id, offset, *columns))
                    continue
                row = tuple(columns)
            candidate = Candidate(*row)
            if candidate.item == PRESENCE_ITEM:
                counts[candidate.source] = candidate.id
            else:
                candidates.append(candidate)
        return candidates, counts, turns
