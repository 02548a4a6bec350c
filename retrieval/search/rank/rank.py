"""The rank stage: pure Python over the read's candidates.

The turns around the leading hits lifted (:mod:`~retrieval.search.rank.context_lift`), each
candidate scored by its source's weights (and, when the query names a time, by how well its date
fits it), the turns that only ask scaled down
(:mod:`~retrieval.search.rank.questions`), older versions of a fact capped under the newer
(:mod:`~retrieval.search.rank.versions`), the caller's working state scored
(:mod:`~retrieval.search.rank.working_state`), then the thresholds, the ranking and the limits
(:mod:`~retrieval.search.rank.ranking`). A memory without the evidence the statement's gate
asks for is a result only as a newer version that takes an older one's place, or among the
``fallback_results`` weak matches of an answer that would be empty (marked ``below_threshold``).
"""

from __future__ import annotations

from retrieval.search import scoring
from retrieval.search.candidate import Candidate
from retrieval.search.plan.read_plan import ReadPlan
from retrieval.search.rank import ranking
from retrieval.search.rank.context_lift import context_candidates
from retrieval.search.rank.questions import questions_yield
from retrieval.search.rank.versions import newer_versions_first
from retrieval.search.rank.working_state import LexicalOption, score_working_state
from retrieval.search.read.reader import Read
from retrieval.search.results import RetrievalResult, SourceDiagnostics


def rank(plan: ReadPlan, read: Read) -> tuple[list[RetrievalResult], dict[str, SourceDiagnostics]]:
    """The call's results, best first, and per source what was scored, kept and returned."""
    config, call = plan.config, plan.call
    lifted = _lifted(plan, read)
    candidates = [c for c in lifted if c.evidence]
    scored: dict[str, list[ranking.Scored]] = {name: [] for name in plan.scored}
    window = call.window
    weights = {
        name: (
            config.source(name).weights
            if window is None
            else scoring.with_time(config.source(name).weights, config.time_weight)
        )
        for name in scored
    }

    def scored_one(candidate: Candidate) -> ranking.Scored:
        extra = None
        if window is not None:
            distance = window.distance_days(candidate.created_at)
            extra = {"time": scoring.time_fit(distance, config.time_half_life_days)}
        return ranking.scored_candidate(candidate, weights[candidate.source], extra)

    for candidate in candidates:
        scored[candidate.source].append(scored_one(candidate))
    # The memories without the gate's evidence: results only as the newer version of a result,
    # or among the weak matches of an answer that would be empty.
    beyond = [scored_one(c) for c in lifted if not c.evidence]
    if "semantic" in scored:
        scored["semantic"] = questions_yield(
            scored["semantic"], config.question_discount, config.threshold("semantic")
        )
    if config.newer_versions_first and "semantic" in scored:
        placed = newer_versions_first([*scored["semantic"], *beyond], call.query.text)
        evident = {s.identity for s in scored["semantic"]}
        scored["semantic"] = [s for s in placed if s.identity in evident or s.replaces]
        beyond = [s for s in placed if s.identity not in evident and not s.replaces]
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
    return ranking.select(scored, config, beyond)


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
