"""Who said a candidate turn (:mod:`retrieval.memory.speakers`).

The rank stage reads it for the person a query names
(:mod:`retrieval.search.rank.named_speaker`) and for the run of messages a turn belongs to
(:mod:`retrieval.search.rank.context_lift`).
"""

from __future__ import annotations

from retrieval.memory.speakers import speaker_of
from retrieval.search.candidate import Candidate, is_turn_candidate


def message_speaker(turn: Candidate) -> str | None:
    """The speaker of ``turn`` when it is a conversation turn
    (:func:`~retrieval.search.candidate.is_turn_candidate`), else ``None``."""
    return speaker_of(turn.content) if is_turn_candidate(turn) else None
