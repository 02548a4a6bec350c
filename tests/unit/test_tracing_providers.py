"""Spans made only when something records them: without opentelemetry-api installed the
library makes none and still works; with the API but no provider set it makes none until one is."""

from __future__ import annotations

import subprocess
import sys

WITHOUT_API = """
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
from retrieval.observability import tracing
assert tracing.trace is None
with tracing.Tracing().span("retrieval.retrieve") as span:
    assert not span.recording
    span.set({"retrieval.mode": "semantic"})
try:
    with tracing.Tracing().span("retrieval.retrieve"):
        raise KeyError("passes through")
except KeyError:
    print("ok")
"""


def test_spans_are_not_made_without_the_api() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_API], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_tenant_hash_is_short_and_stable() -> None:
    from retrieval.observability.tracing import tenant_hash

    assert tenant_hash("acme") == tenant_hash("acme") != tenant_hash("acme2")
    assert len(tenant_hash("acme")) == 16 and "acme" not in tenant_hash("acme")


GLOBAL_PROVIDER_LATER = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from retrieval.observability.tracing import NO_SPAN, Tracing

tracing = Tracing()  # made before any provider is set, as a retriever made at import time
with tracing.span("retrieval.retrieve") as span:
    assert span is NO_SPAN and trace.get_current_span() is trace.INVALID_SPAN
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
with tracing.span("retrieval.retrieve") as span:
    assert span.recording
    with tracing.span("retrieval.statement") as child:
        assert child.recording
print(sorted(s.name for s in exporter.get_finished_spans()))
"""


def test_no_span_is_made_until_a_global_provider_is_set_then_its_spans_record() -> None:
    done = subprocess.run(
        [sys.executable, "-c", GLOBAL_PROVIDER_LATER], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['retrieval.retrieve', 'retrieval.statement']"
