"""Without opentelemetry-api installed, the library makes no span and still works."""

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
