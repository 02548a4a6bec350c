"""The rank stage: pure Python over the read's candidates.

The turns around the leading hits lifted (:mod:`~retrieval.search.rank.context_lift`), each
candidate scored by its source's weights (and, when the query names a time, by how well its date
fits it), each source's own rules applied (:data:`SOURCES`, each through one interface:
:mod:`~retrieval.search.rank.source`; the semantic source's turns that only ask yield, and its
older versions of a fact are capped under the newer), the caller's working state scored
(:mod:`~retrieval.search.rank.working_state`), then the thresholds, the ranking and the limits
(:mod:`~retrieval.search.rank.ranking`). A candidate without the evidence its statement's gate
asks for is a result only through its source's rules (a newer version that takes an older one's
place), or among the ``fallback_results`` weak matches of an answer that would be empty, of a
source whose weak matches fill one (marked ``below_threshold``).
"""

from __future__ import annotations

from retrieval.search import scoring
from retrieval.search.candidate import Candidate
from retrieval.search.plan.read_plan import ReadPlan
from retrieval.search.rank import ranking
from retrieval.search.rank.context_lift import context_candidates
from retrieval.search.rank.source import RankSource
from retrieval.search.rank.working_state import LexicalOption, score_working_state
from retrieval.search.read.reader import Read
from retrieval.search.results import RetrievalResult, SourceDiagnostics
from retrieval.search.sources.documents import rank as documents
from retrieval.search.sources.episodic import rank as episodic
from retrieval.search.sources.semantic import rank as semantic

# Each source's part of the ranking, by name.
SOURCES: dict[str, RankSource] = {
    source.name: source for source in (semantic.RANK, episodic.RANK, documents.RANK)
}


def rank(plan: ReadPlan, read: Read) -> tuple[list[RetrievalResult], dict[str, SourceDiagnostics]]:
    """The call's results, best first, and per source what was scored, kept and returned."""
    config, call = plan.config, plan.call
    scored: dict[str, list[ranking.Scored]] = {name: [] for name in plan.scored}
    # The candidates without the evidence their statement's gate asks for: results only through
    # their source's rules, or among the weak matches of an answer that would be empty.
    weak: dict[str, list[ranking.Scored]] = {name: [] for name in plan.scored}
    window = call.window
    weights = {
        name: (
            config.source(name).weights
            if window is None
            else scoring.with_time(config.source(name).weights, config.time_weight)
        )
        for name in scored
    }
    for candidate in _lifted(plan, read):
        extra = None
        if window is not None:
            distance = window.distance_days(candidate.created_at)
            extra = {"time": scoring.time_fit(distance, config.time_half_life_days)}
        one = ranking.scored_candidate(candidate, weights[candidate.source], extra)
        (scored if candidate.evidence else weak)[candidate.source].append(one)
    for name in plan.scored:
        scored[name], weak[name] = SOURCES[name].rules(scored[name], weak[name], plan)
    if call.working_state is not None and config.working_state.enabled:
        lexical = (
            LexicalOption(
                query=call.query.text, strategy=config.lexical_match, weights=config.lexical_weights
            )
            if config.lexical_match is not None and "working_state" in config.lexical_sources
            else None
        )
        scored["working_state"] = [
            ranking.scored_result(result)
            for result in score_working_state(
                call.working_state, call.query.keywords, config.working_state, lexical=lexical
            )
        ]
    fills = tuple(name for name in plan.scored if SOURCES[name].fills)
    return ranking.select(scored, config, weak, fills)


def _lifted(plan: ReadPlan, read: Read) -> list[Candidate]:
    # The candidates with the turns the leading hits lift: a candidate lifted higher than its
    # own relevance in its place, the other turns after them.
    if not read.leading:
        return read.candidates
    config = plan.config
    lifted = context_candidates(
        read.leading,
        {c.id: c for c in read.candidates if c.source == "semantic"},
        lift=config.context_lift,
        rows=read.turns,
        placed=read.placed,
    )
    if not lifted:
        return read.candidates
    kept = [lifted.pop(c.id, c) if c.source == "semantic" else c for c in read.candidates]
    return kept + list(lifted.values())
