"""The sync core's calls, run on a bounded pool of threads so that an event loop never blocks.

Every call of the async classes is the sync method itself, run by
:meth:`asyncio.loop.run_in_executor` on the object's own pool: the same SQL, the same errors, the
same results, and at most ``max_threads`` calls of one object in flight (the others queue). A
call whose task is cancelled still runs to its end in its thread (a statement sent to
PostgreSQL is not interrupted); its result is dropped.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from retrieval.errors import ConfigurationError

P = ParamSpec("P")
R = TypeVar("R")
Sync = TypeVar("Sync")


class ThreadPool:
    """A bounded pool of threads for one object's sync calls."""

    def __init__(self, max_threads: int, *, name: str) -> None:
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 1:
            raise ConfigurationError(
                f"max_threads must be a whole number of at least 1, got {max_threads!r}"
            )
        self.max_threads = max_threads
        self._executor = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix=name)

    async def run(self, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``function(*args, **kwargs)`` on a thread of the pool, awaited, in a copy of the
        caller's context (so that an OpenTelemetry span of the caller is the parent of the
        call's spans)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        return await loop.run_in_executor(
            self._executor, functools.partial(context.run, function, *args, **kwargs)
        )

    def close(self) -> None:
        """Wait for the calls in flight, then stop the threads."""
        self._executor.shutdown(wait=True)

    async def aclose(self) -> None:
        """:meth:`close`, awaited off the event loop (joining threads blocks)."""
        await asyncio.to_thread(self.close)


class _Threaded(Protocol):
    sync: Any
    threads: ThreadPool


def threaded(
    method: Callable[Concatenate[Sync, P], R],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """An async method calling ``method`` of the object's ``sync`` on its ``threads``; it keeps
    the sync method's signature (checked by mypy) and its docstring."""

    async def call(self: _Threaded, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self.threads.run(method, self.sync, *args, **kwargs)

    functools.update_wrapper(call, method)
    return call
