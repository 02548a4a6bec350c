"""The README's demo: a small agent history stored in tenant ``demo``, then what the database holds.

Running it again replaces the demo tenant's rows, so it can be run any number of times.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from retrieval import migrate
from retrieval.config import WriteConfig
from retrieval.db import Database
from retrieval.ingest import ingest, read_file
from retrieval.overview import describe, render
from retrieval.store import MemoryStore

DEMO_TENANT = "demo"


def history_path() -> Path:
    """The packaged demo history: memories, decisions and tool calls over one week."""
    return Path(str(resources.files("retrieval") / "demo_history.jsonl"))


def run_demo(database: Database, config: WriteConfig | None = None) -> str:
    """Migrate, (re)store the demo history, and return a report of the database."""
    settings = migrate.MigrationSettings.from_config(database.config)
    migrate.upgrade(database.engine, settings)
    store = MemoryStore.from_database(database, config=config)
    replaced = store.forget(tenant_id=DEMO_TENANT, everything=True)
    summary = ingest(store, read_file(history_path(), store))
    lines = [
        f"stored the demo agent history in tenant {DEMO_TENANT!r}: {summary.memories} memories, "
        f"{summary.decisions} decisions, {summary.tool_calls} tool calls in "
        f"{summary.seconds:.2f} s ({summary.embedded} texts embedded, {summary.cache_hits} "
        "from the embedding cache)",
    ]
    if replaced.total:
        lines.append(f"(replaced the {replaced.total} rows of the previous demo run)")
    lines += ["", render(describe(database.engine, settings), indexes=False)]
    return "\n".join(lines)
