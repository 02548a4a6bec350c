"""Who said a message: the name its text opens with.

A chat's line is stored as ``Maria: text`` (``retrieval ingest`` of a transcript) and a
narrated turn as ``Maria said, "text"``; a name may have up to three words (``Maria Lopez:
text``). A text that opens with neither has no known speaker.
The writer reads it for the turn before a message's run (:mod:`retrieval.memory.turn_context`),
a memory that names who said it is a conversation turn (:mod:`retrieval.memory.kinds`), and
forgetting a turn finds the run after it whose vectors hold its share
(:mod:`retrieval.memory.erasure`).
"""

from __future__ import annotations

import re
from functools import lru_cache

# The name a turn opens with: "Maria: ...", "Maria Lopez: ..." or 'Maria said, "...': a word,
# then at most two more (a chat's export names people as the phone shows them: "Mary Ann",
# "Jean-Luc Picard", "Dr. Lee", "Mum 🌸", "Maria (work)").
# A name's first word: letters, with ' - or . inside ("Jean-Luc", "O'Brien", "Dr.").
_NAME_WORD = r"\w[\w'.-]*"
_OPENING = re.compile(rf'({_NAME_WORD}(?: (?![a-z\u00df-\u00ff])[^\s:]+){{0,2}})(?:: | said, ")')
_LONGEST_NAME = 40


def _opening(content: str) -> re.Match[str] | None:
    # The speaker's name and what follows it, when ``content`` opens with a name: at most
    # 40 characters, its words after the first not in lower case ("Note to self: ..." names
    # nobody).
    opening = _OPENING.match(content)
    if opening is None or len(opening[1]) > _LONGEST_NAME:
        return None
    if any(word[0].islower() for word in opening[1].split(" ")[1:]):
        return None
    return opening


@lru_cache(maxsize=4096)
def speaker_of(content: str) -> str | None:
    """The name ``content`` opens with as its speaker's, or ``None`` (remembered for 4,096
    texts: a read asks it of every candidate, and a tenant's memories come back call after
    call)."""
    opening = _opening(content)
    return opening[1] if opening is not None else None


def said_text(content: str) -> str:
    """What ``content`` says without the speaker's name it opens with (and, for a narrated
    turn, without its closing quote): ``content`` itself when it names no speaker."""
    opening = _opening(content)
    if opening is None:
        return content
    said = content[opening.end() :]
    narrated = opening[0].endswith('"') and said.rstrip().endswith('"')
    return said.rstrip()[:-1] if narrated else said
