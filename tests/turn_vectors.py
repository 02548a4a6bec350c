"""The vectors a store wrote for conversation turns, and the ones they should be: shared by
the tests of turn context (threads) and of sessions in time (messages without a thread)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sqlalchemy import text

from retrieval.memory.config import DEFAULT_TURN_CONTEXT
from tests.conftest import CountingEmbedder, PgDatabase, as_stored

Vector = npt.NDArray[np.float32]


def stored_vectors(database: PgDatabase, ids: Sequence[int]) -> list[Vector]:
    """The stored embeddings of the memories ``ids``, in that order."""
    with database.engine.connect() as connection:
        rows = dict(
            connection.execute(
                text("SELECT id, embedding FROM retrieval.memories WHERE id = ANY(:ids)"),
                {"ids": list(ids)},
            ).all()
        )
    return [np.asarray(rows[memory_id].to_numpy(), dtype=np.float32) for memory_id in ids]


def own_vector(embedder: CountingEmbedder, body: str) -> Vector:
    """The model's vector of ``body`` alone (not counted as an embedding of the store's)."""
    return np.asarray(embedder.inner.embed([body])[0], dtype=np.float32)


def mixed(own: Vector, previous: Vector, weight: float = DEFAULT_TURN_CONTEXT) -> Vector:
    """``normalize(own + weight * previous)``: a turn's vector in its context."""
    vector = own + np.float32(weight) * previous
    return np.asarray(vector / np.linalg.norm(vector), dtype=np.float32)


def close(stored: Vector, expected: Vector) -> bool:
    """Whether a stored vector is ``expected`` as the column stores it."""
    return bool(np.allclose(stored, as_stored(expected), atol=2e-3))
