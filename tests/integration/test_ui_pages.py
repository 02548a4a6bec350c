"""The inspector's pages over HTTP (Starlette's test client on the real app and database):
what each page shows, who sees which tenant, forget and read-only, bad parameters, outages
and the metrics. The browser's view is tested in test_ui_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from retrieval.cli.commands import main
from retrieval.integrations.mcp_tokens import TokenTable, new_token, token_hash
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from retrieval.ui.access import COOKIE, Access
from retrieval.ui.app import inspector_app
from retrieval.ui.pages import BAR_WIDTH
from tests.conftest import PgDatabase
from tests.inspector_data import Stored, fill


class Elements(HTMLParser):
    """Every start tag of a page with its attributes, and the page's text."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def having(self, attribute: str) -> list[dict[str, str | None]]:
        return [attrs for _, attrs in self.tags if attribute in attrs]


@pytest.fixture
def stored(store: MemoryStore) -> Stored:
    return fill(store)


def _client(
    store: MemoryStore, *, tokens: TokenTable | None = None, read_only: bool = False
) -> TestClient:
    config = replace(RetrievalConfig(), record_access=False)
    retriever = HybridRetriever.from_store(store, config=config, background_writes=False)
    app = inspector_app(store, retriever, access=Access(tokens), read_only=read_only)
    return TestClient(app, raise_server_exceptions=False, follow_redirects=False)


@pytest.fixture
def client(store: MemoryStore, stored: Stored) -> Iterator[TestClient]:
    with _client(store) as client:
        yield client


def _ok(client: TestClient, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def test_the_tenants_page_counts_what_each_tenant_holds(client: TestClient) -> None:
    page = Elements(_ok(client, "/tenants"))
    rows = {attrs["data-tenant"] for attrs in page.having("data-tenant")}
    assert rows == {"acme", "globex"}
    html = client.get("/tenants").text
    acme = html[html.index('data-tenant="acme"') : html.index('data-tenant="globex"')]
    assert re.search(r'data-count="memories">8<', acme)  # 5 turns, 2 facts, the script
    assert re.search(r'data-count="decisions">2<', acme)
    assert re.search(r'data-count="tool_calls">1<', acme)
    assert "message 5" in acme and "directive 1" in acme


def test_the_timeline_groups_by_day_and_filters(client: TestClient, stored: Stored) -> None:
    html = _ok(client, "/tenants/acme")
    assert "Friday 20 November 2026" in html and "Saturday 21 November 2026" in html
    events = {attrs["data-event"] for attrs in Elements(html).having("data-event")}
    assert f"memory-{stored.turns[0]}" in events and f"decision-{stored.decisions[0]}" in events
    assert f"memory-{stored.other_tenant[0]}" not in events

    threads = Elements(_ok(client, "/tenants/acme?thread=standup")).having("data-event")
    assert {a["data-event"] for a in threads} == {f"memory-{i}" for i in stored.turns}
    task = Elements(_ok(client, "/tenants/acme?task=speed-up-search")).having("data-event")
    assert {a["data-event"] for a in task} == {
        *(f"decision-{i}" for i in stored.decisions),
        *(f"tool_call-{i}" for i in stored.tool_calls),
    }
    kinds = Elements(_ok(client, "/tenants/acme?kind=directive&kind=episteme")).having("data-event")
    assert {a["data-event"] for a in kinds} == {f"memory-{i}" for i in stored.facts}
    one_day = Elements(_ok(client, "/tenants/acme?since=2026-11-21&until=2026-11-21"))
    assert {a["data-event"] for a in one_day.having("data-event")} == {
        *(f"memory-{i}" for i in stored.facts),
        f"memory-{stored.script}",
    }
    first = Elements(_ok(client, "/tenants/acme?thread=standup&limit=2"))
    assert len(first.having("data-event")) == 2
    older = first.having("data-older")[0]["href"]
    assert older is not None and "thread=standup" in older and "after=" in older
    second = Elements(_ok(client, older)).having("data-event")
    assert {a["data-event"] for a in second} == {f"memory-{stored.turns[i]}" for i in (1, 2)}


def test_a_memory_page_shows_its_facts_and_its_thread(client: TestClient, stored: Stored) -> None:
    html = _ok(client, f"/tenants/acme/memories/{stored.facts[0]}")
    assert "The invoice search uses an ILIKE filter on documents.title" in html
    assert "invoices, search" in html and "episteme" in html and "0.8" in html
    assert "&#34;ticket&#34;: 42" in html and "all-MiniLM-L6-v2" in html
    turn = _ok(client, f"/tenants/acme/memories/{stored.turns[2]}")
    shown = {attrs["data-turn"] for attrs in Elements(turn).having("data-turn")}
    assert shown == {str(i) for i in stored.turns}  # three around it, the thread has five
    assert 'aria-current="true"' in turn


def test_stored_markup_is_shown_as_text(client: TestClient, stored: Stored) -> None:
    for url in (
        f"/tenants/acme/memories/{stored.script}",
        "/tenants/acme",
        "/tenants/acme/search?q=remember+this",
    ):
        html = _ok(client, url)
        assert "<script" not in html
        assert "&lt;script&gt;document.title" in html
    headers = client.get("/tenants/acme").headers
    assert "script-src 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


def test_search_splits_each_final_score_into_its_weighted_parts(
    client: TestClient, stored: Stored
) -> None:
    html = _ok(client, "/tenants/acme/search?q=why+is+the+invoice+search+slow&limit=5")
    page = Elements(html)
    results = page.having("data-final")
    assert 1 <= len(results) <= 5
    bars = html.split("data-result=")[1:]
    for result, bar in zip(results, bars, strict=True):
        final = float(result["data-final"] or "nan")
        parts = Elements(bar).having("data-part")
        assert parts, "every result has at least one part"
        assert sum(float(p["data-value"] or "nan") for p in parts) == pytest.approx(final, abs=2e-6)
        widths = [float(p["width"] or "nan") for p in parts]
        assert sum(widths) == pytest.approx(final * BAR_WIDTH, abs=0.01)
        xs = [float(p["x"] or "nan") for p in parts]
        assert xs == pytest.approx([sum(widths[:i]) for i in range(len(widths))], abs=0.01)
    names = {p["data-part"] for p in page.having("data-part")}
    assert names & {"meaning", "lexical"} and "recency" in names
    assert "data-matched" in html and "<mark>invoice</mark>" in html
    for stage in ("embedding", "sql", "fusion", "total"):
        assert f'data-stage="{stage}"' in html
    assert 'data-source="semantic"' in html and 'data-cut="threshold"' in html


def test_search_says_which_newer_version_may_replace_a_result(
    client: TestClient, store: MemoryStore
) -> None:
    older = store.remember(
        "The payments service is written in Java.",
        tenant_id="versions",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    newer = store.remember(
        "The payments service is written in Rust.",
        tenant_id="versions",
        created_at=datetime(2026, 7, 1, tzinfo=UTC),
    )
    html = _ok(client, "/tenants/versions/search?q=Which+language+is+the+payments+service+in")
    page = Elements(html)
    assert html.index("written in Rust.") < html.index("written in Java.")
    (note,) = page.having("data-outdated")
    assert f"possibly outdated by memory #{newer}" in html and older != newer
    results = page.having("data-final")
    bars = html.split("data-result=")[1:]
    final = float(results[1]["data-final"] or "nan")  # the older, capped: its bar adds up to it
    parts = Elements(bars[1]).having("data-part")
    assert sum(float(p["data-value"] or "nan") for p in parts) == pytest.approx(final, abs=2e-6)
    assert note is not None


def test_search_says_which_memory_a_correction_was_found_through(
    client: TestClient, store: MemoryStore
) -> None:
    lisbon = store.remember("I live in Lisbon with my partner Joana.", tenant_id="moved",
                            created_at=datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
    store.remember("We moved to Porto.", tenant_id="moved", supersedes=lisbon,
                   created_at=datetime(2026, 7, 1, tzinfo=UTC))  # fmt: skip
    html = _ok(client, "/tenants/moved/search?q=Where+do+I+live")
    (note,) = Elements(html).having("data-found")
    assert note is not None
    assert f"found through memory #{lisbon}, an earlier version it replaced" in html
    assert "We moved to Porto." in html and "I live in Lisbon" not in html


def test_search_says_why_a_question_ranks_under_the_answer(
    client: TestClient, store: MemoryStore
) -> None:
    turns = ["Sam: What sports do you play these days?", "Alex: Tennis is one of my passions."]
    store.remember_many(
        MemoryInput(text=text, tenant_id="chat", kind="message", thread_id="s1", position=n,
                    created_at=datetime(2026, 5, 8, 13, n, tzinfo=UTC))
        for n, text in enumerate(turns)
    )  # fmt: skip
    html = _ok(client, "/tenants/chat/search?q=What+sports+does+Alex+play")
    page = Elements(html)
    assert html.index("Tennis is one of my passions.") < html.index("What sports do you play")
    (note,) = page.having("data-asks")
    assert "a question, not an answer" in html and note is not None
    bars = html.split("data-result=")[1:]
    final = float(page.having("data-final")[1]["data-final"] or "nan")  # the question's bar
    parts = Elements(bars[1]).having("data-part")
    assert sum(float(p["data-value"] or "nan") for p in parts) == pytest.approx(final, abs=2e-6)


def test_search_takes_a_namespace_and_a_memory_shows_its_namespace_and_key(
    client: TestClient, store: MemoryStore
) -> None:
    mine = store.remember("The user likes the dark theme.", tenant_id="scoped",
                          namespace=["users", "u1"], key="theme")  # fmt: skip
    store.remember("The user likes the light theme.", tenant_id="scoped", namespace=["users", "u2"])
    html = _ok(client, "/tenants/scoped/search?q=theme&namespace=users/u1")
    assert len(Elements(html).having("data-final")) == 1 and "in users / u1" in html
    assert "light theme" not in html
    assert _ok(client, "/tenants/scoped/search?q=theme").count("data-final=") == 2
    assert client.get("/tenants/scoped/search?q=theme&namespace=users//u1").status_code == 400
    page = _ok(client, f"/tenants/scoped/memories/{mine}")
    assert "users / u1" in page and "data-key" in page and "theme</dd>" in page


def test_search_takes_a_metadata_filter(client: TestClient, store: MemoryStore) -> None:
    store.remember("Pasta with pesto on Fridays.", tenant_id="filtered",
                   metadata={"category": "food", "rating": 5})  # fmt: skip
    store.remember("Sushi once a month.", tenant_id="filtered",
                   metadata={"category": "food", "rating": 3})  # fmt: skip
    store.remember("Fridays are for sci-fi films.", tenant_id="filtered",
                   metadata={"category": "movies"})  # fmt: skip
    wanted = quote('{"$and": [{"category": "food"}, {"rating": {"$gte": 4}}]}')
    html = _ok(client, f"/tenants/filtered/search?q=Fridays&filter={wanted}")
    assert "Pasta with pesto" in html and "sci-fi" not in html and "Sushi" not in html
    assert 'value="{&#34;$and&#34;' in html  # the form keeps the filter asked
    for bad, said in (("{bad", "not JSON"), ("[1]", "JSON object"), ('{"a": {"$zz": 1}}', "$zz")):
        response = client.get(f"/tenants/filtered/search?q=Fridays&filter={quote(bad)}")
        assert response.status_code == 400 and said in response.text


def test_search_takes_mode_as_of_and_limit(client: TestClient) -> None:
    everything = _ok(client, "/tenants/acme/search?q=invoice+search+slow&limit=20")
    assert "· message</span>" in everything
    html = _ok(client, "/tenants/acme/search?q=invoice+search+slow&mode=knowledge_lookup")
    kinds = re.findall(r'<span class="kind">\w+ · (\w+)</span>', html)
    assert kinds and "message" not in kinds and "episteme" in kinds
    one = _ok(client, "/tenants/acme/search?q=invoice+search+slow&limit=1")
    assert len(Elements(one).having("data-final")) == 1
    past = _ok(client, "/tenants/acme/search?q=invoice+search&as_of=2026-11-20T09:03")
    assert "data-final" in past
    assert _ok(client, "/tenants/acme/search").count("data-final") == 0  # no query, no results


def test_forget_asks_then_removes_the_memory(client: TestClient, stored: Stored) -> None:
    url = f"/tenants/acme/memories/{stored.facts[1]}/forget"
    confirm = _ok(client, url)
    assert "Deploys happen on Tuesdays" in confirm and 'method="post"' in confirm
    assert client.get(f"/tenants/acme/memories/{stored.facts[1]}").status_code == 200
    done = client.post(url)
    assert done.status_code == 303
    timeline = _ok(client, done.headers["location"])
    assert f"memory #{stored.facts[1]}" in timeline and "data-forgot" in timeline
    assert f'data-event="memory-{stored.facts[1]}"' not in timeline
    assert client.get(f"/tenants/acme/memories/{stored.facts[1]}").status_code == 404
    assert client.post(url).status_code == 404


def test_forget_a_task_removes_its_decisions_and_tool_calls(
    client: TestClient, store: MemoryStore, stored: Stored
) -> None:
    url = "/tenants/acme/tasks/speed-up-search/forget"
    assert "2 decisions and 1 tool call" in _ok(client, url)
    assert client.post(url).status_code == 303
    assert store.get_decision(stored.decisions[0], tenant_id="acme") is None
    assert store.get_tool_call(stored.tool_calls[0], tenant_id="acme") is None
    assert client.get(url).status_code == 404


def test_read_only_hides_and_refuses_forget(store: MemoryStore, stored: Stored) -> None:
    with _client(store, read_only=True) as client:
        memory = _ok(client, f"/tenants/acme/memories/{stored.facts[0]}")
        assert "data-forget" not in memory and "read-only" in memory
        assert "data-forget-task" not in _ok(client, "/tenants/acme")
        for url in (
            f"/tenants/acme/memories/{stored.facts[0]}/forget",
            "/tenants/acme/tasks/speed-up-search/forget",
        ):
            assert client.get(url).status_code == 403
            refused = client.post(url)
            assert refused.status_code == 403 and "read-only" in refused.text
    assert store.get_memory(stored.facts[0], tenant_id="acme") is not None
    assert store.get_decision(stored.decisions[0], tenant_id="acme") is not None


def test_a_token_sees_its_own_tenant_only(store: MemoryStore, stored: Stored) -> None:
    acme, globex = new_token(), new_token()
    tokens = TokenTable({token_hash(acme): "acme", token_hash(globex): "globex"})
    with _client(store, tokens=tokens) as client:
        assert client.get("/").headers["location"] == "/login"
        assert client.get("/tenants").status_code == 401
        bearer = {"authorization": f"Bearer {acme}"}
        listed = Elements(client.get("/tenants", headers=bearer).text).having("data-tenant")
        assert [a["data-tenant"] for a in listed] == ["acme"]
        other = stored.other_tenant[0]
        for url in (
            "/tenants/globex",
            "/tenants/globex/search?q=invoices",
            f"/tenants/globex/memories/{other}",
            f"/tenants/globex/memories/{other}/forget",
            "/tenants/nobody",
        ):
            response = client.get(url, headers=bearer)
            assert response.status_code == 404, url
            assert "Globex keeps" not in response.text
        assert (
            client.post(f"/tenants/globex/memories/{other}/forget", headers=bearer).status_code
            == 404
        )
        assert store.get_memory(other, tenant_id="globex") is not None
        # the acme token cannot read globex's memory through acme's URL either
        assert client.get(f"/tenants/acme/memories/{other}", headers=bearer).status_code == 404

        refused = client.post("/login", data={"token": "not-a-token"})
        assert refused.status_code == 401 and "not valid" in refused.text
        signed_in = client.post("/login", data={"token": globex})
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/tenants/globex"
        cookie = signed_in.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and COOKIE in cookie
        assert "Globex keeps" in client.get("/tenants/globex").text  # the cookie signs in
        assert client.get("/tenants/acme").status_code == 404


def test_bad_parameters_get_a_clear_error_page(client: TestClient, stored: Stored) -> None:
    cases = {
        "/tenants/acme/search?q=x&limit=abc": (400, "limit must be a whole number from 1 to 100"),
        "/tenants/acme/search?q=x&limit=0": (400, "limit must be a whole number"),
        "/tenants/acme/search?q=x&as_of=yesterday": (400, "as_of must be a date"),
        "/tenants/acme/search?q=x&mode=fast": (400, "mode &#39;fast&#39; is not one of"),
        "/tenants/acme/search?q=" + "word+" * 2100: (400, "give at most 10,000"),
        "/tenants/acme?kind=nope": (400, "kind &#39;nope&#39; is not one of"),
        "/tenants/acme?since=2026-11-22&until=2026-11-20": (400, "since must be before until"),
        "/tenants/acme?limit=5000": (400, "from 1 to 1000"),
        "/tenants/acme?since=2026-02-30": (400, "since must be a date"),
        "/tenants/acme/memories/abc": (404, "is not a row id"),
        "/tenants/acme/memories/99999999999999999999": (404, "is not a row id"),
        f"/tenants/acme/memories/{stored.other_tenant[0]}": (404, "no memory"),
        # A decision or a tool call of one tenant is never shown under another's.
        f"/tenants/globex/decisions/{stored.decisions[0]}": (404, "no decision"),
        f"/tenants/globex/tool-calls/{stored.tool_calls[0]}": (404, "no tool call"),
        "/tenants/acme/decisions/abc": (404, "is not a row id"),
        "/tenants/" + quote(" spaced ", safe=""): (400, "tenant"),
        "/nowhere": (404, "no such page"),
        # A mistyped tenant is named as such, not shown as an empty timeline.
        "/tenants/acmee": (404, "tenant &#39;acmee&#39; holds nothing here"),
        "/tenants/acmee/search?q=invoices": (404, "tenant &#39;acmee&#39; holds nothing here"),
    }
    for url, (status, message) in cases.items():
        response = client.get(url)
        assert response.status_code == status, (url, response.text[-400:])
        assert message in response.text, (url, response.text[-400:])
        assert "Traceback" not in response.text and "File " not in response.text
    assert client.put("/tenants").status_code == 405


def test_a_form_from_another_site_is_refused(client: TestClient, stored: Stored) -> None:
    url = f"/tenants/acme/memories/{stored.facts[0]}/forget"
    for headers in ({"sec-fetch-site": "cross-site"}, {"origin": "https://evil.example"}):
        assert client.post(url, headers=headers).status_code == 403
    assert client.get(f"/tenants/acme/memories/{stored.facts[0]}").status_code == 200
    same = {"sec-fetch-site": "same-origin", "origin": "http://testserver"}
    assert client.post(url, headers=same).status_code == 303


def test_an_outage_shows_database_unavailable_and_recovers(
    client: TestClient, database: PgDatabase
) -> None:
    assert client.get("/tenants/acme").status_code == 200
    admin = database.server
    admin.execute(f'ALTER DATABASE "{database.name}" ALLOW_CONNECTIONS false')
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{database.name}' AND pid <> pg_backend_pid()"
    )
    try:
        for url in ("/tenants", "/tenants/acme", "/tenants/acme/search?q=invoice"):
            down = client.get(url)
            assert down.status_code == 503, (url, down.text[-300:])
            assert "Database unavailable" in down.text and database.name not in down.text
            assert down.headers["retry-after"] == "5"
    finally:
        admin.execute(f'ALTER DATABASE "{database.name}" ALLOW_CONNECTIONS true')
    assert client.get("/tenants/acme").status_code == 200
    assert client.get("/tenants/acme/search?q=invoice").status_code == 200


def test_metrics_count_pages_by_mode_without_tenants(client: TestClient) -> None:
    client.get("/tenants/acme/search?q=invoice")
    client.get("/tenants/acme/search?q=invoice&mode=knowledge_lookup")
    client.get("/tenants/acme/search?q=x&limit=abc")
    client.get("/tenants/acme")
    scrape = client.get("/metrics")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    body = scrape.text
    assert 'retrieval_ui_page_calls_total{mode="semantic",page="search"} 2.0' in body
    assert 'retrieval_ui_page_calls_total{mode="knowledge_lookup",page="search"} 1.0' in body
    assert 'retrieval_ui_page_errors_total{mode="semantic",page="search"} 1.0' in body
    assert 'retrieval_ui_page_calls_total{mode="",page="timeline"} 1.0' in body
    assert (
        'retrieval_ui_page_duration_seconds_bucket{le="+Inf",mode="semantic",page="search"}' in body
    )
    assert "acme" not in body and "tenant" not in body


def test_the_command_refuses_other_addresses_without_tokens(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = database.url
    assert main(["--database-url", url, "ui", "--host", "0.0.0.0"]) == 1
    assert "--tokens-file" in capsys.readouterr().err
    empty = tmp_path / "tokens.txt"
    empty.write_text("# nobody yet\n")
    assert main(["--database-url", url, "ui", "--tokens-file", str(empty)]) == 1
    assert "holds no token" in capsys.readouterr().err
    assert main(["--database-url", url, "ui", "--port", "70000"]) == 1
    assert "--port" in capsys.readouterr().err


def test_access_counts_are_left_as_they_are(
    client: TestClient, store: MemoryStore, stored: Stored, database: PgDatabase
) -> None:
    client.get("/tenants/acme/search?q=invoice+search")
    with database.engine.connect() as connection:
        accessed = connection.execute(
            text("SELECT count(*) FROM retrieval.memories WHERE access_count > 0")
        ).scalar_one()
    assert accessed == 0


def test_a_memory_shows_its_versions_and_the_timeline_marks_retired_ones(
    store: MemoryStore, client: TestClient
) -> None:
    old = store.remember("The release train leaves on Tuesdays.", tenant_id="acme")
    new = store.remember("The release train leaves on Thursdays.", tenant_id="acme", supersedes=old)
    page = Elements(_ok(client, f"/tenants/acme/memories/{old}"))
    assert [attrs["data-version"] for attrs in page.having("data-version")] == [str(old), str(new)]
    assert page.having("data-retired")
    assert not Elements(_ok(client, f"/tenants/acme/memories/{new}")).having("data-retired")
    shown = Elements(_ok(client, "/tenants/acme"))
    events = {attrs["data-event"] for attrs in shown.having("data-event")}
    assert f"memory-{new}" in events and f"memory-{old}" not in events
    everything = Elements(_ok(client, "/tenants/acme?retired=1"))
    assert f"memory-{old}" in {attrs["data-event"] for attrs in everything.having("data-event")}
    assert len(everything.having("data-retired")) == 1


def test_a_version_retired_later_or_with_no_newer_one_is_shown_as_it_stands(
    store: MemoryStore, client: TestClient
) -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    old = store.remember("Deploys go out on Tuesdays.", tenant_id="acme")
    store.remember("Deploys go out on Thursdays.", tenant_id="acme", supersedes=old,
                   created_at=now + timedelta(days=2))  # fmt: skip
    listed = Elements(_ok(client, "/tenants/acme"))
    assert f"memory-{old}" in {attrs["data-event"] for attrs in listed.having("data-event")}
    assert not listed.having("data-retired")  # live until the correction's time
    door = store.remember("The door code is 1234.", tenant_id="acme",
                          created_at=now - timedelta(days=3))  # fmt: skip
    day = timedelta(days=1)
    store.remember("The door code is 9876 this week.", tenant_id="acme", supersedes=door,
                   created_at=now - 2 * day, expires_at=now - day)  # fmt: skip
    store.forget(tenant_id="acme", expired=True)
    page = _ok(client, f"/tenants/acme/memories/{door}")
    assert "with no newer version" in page and Elements(page).having("data-retired")
