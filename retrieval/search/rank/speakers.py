"""Who said a candidate turn (:mod:`retrieval.memory.speakers`).

The rank stage reads it for the person a query names
(:mod:`retrieval.search.rank.named_speaker`) and for the run of messages a turn belongs to
(:mod:`retrieval.search.rank.context_lift`).
"""

from __future__ import annotations

from retrieval.memory.speakers import speaker_of_kind
from retrieval.search.candidate import Candidate


def message_speaker(turn: Candidate) -> str | None:
    """The speaker of ``turn`` when it is a message, else ``None``."""
    return speaker_of_kind(turn.kind, turn.content)
