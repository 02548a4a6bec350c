"""OpenTelemetry spans of the library's calls, through ``opentelemetry-api`` only.

An application that has set a tracer provider (or gives one to a store or a retriever as
``tracer_provider``) sees ``retrieve()`` as a span ``retrieval.retrieve`` with a child per
stage, and the writes and the MCP tools as spans of their own. With no provider set (the
API's proxy or no-op provider in its place) a span would record nothing, and none is made: a
call pays one lookup of the global provider per stage; without the API installed, nothing is
made at all. Attributes are built only when a span records, and never hold a text or a raw tenant
id: a tenant is named by :func:`tenant_hash`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from retrieval.version import __version__

try:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # the otel extra is not installed: spans are not made
    trace = None  # type: ignore[assignment]

SCOPE = "retrieval"
Attributes = Mapping[str, str | bool | int | float | tuple[str, ...]]


def tenant_hash(tenant_id: str) -> str:
    """A tenant's stand-in in attributes: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:16]


class Tracing:
    """Spans of one object's calls: the tracer of ``tracer_provider``, else of the global
    provider (looked up at each span, so a provider set later is used)."""

    def __init__(self, tracer_provider: Any = None) -> None:
        self._tracer: Any = None
        self._global = tracer_provider is None  # the global provider's, whichever is set
        if trace is not None:
            self._tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)

    def span(self, name: str) -> AbstractContextManager[Span]:
        """A span ``name`` (kind INTERNAL) around the block, current inside it; an exception
        sets its status to ERROR and ``error.type`` and goes on. With no provider to record
        it, a context that yields :data:`NO_SPAN` and nothing else."""
        if self._tracer is None or (self._global and not _provider_set()):
            return _NOT_RECORDED
        return self._recorded(name)

    @contextmanager
    def _recorded(self, name: str) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
            name, kind=SpanKind.INTERNAL, record_exception=False, set_status_on_exception=False
        ) as otel_span:
            span = Span(otel_span)
            try:
                yield span
            except BaseException as error:
                if span.recording:
                    otel_span.set_attribute("error.type", type(error).__qualname__)
                    otel_span.set_status(Status(StatusCode.ERROR, type(error).__qualname__))
                raise


def _provider_set() -> bool:
    """Whether a global tracer provider that records is set: not the API's proxy, which stands
    in until one is, nor its no-op provider. Entering a span of either would cost about 15
    microseconds for nothing recorded."""
    return not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )


class Span:
    """A span to annotate: ``recording`` says whether attributes are kept (build them only
    then)."""

    __slots__ = ("_span", "recording")

    def __init__(self, span: Any) -> None:
        self._span = span
        self.recording: bool = span is not None and span.is_recording()

    def set(self, attributes: Attributes) -> None:
        """Set ``attributes`` on the span (when it records)."""
        if self.recording:
            self._span.set_attributes(dict(attributes))


NO_SPAN = Span(None)
# The context of a span no provider records (reusable: it holds no state).
_NOT_RECORDED: AbstractContextManager[Span] = nullcontext(NO_SPAN)
