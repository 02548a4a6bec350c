"""Re-embedding stored memories with another model, in batches, resumable.

Rows whose ``embedding_model`` differs from the store's embedder are re-embedded (through the
embedding cache) and updated in batches of one transaction each. An interrupted run loses at
most the batch in flight: running it again picks up the rows still on the old model.
A model of another dimension needs a migration instead (docs/schema.md, "Changing the
embedding model"). A conversation turn is re-embedded in the context of its previous turn (the
turn before its run, for a message), as the store embeds it when written
(retrieval.memory.turn_context).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from pgvector import Vector
from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.embedding.models import Vectors
from retrieval.errors import translate_database_errors
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.memory.store import MemoryStore
from retrieval.memory.turn_context import (
    Before,
    Place,
    Told,
    in_context,
    mixing_of,
    previous_messages,
    previous_texts,
    said,
)


@dataclass(frozen=True)
class ReembedSummary:
    """What a re-embedding run did."""

    model_id: str
    updated: int
    seconds: float
    embedded: int
    cache_hits: int


def pending(store: MemoryStore, tenant_id: str | None = None) -> int:
    """Memories (of ``tenant_id``, or all) not yet embedded by the store's model."""
    query = statement("memory.reembed_pending", store.schema)
    params = {"model": store.embedder.model_id, "tenant_id": tenant_id}
    with translate_database_errors(str(store.engine.url)), store.engine.connect() as connection:
        if tenant_id is not None:
            bind_tenant(connection, store.schema, tenant_id)
        return int(execute(connection, query, params).scalar_one())


def reembed(
    store: MemoryStore,
    *,
    batch_size: int = 256,
    tenant_id: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReembedSummary:
    """Re-embed every memory made by another model than ``store.embedder``."""
    store.check_embedder()
    next_batch = statement("memory.reembed_next_batch", store.schema)
    update = statement("memory.reembed_update", store.schema)
    model_id = store.embedder.model_id
    began = time.perf_counter()
    stats_before = (store.cache_stats.embedded, store.cache_stats.hits)
    after: tuple[str, int] = ("", 0)
    updated = 0
    while True:
        with store.batch() as batch:
            if tenant_id is not None:  # a role bound by row-level security sees this tenant
                bind_tenant(batch.connection, store.schema, tenant_id)
            rows = execute(
                batch.connection,
                next_batch,
                {
                    "model": model_id,
                    "tenant_id": tenant_id,
                    "after_tenant": after[0],
                    "after_id": after[1],
                    "limit": batch_size,
                },
            ).all()
            if not rows:
                break
            by_tenant: dict[str, list[_Row]] = defaultdict(list)
            for row_tenant, row_id, content, thread_id, position, kind, created_at, path in rows:
                namespace = tuple(path)
                place = None if thread_id is None else (row_tenant, namespace, thread_id, position)
                told = None
                if thread_id is None and kind == MESSAGE_KIND:
                    told = Told(row_tenant, created_at, content, row_id, namespace)
                by_tenant[row_tenant].append(_Row(row_id, content, kind, place, told))
            for row_tenant, items in by_tenant.items():
                vectors = _vectors(store, batch.connection, row_tenant, items)
                bind_tenant(batch.connection, store.schema, row_tenant)
                execute(
                    batch.connection,
                    update,
                    {
                        "model": model_id,
                        "tenant_id": row_tenant,
                        "ids": [item.id for item in items],
                        "embeddings": [Vector(vector) for vector in vectors],
                    },
                )
        after = (rows[-1][0], rows[-1][1])
        updated += len(rows)
        if progress is not None:
            progress(len(rows))
    return ReembedSummary(
        model_id=model_id,
        updated=updated,
        seconds=time.perf_counter() - began,
        embedded=store.cache_stats.embedded - stats_before[0],
        cache_hits=store.cache_stats.hits - stats_before[1],
    )


class _Row(NamedTuple):
    """A stored memory to re-embed: its place in a thread, or as a message without one."""

    id: int
    content: str
    kind: str
    place: Place | None
    told: Told | None


def _vectors(
    store: MemoryStore,
    connection: Connection,
    tenant_id: str,
    items: list[_Row],
) -> Vectors:
    """The new vectors of one tenant's rows: a turn's with its previous turn's, as the store
    writes it."""
    texts = [item.content for item in items]
    mixing = mixing_of(store.config, store.embedder.model_id)
    before: dict[int, Before] = {}
    if mixing.on:
        batch = {i.place: said(i.content) for i in items if i.place is not None}
        places = [item.place for item in items]
        before = previous_texts(connection, store.schema, places, batch)
        told = previous_messages(
            connection, store.schema, [item.told for item in items], mixing.session_gap
        )
        before = mixing.shared(before | told)
    contexts = [turn.text for turn in before.values()]
    vectors = store.cache.embed(connection, tenant_id, texts + contexts, uncounted=len(before))
    own = vectors[: len(texts)].copy()
    for offset, (index, turn) in enumerate(before.items()):
        own[index] = in_context(own[index], vectors[len(texts) + offset], mixing.share(turn))
    return own
