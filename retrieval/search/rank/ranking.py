"""Python's half of the scoring contract: weights, threshold, ranking and limits.

SQL hands over candidates with their relevance and recency (and the optional signals); here
``final = sum(weight * signal)`` with the source's weights, then ``final >= min_final_score``
(the source's own, if it has one), then a deterministic ranking, then the per-source and total
limits. Each returned result carries its weighted parts
(:mod:`retrieval.search.rank.weighted_parts`).

Ranking works on :class:`Scored` records (the scores and the identity that breaks ties); a
candidate's :class:`RetrievalResult`, with its evidence decoded, is built only if it is
returned: most candidates are not (about 90 per call, 10 returned).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from typing import Any, NamedTuple

from retrieval.search import scoring
from retrieval.search.candidate import Candidate
from retrieval.search.config import RetrievalConfig
from retrieval.search.rank.weighted_parts import weighted_parts
from retrieval.search.results import SOURCES, RetrievalResult, SourceDiagnostics, check_score


class Outdated(NamedTuple):
    """Another version of the same fact among the candidates, and this one's final score
    before it moved it (:mod:`retrieval.search.rank.versions`): for an older memory, ``by`` is
    its newest version, which capped it; for the newest, ``by`` is the older memory whose
    score it took."""

    by: int
    own_final: float


class Scored(NamedTuple):
    """A result to rank: its scores, its identity, and what builds its :class:`RetrievalResult`.

    Either ``candidate`` and ``weights`` (a database row, built on demand) or ``result`` (a
    result already built, such as a working-state message) is set. A named tuple: one is made
    for every candidate of every call.
    """

    source: str
    final_score: float
    relevance_score: float
    recency_score: float
    item: str
    identity: int
    candidate: Candidate | None = None
    weights: Mapping[str, float] | None = None
    result: RetrievalResult | None = None
    signals: Mapping[str, float] | None = None  # the candidate's, and the call's own (time)
    outdated: Outdated | None = None  # a newer version of it among the candidates
    asks: float | None = None  # its final score before it yielded as a turn that only asks
    replaces: Outdated | None = None  # the older version whose score it took
    below: bool = False  # returned below the thresholds, to fill an answer (fallback_results)

    def to_result(self) -> RetrievalResult:
        """The :class:`RetrievalResult` this record stands for."""
        if self.result is not None:
            return self.result
        assert self.candidate is not None and self.weights is not None
        return to_result(
            self.candidate,
            self.weights,
            self.final_score,
            self.signals,
            self.outdated,
            self.asks,
            self.replaces,
            below=self.below,
        )


def scored_candidate(
    candidate: Candidate,
    weights: Mapping[str, float],
    extra: Mapping[str, float] | None = None,
) -> Scored:
    """A database candidate scored with its source's ``weights`` (its non-zero weights by
    signal name, as :attr:`SourceConfig.weights <retrieval.search.config.SourceConfig.weights>`)
    and ``extra`` signals of the call besides the candidate's own (``time``: how well its date
    fits a time the query names).

    A score outside [0, 1] raises ``ValueError`` here, returned or not.
    """
    relevance, recency = candidate.relevance, candidate.recency
    if not (0.0 <= relevance <= 1.0 and 0.0 <= recency <= 1.0):  # NaN fails too
        check_score("relevance_score", relevance)
        check_score("recency_score", recency)
    if extra is None:  # the weights name the candidate's own signals (its fields)
        return Scored(
            candidate.source, scoring.weighted_fields(candidate, weights), relevance, recency,
            candidate.item, candidate.id, candidate, weights,
        )  # fmt: skip
    signals = {**candidate.signals, **extra}
    return Scored(
        candidate.source,
        scoring.weighted_sum(signals, weights),
        relevance,
        recency,
        candidate.item,
        candidate.id,
        candidate,
        weights,
        signals=signals,
    )


def scored_result(result: RetrievalResult) -> Scored:
    """A result scored in Python (working state), ranked by its own scores."""
    identity = result.metadata.get("id", result.metadata.get("position", 0))
    return Scored(
        source=result.source,
        final_score=result.final_score,
        relevance_score=result.relevance_score,
        recency_score=result.recency_score,
        item=str(result.metadata.get("item", "")),
        identity=identity if isinstance(identity, int) else 0,
        result=result,
    )


def to_result(
    candidate: Candidate,
    weights: Mapping[str, float],
    final: float,
    signals: Mapping[str, float] | None = None,
    outdated: Outdated | None = None,
    asks: float | None = None,
    replaces: Outdated | None = None,
    *,
    below: bool = False,
) -> RetrievalResult:
    """The result of a database candidate, with its ``final`` score from ``weights`` over
    ``signals`` (default: the candidate's own), capped under a newer version's when
    ``outdated`` says so (its ``possibly_outdated_by`` evidence and ``outdated`` part), raised
    to an older version's score when ``replaces`` says so (its ``newer_version_of`` evidence
    and ``version`` part), scaled down from ``asks`` when it is a turn that only asks (its
    ``only_asks`` evidence and ``question`` part), marked ``below_threshold`` when ``below``
    (returned under the thresholds to fill an answer).

    ``candidate.details`` is the evidence as JSON text: the statement sends it as text, so
    that only returned candidates pay for decoding it.
    """
    signals = dict(candidate.signals if signals is None else signals)
    metadata: dict[str, Any] = {
        "id": candidate.id,
        "item": candidate.item,
        "kind": candidate.kind,
        "created_at": candidate.created_at.astimezone(UTC).isoformat(),
        "signals": signals,
        "weights": dict(weights),
    }
    if candidate.distance is not None:
        metadata["distance"] = candidate.distance
    if candidate.matched is not None:
        metadata["matched_keywords"] = list(candidate.matched)
    if candidate.entities is not None:
        metadata["matched_entities"] = list(candidate.entities)
    metadata.update(json.loads(candidate.details))
    if metadata.get("found_through", 0) is None:  # found by its own text
        del metadata["found_through"]
    if candidate.lifted_by is not None:
        metadata["lifted_by"] = candidate.lifted_by._asdict()
    metadata["parts"] = weighted_parts(candidate.source, signals, weights, metadata)
    if outdated is not None:
        metadata["possibly_outdated_by"] = {
            "id": outdated.by,
            "own_final_score": outdated.own_final,
        }
        _cut(metadata["parts"], "outdated", final, outdated.own_final)
    if replaces is not None:
        metadata["newer_version_of"] = {"id": replaces.by, "own_final_score": replaces.own_final}
        if final > replaces.own_final:
            lift = final - replaces.own_final
            metadata["parts"]["version"] = {"weight": 1.0, "signal": lift, "value": lift}
    if asks is not None:
        metadata["only_asks"] = {"own_final_score": asks}
        _cut(metadata["parts"], "question", final, asks)
    if below:
        metadata["below_threshold"] = True
    return RetrievalResult(
        content=candidate.content,
        source=candidate.source,
        relevance_score=candidate.relevance,
        recency_score=candidate.recency,
        final_score=final,
        metadata=metadata,
    )


def _cut(parts: dict[str, dict[str, float]], name: str, final: float, own: float) -> None:
    # What took a result's score from ``own`` down to ``final``, as a negative part ``name``.
    if final < own:
        parts[name] = {"weight": 1.0, "signal": final - own, "value": final - own}


RankKey = tuple[float, float, float, float, int, str, int]  # final, relevance, distance, ...


def rank_key(scored: Scored) -> RankKey:
    """Best first: final, then relevance, then the smaller vector distance (a relevance clamped
    to 0 or 1 ties rows the distance still tells apart), then recency, then source, item and
    id (stable)."""
    return (
        -scored.final_score,
        -scored.relevance_score,
        _distance(scored),
        -scored.recency_score,
        SOURCES.index(scored.source),
        scored.item,
        scored.identity,
    )


def weak_key(scored: Scored) -> tuple[float, float, RankKey]:
    """Which weak matches fill an empty answer first: the more relevant, then the nearer vector,
    then as :func:`rank_key`. A weak match's relevance is often clamped to 0 (beyond the model's
    calibrated zero), where its final score is its recency alone: chosen by final score, an
    empty answer would get the memories told last rather than those nearest the query."""
    return (-scored.relevance_score, _distance(scored), rank_key(scored))


def _distance(scored: Scored) -> float:
    # The candidate's vector distance (infinite without one: after every row that has one).
    candidate = scored.candidate
    distance = candidate.distance if candidate is not None else None
    return math.inf if distance is None else distance


def select(
    scored: Mapping[str, Sequence[Scored]],
    config: RetrievalConfig,
    weak: Mapping[str, Sequence[Scored]] | None = None,
    fills: Sequence[str] = (),
) -> tuple[list[RetrievalResult], dict[str, SourceDiagnostics]]:
    """Apply the threshold and the limits to each source's scored results; rank them all.
    When none passes, the best ``config.fallback_results`` of the sources that ``fills`` names,
    below the threshold or ``weak`` (without the evidence their gate asks for), are returned,
    marked ``below_threshold``: the most relevant, the nearest where relevance ties
    (:func:`weak_key`), ranked by their final scores.

    Returns the results best first (only these are built) and, per source, what was scored,
    kept and returned.
    """
    weak = weak or {}
    chosen: list[Scored] = []
    kept_count: dict[str, int] = {}
    for name, results in scored.items():
        threshold = config.threshold(name)
        kept = sorted((r for r in results if r.final_score >= threshold), key=rank_key)
        kept_count[name] = len(kept)
        chosen.extend(kept[: config.source(name).limit])
    final = sorted(chosen, key=rank_key)[: config.total_limit]
    if not final:
        final = _filling(scored, config, weak, fills)
    returned = {name: 0 for name in scored}
    for result in final:
        returned[result.source] += 1
    diagnostics = {
        name: SourceDiagnostics(
            candidates=len(results) + len(weak.get(name, ())),
            kept=kept_count[name],
            returned=returned[name],
            mean_scores=_means(results),
        )
        for name, results in scored.items()
    }
    return [item.to_result() for item in final], diagnostics


def _filling(
    scored: Mapping[str, Sequence[Scored]],
    config: RetrievalConfig,
    weak: Mapping[str, Sequence[Scored]],
    fills: Sequence[str],
) -> list[Scored]:
    # When nothing passed: the best results under the threshold, or without evidence, of the
    # sources that fill, fallback_results of them (within the limits; the most relevant, then
    # the nearest: weak_key), ranked by their final scores and marked below it.
    best: list[Scored] = []
    for name in fills:
        wanted = min(config.fallback_results, config.source(name).limit)
        if name in scored and wanted > 0:
            best += sorted([*scored[name], *weak.get(name, ())], key=weak_key)[:wanted]
    best = sorted(best, key=weak_key)[: min(config.fallback_results, config.total_limit)]
    return [item._replace(below=True) for item in sorted(best, key=rank_key)]


def _means(results: Iterable[Scored]) -> dict[str, float]:
    items = list(results)
    if not items:
        return {}
    count = len(items)
    return {
        "relevance": sum(r.relevance_score for r in items) / count,
        "recency": sum(r.recency_score for r in items) / count,
        "final": sum(r.final_score for r in items) / count,
    }
