"""The newer version of a fact first, without being told: a memory ranked below its newer versions.

The statement names each memory candidate's possible newer versions among the candidates: memories
of its kind and namespace (conversation turns aside; under a key or not), told after it by the
call's moment, near it in meaning, each marked whether it is near enough to be the same sentence
(``mem_newer``, in :mod:`retrieval.search.sources.semantic.statement`). Here the question decides
which of them are versions for it (:mod:`retrieval.search.rank.versions_asked`: "Is Alice allergic
to peanuts?" asks about one of two true facts, "Where does Bob live?" about the newer of two). The
newest version answers what the older one does: when it scores lower (an update may use other words
than the question: "We replaced Redshift with Snowflake." for "Which data warehouse do we use?"),
it takes the older one's final score (its result names the memory it replaces,
``newer_version_of``, and carries the raise as a part, ``version``). The older memory's final score
is then capped :data:`VERSION_MARGIN` under the lowest final score of its newer versions
(themselves placed first, the newest before the older), so that it ranks right below them and stays
retrievable. Its result names the newest of them (``possibly_outdated_by``) and, when capped,
carries the cap as a part of its score (``outdated``, negative: the parts still add up to the final
score). In a chain, where each update is a version of the one before it only (an update is the
version of the fact it is nearest to), the newest of the chain is the one that answers.
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval.search.candidate import is_turn_candidate
from retrieval.search.rank.ranking import Outdated, Scored
from retrieval.search.rank.versions_asked import versions_for_query

# How far under its newer version's final score an older version's is capped.
VERSION_MARGIN = 0.01


def newer_versions_first(scored: Sequence[Scored], query: str) -> list[Scored]:
    """``scored`` (one source's scored candidates) with every candidate that has newer
    versions for ``query`` among them ranked right below them, the newest raised to its
    final score where it scored lower, and marked with the newest."""
    if not any(s.candidate is not None and s.candidate.newer for s in scored):
        return list(scored)
    # Turns are never versions: a turn said later is another turn (the statement leaves out
    # the turns of a thread and the messages; these are turns that name who said them).
    paired = {n for s in scored for n in _newer(s)} | {s.identity for s in scored if _newer(s)}
    content = {
        s.identity: s.candidate.content
        for s in scored
        if s.identity in paired and s.candidate is not None and not is_turn_candidate(s.candidate)
    }
    versions = {
        s.identity: [
            n
            for n, near in zip(_newer(s), _near(s), strict=True)
            if n in content
            and versions_for_query(
                query, content[s.identity], content[n], near=near is True, close=near is not None
            )
        ]
        for s in scored
        if s.identity in content and _newer(s)
    }
    final = {s.identity: s.final_score for s in scored}
    by_id = {s.identity: s for s in scored}
    changed: dict[int, Scored] = {}
    # The newer versions first: in a chain of versions ("Bob moved to Austin." after "Bob moved
    # to Denver." after "Bob lives in Paris.", each an update of the one before it only) the
    # newer ones are placed before the older ones that they place in turn, and the newest of
    # the chain answers what each older one did.
    for identity in _newer_first(versions):
        item = by_id[identity]
        newer = versions[identity]
        own = final[identity]
        newest = _newest(newer[0], versions)
        if final[newest] < own:  # the newest version answers what the older one did
            final[newest] = own
            base = changed.get(newest, by_id[newest])
            changed[newest] = base._replace(
                final_score=own, replaces=Outdated(by=item.identity, own_final=base.final_score)
            )
        capped = min(own, max(0.0, min(final[n] for n in newer) - VERSION_MARGIN))
        final[item.identity] = capped
        changed[item.identity] = changed.get(item.identity, item)._replace(
            final_score=capped, outdated=Outdated(by=newest, own_final=item.final_score)
        )
    return [changed.get(s.identity, s) for s in scored]


def _newer_first(versions: dict[int, list[int]]) -> list[int]:
    # Each memory with newer versions after those of its versions that have newer ones in turn
    # (a version is told after the memory it updates: no cycle).
    ordered: list[int] = []
    seen: set[int] = set()

    def visit(identity: int) -> None:
        if identity in seen:
            return
        seen.add(identity)
        for newer in versions.get(identity, ()):
            visit(newer)
        if versions.get(identity):
            ordered.append(identity)

    for identity in sorted(versions):
        visit(identity)
    return ordered


def _newest(identity: int, versions: dict[int, list[int]]) -> int:
    # The end of a chain of versions from ``identity``, by the newest version of each.
    while versions.get(identity):
        identity = versions[identity][0]
    return identity


def _newer(item: Scored) -> list[int]:
    return (item.candidate.newer if item.candidate is not None else None) or []


def _near(item: Scored) -> list[bool | None]:
    near = item.candidate.newer_near if item.candidate is not None else None
    return near if near is not None else [True] * len(_newer(item))
