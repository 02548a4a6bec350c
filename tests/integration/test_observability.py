"""Traces and metrics: the spans of retrieve(), the writes, an ingest and the MCP tools read
with the OpenTelemetry SDK's in-memory exporter (a provider given to each object: the global
one can be set once per process), and a scrape of the MCP server's /metrics."""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, StatusCode

from retrieval.aio import AsyncHybridRetriever, AsyncMemoryStore
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.errors import ValidationError
from retrieval.integrations.mcp_server import (
    http_server,
    memory_server,
    tenant_from_token,
    tool_metrics,
)
from retrieval.integrations.mcp_tokens import TokenTable, new_token, token_hash
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase
from tests.integration.test_mcp import _data, _session
from tests.live_server import free_port, running

TENANT = "tenant-with-a-secret-name"
TEXTS = [
    "The staging database password rotates every Monday",
    "Alice prefers short answers with code first",
    "The nightly export job writes to the reports bucket",
]
QUERY = "when does the staging password rotate"


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _values(span: ReadableSpan) -> list[str]:
    found: list[str] = []
    for value in (span.attributes or {}).values():
        found.extend(str(item) for item in (value if isinstance(value, tuple) else (value,)))
    return found


def _no_secrets(finished: tuple[ReadableSpan, ...], *secrets: str) -> None:
    for span in finished:
        for value in _values(span):
            for secret in secrets:
                assert secret not in value, (span.name, value)
                assert value not in secret or len(value) < 4, (span.name, value)


def test_retrieve_is_one_span_with_a_child_per_stage(
    database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    store = MemoryStore(database.engine, embedder=embedder, tracer_provider=provider)
    ids = [
        store.remember(text, tenant_id=TENANT, thread_id="t", position=i)
        for i, text in enumerate(TEXTS)
    ]
    exporter.clear()
    with HybridRetriever.from_store(
        store, tracer_provider=provider, background_writes=False
    ) as retriever:
        response = retriever.retrieve(QUERY, tenant_id=TENANT, neighbors=1)
    finished = exporter.get_finished_spans()
    by_name = {span.name: span for span in finished}
    root = by_name["retrieval.retrieve"]
    assert root.kind == SpanKind.INTERNAL and root.parent is None
    stages = {
        "retrieval.embedding",
        "retrieval.statement",
        "retrieval.ranking",
        "retrieval.neighbors",
        "retrieval.access_counts",
    }
    assert set(by_name) == {"retrieval.retrieve", *stages}
    for name in stages:
        assert by_name[name].parent is not None
        assert by_name[name].parent.span_id == root.context.span_id, name
    attributes = dict(root.attributes or {})
    assert attributes["retrieval.tenant.hash"] == hashlib.sha256(TENANT.encode()).hexdigest()[:16]
    assert attributes["retrieval.mode"] == "semantic"
    assert attributes["retrieval.results"] == len(response) >= 1
    assert attributes["retrieval.candidates"] >= len(response)
    assert "semantic" in attributes["retrieval.sources"]
    assert attributes["retrieval.statements"] >= 1
    assert attributes["retrieval.neighbors"] == 1
    _no_secrets(finished, TENANT, QUERY, *TEXTS, *(str(i) for i in ids if i > 999))


def test_a_failed_call_s_span_says_what_failed(
    database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    store = MemoryStore(database.engine, embedder=embedder)
    with (
        HybridRetriever.from_store(
            store, tracer_provider=provider, background_writes=False
        ) as retriever,
        pytest.raises(ValidationError),
    ):
        retriever.retrieve(QUERY, tenant_id=TENANT, limit=5000)
    (span,) = exporter.get_finished_spans()
    assert span.name == "retrieval.retrieve"
    assert span.status.status_code == StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ValidationError"
    assert not span.events  # no second record of the exception


def test_writes_and_an_ingest_have_spans(
    database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
    spans: tuple[TracerProvider, InMemorySpanExporter],
    tmp_path: Path,
) -> None:
    provider, exporter = spans
    store = MemoryStore(database.engine, embedder=embedder, tracer_provider=provider)
    store.remember_many([{"text": text, "tenant_id": TENANT} for text in TEXTS])
    store.remember_many([{"text": TEXTS[0], "tenant_id": TENANT}])  # the cache has it
    history = tmp_path / "history.jsonl"
    lines = [
        {"type": "memory", "tenant_id": TENANT, "text": "The VPN config lives in vault"},
        {"type": "decision", "tenant_id": TENANT, "action_type": "plan", "content": "rotate"}
        | {"status": "done"},
    ]
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = ingest(store, read_file(history, store))
    finished = exporter.get_finished_spans()
    assert [span.name for span in finished] == [
        "retrieval.remember_many",
        "retrieval.remember_many",
        "retrieval.ingest",
    ]
    first, cached, ingested = (dict(span.attributes or {}) for span in finished)
    assert first == {"retrieval.memories": 3, "retrieval.cache_hits": 0, "retrieval.embedded": 3}
    assert cached["retrieval.memories"] == 1 and cached["retrieval.embedded"] == 0
    assert ingested["retrieval.memories"] == summary.memories == 1
    assert ingested["retrieval.decisions"] == 1
    _no_secrets(finished, TENANT, *TEXTS, "The VPN config lives in vault")


def test_a_span_that_does_not_record_gets_no_attributes(
    database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = MemoryStore(database.engine, embedder=embedder, tracer_provider=provider)
    store.remember(TEXTS[0], tenant_id=TENANT)
    with HybridRetriever.from_store(
        store, tracer_provider=provider, background_writes=False
    ) as retriever:
        assert len(retriever.retrieve(QUERY, tenant_id=TENANT)) == 1
    assert exporter.get_finished_spans() == ()


@pytest.fixture
def traced_http(
    database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> Iterator[tuple[str, str, InMemorySpanExporter]]:
    """An HTTP MCP server whose store, retriever and tools share the test's provider."""
    provider, exporter = spans
    token = new_token()
    table = TokenTable({token_hash(token): TENANT})
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    store = AsyncMemoryStore(
        MemoryStore(database.engine, embedder=embedder, tracer_provider=provider)
    )
    retriever = AsyncHybridRetriever.from_store(
        store, background_writes=False, tracer_provider=provider
    )
    metrics = tool_metrics(retriever)
    server = memory_server(
        store,
        retriever,
        tenant_from_token,
        tokens=table,
        url=url,
        metrics=metrics,
        tracer_provider=provider,
    )
    http = http_server(server, host="127.0.0.1", port=port, metrics=metrics)
    with running(http):
        yield url, token, exporter
    retriever.sync.close()
    store.threads.close()
    retriever.threads.close()


def test_mcp_tool_calls_are_spans_and_metrics(
    traced_http: tuple[str, str, InMemorySpanExporter],
) -> None:
    url, token, exporter = traced_http

    async def scenario() -> None:
        async with _session(f"{url}/mcp", token) as agent:
            for text in TEXTS:
                _data(await agent.call_tool("remember", {"text": text}))
            _data(await agent.call_tool("search_memory", {"query": QUERY}))
            for mode in ("custom", "nope"):
                failed = await agent.call_tool("search_memory", {"query": QUERY, "mode": mode})
                assert failed.is_error
            _data(await agent.call_tool("timeline", {}))

    asyncio.run(scenario())
    finished = exporter.get_finished_spans()
    searches = [s for s in finished if s.name == "retrieval.mcp.search_memory"]
    assert len(searches) == 3
    retrieves = [s for s in finished if s.name == "retrieval.retrieve"]
    assert retrieves and all(
        span.parent is not None and span.parent.span_id in {s.context.span_id for s in searches}
        for span in retrieves
    ), "retrieve()'s span is a child of the tool's (the context crosses the thread pool)"
    assert sum(1 for s in finished if s.name == "retrieval.mcp.remember") == 3
    assert any(s.name == "retrieval.remember_many" for s in finished)  # says if it was a copy
    failed = [s for s in searches if s.status.status_code == StatusCode.ERROR]
    assert len(failed) == 2  # "custom" and "nope" are no mode of the config
    tool = dict(searches[0].attributes or {})
    assert tool["retrieval.tool"] == "search_memory"
    assert tool["retrieval.tenant.hash"] == hashlib.sha256(TENANT.encode()).hexdigest()[:16]
    _no_secrets(finished, TENANT, QUERY, *TEXTS, token)

    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
        assert response.status == 200
        body = response.read().decode()
    assert 'retrieval_mcp_tool_calls_total{mode="",tool="remember"} 3.0' in body
    assert 'retrieval_mcp_tool_calls_total{mode="semantic",tool="search_memory"} 1.0' in body
    assert 'retrieval_mcp_tool_errors_total{mode="other",tool="search_memory"} 2.0' in body
    assert 'retrieval_mcp_tool_calls_total{mode="",tool="timeline"} 1.0' in body
    assert "retrieval_mcp_tool_duration_seconds_bucket" in body
    assert TENANT not in body and "nope" not in body and "custom" not in body
