"""``retrieval remember``, ``forget`` and ``export`` on the real PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.cli.commands import main
from tests.conftest import PgDatabase

DATA = Path(__file__).resolve().parents[1] / "data"


def _rows(database: PgDatabase, tenant: str) -> dict[str, int]:
    counts = {}
    with database.engine.connect() as connection:
        for table in ("memories", "decisions", "tool_calls", "memory_entities"):
            counts[table] = connection.execute(
                text(f"SELECT count(*) FROM retrieval.{table} WHERE tenant_id = :t"), {"t": tenant}
            ).scalar_one()
    return counts


def _without_tenant(lines: list[str]) -> list[dict[str, object]]:
    records = [json.loads(line) for line in lines]
    for record in records:
        record.pop("tenant_id")
    return records


def test_export_writes_what_ingest_reads_back_to_the_same_rows(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl"), "--tenant", "acme"]) == 0
    first = tmp_path / "acme.jsonl"
    assert main([*url, "export", "--tenant", "acme", "--output", str(first)]) == 0
    lines = first.read_text("utf-8").splitlines()
    stored = _rows(database, "acme")
    rows = stored["memories"] + stored["decisions"] + stored["tool_calls"]
    assert len(lines) == rows > 0
    assert f"exported {rows} lines" in capsys.readouterr().err
    # Into another tenant: the same rows, and exporting them again gives the same lines.
    copy = tmp_path / "copy.jsonl"
    copy.write_text(
        "".join(line.replace('"tenant_id": "acme"', '"tenant_id": "copy"') + "\n" for line in lines)
    )
    assert main([*url, "ingest", str(copy)]) == 0
    assert _rows(database, "copy") == _rows(database, "acme")
    again = tmp_path / "again.jsonl"
    assert main([*url, "export", "--tenant", "copy", "--output", str(again)]) == 0
    assert _without_tenant(again.read_text("utf-8").splitlines()) == _without_tenant(lines)
    linked = [json.loads(line) for line in lines if '"tool_call"' in line]
    assert all(record.get("decision_ref", "").startswith("decision-") for record in linked[:1])


def test_remember_stores_one_memory_and_prints_its_id(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    code = main(
        [*url, "remember", "The orders table is partitioned by month.", "--tenant", "acme",
         "--kind", "fact", "--entity", "orders", "--metadata", '{"source": "cli"}']
    )  # fmt: skip
    assert code == 0
    memory_id = int(capsys.readouterr().out.strip())
    with database.engine.connect() as connection:
        content, metadata = connection.execute(
            text("SELECT content, metadata FROM retrieval.memories WHERE id = :i"), {"i": memory_id}
        ).one()
    assert (content, metadata) == ("The orders table is partitioned by month.", {"source": "cli"})
    assert main([*url, "remember", "x", "--tenant", "acme", "--metadata", "{oops"]) == 1
    assert "--metadata: not valid JSON" in capsys.readouterr().err
    assert main([*url, "remember", "x", "--tenant", "acme", "--kind", "nonsense"]) == 1
    assert _rows(database, "acme")["memories"] == 1


def test_forget_by_id_by_task_by_document_and_everything_only_with_yes(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl"), "--tenant", "acme"]) == 0
    assert main([*url, "remember", "Kept: another tenant's memory.", "--tenant", "other"]) == 0
    with database.engine.connect() as connection:
        memory_id = connection.execute(
            text("SELECT min(id) FROM retrieval.memories WHERE tenant_id = 'acme'")
        ).scalar_one()
    capsys.readouterr()
    memories = _rows(database, "acme")["memories"]
    assert main([*url, "forget", "--tenant", "acme", "--memory", str(memory_id)]) == 0
    assert "1 memories" in capsys.readouterr().out
    assert _rows(database, "acme")["memories"] == memories - 1
    assert main([*url, "forget", "--tenant", "acme", "--task", "INC-311"]) == 0
    with database.engine.connect() as connection:
        left = connection.execute(
            text("SELECT count(*) FROM retrieval.decisions WHERE task_id = 'INC-311'")
        ).scalar_one()
    assert left == 0
    runbook = tmp_path / "runbook.md"
    runbook.write_text("# Backups\n\nRestore a backup with pg_restore into a new database.\n")
    docs = [*url, "ingest-docs", str(runbook), "--root", str(tmp_path), "--tenant", "acme"]
    assert main(docs) == 0
    capsys.readouterr()
    assert main([*url, "forget", "--tenant", "acme", "--document", "runbook.md"]) == 0
    assert "document 'runbook.md'" in capsys.readouterr().out
    before = _rows(database, "acme")["memories"]
    assert main([*url, "forget", "--tenant", "acme"]) == 1  # nothing said: nothing deleted
    assert "say what to forget" in capsys.readouterr().err
    assert main([*url, "forget", "--tenant", "acme", "--everything"]) == 1  # no --yes
    assert _rows(database, "acme")["memories"] == before
    assert main([*url, "forget", "--tenant", "acme", "--everything", "--yes"]) == 0
    assert _rows(database, "acme") == dict.fromkeys(_rows(database, "acme"), 0)
    assert _rows(database, "other")["memories"] == 1  # another tenant keeps its rows
