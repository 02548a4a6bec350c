"""What forgetting a memory erases besides its row: its cached vector, and its share of the
vector of the turn after it.

The embedding cache keeps a tenant's vector of a text under ``sha256(model_id, text)``: a
vector that can be inverted towards the text, under a key that confirms a guessed text. When a
memory is forgotten, its entry goes in the same transaction, unless a live memory of the tenant
still has that text (then it is still that memory's vector). The in-process LRU of the store
that forgot drops it too; another process's LRU holds it until it is evicted or that process
ends (docs/privacy.md).

A turn of a thread is stored with a share of the previous turn's vector
(:mod:`retrieval.memory.turn_context`; a message that continues its speaker's run, with the
turn before the run): when a turn is forgotten, the turn after it and the rest of that turn's
run have no turn before them any more, and are given their own texts' vectors, in the same
transaction. A message without a thread is stored with a share of the message told before it
in its session (inferred from time), or before its run: when one is forgotten, every message
told after it within the session gap (retired ones too: any of them may have taken its share),
and the rest of the run of the first of them, is made again with the message now before it (or
its run), in the same transaction. The gap is the store's setting at the time of ``forget``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.embedding.cache import EmbeddingCache, cache_key
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.memory.speakers import speaker_of
from retrieval.memory.turn_context import (
    RUN_REACH,
    Mixing,
    Told,
    in_context,
    previous_messages,
)


def erase_cached_texts(
    connection: Connection,
    schema: str,
    tenant_id: str,
    texts: Sequence[str],
    models: Sequence[str],
) -> tuple[list[bytes], int]:
    """Remove the tenant's cache entries of ``texts`` (each embedded by the model of the same
    index of ``models``) that no live memory of the tenant still holds; return their keys and
    how many entries there were."""
    if not texts:
        return [], 0
    live = set(
        execute(
            connection,
            statement("memory.live_texts", schema),
            {"tenant_id": tenant_id, "texts": sorted(set(texts))},
        ).scalars()
    )
    keys = sorted(
        {
            cache_key(model, text)
            for text, model in zip(texts, models, strict=True)
            if text not in live
        }
    )
    if not keys:
        return [], 0
    params = {"tenant_id": tenant_id, "keys": keys}
    removed = execute(connection, statement("memory.forget_cache_entries", schema), params)
    return keys, max(removed.rowcount, 0)


def unmix_next_turns(
    connection: Connection,
    schema: str,
    cache: EmbeddingCache,
    tenant_id: str,
    threads: Sequence[str],
    positions: Sequence[int],
) -> int:
    """Give the turns after the forgotten turns at (``threads``, ``positions``), each with the
    rest of its run (the messages of the same speaker that follow it,
    :func:`~retrieval.memory.turn_context.turn_before_run`), their own text's vector; return
    how many. A turn embedded by another model than the cache's is left (``retrieval reembed``
    makes it again)."""
    if not threads:
        return 0
    params = {
        "tenant_id": tenant_id,
        "threads": list(threads),
        "positions": list(positions),
        "reach": RUN_REACH,
    }
    after = {
        (row.thread_id, row.position): row
        for row in execute(connection, statement("memory.turns_after", schema), params)
    }
    rows = {}
    for thread, position in zip(threads, positions, strict=True):
        first = after.get((thread, position + 1))
        if first is None:
            continue
        rows[first.id] = first
        speaker = speaker_of(first.content)
        for later in range(position + 2, position + 1 + RUN_REACH):  # the rest of its run
            row = after.get((thread, later))
            if speaker is None or row is None or speaker_of(row.content) != speaker:
                break
            rows[row.id] = row
    mixed = [
        row for _, row in sorted(rows.items()) if row.embedding_model == cache.embedder.model_id
    ]
    if not mixed:
        return 0
    vectors = cache.embed(connection, tenant_id, [row.content for row in mixed])
    update = statement("memory.set_embedding", schema)
    for row, vector in zip(mixed, vectors, strict=True):
        execute(connection, update, {"tenant_id": tenant_id, "id": row.id, "embedding": vector})
    return len(mixed)


def unmix_next_messages(
    connection: Connection,
    schema: str,
    cache: EmbeddingCache,
    tenant_id: str,
    ids: Sequence[int],
    times: Sequence[datetime],
    mixing: Mixing,
) -> int:
    """Make again, each with the message now told before it (or before its run), the vectors
    of the messages without a thread that may hold a share of the forgotten ones (``ids``,
    told at ``times``): those told after one within the session gap, and the rest of the run
    of the first of them (:func:`_runs_after`); return how many. A message embedded by another
    model than the cache's is left (``retrieval reembed`` makes it again)."""
    gap = mixing.session_gap
    if not ids or gap.total_seconds() <= 0:
        return 0
    params = {
        "tenant_id": tenant_id,
        "kind": MESSAGE_KIND,
        "times": list(times),
        "ids": list(ids),
        "gap": gap,
        "reach": RUN_REACH,
    }
    after = defaultdict(list)
    for row in execute(connection, statement("memory.messages_after", schema), params):
        after[row.ordinal].append(row)
    chosen = {
        row.id: row
        for ordinal, told_at in enumerate(times, start=1)
        for row in _runs_after(told_at, after[ordinal], gap)
    }
    rows = sorted(chosen.values(), key=lambda row: (row.created_at, row.id))
    rows = [row for row in rows if row.embedding_model == cache.embedder.model_id]
    if not rows:
        return 0
    told = [
        Told(tenant_id, row.created_at, row.content, row.id, tuple(row.namespace)) for row in rows
    ]
    before = mixing.shared(previous_messages(connection, schema, told, gap))
    previous_of = {index: len(rows) + order for order, index in enumerate(sorted(before))}
    texts = [row.content for row in rows] + [before[index].text for index in sorted(before)]
    vectors = cache.embed(connection, tenant_id, texts)
    update = statement("memory.set_embedding", schema)
    for index, row in enumerate(rows):
        vector = vectors[index]
        if index in previous_of:
            vector = in_context(vector, vectors[previous_of[index]], mixing.share(before[index]))
        execute(connection, update, {"tenant_id": tenant_id, "id": row.id, "embedding": vector})
    return len(rows)


def _runs_after(told_at: datetime, later: Sequence[Any], gap: timedelta) -> list[Any]:
    """Of the messages told after a forgotten one at ``told_at`` (in the order told), those
    whose vectors may hold its share: every one told within ``gap`` of it, and the run of the
    first one's speaker that goes on past that, each told within ``gap`` of the one before, at
    most :data:`RUN_REACH` long."""
    chosen: list[Any] = []
    speaker = speaker_of(later[0].content) if later else None
    previous, in_run = told_at, speaker is not None
    for count, row in enumerate(later):
        in_run = in_run and count < RUN_REACH and speaker_of(row.content) == speaker
        if row.created_at - previous > gap or not (in_run or row.created_at - told_at <= gap):
            break
        chosen.append(row)
        previous = row.created_at
    return chosen
