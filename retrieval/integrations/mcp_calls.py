"""What happens around each MCP tool call: its span, its metrics, and its errors made into
messages a model can read.

A bad argument's message says what was wrong and what to do: the model reads it. An outage's
does not go to the client (it may name the database's host, user or socket, or the server's
paths): the client is told to try later, and the server's log has the detail.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from retrieval.errors import DatabaseError, EmbeddingError, RetrievalError, ValidationError
from retrieval.observability.tracing import Span, Tracing, tenant_hash

logger = logging.getLogger(__name__)

UNAVAILABLE = (
    "the memory is unavailable right now (its database or its embedding model failed); try "
    "again later. The server's log has the details."
)


class ToolCalls:
    """The span (``retrieval.mcp.<tool>``) and the metrics (``metrics``, a
    :class:`~retrieval.observability.metrics.ServerMetrics`, or ``None``) of each call."""

    def __init__(self, tracing: Tracing, metrics: Any = None) -> None:
        self.tracing = tracing
        self.metrics = metrics

    @contextmanager
    def call(self, tool: str, tenant_id: str, mode: str | None = None) -> Iterator[Span]:
        """One call of ``tool`` for ``tenant_id``: counted, timed, traced, its errors made
        into :class:`ToolError`."""
        observed = nullcontext() if self.metrics is None else self.metrics.observe(tool, mode)
        with observed, _tool_errors(), self.tracing.span(f"retrieval.mcp.{tool}") as span:
            if span.recording:
                attributes: dict[str, str] = {
                    "retrieval.tool": tool,
                    "retrieval.tenant.hash": tenant_hash(tenant_id),
                }
                if mode is not None:
                    attributes["retrieval.mode"] = mode
                span.set(attributes)
            yield span


@contextmanager
def _tool_errors() -> Iterator[None]:
    try:
        yield
    except (DatabaseError, EmbeddingError) as error:
        logger.warning("an MCP tool failed: %s: %s", type(error).__name__, error)
        raise ToolError(UNAVAILABLE) from None
    except ValidationError as error:  # a tool writes one item: its number says nothing
        raise ToolError(error.reason) from None
    except RetrievalError as error:
        raise ToolError(str(error)) from None
