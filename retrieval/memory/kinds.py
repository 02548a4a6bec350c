"""The kinds of memory the store accepts, and what each is for.

A memory's kind is what the retrieval modes filter on (``knowledge_lookup`` keeps the kinds of
knowledge, ``session_recovery`` drops the agent's own syntheses), so a misspelt kind would
silently fall out of a mode: a kind outside these is refused unless the configuration declares
it (``WriteConfig.extra_kinds``, ``RETRIEVAL_MEMORY_KINDS``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from types import MappingProxyType

from retrieval.memory.speakers import speaker_of

MESSAGE_KIND = "message"
"""The kind of a conversation's turn: stored without a thread, its session is inferred from the
time between messages (retrieval.memory.turn_context, retrieval.search.statement.context)."""


def is_turn(kind: str, thread_id: str | None, position: int | None, content: str = "") -> bool:
    """Whether a memory is a conversation turn: a message (kind ``message``, with or without a
    thread), any memory with a thread and a position whatever its kind, or one whose
    ``content`` opens with who said it ("Maria: ...", 'Maria said, "..."':
    :func:`retrieval.memory.speakers.speaker_of`), as a LangGraph or MCP client may store one.

    The one definition every rule that treats turns apart reads: a turn names its speaker,
    yields when it only asks, and is never a version of a fact. A turn is placed in its
    conversation (embedded with the turn before it, lifted with its neighbours, a copy only of
    the same place's turn) when it has a thread and a position, or is a message (its session
    inferred from time); the read statement's ``read_common.turn`` is that structural part.
    """
    if kind == MESSAGE_KIND or (thread_id is not None and position is not None):
        return True
    return bool(content) and speaker_of(content) is not None


MEMORY_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "fact": "a statement about the world or the user (the default)",
        "message": "one turn of a conversation (what `retrieval ingest` stores for a transcript, "
        "and LangGraph's store for an item that opens with who said it)",
        "preference": "what a user likes, dislikes or wants",
        "event": "something that happened, at its created_at",
        "episteme": "knowledge of how a system is: its architecture, its behaviour",
        "techne": "know-how: how to do something, a procedure that worked",
        "critique": "a problem found, a review, a cause of a failure",
        "decision": "a choice that was made, and why",
        "directive": "a rule to follow",
        "proposal": "a suggestion not yet decided",
        "synthesized_insight": "the agent's own conclusion drawn from other memories",
        "unindexed": "an item kept for lookups by its key, never found by a store's search for "
        "a query (LangGraph's `put(..., index=False)`)",
    }
)
"""Every built-in kind and what it is for."""


def describe_kinds(extra: frozenset[str] = frozenset()) -> str:
    """The known kinds as one line, for error messages."""
    return ", ".join([*MEMORY_KINDS, *sorted(extra - set(MEMORY_KINDS))])


def nearest_kind(given: str, extra: frozenset[str] = frozenset()) -> str | None:
    """The known kind ``given`` most likely misspells ("prefrence": "preference"), or None."""
    known = [*MEMORY_KINDS, *sorted(extra - set(MEMORY_KINDS))]
    close = difflib.get_close_matches(given.lower(), known, n=1, cutoff=0.75)
    return close[0] if close else None
