"""Who said a message: the name its text opens with.

A chat's line is stored as ``Maria: text`` (``retrieval ingest`` of a transcript) and a
narrated turn as ``Maria said, "text"``; a text that opens with neither has no known speaker.
The writer reads it for the turn before a message's run (:mod:`retrieval.memory.turn_context`),
the rank stage for the person a query names and for the run a hit belongs to
(:mod:`retrieval.search.rank.speakers`).
"""

from __future__ import annotations

import re

from retrieval.memory.kinds import MESSAGE_KIND

# The name a turn opens with: "Maria: ..." or 'Maria said, "...'.
_OPENING = re.compile(r'(\w[\w\'-]{0,39})(?:: | said, ")')


def speaker_of(content: str) -> str | None:
    """The name ``content`` opens with as its speaker's, or ``None``."""
    opening = _OPENING.match(content)
    return opening[1] if opening is not None else None


def said_text(content: str) -> str:
    """What ``content`` says without the speaker's name it opens with (and, for a narrated
    turn, without its closing quote): ``content`` itself when it names no speaker."""
    opening = _OPENING.match(content)
    if opening is None:
        return content
    said = content[opening.end() :]
    narrated = opening[0].endswith('"') and said.rstrip().endswith('"')
    return said.rstrip()[:-1] if narrated else said


def speaker_of_kind(kind: str, content: str) -> str | None:
    """The speaker of a memory of ``kind`` when it is a message (:func:`speaker_of`), else
    ``None``."""
    return speaker_of(content) if kind == MESSAGE_KIND else None
