"""Every Python block of the README and docs/ runs as written: each page's blocks, top to
bottom, in a fresh directory on a fresh embedded data directory (as a newcomer pastes them),
the README's after the shell step it gives before them (``retrieval db upgrade``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.docs_blocks import PAGES, ROOT, blocks

RUNNER = ROOT / "tests" / "docs_runner.py"
# The blocks left out of their page's run, each with where it runs instead (or why it cannot).
FRAGMENTS = {
    "README.md": ["a script of its own, run by tests/integration/test_mcp.py"],
    "docs/mcp.md": [
        "needs a running HTTP server and its token; tests/integration/test_mcp.py runs it with one",
        "a server, it runs until its client leaves",
    ],
}
RUN_PAGES = [
    "README.md",
    "docs/api.md",
    "docs/langgraph.md",
    "docs/mem0.md",
    "docs/observability.md",
]


def test_each_block_is_run_here_or_a_named_fragment() -> None:
    fragments: dict[str, list[str]] = {}
    with_code = []
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        for block in blocks(page):
            if block.fragment:
                fragments.setdefault(name, []).append(block.fragment)
            elif name not in with_code:
                with_code.append(name)
    assert fragments == FRAGMENTS
    assert with_code == RUN_PAGES


# The modules each extra brings (pyproject.toml's optional dependencies).
EXTRA_MODULES = {
    "langchain": ("retrieval.integrations.langchain",),
    "langgraph": ("langgraph", "retrieval.integrations.langgraph"),
    "llamaindex": ("llama_index", "retrieval.integrations.llamaindex"),
    "mcp": ("mcp", "retrieval.integrations.mcp_server"),
    "otel": ("opentelemetry",),
    "ui": ("starlette", "retrieval.ui"),
}


def test_each_block_that_needs_an_extra_says_how_to_install_it_from_a_clone() -> None:
    for page in PAGES:
        for block in blocks(page):
            imported = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", block.source, re.MULTILINE)
            for extra, modules in EXTRA_MODULES.items():
                if any(m == p or m.startswith(f"{p}.") for m in imported for p in modules):
                    line = f"pip install --constraint constraints.txt '.[{extra}]'"
                    assert line in block.source, f"{block.name} needs the {extra} extra"


@pytest.fixture
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A shell with none of the developer's ``RETRIEVAL_*`` settings and a data directory that
    does not exist yet; each process that starts its embedded server stops it when it ends."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_")}
    environment["RETRIEVAL_DATA_DIR"] = str(tmp_path_factory.mktemp("newcomer") / "memory")
    environment["HF_HUB_OFFLINE"] = "1"
    yield environment


def _run(page: str, environment: dict[str, str], cwd: Path, **expressions: str) -> dict[str, Any]:
    """Runs ``page`` and returns the values of ``expressions`` in its namespace, by name."""
    named = [f"{name}={expression}" for name, expression in expressions.items()]
    done = subprocess.run(
        [sys.executable, str(RUNNER), page, *named],
        cwd=cwd, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"{page} failed:\n{done.stderr[-3000:]}"
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("DOCS-RUNNER ")]
    values: dict[str, Any] = json.loads(line.removeprefix("DOCS-RUNNER "))
    return values


def _upgrade(environment: dict[str, str], cwd: Path) -> None:
    """``retrieval db upgrade``: the README's step before its blocks."""
    upgraded = subprocess.run(
        [sys.executable, "-m", "retrieval", "db", "upgrade"],
        cwd=cwd, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stderr


@pytest.mark.slow
@pytest.mark.embedded_server
def test_the_readme_runs_as_written_twice(newcomer: dict[str, str], tmp_path: Path) -> None:
    _upgrade(newcomer, tmp_path)
    for run in (1, 2):  # a reader runs an example again: it works on what the first stored
        values = _run(
            "README.md", newcomer, tmp_path,
            found="[r.content for r in response]",
            versions="[v.memory.content for v in store.history(new, tenant_id='acme')]",
        )  # fmt: skip
        assert values["found"][0].startswith("Never run schema migrations")
        seventeen, eighteen = "Staging runs PostgreSQL 17.", "Staging now runs PostgreSQL 18."
        assert values["versions"] == [seventeen] * run + [eighteen]  # each 17 told, then 18


@pytest.mark.slow
@pytest.mark.embedded_server
def test_the_mem0_page_runs_as_written_twice(newcomer: dict[str, str], tmp_path: Path) -> None:
    _upgrade(newcomer, tmp_path)
    for _ in (1, 2):  # the page erases alice's memories first: the same answers each time
        values = _run(
            "docs/mem0.md", newcomer, tmp_path,
            first="related['results'][0]['memory']", food="[r['memory'] for r in food['results']]",
            events="[h['event'] for h in history]",
        )  # fmt: skip
        assert "movie" in values["first"]
        assert values["food"] == ["Alice is vegetarian and allergic to nuts."]
        assert values["events"] == ["ADD", "UPDATE"]


@pytest.mark.slow
@pytest.mark.embedded_server
def test_the_api_page_runs_as_written_twice(newcomer: dict[str, str], tmp_path: Path) -> None:
    _run("docs/api.md", newcomer, tmp_path)  # run again below, on what this run stored
    values = _run(
        "docs/api.md", newcomer, tmp_path,
        langchain="documents[0].page_content", k_1="len(one)",
        llamaindex="nodes[0].node.get_content()", sources="[n.score for n in answer.source_nodes]",
        then="[r.content for r in then if r.source == 'semantic'][0]",
        context="context.metrics.status", copy="again == old",
        near="old in [n.memory.id for n in near]",
        versions="[v.memory.id for v in versions][-2:] == [old, new]",
    )  # fmt: skip
    # The framework examples answer their question from the page's own memories.
    assert "The deploy failed" in values["langchain"] and values["k_1"] == 1
    assert "The deploy failed" in values["llamaindex"] and values["sources"]
    assert values["context"] == "retrieved"
    # A memory over time: a copy collapses, a paraphrase is shown, a correction versions it,
    # and the past reads as it stood.
    assert values["copy"] and values["near"] and values["versions"]
    assert values["then"] == "Staging runs PostgreSQL 17."


@pytest.mark.slow
@pytest.mark.embedded_server
def test_the_langgraph_page_runs_a_graph_that_recalls_what_it_stored(
    newcomer: dict[str, str], tmp_path: Path
) -> None:
    _upgrade(newcomer, tmp_path)
    values = _run(
        "docs/langgraph.md", newcomer, tmp_path,
        recalled="result['recalled']", reply="result['messages'][-1].content",
    )  # fmt: skip
    assert values["recalled"][0] == "I moved to Lyon last spring."
    assert values["reply"] == "In Lyon."


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps what it is sent."""

    received: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(self.path.encode() + b" " + body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.slow
@pytest.mark.embedded_server
def test_the_observability_page_sends_its_spans(newcomer: dict[str, str], tmp_path: Path) -> None:
    collector = HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        environment = {
            **newcomer,
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_port}",
        }
        _upgrade(environment, tmp_path)
        _run("docs/observability.md", environment, tmp_path)
    finally:
        collector.shutdown()
    sent = b"".join(_Collector.received)
    assert b"/v1/traces" in sent and b"retrieval.retrieve" in sent and b"my-agent" in sent
