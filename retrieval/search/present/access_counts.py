"""Access counts: returned memories get ``access_count + 1`` and ``last_accessed_at = now()``.

One ``UPDATE`` per retrieve, run by a background thread so that the caller's retrieve stays one
round trip (``background=False`` runs it before ``retrieve`` returns). ``flush()`` waits for
the pending updates. A failed update is logged, never silently dropped.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from retrieval.db.queries import statement

logger = logging.getLogger(__name__)

Execute = Callable[[str, dict[str, Any]], object]


class AccessRecorder:
    """Writes the access counts of returned memories back through ``execute``."""

    def __init__(self, schema: str, execute: Execute, *, background: bool = True) -> None:
        self._update = statement("search.record_access", schema)
        self._execute = execute
        self._background = background
        self._queue: queue.Queue[tuple[str, list[int]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def record(self, tenant_id: str, ids: Sequence[int]) -> None:
        """Count one access of each memory in ``ids`` (nothing to do when empty)."""
        if not ids:
            return
        if not self._background:
            self._write(tenant_id, list(ids))
            return
        self._start()
        self._queue.put((tenant_id, list(ids)))

    def flush(self) -> None:
        """Wait until every recorded access is written."""
        if self._thread is not None:
            self._queue.join()

    def close(self) -> None:
        """Write what is pending and stop the background thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            atexit.unregister(self.close)
            self._queue.put(None)
            thread.join()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="retrieval-access-recorder", daemon=True
                )
                self._thread.start()
                # A daemon thread dies with the interpreter: write what is pending first.
                atexit.register(self.close)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._write(*item)
            except Exception:
                logger.exception("could not record accesses of memories %s", item)
            finally:
                self._queue.task_done()

    def _write(self, tenant_id: str, ids: list[int]) -> None:
        self._execute(self._update, {"tenant_id": tenant_id, "ids": ids})
