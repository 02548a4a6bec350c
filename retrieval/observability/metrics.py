"""Prometheus metrics of the servers (``retrieval mcp --http`` and ``retrieval ui``).

Each server owns its :class:`~prometheus_client.CollectorRegistry` (nothing is added to the
process's global one) and serves it at ``/metrics`` in its own app. Per operation (an MCP tool,
an inspector page) and mode: the calls, the errors, and a latency histogram in seconds. The
labels come from small fixed sets: an operation's name, a mode the configuration knows (any
other is counted as ``other``), never a tenant.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import Response

# Seconds: a cached search is a few milliseconds, a first model load several seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
OTHER_MODE = "other"


class ServerMetrics:
    """The calls, errors and latency of one server's operations.

    ``prefix`` names the metrics (``retrieval_mcp_tool``: ``retrieval_mcp_tool_calls_total``,
    ``retrieval_mcp_tool_errors_total``, ``retrieval_mcp_tool_duration_seconds``);
    ``operation`` is the label of an operation (``tool``, ``page``); ``modes`` the modes that
    get a label value of their own.
    """

    def __init__(self, prefix: str, operation: str, modes: Collection[str]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.modes = frozenset(modes)
        labels = (operation, "mode")
        self.calls = Counter(
            f"{prefix}_calls", "Calls, by operation and mode.", labels, registry=self.registry
        )
        self.errors = Counter(
            f"{prefix}_errors",
            "Calls that failed (a bad argument or an outage), by operation and mode.",
            labels,
            registry=self.registry,
        )
        self.duration = Histogram(
            f"{prefix}_duration_seconds",
            "How long calls took, in seconds, by operation and mode.",
            labels,
            buckets=BUCKETS,
            registry=self.registry,
        )

    def mode_label(self, mode: object) -> str:
        """The label value of ``mode``: itself if the configuration knows it, else ``other``
        (``""`` for an operation without a mode)."""
        if mode is None or mode == "":
            return ""
        return mode if isinstance(mode, str) and mode in self.modes else OTHER_MODE

    @contextmanager
    def observe(self, operation: str, mode: object = None) -> Iterator[None]:
        """Count one call of ``operation`` and time it; an exception counts as an error."""
        labels = (operation, self.mode_label(mode))
        started = time.perf_counter()
        try:
            yield
        except BaseException:
            self.errors.labels(*labels).inc()
            raise
        finally:
            self.calls.labels(*labels).inc()
            self.duration.labels(*labels).observe(time.perf_counter() - started)

    def error(self, operation: str, mode: object = None) -> None:
        """Count an error of ``operation`` that was answered without an exception."""
        self.errors.labels(operation, self.mode_label(mode)).inc()

    async def endpoint(self, _request: Request) -> Response:
        """``/metrics``: the registry in Prometheus's text format."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
