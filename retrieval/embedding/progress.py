"""Texts embedded so far, told to whoever listens in this context: a long write (an ingest, a
re-embedding) shows progress between its transactions, which each embed up to thousands of
texts.

The model reports after each of its batches (``batch_size`` texts, 64 by default: about a
second on two cores); a listener set with :func:`reporting_embedded` hears it in the same
thread or task, and nothing is told anyone else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Listener = Callable[[int], None]
_listener: ContextVar[Listener | None] = ContextVar("retrieval_embedding_progress", default=None)


@contextmanager
def reporting_embedded(listener: Listener) -> Iterator[None]:
    """Call ``listener(count)`` each time the embedder has embedded ``count`` more texts while
    the block runs (in this thread or task)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def embedded(count: int) -> None:
    """Tell the listener, if any, that ``count`` more texts are embedded."""
    listener = _listener.get()
    if listener is not None and count > 0:
        listener(count)
