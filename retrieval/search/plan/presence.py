"""Whether a tenant holds documents, or decisions and tool calls: a source whose tables held
nothing of the tenant's at the retriever's last call is left out of the statement, and the
statement says if that changed.

Planning a source's CTEs costs every call even for a tenant with nothing in its tables: the
documents CTEs about 1.5-2.5 ms, and a statement carrying them plans slower as a whole (on the
read benchmark's tenant without documents, interleaved over 150 claims, all sources p50 13.74
ms with them against 10.44 ms without); the episodic CTEs about 1.6 ms (on a tenant holding
memories only, 6.25 ms against 3.63 ms). So the retriever remembers, per tenant, whether it
held documents and whether it held decisions or tool calls; a tenant not seen yet, or seen
with rows, gets the source's CTEs.

Nothing is ever missed: every statement carries a presence row per source the config turns on
(:mod:`retrieval.search.statement.presence`), read in the same snapshot as the rest: the
tenant's chunk count, or whether
it holds any decision or tool call. If a source was left out and now has rows, the retriever
runs the statement again with every source in (a second statement, once, when a tenant's
first documents or first decisions arrive).
"""

from __future__ import annotations

import threading

DOCUMENTS = "documents"
EPISODIC = "episodic"
# Whether the tenant's leading semantic hits held turns of a conversation at the last call: the
# statement then reads their context turns too (sources.context). Learned from the lift, not
# from a presence row: a call whose leading hits are turns the statement did not read around
# reads them with a second statement.
TURNS = "turns"
_MAX_TENANTS = 100_000  # tenants remembered per retriever (then it starts afresh)


class SourcePresence:
    """Per tenant and source, whether the tenant held rows at the last statement that looked
    (thread-safe)."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()

    def may_hold(self, tenant_id: str, source: str) -> bool:
        """False only if the tenant held no rows of ``source`` at the last statement."""
        return self._held.get((tenant_id, source), True)

    def learn(self, tenant_id: str, counts: dict[str, int]) -> None:
        """Remember what the last statement saw."""
        with self._lock:
            if len(self._held) >= _MAX_TENANTS:
                self._held.clear()
            for source, count in counts.items():
                if source in (DOCUMENTS, EPISODIC, TURNS):
                    self._held[(tenant_id, source)] = count > 0
