"""The embedding cache: an in-process LRU in front of a table keyed by SHA-256.

The key is ``sha256(model_id NUL text)`` (32 bytes), never the text itself; a question embedded by
a model with a query side (e5's ``query:``) is keyed ``sha256(model_id NUL "query" NUL text)``, so
it never stands for the same text stored. Rows are scoped by
tenant like every other row: a shared cache would let one tenant learn, from hit counts, what text
another tenant stored. A batch looks up all its keys in one query, embeds only the misses (each
distinct text once) and inserts them with ``ON CONFLICT DO NOTHING``, so concurrent writers are
safe.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Connection, Engine

from retrieval.db.copy_rows import copy_rows, decode_vector, encode_vectors
from retrieval.db.engine import check_embedding_dim, other_embedding_models
from retrieval.db.insert_values import insert_rows
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant, row_security_active
from retrieval.embedding.models import Embedder, Side, Vectors, embed_side, embeds_queries_apart
from retrieval.errors import EmbeddingError

_STAGING = "retrieval_cache_staging"
logger = logging.getLogger(__name__)

Entry = tuple[str, bytes]  # (tenant_id, cache key)


class DimensionCheck:
    """Refuses, once, an embedder whose dimension is not the one the database stores: a
    cache's ``before_model_call``, so a batch served wholly from the cache never loads the
    model."""

    def __init__(self, engine: Engine, schema: str, embedder: Embedder) -> None:
        self._engine = engine
        self._schema = schema
        self._embedder = embedder
        self._done = False

    def __call__(self) -> None:
        if not self._done:
            embedder = self._embedder
            check_embedding_dim(self._engine, self._schema, embedder.model_id, embedder.dim)
            others = other_embedding_models(self._engine, self._schema, embedder.model_id)
            if others:
                logger.warning(
                    "schema %r holds vectors of %s besides those of %s: a query's vector does "
                    "not compare with another model's; run `retrieval reembed` to embed every "
                    "memory with %s (or set RETRIEVAL_EMBEDDING_MODEL to the model they were "
                    "stored with)",
                    self._schema, " and ".join(others), embedder.model_id, embedder.model_id,
                )  # fmt: skip
            self._done = True


def cache_key(model_id: str, content: str, side: Side = "passage") -> bytes:
    """The 32-byte SHA-256 of the model id and the text, separated by a NUL byte (and, for a
    question of a model with a query side, ``query`` between them)."""
    marker = b"query\x00" if side == "query" else b""
    return hashlib.sha256(model_id.encode() + b"\x00" + marker + content.encode()).digest()


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


@dataclass
class EmbeddingPlan:
    """The vectors of one batch of texts: those already known, and those still to embed.

    ``missing`` holds each distinct unknown text once, in order of first appearance.
    """

    entries: list[Entry]
    found: dict[Entry, Vectors]
    missing: list[tuple[Entry, str]]
    new: list[tuple[Entry, Vectors]] = field(default_factory=list)
    # Entries whose vectors the table holds but were not read (``plan(read_stored=False)``).
    stored: frozenset[Entry] = frozenset()
    # Entries looked up only for another item's sake (``plan(uncounted=...)``): not counted.
    uncounted: frozenset[Entry] = frozenset()

    def vectors(self) -> Vectors:
        """Every vector, in order (all must be known)."""
        return np.stack([self.found[entry] for entry in self.entries])


class EmbeddingCache:
    """Embeds texts through ``embedder``, never embedding one text twice for a tenant.

    ``embed`` does it all for one tenant's texts. The write path uses the steps for a batch of
    many tenants: ``plan`` (lookups, one query per tenant), ``model``, ``add``, and ``save``
    (inserts the new vectors) once its rows are written.
    """

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
        self._lookup = statement("embedding.lookup", schema)
        self._stored_keys = statement("embedding.stored_keys", schema)
        self.schema = schema
        self._insert = statement("embedding.insert", schema)
        self._lru: OrderedDict[Entry, Vectors] = OrderedDict()
        self._lru_entries = lru_entries
        self._lock = threading.Lock()

    def embed(
        self,
        connection: Connection,
        tenant_id: str,
        texts: Sequence[str],
        *,
        store: bool = True,
        uncounted: int = 0,
        side: Side = "passage",
    ) -> Vectors:
        """Vectors of ``texts`` for ``tenant_id``, from the LRU, the table, or the model.

        New vectors are inserted on ``connection`` (in the caller's transaction), unless
        ``store`` is false (a read, such as a query's vector, never writes: it stays in the
        in-process LRU). The last ``uncounted`` texts are left out of the statistics
        (:meth:`plan`). ``side`` ``query`` embeds questions (a model's query side, if it has
        one).
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        items = [(tenant_id, item) for item in texts]
        plan = self.plan(connection, items, uncounted=uncounted, side=side)
        if plan.missing:
            self.prepare_model()
            missing = [item for _, item in plan.missing]
            self.add(plan, plan.missing, self.model(missing, side=side))
            if store:
                self.save(connection, plan)
        return plan.vectors()

    def question(self, tenant_id: str, text: str) -> Vectors:
        """The vector of a question (the model's query side): from the in-process LRU, else
        from the model, then kept in the LRU. Never from the table: a read never stores its
        question, so the table could answer only a question written exactly as a text stored,
        and asking it cost a connection and a round trip before every new question's model
        call (1.1-1.4 ms, ``benchmarks/reading/question_vector.py``)."""
        remembered = self.remembered(tenant_id, text, side="query")
        if remembered is not None:
            return remembered
        entry = (tenant_id, cache_key(self.embedder.model_id, text, self._side("query")))
        self.stats.texts += 1
        self.prepare_model()
        vector: Vectors = self.model([text], side="query")[0]
        self.stats.embedded += 1
        self._remember({entry: vector})
        return vector

    def remembered(self, tenant_id: str, content: str, side: Side = "passage") -> Vectors | None:
        """The vector of ``content`` if the in-process LRU holds it (a hit), else None."""
        entry = (tenant_id, cache_key(self.embedder.model_id, content, self._side(side)))
        vector = self._from_memory([entry]).get(entry)
        if vector is not None:
            self.stats.texts += 1
            self.stats.memory_hits += 1
        return vector

    def plan(
        self,
        connection: Connection,
        items: Sequence[tuple[str, str]],
        *,
        read_stored: bool = True,
        uncounted: int = 0,
        side: Side = "passage",
    ) -> EmbeddingPlan:
        """Look up ``(tenant_id, text)`` items: the LRU first, then one query per tenant.

        With ``read_stored=False`` the vectors found in the table are not read: their entries
        are listed in ``plan.stored`` for a writer that joins the table in SQL instead. The
        last ``uncounted`` items are looked up (and embedded) for another item's sake, such as
        a turn's context: they are left out of the statistics.
        """
        model_id, side = self.embedder.model_id, self._side(side)
        entries = [(tenant, cache_key(model_id, item, side)) for tenant, item in items]
        found = self._from_memory(entries)
        counted = entries[: len(entries) - uncounted]
        self.stats.texts += len(counted)
        self.stats.memory_hits += sum(1 for entry in counted if entry in found)
        wanted: dict[str, list[bytes]] = {}
        for tenant, key in dict.fromkeys(e for e in entries if e not in found):
            wanted.setdefault(tenant, []).append(key)
        from_table: dict[Entry, Vectors] = {}
        stored: set[Entry] = set()
        driver_connection = connection.connection.driver_connection
        assert driver_connection is not None
        with driver_connection.cursor(binary=True) as cursor:
            for tenant, keys in wanted.items():
                bind_tenant(connection, self.schema, tenant)
                if read_stored:
                    found_rows = {"tenant_id": tenant, "keys": keys}
                    rows = cursor.execute(self._lookup, found_rows).fetchall()
                    from_table.update(((tenant, key), decode_vector(blob)) for key, blob in rows)
                else:
                    wanted_keys = {"tenant_id": tenant, "keys": keys}
                    rows = cursor.execute(self._stored_keys, wanted_keys).fetchall()
                    stored.update((tenant, key) for (key,) in rows)
        self.stats.database_hits += sum(
            1 for entry in counted if entry in from_table or entry in stored
        )
        found.update(from_table)
        self._remember(from_table)
        text_of = dict(zip(entries, (item for _, item in items), strict=True))
        missing = [
            (e, text_of[e])
            for e in dict.fromkeys(e for e in entries if e not in found and e not in stored)
        ]
        return EmbeddingPlan(
            entries=entries,
            found=found,
            missing=missing,
            stored=frozenset(stored),
            uncounted=frozenset(entries[len(counted) :]) - frozenset(counted),
        )

    def prepare_model(self) -> None:
        """Run the check due before the model's first call (a :class:`DimensionCheck`)."""
        if self._before_model_call is not None:
            self._before_model_call()

    def model(self, texts: Sequence[str], side: Side = "passage") -> Vectors:
        """The model's vectors of ``texts`` (stored texts, or questions), one per text."""
        vectors = embed_side(self.embedder, texts, side)
        if vectors.shape[0] != len(texts):
            raise EmbeddingError(
                f"model {self.embedder.model_id!r} returned {vectors.shape[0]} vectors "
                f"for {len(texts)} texts"
            )
        return vectors

    def add(
        self, plan: EmbeddingPlan, chunk: Sequence[tuple[Entry, str]], vectors: Vectors
    ) -> None:
        """Record the model's ``vectors`` of ``chunk`` (part of ``plan.missing``)."""
        new = dict(zip((entry for entry, _ in chunk), vectors, strict=True))
        plan.found.update(new)
        plan.new.extend(new.items())
        self.stats.embedded += sum(1 for entry in new if entry not in plan.uncounted)
        self._remember(new)

    def save(self, connection: Connection, plan: EmbeddingPlan) -> None:
        """Insert the plan's new vectors (binary COPY to a staging table, then ON CONFLICT; a
        role bound by row-level security writes them as INSERT ... VALUES, one tenant at a
        time, in key order)."""
        if not plan.new:
            return
        blobs = encode_vectors(np.stack([vector for _, vector in plan.new]))
        if row_security_active(connection, self.schema):
            model_id = self.embedder.model_id
            rows = sorted(
                (tenant, key, model_id, blob)
                for ((tenant, key), _), blob in zip(plan.new, blobs, strict=True)
            )
            insert_rows(
                connection, self.schema, "embedding_cache",
                ["tenant_id", "key", "model_id", "embedding"],
                ["text", "bytea", "text", "bytea"],
                rows,
                suffix="ON CONFLICT (tenant_id, key) DO NOTHING",
            )  # fmt: skip
            plan.new.clear()
            return
        execute(connection, statement("embedding.create_staging", self.schema))
        staged = (
            (tenant, key, blob) for ((tenant, key), _), blob in zip(plan.new, blobs, strict=True)
        )
        columns = ["tenant_id", "key", "embedding"]
        copy_rows(connection, "pg_temp", _STAGING, columns, ["text", "bytea", "bytea"], staged)
        execute(connection, self._insert, {"model_id": self.embedder.model_id})
        execute(connection, statement("embedding.clear_staging", self.schema))
        plan.new.clear()

    def discard(self, plan: EmbeddingPlan, entries: Iterable[Entry]) -> None:
        """Keep the new vectors of ``entries`` neither in the table (``plan`` is not yet
        saved) nor in the in-process LRU: texts the caller did not store (a copy of a
        memory told in other whitespace, which the memory's own vector stands for)."""
        dropped = set(entries)
        if not dropped:
            return
        plan.new[:] = [(entry, vector) for entry, vector in plan.new if entry not in dropped]
        with self._lock:
            for entry in dropped:
                self._lru.pop(entry, None)

    def forget_tenant(self, tenant_id: str) -> None:
        """Drop ``tenant_id``'s vectors from the in-process LRU (the table is the caller's)."""
        with self._lock:
            for entry in [entry for entry in self._lru if entry[0] == tenant_id]:
                del self._lru[entry]

    def forget_keys(self, tenant_id: str, keys: Iterable[bytes]) -> None:
        """Drop the vectors of ``keys`` (of ``tenant_id``) from the in-process LRU."""
        with self._lock:
            for key in keys:
                self._lru.pop((tenant_id, key), None)

    def _side(self, side: Side) -> Side:
        """``side``, or ``passage`` for a model that embeds a question as it stores a text
        (its query vectors are then shared with the stored texts')."""
        return side if embeds_queries_apart(self.embedder) else "passage"

    def _from_memory(self, entries: Sequence[Entry]) -> dict[Entry, Vectors]:
        found: dict[Entry, Vectors] = {}
        if not self._lru_entries:
            return found
        with self._lock:
            for entry in entries:
                vector = self._lru.get(entry)
                if vector is not None:
                    self._lru.move_to_end(entry)
                    found[entry] = vector
        return found

    def _remember(self, vectors: dict[Entry, Vectors]) -> None:
        if not self._lru_entries:
            return
        with self._lock:
            for entry, vector in vectors.items():
                self._lru[entry] = vector
                self._lru.move_to_end(entry)
            while len(self._lru) > self._lru_entries:
                self._lru.popitem(last=False)
