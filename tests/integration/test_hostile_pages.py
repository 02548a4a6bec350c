"""Hostile and odd inputs to the inspector: pages that reach every row, numbers and ids a server
must not trust, NUL bytes, ids that a browser or a server would rewrite, and the page's headers
on every status."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from html import unescape
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.testclient import TestClient

from retrieval.integrations.mcp_tokens import TokenTable, new_token, token_hash
from retrieval.memory.store import MemoryStore
from retrieval.ui import pages
from retrieval.ui.app import SECURITY_HEADERS
from tests.integration.test_ui_pages import Elements, _client
from tests.live_server import free_port, running

WRITTEN = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@pytest.fixture
def client(store: MemoryStore) -> Iterator[TestClient]:
    store.remember("a memory of acme", tenant_id="acme")
    with _client(store) as client:
        yield client


def _events(html: str) -> list[str]:
    return [str(a["data-event"]) for a in Elements(html).having("data-event")]


def test_older_events_reach_every_row_written_together(store: MemoryStore) -> None:
    ids = store.record_decisions(
        {"tenant_id": "acme", "task_id": "batch", "action_type": "plan", "content": f"step {i}",
         "status": "done", "created_at": WRITTEN}
        for i in range(60)
    )  # fmt: skip
    seen: list[str] = []
    with _client(store) as client:
        url: str | None = "/tenants/acme?limit=7"
        while url is not None:
            page = client.get(url)
            assert page.status_code == 200, page.text[-300:]
            seen += _events(page.text)
            older = Elements(page.text).having("data-older")
            url = unescape(str(older[0]["href"])) if older else None
    assert len(seen) == len(set(seen)) == 60
    assert set(seen) == {f"decision-{i}" for i in ids}


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/tenants/acme?limit=%C2%B2", 400, "limit must be a whole number"),  # "²".isdigit()
        ("/tenants/acme?limit=" + "9" * 5000, 400, "limit must be a whole number"),
        ("/tenants/acme/search?q=x&limit=" + "1" * 4301, 400, "limit must be a whole number"),
        ("/tenants/acme/memories/" + "9" * 5000, 404, "is not a row id"),
        ("/tenants/acme/memories/%D9%A3", 404, "is not a row id"),  # an Arabic-Indic 3
        ("/tenants/acme/memories/%C2%B9", 404, "is not a row id"),
        ("/tenants/acme?after=yesterday", 400, "after must be where a page ended"),
        ("/tenants/acme?after=2026-11-20T09:00:00%2B00:00~memory~" + "9" * 30, 400, "after"),
        ("/tenants/acme?after=2026-11-20T09:00:00~memory~1", 400, "after"),  # no zone
        ("/tenants/acme?thread=%00", 400, "NUL byte"),
        ("/tenants/acme?task=a%00b", 400, "NUL byte"),
        ("/tenants/acme/tasks/%00/forget", 400, "NUL byte"),
        ("/tenants/acme/search?q=%00", 400, "NUL byte"),
    ],
)
def test_a_bad_parameter_is_refused_with_its_reason(
    client: TestClient, url: str, status: int, message: str
) -> None:
    response = client.get(url)
    assert response.status_code == status, (url, response.text[-400:])
    assert message in unescape(response.text), response.text[-400:]
    assert "Database unavailable" not in response.text and "Traceback" not in response.text


def test_every_status_carries_the_page_headers(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = {
        200: client.get("/tenants/acme"),
        400: client.get("/tenants/acme?limit=0"),
        404: client.get("/nowhere"),
        405: client.put("/tenants"),
    }

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug in a page")

    monkeypatch.setattr(pages, "read_timeline", broken)
    answers[500] = client.get("/tenants/acme")
    for status, response in answers.items():
        assert response.status_code == status
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (status, name)
    assert "a bug in a page" not in answers[500].text


ODD_TENANTS = ["a/b", "..", ".", "50%", "?x=1#y", "über uns"]


@contextmanager
def _served(app: Any) -> Iterator[str]:
    """``app`` on a real uvicorn server on a free port (Starlette's test client decodes a path
    twice, a server once): its base URL."""
    port = free_port()
    with running(
        uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    ):
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("tenant", ODD_TENANTS)
def test_odd_ids_round_trip_through_every_link(store: MemoryStore, tenant: str) -> None:
    memory = store.remember("an odd tenant's memory", tenant_id=tenant, thread_id="t/1",
                            position=0, kind="message")  # fmt: skip
    store.record_decision(tenant_id=tenant, task_id="task/../x", action_type="plan",
                          content="an odd task", status="done")  # fmt: skip
    token = new_token()
    test_client = _client(store, tokens=TokenTable({token_hash(token): tenant}))
    with _served(test_client.app) as base, httpx.Client(base_url=base) as client:
        signed_in = client.post("/login", data={"token": token})
        assert signed_in.status_code == 303
        home = signed_in.headers["location"]
        timeline = client.get(home)
        assert timeline.status_code == 200, (home, timeline.text[-300:])
        assert f"memory-{memory}" in _events(timeline.text)
        links = [unescape(href) for href in re.findall(r'href="([^"]+)"', timeline.text)]
        own = [link for link in links if link.startswith("/tenants/")]
        assert own and all("/../" not in link and "/./" not in link for link in own)
        for link in own:  # the memory, the thread, the task and its forget form
            assert client.get(link).status_code == 200, (link, client.get(link).text[-300:])
        thread = next(link for link in own if "thread=" in link)
        assert f"memory-{memory}" in _events(client.get(thread).text)
        forget = next(link for link in own if link.endswith("/forget"))
        action = re.search(r'action="([^"]+/forget)"', client.get(forget).text)
        assert action is not None
        done = client.post(unescape(action[1]), headers={"origin": base})
        assert done.status_code == 303 and done.headers["location"].startswith(home)
    assert store.get_memory(memory, tenant_id=tenant) is not None  # only the task went
    assert store.get_decision(1, tenant_id=tenant) is None
