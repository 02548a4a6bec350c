"""Namespaces wherever a user reads or erases a timeline: ``timeline(namespace=...)`` in the
API, ``retrieval timeline --namespace``, the MCP ``timeline`` and ``forget`` tools and the
inspector's timeline keep to the memories in a namespace and below it (decisions and tool calls
lie in none); each memory's namespace and key are shown, and an item whose value holds no text
reads as its key and fields, not as JSON."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from mcp import Client

from retrieval.aio import AsyncHybridRetriever, AsyncMemoryStore
from retrieval.cli.commands import main
from retrieval.errors import ValidationError
from retrieval.integrations.langgraph import RetrievalStore
from retrieval.integrations.mcp_server import fixed_tenant, memory_server
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from retrieval.ui.access import Access
from retrieval.ui.app import inspector_app
from tests.conftest import PgDatabase

U1, U2 = ("users", "u1"), ("users", "u2")


def _fill(store: MemoryStore) -> dict[str, int]:
    ids = {
        "u1": store.remember("Prefers dark mode.", tenant_id="acme", namespace=U1, key="theme"),
        "u1/prefs": store.remember("Likes tea.", tenant_id="acme", namespace=(*U1, "prefs")),
        "u2": store.remember("Prefers light mode.", tenant_id="acme", namespace=U2),
        "top": store.remember("The team ships on Fridays.", tenant_id="acme"),
    }
    ids["decision"] = store.record_decision(
        tenant_id="acme", task_id="T", action_type="fix", content="Restart", status="done"
    )
    return ids


def test_the_api_timeline_keeps_to_a_namespace_and_names_each_memorys(
    store: MemoryStore,
) -> None:
    ids = _fill(store)
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        events = retriever.timeline("acme", namespace=U1)
        assert {e.id for e in events} == {ids["u1"], ids["u1/prefs"]}
        assert all(e.item == "memory" for e in events)
        theme = next(e for e in events if e.id == ids["u1"])
        assert theme.namespace == U1 and theme.key == "theme"
        everything = retriever.timeline("acme")
        assert {e.id for e in everything if e.item == "memory"} == {
            ids["u1"], ids["u1/prefs"], ids["u2"], ids["top"]
        }  # fmt: skip
        assert any(e.item == "decision" for e in everything)
        with pytest.raises(ValidationError, match="namespace"):
            retriever.timeline("acme", namespace="users/u1")  # type: ignore[arg-type]


def test_the_cli_timeline_keeps_to_a_namespace(
    database: PgDatabase, store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _fill(store)
    url = ["--database-url", database.url]
    assert main([*url, "timeline", "--tenant", "acme", "--namespace", "users/u2", "--json"]) == 0
    events = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in events] == [ids["u2"]]
    assert events[0]["details"]["namespace"] == list(U2)


def test_mcp_timeline_and_forget_take_a_namespace(store: MemoryStore) -> None:
    ids = _fill(store)

    async def scenario() -> tuple[Any, Any, Any]:
        retriever = AsyncHybridRetriever(HybridRetriever.from_store(store))
        server = memory_server(AsyncMemoryStore(store), retriever, fixed_tenant("acme"))
        async with Client(server) as client:
            shown = await client.call_tool("timeline", {"namespace": list(U1)})
            gone = await client.call_tool("forget", {"namespace": list(U1)})
            left = await client.call_tool("timeline", {})
        return shown, gone, left

    shown, gone, left = asyncio.run(scenario())
    events = shown.structured_content["events"]
    assert {e["id"] for e in events} == {ids["u1"], ids["u1/prefs"]}
    assert {tuple(e["details"]["namespace"]) for e in events} == {U1, (*U1, "prefs")}
    assert sorted(gone.structured_content["forgotten"]) == sorted([ids["u1"], ids["u1/prefs"]])
    remaining = {e["id"] for e in left.structured_content["events"] if e["item"] == "memory"}
    assert remaining == {ids["u2"], ids["top"]}


def test_the_inspector_timeline_shows_and_filters_namespaces_and_reads_an_items_fields(
    store: MemoryStore,
) -> None:
    from starlette.testclient import TestClient

    ids = _fill(store)
    with RetrievalStore(store, tenant_id="acme") as items:
        items.put(("agents", "a1"), "k", {"text": ""})
    config = replace(RetrievalConfig(), record_access=False)
    retriever = HybridRetriever.from_store(store, config=config, background_writes=False)
    app = inspector_app(store, retriever, access=Access(None))
    with TestClient(app, raise_server_exceptions=False) as client:
        page = client.get("/tenants/acme").text
        assert "users / u1" in page and "key theme" in page
        assert "k: text: (empty)" in page and "{&#34;text&#34;" not in page
        narrowed = client.get("/tenants/acme?namespace=users/u2").text
        assert f'data-event="memory-{ids["u2"]}"' in narrowed
        assert f'data-event="memory-{ids["u1"]}"' not in narrowed
        assert f'data-event="decision-{ids["decision"]}"' not in narrowed
        assert client.get("/tenants/acme?namespace=users//u2").status_code == 400
