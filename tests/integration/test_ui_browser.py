"""The inspector in a real browser: Playwright driving an installed Chromium (Debian's
``chromium``, or ``RETRIEVAL_CHROMIUM``) against ``retrieval ui`` started as a process.

Skipped, with the reason, where no Chromium is installed (``.ci/run`` installs one). The async
API: the tests run on pytest-asyncio's loop (the sync API refuses a running one).
``RETRIEVAL_UPDATE_SCREENSHOT=1`` writes the README's screenshot of the search page
(docs/images/inspector-search.png); otherwise it goes to the test's temporary folder.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.integrations.mcp_tokens import new_token, token_hash
from retrieval.memory.store import MemoryStore
from retrieval.ui.pages import BAR_WIDTH
from tests.conftest import PgDatabase, copy_of_template
from tests.harness import PgServer
from tests.inspector_data import SCRIPT, Stored, fill

playwright_api = pytest.importorskip("playwright.async_api", reason="playwright is not installed")

RETRIEVAL = str(Path(sys.executable).with_name("retrieval"))
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "images" / "inspector-search.png"
STARTUP_SECONDS = 60


def _chromium() -> str | None:
    given = os.environ.get("RETRIEVAL_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _chromium()
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium installed (apt-get install chromium, or set RETRIEVAL_CHROMIUM)",
    ),
    pytest.mark.asyncio(loop_scope="module"),  # the loop the module's browser runs on
]


class LiveInspector:
    """A ``retrieval ui`` process on a free port of loopback."""

    def __init__(self, database: PgDatabase, *options: str) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self.process = subprocess.Popen(
            [RETRIEVAL, "--database-url", database.url, "ui", "--port", "0", *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        assert self.process.stderr is not None
        deadline = time.monotonic() + STARTUP_SECONDS
        seen: list[str] = []
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stderr], [], [], 1.0)
            if ready:
                line = self.process.stderr.readline()
                if not line and self.process.poll() is not None:
                    break
                seen.append(line)
                if line.startswith("inspector at "):
                    return line.split()[2].rstrip("/")
            elif self.process.poll() is not None:
                break
        self.stop()
        raise AssertionError(f"retrieval ui did not start: {''.join(seen)[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture(scope="module")
def ui_database(
    pg_server: PgServer, template_database: str, embedder: SentenceTransformerEmbedder
) -> Iterator[tuple[PgDatabase, Stored]]:
    with copy_of_template(pg_server, template_database) as database:
        store = MemoryStore(database.engine, schema="retrieval", embedder=embedder)
        yield database, fill(store)


@pytest.fixture(scope="module")
def inspector(ui_database: tuple[PgDatabase, Stored]) -> Iterator[LiveInspector]:
    live = LiveInspector(ui_database[0])
    yield live
    live.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    """One Chromium for the module's tests (each test has a context of its own)."""
    async with playwright_api.async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any) -> AsyncIterator[Any]:
    """A page in a fresh browser context: no cookie or storage of another test."""
    context = await browser.new_context(viewport={"width": 1100, "height": 900})
    yield await context.new_page()
    await context.close()


async def test_search_draws_bars_as_wide_as_the_scores(
    inspector: LiveInspector, page: Any, tmp_path: Path
) -> None:
    await page.goto(f"{inspector.url}/tenants/acme/search")
    await page.keyboard.press("Tab")
    field = page.locator("#q")
    await field.focus()
    await field.fill("why is the invoice search slow")
    await field.press("Enter")  # the form is sent by the keyboard alone
    await page.wait_for_selector("[data-result]")
    results = page.locator("[data-result]")
    count = await results.count()
    assert count >= 2
    for index in range(count):
        result = results.nth(index)
        final = float(await result.get_attribute("data-final"))
        parts = result.locator("rect[data-part]")
        widths = [(await parts.nth(i).bounding_box())["width"] for i in range(await parts.count())]
        assert sum(widths) == pytest.approx(final * BAR_WIDTH, abs=0.6)
        track = await result.locator("rect.track").bounding_box()
        assert track["width"] == pytest.approx(BAR_WIDTH, abs=0.5)
    await results.first.locator("summary").click()  # the first result's parts in numbers
    shot = (
        SCREENSHOT if os.environ.get("RETRIEVAL_UPDATE_SCREENSHOT") == "1" else tmp_path / "s.png"
    )
    shot.parent.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000


async def test_a_stored_script_is_text_and_never_runs(
    inspector: LiveInspector, ui_database: tuple[PgDatabase, Stored], page: Any
) -> None:
    stored = ui_database[1]
    await page.goto(f"{inspector.url}/tenants/acme/memories/{stored.script}")
    assert await page.locator("[data-memory-text]").inner_text() == SCRIPT
    assert await page.evaluate("window.pwned === undefined")
    assert await page.title() != "pwned"
    await page.goto(f"{inspector.url}/tenants/acme/search?q=remember+this")
    assert SCRIPT[:30] in await page.locator("[data-content]").first.inner_text()
    assert await page.evaluate("window.pwned === undefined")


async def test_forget_removes_the_memory_from_the_pages(
    inspector: LiveInspector, ui_database: tuple[PgDatabase, Stored], page: Any
) -> None:
    gone = ui_database[1].facts[1]
    await page.goto(f"{inspector.url}/tenants/acme/memories/{gone}")
    await page.click("[data-forget]")
    assert "Deploys happen on Tuesdays" in await page.inner_text("[data-confirm-text]")
    await page.click("[data-confirm]")
    await page.wait_for_selector("[data-forgot]")
    assert f"memory #{gone}" in await page.inner_text("[data-forgot]")
    assert await page.locator(f'[data-event="memory-{gone}"]').count() == 0
    response = await page.goto(f"{inspector.url}/tenants/acme/memories/{gone}")
    assert response.status == 404
    assert "no memory" in await page.inner_text("[data-error]")


async def test_read_only_shows_no_forget(ui_database: tuple[PgDatabase, Stored], page: Any) -> None:
    database, stored = ui_database
    live = LiveInspector(database, "--read-only")
    try:
        memory = stored.facts[0]
        await page.goto(f"{live.url}/tenants/acme/memories/{memory}")
        assert await page.locator("[data-forget]").count() == 0
        response = await page.goto(f"{live.url}/tenants/acme/memories/{memory}/forget")
        assert response.status == 403
        assert "read-only" in await page.inner_text("[data-error]")
    finally:
        live.stop()


async def test_a_token_signs_in_to_its_own_tenant_only(
    ui_database: tuple[PgDatabase, Stored], page: Any, tmp_path: Path
) -> None:
    database, stored = ui_database
    token = new_token()
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{token_hash(token)} globex\n")
    live = LiveInspector(database, "--tokens-file", str(tokens))
    try:
        await page.goto(f"{live.url}/")
        await page.fill("#token", token)
        await page.press("#token", "Enter")
        await page.wait_for_url(f"{live.url}/tenants/globex")
        assert "Globex keeps its invoices" in await page.content()
        await page.goto(f"{live.url}/tenants")
        rows = page.locator("[data-tenant]")
        assert [
            await rows.nth(i).get_attribute("data-tenant") for i in range(await rows.count())
        ] == ["globex"]
        response = await page.goto(f"{live.url}/tenants/acme/memories/{stored.facts[0]}")
        assert response.status == 404
        assert "invoice search uses" not in await page.content()
    finally:
        live.stop()


async def test_a_bad_parameter_shows_its_error_page(inspector: LiveInspector, page: Any) -> None:
    response = await page.goto(f"{inspector.url}/tenants/acme/search?q=x&as_of=tomorrow")
    assert response.status == 400
    assert "as_of must be a date" in await page.inner_text("[data-error]")
    assert "Traceback" not in await page.content()


async def test_the_search_page_explains_its_bars(inspector: LiveInspector, page: Any) -> None:
    await page.goto(f"{inspector.url}/tenants/acme/search?q=should+we+add+a+trigram+index")
    await page.wait_for_selector("[data-result]")
    key = await page.inner_text("[data-key]")
    assert "final score out of 1" in key and "weighted parts" in key
    # The legend lists the parts these results have, and only those.
    drawn = set(await page.locator("rect[data-part]").evaluate_all(
        "rects => rects.map(r => r.dataset.part)"
    ))  # fmt: skip
    legend = set(await page.locator("[data-legend-part]").evaluate_all(
        "items => items.map(i => i.dataset.legendPart)"
    ))  # fmt: skip
    assert legend == drawn and len(legend) < 8
    # The numbers give each channel's own relevance, and how the relevance fused them.
    first = page.locator("[data-result]:has([data-fusion])").first  # a memory's
    await first.locator("summary").click()
    rows = first.locator("[data-number]")
    names = [await rows.nth(i).get_attribute("data-number") for i in range(await rows.count())]
    assert "meaning" in names and "recency" in names
    fusion = await first.locator("[data-fusion]").inner_text()
    score, times = r"\d\.\d{3}", "\N{MULTIPLICATION SIGN}"
    weight = r"0\.\d\d"
    shape = (
        rf"relevance {score} = min\(1, {weight} {times} meaning {score} "
        rf"\+ {weight} {times} lexical {score}\)"
    )
    assert re.fullmatch(shape, fusion), fusion
    meaning = float(await first.locator('[data-number="meaning"] [data-own]').inner_text())
    assert f"meaning {meaning:.3f}" in fusion
    # A turn lifted by its neighbour says which, in words.
    lifted = [await x.inner_text() for x in await page.locator("[data-lifted]").all()]
    assert lifted and all(
        re.fullmatch(r"lifted by turn #\d+ of its thread, \d+ turns? (earlier|later)", text)
        for text in lifted
    ), lifted


async def test_the_timeline_filters_with_iso_dates_and_kind_boxes(
    inspector: LiveInspector, page: Any
) -> None:
    await page.goto(f"{inspector.url}/tenants/acme")
    for field in ("#since", "#until"):
        assert await page.get_attribute(field, "type") in (None, "text")
    await page.fill("#since", "2026-11-21")
    await page.check('input[name="kind"][value="episteme"]')
    await page.click("button[type=submit]")
    await page.wait_for_url("**/tenants/acme?*")
    assert "since=2026-11-21" in page.url and "kind=episteme" in page.url
    kinds = {await x.inner_text() for x in await page.locator("[data-event] .kind").all()}
    assert kinds == {"episteme"}
    assert await page.is_checked('input[name="kind"][value="episteme"]')
    assert await page.input_value("#since") == "2026-11-21"


async def test_a_thread_reads_oldest_first(
    inspector: LiveInspector, ui_database: tuple[PgDatabase, Stored], page: Any
) -> None:
    await page.goto(f"{inspector.url}/tenants/acme?thread=standup")
    events = await page.locator("[data-event]").evaluate_all(
        "items => items.map(i => i.dataset.event)"
    )
    assert events == [f"memory-{turn}" for turn in ui_database[1].turns]
    assert "oldest first" in await page.inner_text("[data-order]")


async def test_decisions_and_tool_calls_have_pages_of_their_own(
    inspector: LiveInspector, ui_database: tuple[PgDatabase, Stored], page: Any
) -> None:
    stored = ui_database[1]
    await page.goto(f"{inspector.url}/tenants/acme?kind=decision&kind=tool_call")
    await page.click(f'[data-event="decision-{stored.decisions[0]}"] [data-decision-link]')
    await page.wait_for_url(f"**/decisions/{stored.decisions[0]}")
    assert "trigram index" in await page.inner_text("[data-decision-text]")
    assert await page.inner_text("[data-task]") == "speed-up-search"
    await page.click(f'[data-call="{stored.tool_calls[0]}"] a')
    await page.wait_for_url(f"**/tool-calls/{stored.tool_calls[0]}")
    assert "gin_trgm_ops" in await page.inner_text("[data-params]")
    assert await page.inner_text("[data-result-text]") == "CREATE INDEX"
    await page.click("[data-decision-link]")
    await page.wait_for_url(f"**/decisions/{stored.decisions[0]}")
    response = await page.goto(f"{inspector.url}/tenants/acme/tool-calls/999999")
    assert response.status == 404


async def test_forget_and_cancel_stand_apart(
    inspector: LiveInspector, ui_database: tuple[PgDatabase, Stored], page: Any
) -> None:
    memory = ui_database[1].facts[0]
    await page.goto(f"{inspector.url}/tenants/acme/memories/{memory}/forget")
    forget = await page.locator("[data-confirm]").bounding_box()
    cancel = await page.locator("[data-cancel]").bounding_box()
    assert cancel["x"] - (forget["x"] + forget["width"]) >= 12  # not touching


async def test_a_mistyped_tenant_is_not_an_empty_page(inspector: LiveInspector, page: Any) -> None:
    response = await page.goto(f"{inspector.url}/tenants/acmee")
    assert response.status == 404
    assert "tenant 'acmee' holds nothing here" in await page.inner_text("[data-error]")
