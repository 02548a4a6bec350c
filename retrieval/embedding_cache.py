"""The embedding cache: an in-process LRU in front of a table keyed by SHA-256.

The key is ``sha256(model_id NUL text)`` (32 bytes), never the text itself. Rows are scoped by
tenant like every other row: a shared cache would let one tenant learn, from hit counts, what text
another tenant stored. A batch looks up all its keys in one query, embeds only the misses (each
distinct text once) and inserts them with ``ON CONFLICT DO NOTHING``, so concurrent writers are
safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection, text

from retrieval.bulk import copy_rows, decode_vector, encode_vectors
from retrieval.embedding import Embedder, Vectors
from retrieval.errors import EmbeddingError

# vector_send gives the binary encoding: decoding it is ~50x faster than parsing the text form.
_LOOKUP = (
    "SELECT key, vector_send(embedding) FROM {schema}.embedding_cache "
    "WHERE tenant_id = :tenant_id AND key = ANY(:keys)"
)
# New vectors go through a per-connection staging table filled by binary COPY (no text
# encoding of vectors), then into the cache with ON CONFLICT DO NOTHING, which keeps concurrent
# writers of the same texts safe.
_STAGING = "retrieval_cache_staging"
_CREATE_STAGING = (
    "CREATE TEMP TABLE IF NOT EXISTS retrieval_cache_staging (key bytea, embedding vector) "
    "ON COMMIT DELETE ROWS"
)
_INSERT = (
    "INSERT INTO {schema}.embedding_cache (tenant_id, key, model_id, embedding) "
    "SELECT :tenant_id, key, :model_id, embedding FROM pg_temp.retrieval_cache_staging "
    "ON CONFLICT (tenant_id, key) DO NOTHING"
)
_CLEAR_STAGING = "DELETE FROM pg_temp.retrieval_cache_staging"


def cache_key(model_id: str, content: str) -> bytes:
    """The 32-byte SHA-256 of the model id and the text, separated by a NUL byte."""
    return hashlib.sha256(model_id.encode() + b"\x00" + content.encode()).digest()


@dataclass
class CacheStats:
    """What the cache did: texts asked for, where their vectors came from, model calls made."""

    texts: int = 0
    memory_hits: int = 0  # served by the in-process LRU
    database_hits: int = 0  # served by the embedding_cache table
    embedded: int = 0  # distinct texts the model embedded

    @property
    def hits(self) -> int:
        """Texts that needed no model call (a repeat within one batch counts as a hit)."""
        return self.texts - self.embedded

    @property
    def misses(self) -> int:
        """Texts the model embedded."""
        return self.embedded


class EmbeddingCache:
    """Embeds texts through ``embedder``, never embedding one text twice for a tenant."""

    def __init__(
        self,
        embedder: Embedder,
        schema: str,
        *,
        lru_entries: int = 10_000,
        before_model_call: Callable[[], None] | None = None,
    ) -> None:
        self.embedder = embedder
        # Runs before the model is first needed (the store checks its dimension there), so a
        # batch served wholly from the cache never loads the model.
        self._before_model_call = before_model_call
        self.stats = CacheStats()
        self._lookup = text(_LOOKUP.format(schema=f'"{schema}"'))
        self._insert = text(_INSERT.format(schema=f'"{schema}"'))
        self._lru: OrderedDict[tuple[str, bytes], Vectors] = OrderedDict()
        self._lru_entries = lru_entries
        self._lock = threading.Lock()

    def embed(self, connection: Connection, tenant_id: str, texts: Sequence[str]) -> Vectors:
        """Vectors of ``texts`` for ``tenant_id``, from the LRU, the table, or the model.

        New vectors are inserted on ``connection`` (in the caller's transaction).
        """
        model_id = self.embedder.model_id
        keys = [cache_key(model_id, item) for item in texts]
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        found = self._from_memory(tenant_id, keys)
        self.stats.texts += len(keys)
        self.stats.memory_hits += sum(1 for key in keys if key in found)
        wanted = list(dict.fromkeys(key for key in keys if key not in found))
        if wanted:
            rows = connection.execute(self._lookup, {"tenant_id": tenant_id, "keys": wanted})
            from_table = {bytes(key): decode_vector(blob) for key, blob in rows}
            self.stats.database_hits += sum(1 for key in keys if key in from_table)
            found.update(from_table)
            self._remember(tenant_id, from_table)
        missing = [key for key in wanted if key not in found]
        if missing:
            found.update(self._embed_missing(connection, tenant_id, keys, texts, missing))
            self.stats.embedded += len(missing)
        return np.stack([found[key] for key in keys])

    def _embed_missing(
        self,
        connection: Connection,
        tenant_id: str,
        keys: Sequence[bytes],
        texts: Sequence[str],
        missing: Sequence[bytes],
    ) -> dict[bytes, Vectors]:
        if self._before_model_call is not None:
            self._before_model_call()
        text_of = dict(zip(keys, texts, strict=True))
        vectors = self.embedder.embed([text_of[key] for key in missing])
        if vectors.shape[0] != len(missing):
            raise EmbeddingError(
                f"model {self.embedder.model_id!r} returned {vectors.shape[0]} vectors "
                f"for {len(missing)} texts"
            )
        new = dict(zip(missing, vectors, strict=True))
        connection.execute(text(_CREATE_STAGING))
        rows = zip(missing, encode_vectors(vectors), strict=True)
        copy_rows(connection, "pg_temp", _STAGING, ["key", "embedding"], ["bytea", "bytea"], rows)
        connection.execute(
            self._insert, {"tenant_id": tenant_id, "model_id": self.embedder.model_id}
        )
        connection.execute(text(_CLEAR_STAGING))
        self._remember(tenant_id, new)
        return new

    def forget_tenant(self, tenant_id: str) -> None:
        """Drop ``tenant_id``'s vectors from the in-process LRU (the table is the caller's)."""
        with self._lock:
            for entry in [entry for entry in self._lru if entry[0] == tenant_id]:
                del self._lru[entry]

    def _from_memory(self, tenant_id: str, keys: Sequence[bytes]) -> dict[bytes, Vectors]:
        found: dict[bytes, Vectors] = {}
        if not self._lru_entries:
            return found
        with self._lock:
            for key in keys:
                vector = self._lru.get((tenant_id, key))
                if vector is not None:
                    self._lru.move_to_end((tenant_id, key))
                    found[key] = vector
        return found

    def _remember(self, tenant_id: str, vectors: dict[bytes, Vectors]) -> None:
        if not self._lru_entries:
            return
        with self._lock:
            for key, vector in vectors.items():
                self._lru[(tenant_id, key)] = vector
                self._lru.move_to_end((tenant_id, key))
            while len(self._lru) > self._lru_entries:
                self._lru.popitem(last=False)
