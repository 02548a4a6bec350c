"""A conversation turn embedded with the turn before it (before its run, for a message).

"Ten seconds, and it went through." says little on its own; after "Did you raise the lock
timeout?" it answers a question about the migration. A memory that is a turn of a thread
(``thread_id`` and ``position``), embedded by the store, is stored with the vector

    normalize(vector(text) + context_weight * vector(previous turn's text))

where the previous turn is the memory of the same tenant and thread at ``position - 1``: in
the same batch, or already stored. A message that continues its speaker's run (``Bo: ...``
after ``Bo: ...``, :mod:`retrieval.memory.speakers`) takes the turn before the run instead:
the nearest earlier turn of the thread said by someone else or by no named speaker, at most
:data:`RUN_REACH` back ("It did." and "Ten seconds in the end." both answer the question
asked before them). A message (kind ``message``) stored without a thread is a turn of a
session inferred from time: its previous turn is the message without a thread of its tenant
told just before it (by ``created_at``, then the order written), or before its run, each
told at most the session gap (``RETRIEVAL_SESSION_GAP_MINUTES``, 30) before the next. Each
text's own vector still comes from (and goes to) the embedding cache; only the memory's
stored vector mixes the two. A turn with no previous turn (the first of its thread or
session, or one written before its predecessor), another memory without a thread, and a
memory whose vector the caller gives keep their own vector. ``context_weight`` is
``RETRIEVAL_TURN_CONTEXT`` (0.3) for a turn, ``RETRIEVAL_RUN_TURN_CONTEXT`` (0.5) for a
message that continues its speaker's run: such a message is most often a fragment ("It
did."), and takes more of the turn it answers. Both 0 turn it off. See
docs/decisions/0012-conversation-context-and-time.md,
docs/decisions/0017-lift-from-the-leading-hits.md,
docs/decisions/0029-the-turn-before-a-run.md and
docs/decisions/0030-a-larger-share-for-a-run.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import numpy as np
from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.embedding.models import Vectors
from retrieval.memory.config import WriteConfig
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.memory.speakers import speaker_of
from retrieval.memory.validation import ValidMemory

# A turn's place: (tenant, namespace, thread, position). A thread's turns are one conversation
# within one namespace: a turn never takes the text of another namespace's turn.
Place = tuple[str, tuple[str, ...], str, int]

# The most turns a message's run is followed back through to the turn before it.
RUN_REACH = 20


class Before(NamedTuple):
    """The turn a turn is embedded with: its text, and whether the turn continues its
    speaker's run (then ``text`` is the turn before the run)."""

    text: str
    run: bool = False


class Mixing(NamedTuple):
    """How turns are embedded: the previous turn's share of a turn's vector (0: none), the
    longest pause within a session of messages without a thread (0: no such sessions), and
    the share of the turn before the run in the vector of a message that continues it."""

    weight: float = 0.0
    session_gap: timedelta = timedelta(0)
    run_weight: float = 0.0

    @property
    def on(self) -> bool:
        """Whether any turn takes a share of another."""
        return self.weight > 0 or self.run_weight > 0

    def share(self, before: Before) -> float:
        """The share of ``before`` in the vector of the turn it comes before."""
        return self.run_weight if before.run else self.weight

    def shared(self, found: Mapping[int, Before]) -> dict[int, Before]:
        """Of ``found`` (the turn before each of some turns, by index), those whose share is
        above 0, in the order of their indexes."""
        return {index: turn for index, turn in sorted(found.items()) if self.share(turn) > 0}


NO_MIXING = Mixing()


def mixing_of(config: WriteConfig, model_id: str) -> Mixing:
    """How a store of ``config`` embeds turns with model ``model_id`` (the shares left at
    MiniLM's values are the model's own: :mod:`retrieval.embedding.calibration`)."""
    from retrieval.embedding.calibration import calibration_for

    calibration = calibration_for(model_id)
    gap = timedelta(minutes=config.session_gap_minutes)
    return Mixing(
        calibration.own("turn_context", config.turn_context),
        gap,
        calibration.own("run_turn_context", config.run_turn_context),
    )


class Told(NamedTuple):
    """A message without a thread: its tenant, when it was told (None: now), its text, its id
    when it is already stored (re-embedding), and its namespace (its session is the messages of
    that namespace only)."""

    tenant_id: str
    created_at: datetime | None
    text: str
    id: int | None = None
    namespace: tuple[str, ...] = ()


def untold(memory: ValidMemory) -> Told | None:
    """A memory to write as a :class:`Told` message, or None when it is not a message without
    a thread."""
    if memory.kind != MESSAGE_KIND or memory.thread_id is not None:
        return None
    return Told(memory.tenant_id, memory.created_at, memory.text, namespace=memory.namespace)


class _Walk(NamedTuple):
    """A message's way back through its speaker's run: the context found, or none (``done``:
    the run is longer than its reach); else the run's earliest message reached (its time,
    ``at``, and the message) and how many more messages may be looked at (:data:`RUN_REACH`
    less those of the run passed)."""

    before: Before | None
    done: bool
    at: datetime
    first: Told
    left: int


def _walk_back(
    walk: _Walk, speaker: str | None, earlier: Iterable[tuple[datetime, Told]], gap: timedelta
) -> _Walk:
    """``walk`` continued through ``earlier`` (the messages told before its run, latest
    first): the first one said by someone else (any one when ``speaker`` is None) told at most
    ``gap`` before the next, at most ``walk.left`` of them looked at."""
    at, first, left = walk.at, walk.first, walk.left
    for told_at, message in earlier:
        if left <= 0 or at - told_at > gap:  # the stored messages may hold one in between
            break
        if speaker is None or speaker_of(message.text) != speaker:
            return _Walk(Before(message.text, left < RUN_REACH), True, at, first, left)
        at, first, left = told_at, message, left - 1
    return _Walk(None, left <= 0, at, first, left)


def previous_messages(
    connection: Connection,
    schema: str,
    messages: Sequence[Told | None],
    gap: timedelta,
) -> dict[int, Before]:
    """The message told before each of ``messages`` (None where an item is not a
    message without a thread) in its session, by index, or before its speaker's run of
    messages for one that continues it (:mod:`retrieval.memory.speakers`; at most
    :data:`RUN_REACH` looked at): for a new message, the new ones before it in the batch (by
    ``created_at``, then the batch's order), then the latest stored that are live and have
    not expired, each told at most ``gap`` before the next (one statement per tenant for those
    the batch does not settle; a stored message, re-embedded, always takes the stored ones
    before it)."""
    if gap <= timedelta(0):
        return {}
    now = datetime.now(UTC)
    by_session: dict[tuple[str, tuple[str, ...]], list[tuple[datetime, int, int, Told]]] = (
        defaultdict(list)
    )
    for index, message in enumerate(messages):
        if message is not None:  # in the order told: time, then stored id, then the batch's
            told_at = message.created_at or now
            order = -1 if message.id is None else message.id
            by_session[message.tenant_id, message.namespace].append(
                (told_at, order, index, message)
            )
    found: dict[int, Before] = {}
    unsettled: dict[tuple[str, tuple[str, ...]], list[tuple[int, str | None, _Walk]]] = defaultdict(
        list
    )
    for session, told in by_session.items():
        told.sort(key=lambda entry: entry[:3])
        new = [entry for entry in told if entry[3].id is None]
        place_of = {entry[2]: place for place, entry in enumerate(new)}
        for told_at, _, index, message in told:
            speaker = speaker_of(message.text)
            walk = _Walk(None, False, told_at, message, RUN_REACH)
            if index in place_of:  # a new message: the batch's new ones before it first
                before = ((new[j][0], new[j][3]) for j in range(place_of[index] - 1, -1, -1))
                walk = _walk_back(walk, speaker, before, gap)
            if walk.before is not None:
                found[index] = walk.before
            elif not walk.done:
                unsettled[session].append((index, speaker, walk))
    query = statement("memory.messages_before", schema)
    for (tenant, namespace), walks in sorted(unsettled.items()):
        bind_tenant(connection, schema, tenant)
        rows = execute(
            connection,
            query,
            {
                "tenant_id": tenant,
                "namespace": list(namespace),
                "kind": MESSAGE_KIND,
                "gap": gap,
                "times": [walk.first.created_at for _, _, walk in walks],
                "ids": [walk.first.id for _, _, walk in walks],
                "reaches": [walk.left if speaker is not None else 1 for _, speaker, walk in walks],
            },
        )
        earlier: dict[int, list[tuple[datetime, Told]]] = defaultdict(list)
        for ordinal, text, created_at in rows:
            earlier[ordinal].append(
                (created_at, Told(tenant, created_at, text, namespace=namespace))
            )
        for ordinal, (index, speaker, walk) in enumerate(walks, start=1):
            turn = _walk_back(walk, speaker, earlier[ordinal], gap).before
            if turn is not None:
                found[index] = turn
    return found


class Said(NamedTuple):
    """A turn's text and its speaker when it names one (else None)."""

    text: str
    speaker: str | None


def said(text: str) -> Said:
    """``text`` of a conversation turn with its speaker (:mod:`retrieval.memory.speakers`)."""
    return Said(text, speaker_of(text))


def turn_before_run(
    place: Place, speaker: str | None, turn_at: Callable[[Place], Said | None]
) -> tuple[Before | None, Place | None]:
    """The turn before the run of ``speaker`` that the turn at ``place`` ends (the turn just
    before it when ``speaker`` is None), and None or the first earlier place
    ``turn_at`` does not know (the walk stopped there; ``turn_at`` gives None for a place it
    does not know or that holds no turn). A run reaches back at most :data:`RUN_REACH` turns;
    a missing turn ends the walk."""
    *thread, position = place  # the thread: tenant, namespace and thread id
    for earlier in range(position - 1, max(position - 1 - RUN_REACH, -1), -1):
        turn = turn_at((*thread, earlier))  # type: ignore[arg-type]
        if turn is None:
            return None, (*thread, earlier)  # type: ignore[return-value]
        if speaker is None or turn.speaker != speaker:
            return Before(turn.text, earlier < position - 1), None
    return None, None


def previous_texts(
    connection: Connection,
    schema: str,
    places: Sequence[Place | None],
    batch: Mapping[Place, Said],
) -> dict[int, Before]:
    """The turn before each place's run (:func:`turn_before_run`) that has one, by
    the place's index: from ``batch`` (the turns of the batch being written, by place, each
    place of ``places`` among them), else from the stored memories (one statement per tenant
    for the places the batch does not hold)."""
    found: dict[int, Before] = {}
    wanted: dict[tuple[str, tuple[str, ...]], set[tuple[str, int]]] = defaultdict(set)
    walks: dict[int, Place] = {}
    for index, place in enumerate(places):
        if place is None or place[3] == 0:
            continue
        speaker = batch[place].speaker
        before, stopped = turn_before_run(place, speaker, batch.get)
        if before is not None:
            found[index] = before
        elif stopped is not None:  # the rest of the walk is in the stored turns
            walks[index] = place
            tenant, namespace, thread, position = stopped
            reach = 1 if speaker is None else position - (place[3] - 1 - RUN_REACH)
            wanted[tenant, namespace].update((thread, position - step) for step in range(reach))
    stored: dict[Place, Said] = {}
    query = statement("memory.turns_at", schema)
    for (tenant, namespace), turns in sorted(wanted.items()):
        bind_tenant(connection, schema, tenant)
        threads, positions = zip(*sorted(t for t in turns if t[1] >= 0), strict=True)
        params = {"tenant_id": tenant, "namespace": list(namespace), "threads": list(threads),
                  "positions": list(positions)}  # fmt: skip
        stored.update(
            ((tenant, namespace, row.thread_id, row.position), said(row.content))
            for row in execute(connection, query, params)
        )

    def turn_at(place: Place) -> Said | None:
        return batch.get(place) or stored.get(place)

    for index, place in walks.items():
        before, _ = turn_before_run(place, batch[place].speaker, turn_at)
        if before is not None:
            found[index] = before
    return dict(sorted(found.items()))


def in_context(own: Vectors, previous: Vectors, weight: float) -> Vectors:
    """``normalize(own + weight * previous)``: a turn's vector with its previous turn's."""
    mixed = own + np.float32(weight) * previous
    norm = np.linalg.norm(mixed)
    return (mixed / norm if norm > 0 else own).astype(np.float32)
