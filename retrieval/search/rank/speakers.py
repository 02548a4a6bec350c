"""Who said a turn: the name a conversation's message opens with.

A chat's line is stored as ``Maria: text`` (``retrieval ingest`` of a transcript) and a
narrated turn as ``Maria said, "text"``; a text that opens with neither has no known speaker.
The rank stage reads it for the person a query names
(:mod:`retrieval.search.rank.named_speaker`) and for the run of messages a turn belongs to
(:mod:`retrieval.search.rank.context_lift`).
"""

from __future__ import annotations

import re

from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.search.candidate import Candidate

# The name a turn opens with: "Maria: ..." or 'Maria said, "...'.
_OPENING = re.compile(r'(\w[\w\'-]{0,39})(?:: | said, ")')


def speaker_of(content: str) -> str | None:
    """The name ``content`` opens with as its speaker's, or ``None``."""
    opening = _OPENING.match(content)
    return opening[1] if opening is not None else None


def message_speaker(turn: Candidate) -> str | None:
    """The speaker of ``turn`` when it is a message (:func:`speaker_of`), else ``None``."""
    return speaker_of(turn.content) if turn.kind == MESSAGE_KIND else None
