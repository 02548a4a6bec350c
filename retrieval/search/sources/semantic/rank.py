"""The semantic source's part of the ranking.

A turn that only asks yields to the turns that answer (:mod:`~retrieval.search.rank.questions`);
an older version of a fact the query asks about is capped under its newest
(:mod:`~retrieval.search.rank.versions`), and a newer version without the gate's evidence takes
an older one's place. The best memories under the threshold, or without the evidence, fill an
answer that would be empty (``fallback_results``, marked ``below_threshold``).
"""

from __future__ import annotations

from retrieval.search.plan.read_plan import ReadPlan
from retrieval.search.rank.questions import questions_yield
from retrieval.search.rank.ranking import Scored
from retrieval.search.rank.source import RankSource
from retrieval.search.rank.versions import newer_versions_first
from retrieval.search.sources.semantic.plan import SOURCE


def semantic_rules(
    scored: list[Scored], weak: list[Scored], plan: ReadPlan
) -> tuple[list[Scored], list[Scored]]:
    """The turns that only ask yield; the newer version of a fact first. A weak memory that
    takes an older version's place joins the scored ones."""
    config = plan.config
    scored = questions_yield(scored, config.question_discount, config.threshold(SOURCE))
    if not config.newer_versions_first:
        return scored, weak
    placed = newer_versions_first([*scored, *weak], plan.call.query.text)
    evident = {s.identity for s in scored}
    return (
        [s for s in placed if s.identity in evident or s.replaces],
        [s for s in placed if s.identity not in evident and not s.replaces],
    )


# The semantic source's part of the ranking.
RANK = RankSource(SOURCE, semantic_rules, fills=True)
