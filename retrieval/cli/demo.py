"""The README's demo: a small agent history stored in tenant ``demo``, what the database holds,
and the ranked context a few questions get back, with their scores.

Running it again replaces the demo tenant's rows, so it can be run any number of times. The
questions are asked "as of" the morning after the history ends, so the scores are the same on
every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from retrieval.cli.stats import describe, render
from retrieval.counts import counted
from retrieval.db import migrate
from retrieval.db.engine import Database
from retrieval.memory.config import WriteConfig
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.kinds import MEMORY_KINDS
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.context import TABLE_LEGEND, to_table
from retrieval.search.retriever import HybridRetriever

DEMO_TENANT = "demo"
DEMO_AS_OF = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class DemoQuestion:
    """A question the demo asks, with the options it shows off."""

    query: str
    mode: str = "semantic"
    task_id: str | None = None


QUESTIONS = (
    DemoQuestion("Why did the search endpoint get slow?"),
    DemoQuestion("Can I run the database migration on production now?", mode="knowledge_lookup"),
    DemoQuestion(
        "What was I doing about search latency?", mode="session_recovery", task_id="PERF-12"
    ),
)


def history_path() -> Path:
    """The packaged demo history: memories, decisions and tool calls over one week."""
    return Path(str(resources.files("retrieval.cli") / "demo_history.jsonl"))


def run_demo(database: Database, config: WriteConfig | None = None) -> str:
    """Migrate, (re)store the demo history, and return a report of the database."""
    settings = migrate.MigrationSettings.from_config(database.config)
    migrate.upgrade(database.engine, settings)
    store = MemoryStore.from_database(database, config=config)
    replaced = store.forget(tenant_id=DEMO_TENANT, everything=True)
    summary = ingest(store, read_file(history_path(), store))
    lines = [
        f"stored the demo agent history in tenant {DEMO_TENANT!r}: "
        f"{counted(summary.memories, 'memory')}, {counted(summary.decisions, 'decision')}, "
        f"{counted(summary.tool_calls, 'tool call')} in {summary.seconds:.2f} s "
        f"({counted(summary.embedded, 'text')} embedded, {summary.cache_hits} from the "
        "embedding cache)",
    ]
    if replaced.total:
        lines.append(f"(replaced the {counted(replaced.total, 'row')} of the previous demo run)")
    lines += ["", render(describe(database.engine, settings), indexes=False)]
    read_config = RetrievalConfig.from_env()
    kinds: set[str] = set()
    with HybridRetriever.from_store(
        store, config=read_config, background_writes=False
    ) as retriever:
        for question in QUESTIONS:
            response = retriever.retrieve(
                question.query,
                tenant_id=DEMO_TENANT,
                mode=question.mode,
                task_id=question.task_id,
                as_of=DEMO_AS_OF,
            )
            options = f"mode {question.mode}" + (
                f", task {question.task_id}" if question.task_id else ""
            )
            timing = response.diagnostics
            kinds |= {str(r.metadata["kind"]) for r in response if r.source == "semantic"}
            lines += [
                "",
                f"search {question.query!r} ({options}, as of {DEMO_AS_OF:%Y-%m-%d %H:%M} UTC):",
                to_table(response, legend=False),
                f"({timing.total_ms:.1f} ms: embedding {timing.embedding_ms:.1f}, "
                f"SQL {timing.sql_ms:.1f}, fusion {timing.fusion_ms:.1f})",
            ]
    lines += ["", f"the tables' columns: {TABLE_LEGEND}", "the memories' kinds above:"]
    lines += [f"  {kind}: {MEMORY_KINDS[kind]}" for kind in sorted(kinds) if kind in MEMORY_KINDS]
    return "\n".join(lines)
