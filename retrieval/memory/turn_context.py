"""A conversation turn embedded with the turn before it.

"Ten seconds, and it went through." says little on its own; after "Did you raise the lock
timeout?" it answers a question about the migration. A memory that is a turn of a thread
(``thread_id`` and ``position``), embedded by the store, is stored with the vector

    normalize(vector(text) + context_weight * vector(previous turn's text))

where the previous turn is the memory of the same tenant and thread at ``position - 1``: in
the same batch, or already stored. Each text's own vector still comes from (and goes to) the
embedding cache; only the memory's stored vector mixes the two. A turn with no previous turn
(the first of its thread, or one written before its predecessor), a memory without a thread,
and a memory whose vector the caller gives keep their own vector. ``context_weight`` 0 turns
it off (``RETRIEVAL_TURN_CONTEXT``). See docs/decisions/0012-conversation-context-and-time.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.embedding.models import Vectors

Place = tuple[str, str, int]  # (tenant, thread, position)


def previous_texts(
    connection: Connection,
    schema: str,
    places: Sequence[Place | None],
    batch: Mapping[Place, str],
) -> dict[int, str]:
    """The text of the turn before each place that has one, by the place's index: from
    ``batch`` (the texts of the batch being written, by place), else from the stored memories
    (one statement per tenant)."""
    before = {
        index: (place[0], place[1], place[2] - 1)
        for index, place in enumerate(places)
        if place is not None and place[2] > 0
    }
    wanted: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for tenant, thread, position in before.values():
        if (tenant, thread, position) not in batch:
            wanted[tenant].add((thread, position))
    stored: dict[Place, str] = {}
    query = statement("memory.turns_at", schema)
    for tenant, turns in sorted(wanted.items()):
        bind_tenant(connection, schema, tenant)
        threads, positions = zip(*sorted(turns), strict=True)
        rows = execute(
            connection,
            query,
            {"tenant_id": tenant, "threads": list(threads), "positions": list(positions)},
        )
        stored.update(((tenant, thread, position), text) for thread, position, text in rows)
    texts = {index: batch.get(place, stored.get(place)) for index, place in before.items()}
    return {index: text for index, text in texts.items() if text is not None}


def in_context(own: Vectors, previous: Vectors, weight: float) -> Vectors:
    """``normalize(own + weight * previous)``: a turn's vector with its previous turn's."""
    mixed = own + np.float32(weight) * previous
    norm = np.linalg.norm(mixed)
    return (mixed / norm if norm > 0 else own).astype(np.float32)
