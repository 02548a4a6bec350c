"""Mem0's interface on the library: :class:`Memory` and :class:`AsyncMemory`, for a Mem0 user who
changes an import.

Mem0's open-source ``Memory`` keeps memories in a vector store and, by default, asks an LLM to
extract facts from what it is told. This one speaks the same methods, arguments and return
shapes (``add``, ``search``, ``get``, ``get_all``, ``update``, ``delete``, ``delete_all``,
``history``, ``reset``) over a :class:`~retrieval.memory.store.MemoryStore`, without an LLM and
without importing ``mem0ai``::

    from retrieval.integrations.mem0 import Memory

    m = Memory(tenant_id="acme")          # the embedded server, or RETRIEVAL_DATABASE_URL
    m.add("I'm vegetarian and allergic to nuts.", user_id="alice")
    m.search("What can I cook for dinner?", filters={"user_id": "alice"})

The tenant is fixed at construction: it is the security boundary (row-level security can hold a
role to it). Mem0's ``user_id``, ``agent_id``, ``run_id`` and ``app_id`` are scopes below it: each
memory carries them in its metadata, and every read and erase is narrowed to them inside the
one statement, as a metadata filter. A memory is stored under a key (a new UUID) in the
namespace ``("mem0",)``: the key is its Mem0 ``id``, an ``update`` is a new version under the
same key (the old one retired and kept in ``history``), and a ``delete`` erases every version.

A memory's ``created_at`` and ``updated_at`` are kept in its metadata too, so that Mem0's filters
on them are metadata conditions; ``add(..., timestamp=)`` (Mem0's platform: Unix seconds) gives
when it was said.

What differs (docs/mem0.md): ``add`` stores what it is given, each chat message as a memory of
kind ``message`` with its role (``infer`` is accepted and stores the same: no LLM extracts
facts; the ranking finds them in the messages); ``search`` is the library's hybrid search, its
``score`` the final score in [0, 1]; ``delete`` erases instead of keeping a deleted event.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from retrieval.arguments import MAX_RESULTS, check_tenant, unit_number
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.prepare.metadata_filter import metadata_filter
from retrieval.search.retriever import HybridRetriever
from retrieval.search.statement.metadata import metadata_conditions

logger = logging.getLogger(__name__)

NAMESPACE = ("mem0",)
SCOPES = ("user_id", "agent_id", "run_id", "app_id")
# Keys Mem0 returns beside the metadata, when a memory has them.
PROMOTED = (*SCOPES, "actor_id", "role")
# Mem0's operators and their names here.
_OPERATORS = {
    "eq": "$eq", "ne": "$ne", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte",
    "in": "$in", "nin": "$nin", "contains": "$contains", "icontains": "$icontains",
}  # fmt: skip
_LOGICAL = {"AND": "$and", "OR": "$or", "NOT": "$not"}
# A memory's own times, as Mem0 keeps them: kept in its metadata too (UTC, ISO 8601, which
# compare in order as text), so that Mem0's filters on them are metadata conditions.
TIMES = ("created_at", "updated_at")
DEFAULT_TOP_K = 20  # Mem0's


def mem0_filter(filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A Mem0 filter (``{"user_id": "u1", "OR": [...], "score": {"gte": 3}}``) as the library's
    metadata filter: ``AND`` / ``OR`` / ``NOT`` as ``$and`` / ``$or`` / ``$not`` (``NOT`` of a
    list: none of them holds), ``eq`` ... ``icontains`` as ``$eq`` ... ``$icontains``, ``"*"``
    as any value. The library's own ``$`` operators pass as they are."""
    if filters is None:
        return None
    if not isinstance(filters, Mapping):
        raise ValidationError(
            f"filters must be a dict such as {{'user_id': 'alice'}}, got {type(filters).__name__}",
            field="filters",
        )
    translated: dict[str, Any] = {}
    for key, value in filters.items():
        if key in _LOGICAL:
            translated[_LOGICAL[key]] = _logical(key, value)
        elif isinstance(value, Mapping) and value and all(op in _OPERATORS for op in value):
            translated[key] = {
                _OPERATORS[op]: _time_operand(key, operand) for op, operand in value.items()
            }
        else:
            translated[key] = _time_operand(key, value)
    return translated


def _time_operand(key: str, value: Any) -> Any:
    # A value compared with a memory's own time (``created_at``, ``updated_at``): as the times
    # are kept (UTC, ISO 8601); a date is its midnight, a time without a zone is UTC.
    if key not in TIMES or value == "*" or isinstance(value, bool):
        return value
    if isinstance(value, list):
        return [_time_operand(key, item) for item in value]
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError as error:
            raise ValidationError(
                f"filters: {key} compares with a date or a time in ISO 8601 "
                f"('2024-01-01' or '2024-01-01T09:30:00+00:00'), got {value!r}",
                field="filters",
            ) from error
    else:
        raise ValidationError(
            f"filters: {key} compares with a date or a time in ISO 8601 ('2024-01-01'), got "
            f"{type(value).__name__} {value!r}",
            field="filters",
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _kept_time(moment)


def _kept_time(moment: datetime) -> str:
    # A time as a memory's metadata keeps it: UTC, ISO 8601.
    return moment.astimezone(UTC).isoformat()


def _logical(name: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ValidationError(
            f"filters: {name} takes a non-empty list of conditions, such as "
            f'{{"{name}": [{{"user_id": "alice"}}, {{"category": "food"}}]}}',
            field="filters",
        )
    parts = [mem0_filter(part) for part in value]
    if name == "NOT":
        return parts[0] if len(parts) == 1 else {"$or": parts}
    return parts


class Memory:
    """Mem0's ``Memory`` over a :class:`MemoryStore` (see the module): the memories of one
    tenant, scoped by ``user_id``, ``agent_id``, ``run_id`` and ``app_id``.

    ``store`` defaults to one on :func:`~retrieval.connect`'s database; ``retriever`` to one
    made from it (closed with :meth:`close`); ``config`` is the search's configuration.
    """

    def __init__(
        self,
        store: MemoryStore | None = None,
        *,
        tenant_id: str,
        retriever: HybridRetriever | None = None,
        config: RetrievalConfig | None = None,
    ) -> None:
        if store is None:
            from retrieval.db.engine import connect

            store = MemoryStore.from_database(connect())
        self.store = store
        self.tenant_id = check_tenant(tenant_id)
        self._own_retriever = retriever is None
        self.retriever = retriever or HybridRetriever.from_store(store, config=config)

    # -- writes --------------------------------------------------------------------------------

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        app_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
        timestamp: int | float | None = None,
    ) -> dict[str, Any]:
        """Store ``messages``: a string (a fact), a chat message, or a list of them (each a
        memory of kind ``message`` with its ``role`` and, if given, its ``name`` as
        ``actor_id``; system messages are left out). One of ``user_id``, ``agent_id`` or
        ``run_id`` is required. ``infer`` (True by default in Mem0, where an LLM extracts
        facts) stores the same: what was said, as it was said. ``timestamp`` (Unix seconds, as
        Mem0's platform takes it) is when it was said, for a conversation imported after the
        fact: its sessions, recency and the times its questions name count from it (default:
        now). Returns Mem0's ``{"results": [{"id", "memory", "event": "ADD", ...}]}``."""
        del prompt  # an LLM's prompt: no LLM here
        told_at = _told_at(timestamp)
        kept = _kept_time(told_at or datetime.now(UTC))
        if memory_type is not None:
            raise ValidationError(
                "memory_type: procedural memories need an LLM to summarise a run; store the "
                "summary yourself with add(text, agent_id=...)",
                field="memory_type",
            )
        scopes = _scopes(user_id=user_id, agent_id=agent_id, run_id=run_id, app_id=app_id)
        if not any(scopes.get(name) for name in ("user_id", "agent_id", "run_id")):
            raise ValidationError(
                "add needs a scope: give user_id, agent_id or run_id (for example "
                "add(messages, user_id='alice'))",
                field="user_id",
            )
        told = _told(messages)
        if infer:
            logger.debug("add(infer=True): stored as said; no LLM extracts facts here")
        extra = dict(_checked_metadata(metadata))
        items, returned = [], []
        for kind, text, role, actor in told:
            key = str(uuid.uuid4())
            item_metadata = extra | scopes | {"created_at": kept, "updated_at": kept}
            if role is not None:
                item_metadata["role"] = role
            if actor is not None:
                item_metadata["actor_id"] = actor
            items.append(
                MemoryInput(
                    text=text, tenant_id=self.tenant_id, kind=kind, metadata=item_metadata,
                    namespace=NAMESPACE, key=key, created_at=told_at,
                )
            )  # fmt: skip
            returned.append(
                {"id": key, "memory": text, "event": "ADD", "actor_id": actor, "role": role}
            )
        if items:
            self.store.remember_many(items)
        return {"results": returned}

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        data: str | None = None,
    ) -> dict[str, str]:
        """Store ``text`` (or Mem0's older ``data``) as the new version of memory ``memory_id``
        (its scopes kept, ``metadata`` merged into its own): the old version is retired and
        kept in :meth:`history`."""
        text = text if text is not None else data
        found = self._live([memory_id]).get(str(memory_id))
        if found is None:
            raise ValidationError(f"Memory with id {memory_id} not found", field="memory_id")
        if text is None and metadata is None:
            raise ValidationError("update needs the new text, or metadata", field="text")
        merged = dict(found.metadata) | dict(_checked_metadata(metadata))
        for name in PROMOTED:  # scopes are fixed when a memory is added
            if name in found.metadata:
                merged[name] = found.metadata[name]
        # As Mem0 has it: the memory keeps when it was added, and says when it was updated.
        merged["created_at"] = found.metadata.get("created_at", _kept_time(found.created_at))
        merged["updated_at"] = _kept_time(datetime.now(UTC))
        self.store.remember(
            text if text is not None else found.content,
            tenant_id=self.tenant_id,
            kind=found.kind,
            metadata=merged,
            namespace=NAMESPACE,
            key=str(memory_id),
        )
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """Erase memory ``memory_id``, every version of it."""
        ids = self._versions(keys=[str(memory_id)])
        if not ids:
            raise ValidationError(f"Memory with id {memory_id} not found", field="memory_id")
        self.store.forget(tenant_id=self.tenant_id, memory_ids=ids)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        app_id: str | None = None,
    ) -> dict[str, str]:
        """Erase every memory of the scopes given (at least one), every version of each."""
        scopes = _scopes(user_id=user_id, agent_id=agent_id, run_id=run_id, app_id=app_id)
        if not scopes:
            raise ValidationError(
                "delete_all needs a scope (user_id, agent_id, run_id or app_id); reset() "
                "erases every memory of the tenant",
                field="user_id",
            )
        ids = self._versions(scopes=scopes)
        if ids:
            self.store.forget(tenant_id=self.tenant_id, memory_ids=ids)
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Erase every memory this interface stored for the tenant."""
        self.store.forget(tenant_id=self.tenant_id, namespace=NAMESPACE)

    # -- reads ---------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        limit: int | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        app_id: str | None = None,
        rerank: bool = False,
    ) -> dict[str, Any]:
        """The memories best for ``query`` within the scopes (in ``filters``, as Mem0 2 writes
        them, or as arguments, as Mem0 1 did) and the filter, best first, at most ``top_k``
        (or ``limit``; default 20). ``threshold`` keeps results whose score reaches it (by
        default the library's thresholds, and the best few under them when none passes,
        marked ``below_threshold`` in their metadata). ``rerank`` is accepted: the ranking is
        the library's own."""
        del rerank
        count = _count(top_k, limit)
        scoped = _scoped_filter(filters, user_id, agent_id, run_id, app_id)
        config = self.retriever.config
        if threshold is not None:
            config = replace(
                config,
                min_final_score=unit_number("threshold", threshold),
                fallback_results=0,
                semantic=replace(config.semantic, min_final_score=None),
            )
        response = self.retriever.retrieve(
            query,
            tenant_id=self.tenant_id,
            namespace=NAMESPACE,
            filter=scoped,
            limit=count,
            keyed=True,
            config=config,
        )
        keys = [str(r.metadata["key"]) for r in response.results]
        live = self._live(keys)
        results = []
        for result, key in zip(response.results, keys, strict=True):
            found = live.get(key)
            if found is None:  # erased since the search read it
                continue
            item = _item(found)
            item["score"] = result.final_score
            if result.metadata.get("below_threshold"):
                item.setdefault("metadata", {})["below_threshold"] = True
            results.append(item)
        return {"results": results}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """Memory ``memory_id`` as Mem0 returns it, or None."""
        found = self._live([str(memory_id)]).get(str(memory_id))
        return None if found is None else _item(found)

    def get_all(
        self,
        *,
        filters: Mapping[str, Any] | None = None,
        top_k: int | None = None,
        limit: int | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        app_id: str | None = None,
    ) -> dict[str, Any]:
        """The memories of the scopes meeting the filter, the last stored first, at most
        ``top_k`` (or ``limit``; default 20)."""
        count = _count(top_k, limit)
        scoped = metadata_filter(_scoped_filter(filters, user_id, agent_id, run_id, app_id))
        params: dict[str, Any] = {
            "tenant_id": self.tenant_id,
            "namespace": list(NAMESPACE),
            "limit": count,
        }
        conditions: list[str] = []
        if scoped is not None:
            conditions = metadata_conditions(scoped.operators, "m.metadata")
            params |= scoped.parameters()
        query = statement(
            "mem0.listed",
            self.store.schema,
            conditions="".join(f"\n  AND {condition}" for condition in conditions),
        )
        with self.store.engine.begin() as connection:
            bind_tenant(connection, self.store.schema, self.tenant_id)
            rows = execute(connection, query, params).all()
        return {"results": [_item(_Found.of(row)) for row in rows]}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The versions of memory ``memory_id``, oldest first, as Mem0's history entries
        (``event`` ``ADD`` then ``UPDATE``, with ``old_memory`` and ``new_memory``); empty if
        there is none."""
        found = self._live([str(memory_id)]).get(str(memory_id))
        if found is None:
            return []
        versions = self.store.history(found.id, tenant_id=self.tenant_id)
        entries: list[dict[str, Any]] = []
        previous: str | None = None
        for version in versions:
            memory = version.memory
            entries.append(
                {
                    "id": str(memory.id),
                    "memory_id": str(memory_id),
                    "old_memory": previous,
                    "new_memory": memory.content,
                    "event": "ADD" if previous is None else "UPDATE",
                    "created_at": version.valid_from.isoformat(),
                    "updated_at": None if version.valid_until is None
                    else version.valid_until.isoformat(),
                    "is_deleted": False,
                    "actor_id": memory.metadata.get("actor_id"),
                    "role": memory.metadata.get("role"),
                }
            )  # fmt: skip
            previous = memory.content
        return entries

    def close(self) -> None:
        """Close the retriever made for this interface (not one given)."""
        if self._own_retriever:
            self.retriever.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the store's rows ----------------------------------------------------------------------

    def _live(self, keys: Sequence[str]) -> dict[str, _Found]:
        if not keys:
            return {}
        for key in keys:
            if not isinstance(key, str) or not key.strip():
                raise ValidationError(
                    f"memory_id must be the id add() returned (a string), got {key!r}",
                    field="memory_id",
                )
        params = {"tenant_id": self.tenant_id, "namespace": list(NAMESPACE), "keys": list(keys)}
        with self.store.engine.begin() as connection:
            bind_tenant(connection, self.store.schema, self.tenant_id)
            rows = execute(connection, statement("mem0.memories", self.store.schema), params)
            return {str(row.key): _Found.of(row) for row in rows}

    def _versions(
        self, *, keys: Sequence[str] = (), scopes: Mapping[str, str] | None = None
    ) -> list[int]:
        params: dict[str, Any] = {
            "tenant_id": self.tenant_id,
            "namespace": list(NAMESPACE),
            "keys": list(keys),
        }
        scoped = ""
        checked = metadata_filter(dict(scopes)) if scopes else None
        if checked is not None:
            conditions = metadata_conditions(checked.operators, "m.metadata")
            scoped = " OR (" + " AND ".join(conditions) + ")"
            params |= checked.parameters()
        query = statement("mem0.versions", self.store.schema, scoped=scoped)
        with self.store.engine.begin() as connection:
            bind_tenant(connection, self.store.schema, self.tenant_id)
            return [int(row_id) for row_id in execute(connection, query, params).scalars()]


class AsyncMemory:
    """Mem0's ``AsyncMemory``: :class:`Memory`'s methods as coroutines, each run in a worker
    thread (the store's writes and reads are synchronous)."""

    def __init__(self, store: MemoryStore | None = None, **options: Any) -> None:
        self.sync = Memory(store, **options)

    async def add(self, messages: Any, **options: Any) -> dict[str, Any]:
        """:meth:`Memory.add`."""
        return await asyncio.to_thread(self.sync.add, messages, **options)

    async def search(self, query: str, **options: Any) -> dict[str, Any]:
        """:meth:`Memory.search`."""
        return await asyncio.to_thread(self.sync.search, query, **options)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        """:meth:`Memory.get`."""
        return await asyncio.to_thread(self.sync.get, memory_id)

    async def get_all(self, **options: Any) -> dict[str, Any]:
        """:meth:`Memory.get_all`."""
        return await asyncio.to_thread(self.sync.get_all, **options)

    async def update(self, memory_id: str, *args: Any, **options: Any) -> dict[str, str]:
        """:meth:`Memory.update`."""
        return await asyncio.to_thread(self.sync.update, memory_id, *args, **options)

    async def delete(self, memory_id: str) -> dict[str, str]:
        """:meth:`Memory.delete`."""
        return await asyncio.to_thread(self.sync.delete, memory_id)

    async def delete_all(self, **options: Any) -> dict[str, str]:
        """:meth:`Memory.delete_all`."""
        return await asyncio.to_thread(self.sync.delete_all, **options)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """:meth:`Memory.history`."""
        return await asyncio.to_thread(self.sync.history, memory_id)

    async def reset(self) -> None:
        """:meth:`Memory.reset`."""
        await asyncio.to_thread(self.sync.reset)

    def close(self) -> None:
        """:meth:`Memory.close`."""
        self.sync.close()


# -- shapes -------------------------------------------------------------------------------------


class _Found:
    """A live memory of the interface, as its row reads."""

    __slots__ = ("content", "created_at", "id", "key", "kind", "metadata", "updated_at")

    def __init__(
        self, row_id: int, key: str, content: str, metadata: Mapping[str, Any],
        created_at: datetime, updated_at: datetime,
    ) -> None:  # fmt: skip
        self.id, self.key, self.content = row_id, key, content
        self.metadata = dict(metadata)
        self.kind = "message" if "role" in self.metadata else "fact"
        self.created_at, self.updated_at = created_at, updated_at

    @classmethod
    def of(cls, row: Any) -> _Found:
        return cls(
            int(row.id), str(row.key), str(row.content), row.metadata or {},
            row.created_at, row.updated_at,
        )  # fmt: skip


def _item(found: _Found) -> dict[str, Any]:
    # A memory as Mem0 returns it: its fields, its scopes, actor and role beside them, the rest
    # of its metadata under "metadata".
    item: dict[str, Any] = {
        "id": found.key,
        "memory": found.content,
        "hash": hashlib.md5(found.content.encode(), usedforsecurity=False).hexdigest(),
        "created_at": found.metadata.get("created_at", found.created_at.isoformat()),
        "updated_at": found.metadata.get("updated_at", found.updated_at.isoformat()),
    }
    for name in PROMOTED:
        if name in found.metadata:
            item[name] = found.metadata[name]
    rest = {k: v for k, v in found.metadata.items() if k not in PROMOTED and k not in TIMES}
    if rest:
        item["metadata"] = rest
    return item


def _told_at(timestamp: object) -> datetime | None:
    # Mem0's ``timestamp``: Unix seconds (an int, as its platform takes it, or a float).
    if timestamp is None:
        return None
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        raise ValidationError(
            f"timestamp must be Unix seconds (an int such as {int(time.time())}), got "
            f"{type(timestamp).__name__} {timestamp!r}: for a datetime, pass "
            "int(value.timestamp())",
            field="timestamp",
        )
    if not math.isfinite(timestamp) or timestamp < 0:
        raise ValidationError(
            f"timestamp must be Unix seconds at or after 1970, got {timestamp!r}",
            field="timestamp",
        )
    try:
        return datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError) as error:
        raise ValidationError(
            f"timestamp {timestamp!r} is past the last date Python can hold: give Unix "
            "seconds, not milliseconds",
            field="timestamp",
        ) from error


def _scopes(**given: str | None) -> dict[str, str]:
    scopes = {}
    for name, value in given.items():
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(f"{name} must be a non-empty string, got {value!r}", field=name)
        scopes[name] = value.strip()
    return scopes


def _scoped_filter(
    filters: Mapping[str, Any] | None,
    user_id: str | None,
    agent_id: str | None,
    run_id: str | None,
    app_id: str | None,
) -> dict[str, Any] | None:
    # The scopes given as arguments and the filter's, as one filter of the library's.
    scopes = _scopes(user_id=user_id, agent_id=agent_id, run_id=run_id, app_id=app_id)
    translated = mem0_filter(filters) or {}
    for name, value in scopes.items():
        if name in translated and translated[name] != value:
            raise ValidationError(
                f"{name} is given twice ({value!r} and {translated[name]!r} in filters): give it "
                "once",
                field=name,
            )
        translated[name] = value
    return translated or None


def _count(top_k: int | None, limit: int | None) -> int:
    count = top_k if top_k is not None else limit if limit is not None else DEFAULT_TOP_K
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RESULTS:
        raise ValidationError(
            f"top_k must be a whole number from 1 to {MAX_RESULTS}, got {count!r}", field="top_k"
        )
    return count


def _checked_metadata(metadata: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValidationError(
            f"metadata must be a dict, got {type(metadata).__name__}", field="metadata"
        )
    for names, instead in _NOT_METADATA:
        clash = sorted(set(metadata) & set(names))
        if clash:
            raise ValidationError(f"metadata holds {', '.join(clash)}: {instead}", field="metadata")
    return metadata


# Keys metadata may not hold, and what to give instead.
_NOT_METADATA = (
    (SCOPES, "give scopes as arguments (user_id=...), not in metadata"),
    (TIMES, "the memory's own times are kept by the interface; give when it was said as "
     "add(..., timestamp=unix_seconds)"),
)  # fmt: skip


def _told(
    messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> list[tuple[str, str, str | None, str | None]]:
    # (kind, text, role, actor) of each memory to store: a string is a fact; a message's
    # content a turn, with its role and name; a system message is left out.
    if isinstance(messages, str):
        return [("fact", messages, None, None)]
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence):
        raise ValidationError(
            "messages must be a string, a message ({'role': 'user', 'content': '...'}) or a "
            f"list of messages, got {type(messages).__name__}",
            field="messages",
        )
    told: list[tuple[str, str, str | None, str | None]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), str):
            raise ValidationError(
                f"messages[{index}]: a message is a dict with a 'role' and a string "
                "'content', such as {'role': 'user', 'content': 'I like tea'}",
                field="messages",
            )
        role = message.get("role")
        if not isinstance(role, str) or not role.strip():
            raise ValidationError(f"messages[{index}]: 'role' is missing", field="messages")
        if role == "system":
            continue
        name = message.get("name")
        actor = name if isinstance(name, str) else None
        told.append(("message", str(message["content"]), role, actor))
    return told
