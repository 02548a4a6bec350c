"""Who said a message: the name its text opens with.

A chat's line is stored as ``Maria: text`` (``retrieval ingest`` of a transcript) and a
narrated turn as ``Maria said, "text"``; a name may have up to three words (``Maria Lopez:
text``). A text that opens with neither has no known speaker, nor does one that opens with a
label ("Update: ...", "Note: ...", "Decision: ...", "Step 2: ...": :data:`LABELS`): a note
written down, not a turn of a conversation.
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
# The labels of a note that replaces an earlier one ("Update: ...", "Correction: ...").
UPDATE_LABELS = frozenset(
    "update updated correction corrected edit edited change changed".split()  # noqa: SIM905
)
# The first words of an opening that labels a text rather than naming who said it (compared in
# lower case): what an agent or a person writes before a note, the kinds of memory, a
# document's headings, a message's header fields, the parts of a list. A person or a role who
# speaks ("User", "Assistant", "Speaker 1", "Q", "Interviewer") is none of them.
LABELS = UPDATE_LABELS | frozenset(
    """
    note notes nb ps fyi reminder todo to-do
    fixme important warning caution tip hint info memo idea summary recap tldr context
    background status goal goals task tasks action reason
    fact facts preference preferences event decision directive proposal critique insight
    lesson lessons rule rules policy procedure observation learning learned
    title subtitle abstract introduction objective objectives aim aims purpose method methods
    result results conclusion conclusions discussion findings overview description definition
    example examples source sources reference references keywords perspective
    subject re fw fwd cc bcc date time location address phone email url link price cost
    deadline due owner priority category tag tags type
    step day part chapter section item
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def _opening(content: str) -> re.Match[str] | None:
    # The speaker's name and what follows it, when ``content`` opens with a name: at most
    # 40 characters, its words after the first not in lower case ("Note to self: ..." names
    # nobody), its first word no label ("Update: ...").
    opening = _OPENING.match(content)
    if opening is None or len(opening[1]) > _LONGEST_NAME:
        return None
    first, *rest = opening[1].split(" ")
    if any(word[0].islower() for word in rest) or first.replace(".", "").lower() in LABELS:
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
