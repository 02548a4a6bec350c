"""A source's part of the ranking, through one interface.

Each source's ``rank.py`` (:mod:`retrieval.search.sources`) gives a :class:`RankSource`: its
rules on its scored candidates, applied after every candidate is scored by its source's weights
and before the thresholds and limits (:mod:`~retrieval.search.rank.rank`), and whether its weak
matches fill an answer that would be empty (``fallback_results``,
:func:`~retrieval.search.rank.ranking.select`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from retrieval.search.plan.read_plan import ReadPlan
from retrieval.search.rank.ranking import Scored

# A source's rules: its scored candidates with the evidence its statement's gate asks for, and
# those without it (results only as an older version's newer one, or to fill an empty answer),
# each list as the rules leave it.
Rules = Callable[[list[Scored], list[Scored], ReadPlan], tuple[list[Scored], list[Scored]]]


def no_rules(
    scored: list[Scored], weak: list[Scored], plan: ReadPlan
) -> tuple[list[Scored], list[Scored]]:
    """A source ranked by its weights, threshold and limit alone."""
    return scored, weak


@dataclass(frozen=True)
class RankSource:
    """A source's part of the ranking: ``rules(scored, weak, plan)`` (see :data:`Rules`) and
    ``fills``, whether its best weak matches fill an answer that would be empty."""

    name: str
    rules: Rules = no_rules
    fills: bool = False
