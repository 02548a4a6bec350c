"""Writing validated rows on a connection the caller's transaction owns: binary ``COPY`` for
distinct rows, ``INSERT ... ON CONFLICT`` where copies of a live memory refresh it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import numpy as np
import psycopg
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from retrieval.db.copy_rows import copy_rows, encode_vectors, reserve_ids, split_columns
from retrieval.db.local_settings import has_citus
from retrieval.db.row_security import row_security_active
from retrieval.db.statistics_lock import lock_term_statistics
from retrieval.db.vector_type import VectorType
from retrieval.embedding.cache import EmbeddingCache
from retrieval.embedding.models import Vectors
from retrieval.memory.cached_memories import (
    MEMORY_FIELDS,
    insert_cached_memories,
    insert_sent_memories,
)
from retrieval.memory.copies import (
    LIVE_KEY,
    Copies,
    CopyKey,
    fold_copies,
    retire_expired_copies,
    stored_rows,
)
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.keys import with_keyed_versions
from retrieval.memory.records import MemoryInput, StoredIds
from retrieval.memory.row_fields import RowFields, never_a_copy
from retrieval.memory.supersede import check_superseded, retire_alone, retire_superseded
from retrieval.memory.text_key import TextKeys
from retrieval.memory.turn_context import (
    Before,
    Place,
    in_context,
    previous_messages,
    previous_texts,
    said,
    untold,
)
from retrieval.memory.validation import (
    Limits,
    ValidMemory,
    checked_embeddings,
    valid_memory,
)

_MEMORY_COLUMNS = (
    *MEMORY_FIELDS,
    ("embedding", "bytea"),
)  # binary vector, see retrieval.db.copy_rows
_ENTITY_COLUMNS = (("tenant_id", "text"), ("memory_id", "int8"), ("entity_id", "text"))


def _refused_by_live_key(error: BaseException | None) -> bool:
    # Whether PostgreSQL refused a row because the live rows' unique key holds its copy.
    return (
        isinstance(error, psycopg.errors.UniqueViolation) and error.diag.constraint_name == LIVE_KEY
    )


def _new_rows(keys: Sequence[tuple[int, CopyKey]], texts: Sequence[str]) -> list[tuple[Any, ...]]:
    # The rows memory.refresh_copies would have returned for memories all stored as new.
    return [
        (key[0], memory_id, key[1], key[2], key[3] or None, None if key[4] < 0 else key[4], True,
         text, key[5])
        for (memory_id, key), text in zip(keys, texts, strict=True)
    ]  # fmt: skip


class WrittenRow(NamedTuple):
    """A memory's row after a write: its id, whether the write stored it (else it refreshed a
    live copy), and the write's time (its ``created_at``)."""

    id: int
    new: bool
    created_at: datetime


class Writer:
    """Writes rows of one schema; embeds memories without a vector through ``cache``.

    With ``collapse`` (the default), a memory that is a copy of a live one refreshes it
    instead of being stored again (:mod:`retrieval.memory.copies`); without, every memory is a
    row of its own (a distinct copy), copied in with ``COPY``. ``lifetime`` gives a kind's
    default lifetime.
    """

    def __init__(
        self,
        schema: str,
        cache: EmbeddingCache,
        lookup: Lookup,
        vector_type: VectorType = "vector",
        *,
        collapse: bool = True,
        lifetime: Callable[[str], timedelta | None] | None = None,
    ) -> None:
        self.schema = schema
        self.cache = cache
        self.lookup = lookup
        self.vector_type = vector_type
        # How a turn takes a share of the previous one (retrieval.memory.turn_context): the
        # lookup's, which forget makes again by.
        self.mixing = lookup.mixing
        self.text_keys = TextKeys(schema)
        self.collapse = collapse
        self.lifetime = lifetime
        self._citus: bool | None = None

    def memories(self, connection: Connection, memories: Sequence[ValidMemory]) -> StoredIds:
        """Embed (through the cache) and write ``memories`` and their entity links; retire
        what they supersede.

        All new texts of the batch go to the model in one call (one for its messages without
        a thread, one for the others): its batches are sorted by length, so one call pads
        least. (Overlapping the model with the database was measured and lost: on two cores
        both are CPU-bound; see benchmarks/README.md, the retired ingest-overlap.)
        """
        if not memories:
            return StoredIds()
        keyed = any(memory.key is not None for memory in memories)
        if keyed or any(memory.supersedes for memory in memories):
            # The statistics lock before the row locks of what is superseded: the order
            # forget takes them in (retrieval.db.statistics_lock).
            _lock_statistics(connection, self.schema, memories)
        if keyed:
            memories = with_keyed_versions(connection, self.schema, memories)
        targets = check_superseded(connection, self.schema, memories)
        # Distinct rows: every memory with collapsing off, else those never a copy.
        alone: list[int] = []
        others: list[int] = []
        for index, memory in enumerate(memories):
            distinct = not self.collapse or never_a_copy(memory)
            (alone if distinct else others).append(index)
        ids, duplicates = [0] * len(memories), 0
        leads: list[ValidMemory] = []
        written: list[WrittenRow] = []
        if alone:
            leads = [memories[i] for i in alone]
            written = self._write(connection, leads, None)
            for index, row in zip(alone, written, strict=True):
                ids[index] = row.id
        if others:
            part = [memories[i] for i in others]
            copies = fold_copies(part, self.text_keys.keys(connection, [m.text for m in part]))
            retire_expired_copies(connection, self.schema, copies.keys)
            rows = self._write(connection, copies.leads, copies)
            duplicates = copies.folded + sum(not row.new for row in rows)
            for index, lead in zip(others, copies.lead_of, strict=True):
                ids[index] = rows[lead].id
            leads, written = leads + copies.leads, written + rows
        stored = StoredIds(ids, duplicates=duplicates)
        self._copy_links(
            connection,
            [
                (memory.tenant_id, row.id, entity)
                for memory, row in zip(leads, written, strict=True)
                if row.new
                for entity in memory.entities
            ],
        )
        retire_superseded(connection, self.schema, targets, list(zip(leads, written, strict=True)))
        retire_alone(connection, self.schema, list(zip(leads, written, strict=True)))
        return stored

    def _write(
        self, connection: Connection, memories: Sequence[ValidMemory], copies: Copies | None
    ) -> list[WrittenRow]:
        """Write ``memories`` (distinct copies without ``copies``, else the batch's leads) and
        return each one's row."""
        needing = [row for row, memory in enumerate(memories) if memory.embedding is None]
        before = self._previous_turns(connection, memories, needing)
        items = [(memories[row].tenant_id, memories[row].text) for row in needing]
        items += [(memories[row].tenant_id, turn.text) for row, turn in before.items()]
        # Turns in context need both vectors in hand (their own and the previous turn's, which
        # another process or store may have cached): their batch reads the cached ones. A batch
        # with none joins the cache table in SQL instead (retrieval.memory.cached_memories).
        plan = self.cache.plan(connection, items, read_stored=bool(before), uncounted=len(before))
        if plan.missing:
            self.cache.prepare_model()
            self.cache.add(plan, plan.missing, self.cache.model([t for _, t in plan.missing]))
        now, ids = reserve_ids(connection, self.schema, "memories", len(memories))
        if copies is not None:
            # Taken here, once the model is done, rather than by the insert's trigger after
            # the insert locked the live copies it refreshes: forget takes it before row locks.
            _lock_statistics(connection, self.schema, memories)
        fields = RowFields(now, self.cache.embedder.model_id, self.lifetime, copies)
        # Rows whose vector the cache table holds take it there (retrieval.memory.cached_memories);
        # the others are sent with their vectors.
        entry_of = {row: plan.entries[index] for index, row in enumerate(needing)}
        in_table = [row for row in needing if entry_of[row] in plan.stored]
        with_vector = [row for row in range(len(memories)) if entry_of.get(row) not in plan.stored]
        if copies is not None:  # in key order: concurrent writers lock copies in one order
            in_table.sort(key=lambda row: copies.keys[row])
            with_vector.sort(key=lambda row: copies.keys[row])
        returned: list[Any] = []
        if with_vector:
            previous_of = {
                row: plan.entries[len(needing) + index] for index, row in enumerate(before)
            }

            def vector_of(row: int) -> Vectors:
                if row in previous_of:
                    own, previous = plan.found[entry_of[row]], plan.found[previous_of[row]]
                    return in_context(own, previous, self.mixing.share(before[row]))
                if row in entry_of:
                    return plan.found[entry_of[row]]
                embedding = memories[row].embedding
                assert embedding is not None  # rows without one are in entry_of
                return embedding

            matrix = np.stack([vector_of(row) for row in with_vector])
            rows = [
                (*fields.of(row, memories[row], ids[row]), vector)
                for row, vector in zip(
                    with_vector, encode_vectors(matrix, self.vector_type), strict=True
                )
            ]
            if copies is None:
                copy_rows(
                    connection, self.schema, "memories", *split_columns(_MEMORY_COLUMNS), rows
                )
            else:
                keys = [(ids[row], copies.keys[row]) for row in with_vector]
                returned += self._send(connection, rows, keys)
        cached = [(*fields.of(row, memories[row], ids[row]), entry_of[row][1]) for row in in_table]
        if copies is None:  # distinct copies: nothing to refresh
            insert_cached_memories(connection, self.schema, cached, len(cached), refresh=False)
        else:
            keys = [(ids[row], copies.keys[row]) for row in in_table]
            returned += self._insert_cached(connection, cached, keys)
        if copies is None:
            self.cache.save(connection, plan)
            return [
                WrittenRow(memory_id, True, fields.created(memory))
                for memory, memory_id in zip(memories, ids, strict=True)
            ]
        stored = stored_rows(copies.keys, returned)
        told_otherwise = [
            entry_of[row]
            for row in needing
            if not stored.new[row] and stored.texts[row] != memories[row].text
        ]
        if told_otherwise:
            kept = {entry_of[row] for row in needing if stored.new[row]}
            kept.update(plan.entries[len(needing) :])  # the previous turns' texts
            self.cache.discard(plan, set(told_otherwise) - kept)
        self.cache.save(connection, plan)
        return [
            WrittenRow(memory_id, is_new, fields.created(memory))
            for memory, memory_id, is_new in zip(memories, stored.ids, stored.new, strict=True)
        ]

    def _send(
        self,
        connection: Connection,
        rows: Sequence[tuple[Any, ...]],
        keys: Sequence[tuple[int, CopyKey]],
    ) -> list[Any]:
        """Write the leads of a batch that carry their vectors; a row per memory as
        ``memory.refresh_copies`` returns it.

        Most batches hold no copy of a live memory: they are copied in with binary ``COPY``
        (3.2x the rows/s of the statement that refreshes copies), inside a savepoint. If the
        live rows' unique key refuses one, the savepoint is rolled back and the batch goes
        through ``INSERT ... ON CONFLICT`` instead. Where ``COPY`` cannot go (a role bound by
        row-level security; Citus, whose shards' errors a savepoint does not undo) the
        statement is used directly."""
        if self._may_copy(connection):
            try:
                with connection.begin_nested():
                    copy_rows(
                        connection, self.schema, "memories", *split_columns(_MEMORY_COLUMNS), rows
                    )
            except psycopg.errors.UniqueViolation as error:
                if not _refused_by_live_key(error):
                    raise
            else:
                return _new_rows(keys, [row[2] for row in rows])
        return insert_sent_memories(connection, self.schema, rows, self.vector_type)

    def _insert_cached(
        self,
        connection: Connection,
        rows: Sequence[tuple[Any, ...]],
        keys: Sequence[tuple[int, CopyKey]],
    ) -> list[Any]:
        """Write the leads whose vectors the cache holds; a row per memory as
        ``memory.refresh_copies`` returns it. As :meth:`_send`: a plain insert in a savepoint
        first (all cache hits: 1.8x the rows/s of the statement that refreshes copies), the
        refreshing statement when the live rows' unique key refuses a row."""
        try:
            with connection.begin_nested():
                insert_cached_memories(connection, self.schema, rows, len(rows), refresh=False)
        except IntegrityError as error:
            if not _refused_by_live_key(error.orig):
                raise
            return insert_cached_memories(connection, self.schema, rows, len(rows))
        return _new_rows(keys, [row[2] for row in rows])

    def _may_copy(self, connection: Connection) -> bool:
        # Whether a batch may try COPY first (asked once per writer for Citus).
        if self._citus is None:
            driver = connection.connection.driver_connection
            assert driver is not None
            self._citus = has_citus(driver)
        return not self._citus and not row_security_active(connection, self.schema)

    def _previous_turns(
        self, connection: Connection, memories: Sequence[ValidMemory], needing: Sequence[int]
    ) -> dict[int, Before]:
        """The previous turn (the turn before its run, for a message) of each row to embed
        that is a turn of a thread, or a message without one in a session inferred from time,
        and has one (in the batch or stored) with a share above 0, by row."""
        if not self.mixing.on:
            return {}

        def place(memory: ValidMemory) -> Place | None:
            if memory.thread_id is None or memory.position is None:
                return None
            return (memory.tenant_id, memory.namespace, memory.thread_id, memory.position)

        batch = {p: said(m.text) for m in memories if (p := place(m)) is not None}
        places = [place(memories[row]) for row in needing]
        found = previous_texts(connection, self.schema, places, batch)
        previous = {needing[index]: turn for index, turn in found.items()}
        told = previous_messages(
            connection,
            self.schema,
            [untold(memory) for memory in memories],
            self.mixing.session_gap,
        )
        wanted = set(needing)
        previous.update((row, turn) for row, turn in told.items() if row in wanted)
        return self.mixing.shared(previous)

    def memories_streamed(
        self, connection: Connection, items: Sequence[MemoryInput], limits: Limits
    ) -> StoredIds:
        """Copy memories that all carry their embedding, validating each as it streams.

        Nothing needs the model, so each row is checked while the server stores the previous
        ones; a bad row aborts the ``COPY`` and the caller's transaction rolls back whole. With
        copies collapsing, the ``COPY`` runs in a savepoint: if the live rows' unique key
        refuses a row (a copy of a live memory, of an earlier item, or of one that expired),
        the batch is written again by :meth:`memories`, which resolves copies. A batch with
        corrections, or where ``COPY`` cannot go (:meth:`_may_copy`), goes there directly.
        """
        matrix = checked_embeddings(items, limits.dim)
        direct = any(item.supersedes for item in items) or (
            self.collapse and not self._may_copy(connection)
        )
        if matrix is None or direct:  # (a bad vector: checked row by row, to name the item)
            checked = [valid_memory(item, limits, index) for index, item in enumerate(items)]
            return self.memories(connection, checked)
        vectors = encode_vectors(matrix, self.vector_type)
        now, ids = reserve_ids(connection, self.schema, "memories", len(items))
        fields = RowFields(
            now, self.cache.embedder.model_id, self.lifetime, None, distinct=not self.collapse
        )
        links: list[tuple[str, int, str]] = []

        def rows() -> Iterator[tuple[Any, ...]]:
            for index, (item, memory_id) in enumerate(zip(items, ids, strict=True)):
                memory = valid_memory(item, limits, index, checked_embedding=matrix[index])
                links.extend((memory.tenant_id, memory_id, entity) for entity in memory.entities)
                yield (*fields.of(index, memory, memory_id), vectors[index])

        columns = split_columns(_MEMORY_COLUMNS)
        if not self.collapse:
            copy_rows(connection, self.schema, "memories", *columns, rows())
            self._copy_links(connection, links)
            return StoredIds(ids)
        try:
            with connection.begin_nested():
                copy_rows(connection, self.schema, "memories", *columns, rows())
                self._copy_links(connection, links)
        except psycopg.errors.UniqueViolation as error:
            if not _refused_by_live_key(error):
                raise
            checked = [valid_memory(item, limits, index) for index, item in enumerate(items)]
            return self.memories(connection, checked)
        return StoredIds(ids)

    def _copy_links(self, connection: Connection, links: list[tuple[str, int, str]]) -> None:
        if links:
            columns = split_columns(_ENTITY_COLUMNS)
            copy_rows(connection, self.schema, "memory_entities", *columns, links)


def _lock_statistics(connection: Connection, schema: str, memories: Sequence[ValidMemory]) -> None:
    # The statistics lock of the batch's tenants, which every write of memories takes before
    # it locks a stored row (a copy refreshed, a memory superseded or retired), as forget does.
    lock_term_statistics(connection, schema, {memory.tenant_id for memory in memories})
