"""``retrieval export`` then ``retrieval ingest``: every memory comes back in its state (live,
retired with or without a newer version, expired) with its chain, and nothing is stored twice:
not by a second run, not into the tenant the file came from."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from retrieval.cli.commands import main
from retrieval.memory.file_columns import COLUMNS, columns_markdown
from retrieval.memory.store import MemoryStore
from tests.conftest import PgDatabase
from tests.docs_blocks import ROOT

NOW = datetime.now(UTC).replace(microsecond=0)
DAY = timedelta(days=1)


def _history(store: MemoryStore, tenant: str) -> None:
    """Every state a memory can be in, and a decision with a tool call."""
    at = NOW - 30 * DAY
    store.remember("Backups run nightly.", tenant_id=tenant, created_at=at)  # live
    old = store.remember("Staging runs PostgreSQL 16.", tenant_id=tenant, created_at=at)
    mid = store.remember("Staging runs PostgreSQL 17.", tenant_id=tenant, supersedes=old,
                         created_at=at + DAY)  # fmt: skip
    store.remember("Staging runs PostgreSQL 18.", tenant_id=tenant, supersedes=mid,
                   created_at=at + 2 * DAY)  # fmt: skip
    # A correction, forgotten: what it retired is live again.
    lead = store.remember("Erin leads the on-call rota.", tenant_id=tenant, created_at=at)
    wrong = store.remember("Bob leads the on-call rota.", tenant_id=tenant, supersedes=lead,
                           created_at=at + DAY)  # fmt: skip
    store.forget(tenant_id=tenant, memory_ids=[wrong])
    # An expired correction, forgotten: what it retired stays retired, with no newer version.
    door = store.remember("The door code is 1234.", tenant_id=tenant, created_at=at)
    store.remember("The door code is 9876 this week.", tenant_id=tenant, supersedes=door,
                   created_at=at + DAY, expires_at=at + 3 * DAY)  # fmt: skip
    store.forget(tenant_id=tenant, expired=True)
    # Expired, then told again: the expired one is retired at its expiry, the copy is new.
    store.remember("Freeze on deploys.", tenant_id=tenant, created_at=at, expires_at=at + DAY)
    store.remember("Freeze on deploys.", tenant_id=tenant, created_at=at + 5 * DAY)
    store.remember("A note that has expired.", tenant_id=tenant, created_at=at,
                   expires_at=at + DAY)  # fmt: skip
    decision = store.record_decision(tenant_id=tenant, task_id="t1", action_type="plan",
                                     content="Upgrade staging.", status="done",
                                     created_at=at)  # fmt: skip
    store.record_tool_call(tenant_id=tenant, decision_id=decision, tool_name="psql",
                           params={"q": "select 1"}, result="1", created_at=at)  # fmt: skip


def _states(database: PgDatabase, tenant: str) -> list[tuple[Any, ...]]:
    # Each memory's text, times and state, its successor named by its text: ids aside.
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT m.content, m.created_at, m.expires_at, m.retired_at, n.content "
                "FROM retrieval.memories m LEFT JOIN retrieval.memories n "
                "ON n.tenant_id = m.tenant_id AND n.id = m.superseded_by "
                "WHERE m.tenant_id = :t ORDER BY m.created_at, m.content"
            ),
            {"t": tenant},
        ).all()
        counts = [
            connection.execute(
                text(f"SELECT count(*) FROM retrieval.{table} WHERE tenant_id = :t"), {"t": tenant}
            ).scalar_one()
            for table in ("decisions", "tool_calls")
        ]
    return [tuple(row) for row in rows] + [tuple(counts)]


def _seen(database: PgDatabase, tenant: str) -> int:
    with database.engine.connect() as connection:
        return int(
            connection.execute(
                text("SELECT sum(seen_count) FROM retrieval.memories WHERE tenant_id = :t"),
                {"t": tenant},
            ).scalar_one()
        )


def test_an_export_comes_back_as_it_was_and_never_twice(
    store: MemoryStore, database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _history(store, "ops")
    url = ["--database-url", database.url]
    exported = tmp_path / "ops.jsonl"
    assert main([*url, "export", "--tenant", "ops", "--output", str(exported)]) == 0
    lines = [json.loads(line) for line in exported.read_text("utf-8").splitlines()]
    assert all(line["id"].startswith(f"{line['type']}-") for line in lines)
    assert [line["retired_at"] for line in lines if "retired_at" in line]  # the door code's
    source, seen = _states(database, "ops"), _seen(database, "ops")
    for _ in range(3):  # into another tenant: once, then nothing
        assert main([*url, "ingest", str(exported), "--tenant", "copy", "--override-tenant"]) == 0
        assert _states(database, "copy") == source
    assert "skipped" in capsys.readouterr().out
    # Into the tenant it came from: nothing stored, nothing refreshed.
    assert main([*url, "ingest", str(exported)]) == 0
    assert (_states(database, "ops"), _seen(database, "ops")) == (source, seen)
    again = tmp_path / "copy.jsonl"
    assert main([*url, "export", "--tenant", "copy", "--output", str(again)]) == 0
    assert len(again.read_text("utf-8").splitlines()) == len(lines)


def test_a_line_naming_another_tenant_than_the_one_given_stops_the_run(
    store: MemoryStore, database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "mixed.jsonl"
    file.write_text(
        json.dumps({"text": "No tenant named.", "id": "a"}) + "\n"
        + json.dumps({"text": "Another tenant's.", "tenant_id": "ops", "id": "b"}) + "\n"
    )  # fmt: skip
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(file), "--tenant", "copy"]) == 1
    said = capsys.readouterr().err
    assert "line 2: tenant_id 'ops' is not the tenant given ('copy')" in said
    assert "--override-tenant" in said
    assert _states(database, "copy") == _states(database, "ops") == [(0, 0)]  # nothing written
    assert main([*url, "ingest", str(file), "--tenant", "copy", "--override-tenant"]) == 0
    assert len(_states(database, "copy")) == 3 and _states(database, "ops") == [(0, 0)]
    assert main([*url, "ingest", str(file), "--override-tenant"]) == 1
    assert "override_tenant needs the tenant_id" in capsys.readouterr().err


def test_ingest_help_and_the_docs_list_every_column(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/cli.md's table is ``python -m retrieval.memory.file_columns``'s output."""
    assert columns_markdown() in (ROOT / "docs" / "cli.md").read_text("utf-8")
    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    shown = capsys.readouterr().out
    for column in COLUMNS:
        assert f"  {', '.join(column.names)} ({column.records})" in shown
    for name in ("ref", "supersedes_ref", "supersedes", "expires_at", "retired_at", "id"):
        assert any(name in column.names for column in COLUMNS)
