"""The person a query names: their turns weigh more when the leading results are theirs.

A question about a person ("What sports does Maria play?") is mostly answered by what that
person said, often in another session than the best hit. A message's speaker is the name its
text opens with (``Maria: ...``, as a chat transcript is stored, or ``Maria said, "..."``); the
query names a speaker when it holds that name as a word, in the same case, or in any case when
the query is typed all in lower case (a name of several words, ``Maria Lopez``, in full or by
its first or last word). When exactly one
speaker among the call's semantic candidates is named, and the three leading ones are all that
speaker's turns, each turn that person said is scored again with one more signal,
``speaker`` (1), weighted ``speaker_weight`` while the source's other weights are scaled by
``1 - speaker_weight``: its score moves towards 1 by that share of what it lacked, stays in
[0, 1], and its parts (``metadata["parts"]``, with the ``speaker`` part) still add up to it.
Every other candidate keeps its score, so none falls under the threshold for it. The agreement
keeps a question that names one person about what another said (the named person is not who
said the leading turns) from being turned towards the wrong speaker
(docs/decisions/0027-the-person-a-question-names.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from retrieval.memory.speakers import name_words
from retrieval.search.rank import ranking
from retrieval.search.rank.speakers import message_speaker

SPEAKER = "speaker"
_LEADING, _AGREEING = 3, 3  # the 3 leading results are all the named person's


def favour_named_speaker(
    query: str,
    scored: list[ranking.Scored],
    weights: Mapping[str, float],
    weight: float,
) -> list[ranking.Scored]:
    """``scored`` (a call's semantic results, scored with ``weights``), the turns of the one
    speaker the query names scored again with the ``speaker`` signal weighted ``weight`` when
    the leading turns are all theirs; else ``scored`` itself."""
    if weight <= 0.0 or not scored:
        return scored
    said = _speakers(scored)
    if not said:
        return scored
    # A query typed all in lower case names a speaker in any case.
    case = 0 if any(character.isupper() for character in query) else re.IGNORECASE
    named = {name for name in set(said.values()) if _names(query, name, case)}
    if len(named) != 1:
        return scored
    (name,) = named
    leading = sorted(scored, key=ranking.rank_key)[:_LEADING]
    if sum(said.get(result.identity) == name for result in leading) < _AGREEING:
        return scored
    heavier = {key: value * (1.0 - weight) for key, value in weights.items()} | {SPEAKER: weight}
    again: list[ranking.Scored] = []
    for result in scored:
        candidate = result.candidate
        if candidate is None or said.get(result.identity) != name:
            again.append(result)  # another's turn, or not a turn: scored as it was
            continue
        own = candidate.signals
        extra = {key: value for key, value in (result.signals or {}).items() if key not in own}
        again.append(ranking.scored_candidate(candidate, heavier, extra | {SPEAKER: 1.0}))
    return again


def _speakers(scored: Sequence[ranking.Scored]) -> dict[int, str]:
    # The speaker of each turn among the results, by identity.
    said: dict[int, str] = {}
    for result in scored:
        speaker = None if result.candidate is None else message_speaker(result.candidate)
        if speaker is not None:
            said[result.identity] = speaker
    return said


def _names(query: str, name: str, case: int) -> bool:
    # The query holds the name, or for a name of several words its first or last word (``case``:
    # 0, or re.IGNORECASE).
    return any(
        re.search(rf"(?<!\w){re.escape(word)}(?!\w)", query, case) is not None
        for word in name_words(name)
    )
