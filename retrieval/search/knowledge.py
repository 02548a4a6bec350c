"""What the retriever learns of its tenants from its reads, for the plans of the next calls.

The read stage learns it from each statement's presence rows (and from the leading hits); the
plan stage reads it as a :class:`TenantView`, a snapshot that makes :func:`plan_read
<retrieval.search.plan.read_plan.plan_read>` a pure function.

* **Which sources a tenant holds.** Planning a source's CTEs costs every call even for a
  tenant with nothing in its tables: the documents CTEs about 1.5-2.5 ms, and a statement
  carrying them plans slower as a whole (on the read benchmark's tenant without documents,
  interleaved over 150 claims, all sources p50 13.74 ms with them against 10.44 ms without);
  the episodic CTEs about 1.6 ms (on a tenant holding memories only, 6.25 ms against 3.63 ms).
  So the retriever remembers, per tenant, whether it held documents and whether it held
  decisions or tool calls; a tenant not seen yet, or seen with rows, gets the source's CTEs.
  Nothing is ever missed: every statement carries a presence row per source the config turns
  on (:mod:`retrieval.search.statement.presence`), read in the same snapshot as the rest. If a
  source was left out and now has rows, the read runs the plan's full statement (a second
  statement, once, when a tenant's first documents or first decisions arrive).
* **Whether its candidates hold facts that may be versions** (:data:`FACTS`): two memories
  that are short statements, not turns. Pairing the candidates as versions costs a statement
  about 1.1 ms of planning and execution even where no pair can form (LangGraph's store of
  abstracts: a search 11.07 against 9.80 ms p50 without them, the same results): a tenant whose
  candidates have held no two is read without the versions' CTEs, its presence row still
  counting them; when they come, the full statement runs (once), and the tenant keeps the
  versions from then on.
* **Whether its leading hits are turns** of a conversation (:data:`TURNS`): the statement then
  reads their context turns too; a call whose leading hits are turns the statement did not
  read around reads them with a statement of their own.
* **Its size**, and the table's, for the choice of an exact read
  (:mod:`retrieval.search.plan.exact_read`), and the size a generic plan expects of a tenant,
  for the choice of the plan (:mod:`retrieval.search.plan.plan_cache`), asked for again after
  :data:`REFRESH_SECONDS`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from retrieval.db.read_pool import ReadConnections

TURNS = "turns"  # learnt from the leading hits, not from a presence row
# A presence row: whether the semantic candidates held two memories that may be versions of one
# another (short statements, not turns); the plan leaves the versions out while they hold none.
# Once they held a pair, the tenant keeps the versions: a call whose candidates hold a pair
# after one whose did not runs a second statement, which costs more than the versions do.
FACTS = "facts"
MEMORIES = "memories"  # a presence row: the tenant's memories (memory_corpus)
MEMORY_TABLE = "memory_table"  # a presence row: the memories table's rows (pg_class.reltuples)
MEMORY_GENERIC = "memory_generic"  # a presence row: a generic plan's rows of a tenant (pg_stats)
SIZE_ROWS = (MEMORIES, MEMORY_TABLE, MEMORY_GENERIC)
REFRESH_SECONDS = 60.0  # a tenant's size is asked for again after this long
_MAX_TENANTS = 100_000  # tenants remembered per retriever (then it starts afresh)


@dataclass(frozen=True)
class TenantView:
    """What is known, before a call, of its tenant and its database (no I/O)."""

    # The sources probed by a presence row (decisions and tool calls, chunks) the tenant held
    # no rows of at the last look.
    empty: frozenset[str] = frozenset()
    leads_with_turns: bool = True  # the last call's leading hits were turns of a conversation
    size_stale: bool = True  # the tenant's size is to be asked for (not seen lately)
    memories: int | None = None  # the tenant's memories when last seen (None: not seen)
    table_rows: int = 0  # the memories table's rows when last seen
    generic_memories: int = 0  # the memories a generic plan expects of a tenant (0: unknown)
    iterative_scan: bool = True  # the database's pgvector has the iterative scan
    bound: bool = False  # the connections' role is bound by row-level security
    distributed: bool = False  # the database is a Citus coordinator
    # ... whose read statements run on the worker holding their tenant's shards (the schema's
    # read function): planned there alone, as one server plans them.
    on_shards: bool = False

    @property
    def routed(self) -> bool:
        """Whether Citus routes the read statement: plans it on the coordinator, where it can
        neither keep a generic plan nor plan the statement's look at ``pg_class``, and the
        worker plans it again (a Citus database whose reads do not run on the shards)."""
        return self.distributed and not self.on_shards


class SourcePresence:
    """Per tenant and source, whether the tenant held rows at the last statement that looked
    (thread-safe)."""

    def __init__(self) -> None:
        self._held: dict[str, dict[str, bool]] = {}  # per tenant: source -> whether it held rows
        self._lock = threading.Lock()

    def may_hold(self, tenant_id: str, source: str) -> bool:
        """False only if the tenant held no rows of ``source`` at the last statement."""
        return self._held.get(tenant_id, {}).get(source, True)

    def empty(self, tenant_id: str) -> frozenset[str]:
        """The sources the tenant held no rows of at the last statement that looked."""
        held = self._held.get(tenant_id, {})
        return frozenset(source for source, any_rows in held.items() if not any_rows) - {TURNS}

    def learn(self, tenant_id: str, counts: Mapping[str, int]) -> None:
        """Remember what the last statement saw (its sources' presence rows; not the sizes)."""
        seen = {source: count > 0 for source, count in counts.items() if source not in SIZE_ROWS}
        if not seen:
            return
        with self._lock:
            if len(self._held) >= _MAX_TENANTS:
                self._held.clear()
            held = self._held.get(tenant_id, {})
            if held.get(FACTS):  # a pair once seen keeps the versions: see FACTS
                seen.pop(FACTS, None)
            # A new dict, so that a reader never sees one being changed.
            self._held[tenant_id] = held | seen


class _Sizes(NamedTuple):
    memories: int  # the tenant's memories
    table_rows: int  # the rows of the table that holds them (on Citus, of the tenant's shard)
    generic_memories: int  # a generic plan's estimate of a tenant in that table
    learnt: float  # when (time.monotonic())


class TenantSizes:
    """Per tenant, its memory count at the last statement that looked, and the rows and a
    generic plan's estimate of a tenant of the table that holds it: on one server one table for
    every tenant, on Citus the tenant's shard, which an isolated tenant may hold alone
    (thread-safe). A tenant not seen yet is judged by the last table seen."""

    def __init__(self) -> None:
        self._sizes: dict[str, _Sizes] = {}
        self.table_rows = 0  # the last statement's, for a tenant not seen yet
        self.generic_memories = 0
        self._lock = threading.Lock()

    def stale(self, tenant_id: str) -> bool:
        """Whether the next statement should ask for the tenant's size (not seen, or not in
        the last :data:`REFRESH_SECONDS`)."""
        known = self._sizes.get(tenant_id)
        return known is None or time.monotonic() - known.learnt > REFRESH_SECONDS

    def memories(self, tenant_id: str) -> int | None:
        """The tenant's memory count when last seen (None: not seen)."""
        known = self._sizes.get(tenant_id)
        return None if known is None else known.memories

    def table_of(self, tenant_id: str) -> tuple[int, int]:
        """The rows of the table that held the tenant when last seen and a generic plan's
        estimate of a tenant there (the last table seen for a tenant not seen yet)."""
        known = self._sizes.get(tenant_id)
        if known is None:
            return self.table_rows, self.generic_memories
        return known.table_rows, known.generic_memories

    def learn(self, tenant_id: str, counts: Mapping[str, int]) -> None:
        """Remember the sizes a statement's presence rows counted (if it carried them)."""
        if MEMORIES not in counts:
            return
        with self._lock:
            if len(self._sizes) >= _MAX_TENANTS:
                self._sizes.clear()
            # A statement that did not count the table keeps what the tenant's last one did.
            table_rows, generic_memories = self.table_of(tenant_id)
            table_rows = counts.get(MEMORY_TABLE, table_rows)
            generic_memories = counts.get(MEMORY_GENERIC, generic_memories)
            self._sizes[tenant_id] = _Sizes(
                counts[MEMORIES], table_rows, generic_memories, time.monotonic()
            )
            self.table_rows, self.generic_memories = table_rows, generic_memories


class TenantKnowledge:
    """Everything one retriever has learnt of its tenants."""

    def __init__(self) -> None:
        self.presence = SourcePresence()
        self.sizes = TenantSizes()

    def view(self, tenant_id: str, reads: ReadConnections) -> TenantView:
        """What is known of ``tenant_id``, and of the database ``reads`` reads (its pgvector,
        row-level security, Citus: asked once per pool)."""
        presence, sizes = self.presence, self.sizes
        table_rows, generic_memories = sizes.table_of(tenant_id)
        return TenantView(
            empty=presence.empty(tenant_id),
            leads_with_turns=presence.may_hold(tenant_id, TURNS),
            size_stale=sizes.stale(tenant_id),
            memories=sizes.memories(tenant_id),
            table_rows=table_rows,
            generic_memories=generic_memories,
            iterative_scan=reads.iterative_scan(),
            bound=reads.row_security_active(),
            distributed=reads.distributed(),
            on_shards=reads.on_shards(),
        )

    def learn(self, tenant_id: str, counts: Mapping[str, int]) -> None:
        """Remember what a statement's presence rows (or the leading hits) showed."""
        self.presence.learn(tenant_id, counts)
        self.sizes.learn(tenant_id, counts)
