"""The newer version of a fact first, without being told: a memory ranked below its newer versions.

The statement names each memory candidate's newer versions among the candidates: memories of
its kind (conversation turns aside), told after it by the call's moment, whose vectors are at
``version_similarity`` or more to its own (``mem_newer``, in
:mod:`retrieval.search.statement.semantic`).
Here a memory's final score is capped :data:`VERSION_MARGIN` under the lowest final score of
its newer versions that pass the threshold (themselves capped first, the newest before the
older), so that it ranks below them and stays retrievable. Its result names the newest of them
(``possibly_outdated_by``) and, when capped, carries the cap as a part of its score
(``outdated``, negative: the parts still add up to the final score).
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval.search.rank.ranking import Outdated, Scored

# How far under its newer version's final score an older version's is capped.
VERSION_MARGIN = 0.01


def newer_versions_first(scored: Sequence[Scored], threshold: float) -> list[Scored]:
    """``scored`` (one source's scored candidates) with every candidate that has newer
    versions among them capped under the lowest of theirs that reaches ``threshold``, and
    marked with the newest."""
    older = [s for s in scored if s.candidate is not None and s.candidate.newer]
    if not older:
        return list(scored)
    final = {s.identity: s.final_score for s in scored}
    changed: dict[int, Scored] = {}
    # Fewer newer versions first: in a chain of versions the newer ones are capped before the
    # older ones that they cap in turn.
    for item in sorted(older, key=lambda s: (len(_newer(s)), s.identity)):
        newer = [n for n in _newer(item) if n in final]
        if not newer:
            continue
        kept = [final[n] for n in newer if final[n] >= threshold]
        own = item.final_score
        capped = min(own, max(0.0, min(kept) - VERSION_MARGIN)) if kept else own
        final[item.identity] = capped
        changed[item.identity] = item._replace(
            final_score=capped, outdated=Outdated(by=newer[0], own_final=item.final_score)
        )
    return [changed.get(s.identity, s) for s in scored]


def _newer(item: Scored) -> list[int]:
    return (item.candidate.newer if item.candidate is not None else None) or []
