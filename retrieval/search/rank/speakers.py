"""Who said a candidate turn (:mod:`retrieval.memory.speakers`).

The rank stage reads it for the person a query names
(:mod:`retrieval.search.rank.named_speaker`) and for the run of messages a turn belongs to
(:mod:`retrieval.search.rank.context_lift`).
"""

from __future__ import annotations

from retrieval.memory.speakers import speaker_of
from retrieval.search.candidate import Candidate


def message_speaker(turn: Candidate) -> str | None:
    """The speaker of ``turn`` when it is a conversation turn that names one, else ``None``: a
    memory whose text opens with who said it is a turn whatever its kind or place
    (:func:`retrieval.memory.kinds.is_turn`), so the name it opens with is the answer."""
    return speaker_of(turn.content)
