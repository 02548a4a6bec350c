"""LangGraph's long-term memory store on the library: :class:`RetrievalStore`, a ``BaseStore``.

Install with the ``langgraph`` extra. A LangGraph agent (or LangMem, or Deep Agents) writes and
searches it as it would ``InMemoryStore`` or ``PostgresStore``::

    store = RetrievalStore(memory_store, tenant_id="acme", index={"fields": ["text"]})
    store.put(("users", "u1", "memories"), "m1", {"text": "Prefers dark mode", "kind": "ui"})
    store.search(("users", "u1"), query="which theme?", filter={"kind": "ui"})

An item is a memory of the store's tenant, fixed at construction (as the MCP server's: a
graph never chooses whose memory it reads): its namespace is the memory's namespace, its key
the memory's key, its value the memory's metadata, kept exactly. The memory's text is the
item's ``index`` fields (the store's, or the put's; by default the whole value as JSON), which
the store's embedder embeds; a text that opens with who said it ("Maria: ...") makes a message,
a conversation's turn placed by the time it was put, any other a fact (unless the store is
given a ``kind``). A search with a query is the library's hybrid search
(``retrieve`` with the namespace prefix and the filter, inside the one statement): its score is
the result's final score in [0, 1]; without a query, the items in the namespace, the last put
first. ``filter`` is the library's metadata filter (a value or ``$eq``: equal, as
``InMemoryStore`` compares; ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``,
``$all``, ``$exists``).

Over time: a put under a key that holds an item writes a new memory that supersedes the old
one (retired at the put's time, kept in ``history()``); the item's ``created_at`` is its key's
first put, its ``updated_at`` this version's. A delete (``value=None``) erases every version,
as ``forget`` does. A put's ``ttl`` (or the ``TTLConfig``'s ``default_ttl``, in minutes) is the
memory's expiry; a read with ``refresh_ttl`` (default: ``refresh_on_read``) starts it again,
and counts as telling the memory again (its ``last_seen_at``). Expired items are not read;
:meth:`RetrievalStore.sweep_ttl` erases them.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path

from retrieval.arguments import LATEST_TIME, MAX_RESULTS, check_tenant
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ConfigurationError, ValidationError
from retrieval.memory.json_text import whole_value_text
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.memory.namespaces import IN_NAMESPACE
from retrieval.memory.records import MemoryInput
from retrieval.memory.speakers import speaker_of
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.modes import Mode
from retrieval.search.prepare.metadata_filter import metadata_filter
from retrieval.search.retriever import HybridRetriever
from retrieval.search.statement.metadata import metadata_conditions

# The whole value, as LangGraph writes it.
WHOLE_VALUE = "$"


# The kind of an item put with index=False, and the mode of a store's searches, which leaves
# them out; its results carry no metadata, as the store reads the values of the items it
# returns itself (with their first puts), not of every candidate.
UNINDEXED = "unindexed"
SEARCH_MODE = "langgraph_store"
_SEARCHED = Mode(exclude_kinds=frozenset({UNINDEXED}), metadata=False)


def search_config(config: RetrievalConfig | None = None) -> RetrievalConfig:
    """The retriever's config for a store's searches: memories only (items are memories), no
    threshold (a store's search returns its ``limit`` best items, however weak), no access
    counted (a search is a read, as in LangGraph's stores), and the mode that leaves out the
    items put with ``index=False``."""
    config = (config or RetrievalConfig.from_env()).with_modes(**{SEARCH_MODE: _SEARCHED})
    return replace(
        config,
        min_final_score=0.0,
        max_distance=None,
        record_access=False,
        semantic=replace(config.semantic, min_final_score=None),
        episodic=replace(config.episodic, enabled=False),
        documents=replace(config.documents, enabled=False),
    )


class RetrievalStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are the memories of one tenant (see the module).

    ``index`` is LangGraph's ``IndexConfig``: its ``fields`` choose the text of each item
    (default ``["$"]``, the whole value); the store's embedder embeds it (an ``embed`` given
    is refused in words, and ``dims``, when given, must be the embedder's). ``ttl`` is LangGraph's
    ``TTLConfig``. ``kind`` is the kind of the memories the store writes; by default an item
    whose text opens with who said it ("Maria: ...", 'Maria said, "..."') is a message, a
    conversation's turn placed in it by the time it was put (its session, the turn before it,
    the turns around it; :mod:`retrieval.memory.kinds`), and any other a fact. ``retriever``
    (default: one made from ``store`` with :func:`search_config`, closed with the store)
    answers the searches with a query.
    """

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        tenant_id: str,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        kind: str | None = None,
        retriever: HybridRetriever | None = None,
    ) -> None:
        self.store = store
        self.tenant_id = check_tenant(tenant_id)
        embed = (index or {}).get("embed")
        if embed is not None:
            raise ConfigurationError(
                f"index embed={embed!r:.60} is not used: the store's embedder "
                f"({store.cache.embedder.model_id}, {store.cache.embedder.dim} dimensions) embeds "
                "the items, in the database's one vector column; leave embed out, or make the "
                "MemoryStore with the embedder you want"
            )
        dims = (index or {}).get("dims")
        if dims is not None and dims != store.cache.embedder.dim:
            raise ConfigurationError(
                f"index dims={dims}, but the store's embedder makes {store.cache.embedder.dim} "
                "dimensions: leave dims out (the store's embedder embeds the items)"
            )
        self.index_config = index
        self.fields: list[str] = list((index or {}).get("fields") or [WHOLE_VALUE])
        self.ttl_config = ttl
        self.kind = kind
        self._owned = retriever is None
        # A search is a read, as in LangGraph's stores: its retriever counts no accesses (a
        # time to live refreshed on read is the one write a search makes).
        self.retriever = retriever or HybridRetriever.from_store(store, config=search_config())
        # A retriever given keeps its settings; its searches leave the unindexed items out too.
        self._search_config = self.retriever.config.with_modes(**{SEARCH_MODE: _SEARCHED})

    # -- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; each result at its op's place (a put's: ``None``)."""
        results: list[Result] = []
        puts: list[tuple[int, PutOp]] = []
        for op in ops:
            if isinstance(op, PutOp):
                puts.append((len(results), op))
                results.append(None)
                continue
            self._put_all([put for _, put in puts])  # what was put before is read
            puts = []
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        self._put_all([put for _, put in puts])
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- beyond BaseStore --------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Erase the tenant's expired memories; return how many went."""
        return len(self.store.forget(tenant_id=self.tenant_id, expired=True).memory_ids)

    def close(self) -> None:
        """Close the retriever the store made."""
        if self._owned:
            self.retriever.close()

    def __enter__(self) -> RetrievalStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- the operations ----------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        with self.store.engine.begin() as connection:
            bind_tenant(connection, self.store.schema, self.tenant_id)
            row = execute(
                connection,
                statement("langgraph.item", self.store.schema),
                {"tenant_id": self.tenant_id, "key": op.key, "namespace": list(op.namespace)},
            ).first()
            if row is None:
                return None
            if self._refreshes(op.refresh_ttl):
                self._refresh(connection, [row.id])
        return _item(row)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 1 or op.offset < 0 or op.limit + op.offset > MAX_RESULTS:
            raise ValidationError(
                f"search limit {op.limit} and offset {op.offset}: limit at least 1, offset at "
                f"least 0, and their sum at most {MAX_RESULTS}",
                field="limit",
            )
        found = self._ranked(op) if op.query else self._listed(op)
        if found and self._refreshes(op.refresh_ttl):
            with self.store.engine.begin() as connection:
                bind_tenant(connection, self.store.schema, self.tenant_id)
                self._refresh(connection, [item_id for item_id, _ in found])
        return [item for _, item in found]

    def _ranked(self, op: SearchOp) -> list[tuple[int, SearchItem]]:
        # The library's hybrid search within the prefix, the best first, of the memories under a
        # key alone (those stored by other means are not the store's items).
        response = self.retriever.retrieve(
            str(op.query),
            tenant_id=self.tenant_id,
            namespace=op.namespace_prefix,
            filter=op.filter or None,
            limit=op.offset + op.limit,
            keyed=True,
            mode=SEARCH_MODE,
            config=self._search_config,
        )
        results = list(response)[op.offset :]
        ids = [int(r.metadata["id"]) for r in results]
        read = self._values_and_first_puts(ids)
        found: list[tuple[int, SearchItem]] = []
        for memory_id, result in zip(ids, results, strict=True):
            if memory_id not in read:  # deleted since the search read it
                continue
            value, first = read[memory_id]
            updated = _time(result.metadata["created_at"])
            item = SearchItem(
                namespace=tuple(result.metadata["namespace"]),
                key=str(result.metadata["key"]),
                value=dict(value),
                created_at=first or updated,
                updated_at=updated,
                score=result.final_score,
            )
            found.append((memory_id, item))
        return found

    def _listed(self, op: SearchOp) -> list[tuple[int, SearchItem]]:
        # The items of the prefix meeting the filter, the last put first.
        checked = metadata_filter(op.filter or None)
        conditions: list[str] = []
        params: dict[str, Any] = {
            "tenant_id": self.tenant_id,
            "limit": op.limit,
            "offset": op.offset,
        }
        if op.namespace_prefix:
            conditions.append(IN_NAMESPACE)
            params["namespace"] = list(op.namespace_prefix)
        if checked is not None:
            conditions += metadata_conditions(checked.operators, "m.metadata")
            params |= checked.parameters()
        query = statement(
            "langgraph.items",
            self.store.schema,
            conditions="".join(f"\n  AND {condition}" for condition in conditions),
        )
        with self.store.engine.begin() as connection:
            bind_tenant(connection, self.store.schema, self.tenant_id)
            rows = execute(connection, query, params).all()
        return [(int(row.id), _search_item(row)) for row in rows]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        suffix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            path = (condition.path,) if isinstance(condition.path, str) else condition.path
            if condition.match_type == "prefix":
                prefix = tuple(path)
            elif condition.match_type == "suffix":
                suffix = tuple(path)
            else:
                raise ValidationError(
                    f"match_type {condition.match_type!r}: prefix or suffix", field="match_type"
                )
        return self.store.namespaces(
            tenant_id=self.tenant_id,
            prefix=prefix,
            suffix=suffix,
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )

    def _put_all(self, puts: Sequence[PutOp]) -> None:
        # The last put of each (namespace, key) wins, as in LangGraph's stores. The writes go
        # in one batch, which checks them all first; the deletes (every version of their
        # items) only after it, so that a bad put leaves the store as it was.
        last = {(op.namespace, op.key): op for op in puts}
        writes: list[MemoryInput] = []
        deleted: set[tuple[tuple[str, ...], str]] = set()
        for (namespace, key), op in last.items():
            _check_namespace(namespace)
            if op.value is None:
                deleted.add((namespace, key))
            elif isinstance(op.value, dict):
                writes.append(self._memory(op))
            else:
                raise ValidationError(
                    f"the value of {key!r} must be a dict, got {type(op.value).__name__}",
                    field="value",
                )
        if writes:
            self.store.remember_many(writes)
        if deleted:
            self._delete(deleted)

    def _memory(self, op: PutOp) -> MemoryInput:
        value = dict(op.value or {})
        _check_json(op.key, value)
        fields = self.fields if op.index is None or op.index is False else list(op.index)
        minutes = _minutes(op.ttl)
        text = _text(value, fields)
        return MemoryInput(
            text=text,
            tenant_id=self.tenant_id,
            kind=UNINDEXED if op.index is False else self.kind or _kind_of(text),
            metadata=value,
            namespace=op.namespace,
            key=op.key,
            expires_at=None
            if minutes is None
            else datetime.now(UTC) + timedelta(minutes=float(minutes)),
        )

    def _delete(self, items: set[tuple[tuple[str, ...], str]]) -> None:
        # Every version of the items at ``items`` (namespace, key), in one forget.
        with self.store.engine.begin() as connection:
            bind_tenant(connection, self.store.schema, self.tenant_id)
            rows = execute(
                connection,
                statement("langgraph.versions", self.store.schema),
                {"tenant_id": self.tenant_id, "keys": sorted({key for _, key in items})},
            ).all()
        versions = [int(row.id) for row in rows if (tuple(row.namespace), row.key) in items]
        if versions:
            self.store.forget(tenant_id=self.tenant_id, memory_ids=versions)

    def _values_and_first_puts(
        self, ids: list[int]
    ) -> dict[int, tuple[dict[str, Any], datetime | None]]:
        # The values of the items a search returns and when each key was first put, read where
        # the search read, on its connections: one prepared round trip.
        if not ids:
            return {}
        rows = self.retriever.read_rows(
            statement("langgraph.values_and_first_puts", self.store.schema),
            {"tenant_id": self.tenant_id, "ids": ids},
        )
        return {int(memory_id): (value, first) for memory_id, value, first in rows}

    def _refresh(self, connection: Any, ids: list[int]) -> None:
        execute(
            connection,
            statement("langgraph.refresh", self.store.schema),
            {"tenant_id": self.tenant_id, "ids": ids},
        )

    def _refreshes(self, asked: bool | None) -> bool:
        if self.ttl_config is None:
            return False
        if asked is None:
            return bool(self.ttl_config.get("refresh_on_read", True))
        return bool(asked)


def _minutes(ttl: object) -> float | None:
    """A put's ttl in minutes (BaseStore.put has put the config's default_ttl in its place when
    it gave none; ``None``: no expiry): a finite number above 0 that ends before the latest
    time a row holds, else a :class:`ValidationError` (a string or a bool is no ttl)."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise ValidationError(
            f"ttl must be a number of minutes (such as 60) or None, got {type(ttl).__name__} "
            f"{ttl!r:.40}",
            field="ttl",
        )
    longest = (LATEST_TIME - datetime.now(UTC)).total_seconds() / 60
    if not math.isfinite(ttl) or not 0 < ttl < longest:
        raise ValidationError(
            f"ttl must be a finite number of minutes above 0 and under {longest:,.0f} (the "
            f"latest expiry a memory holds), got {ttl!r}",
            field="ttl",
        )
    return float(ttl)


def _check_json(key: str, value: object) -> None:
    """Raise a :class:`ValidationError` naming the first place in ``value`` that JSON cannot
    hold (a datetime, a set, bytes, a float that is not finite, a key that is not a string):
    the store keeps a value as JSON, as LangGraph's PostgreSQL store does."""
    places: list[tuple[str, object]] = [("value", value)]
    while places:
        where, held = places.pop()
        if isinstance(held, dict):
            for name, inner in held.items():
                if not isinstance(name, str):
                    raise _not_json(key, where, f"a key {name!r:.40} that is not a string")
                places.append((f"{where}[{name!r}]", inner))
        elif isinstance(held, list | tuple):
            places.extend((f"{where}[{index}]", inner) for index, inner in enumerate(held))
        elif isinstance(held, float) and not math.isfinite(held):
            raise _not_json(key, where, f"{held!r}, which JSON cannot hold")
        elif held is not None and not isinstance(held, str | int | float | bool):
            hint = " (store value.isoformat())" if hasattr(held, "isoformat") else ""
            raise _not_json(key, where, f"a {type(held).__name__}, which JSON cannot hold{hint}")


def _not_json(key: str, where: str, what: str) -> ValidationError:
    return ValidationError(
        f"the value of {key!r} holds at {where} {what}: give JSON types only (dict, list, str, "
        "int, float, bool, None)",
        field="value",
    )


def _text(value: dict[str, Any], fields: list[str]) -> str:
    # The text of the value at ``fields`` ("$": all of it, as JSON), joined by new lines; the
    # whole value when the fields hold no text.
    texts: list[str] = []
    for field in fields:
        if field == WHOLE_VALUE:
            texts.append(whole_value_text(value))
        else:
            texts += [text for text in get_text_at_path(value, field) if text.strip()]
    joined = "\n".join(texts)
    return joined if joined.strip() else whole_value_text(value)


def _check_namespace(namespace: tuple[str, ...]) -> None:
    if not namespace:
        raise ValidationError("an item's namespace must hold at least one name", field="namespace")


def _time(value: object) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _item(row: Any) -> Item:
    return Item(**_fields(row))


def _search_item(row: Any) -> SearchItem:
    return SearchItem(**_fields(row))


def _fields(row: Any) -> dict[str, Any]:
    return {
        "namespace": tuple(row.namespace),
        "key": row.key,
        "value": dict(row.metadata),
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def _kind_of(text: str) -> str:
    # The kind of an item's memory when the store names none: a message when its text opens
    # with who said it (a conversation's turn, placed by the time it was put), else a fact.
    return MESSAGE_KIND if speaker_of(text) is not None else "fact"
