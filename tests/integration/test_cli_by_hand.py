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
    # The lines without their tenant, and their ids and refs (row ids) as line numbers.
    records = [json.loads(line) for line in lines]
    line_of = {record["id"]: number for number, record in enumerate(records)}
    for record in records:
        record.pop("tenant_id")
        for name in ("id", "ref", "decision_ref"):
            if name in record:
                record[name] = line_of[record[name]]
        if "supersedes_ref" in record:
            record["supersedes_ref"] = [line_of[ref] for ref in record["supersedes_ref"]]
    return records


def test_export_writes_what_ingest_reads_back_to_the_same_rows(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl")]) == 0
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
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl")]) == 0
    assert main([*url, "remember", "Kept: another tenant's memory.", "--tenant", "other"]) == 0
    with database.engine.connect() as connection:
        memory_id = connection.execute(
            text("SELECT min(id) FROM retrieval.memories WHERE tenant_id = 'acme'")
        ).scalar_one()
    capsys.readouterr()
    memories = _rows(database, "acme")["memories"]
    assert main([*url, "forget", "--tenant", "acme", "--memory", str(memory_id)]) == 0
    assert "1 memory" in capsys.readouterr().out
    assert _rows(database, "acme")["memories"] == memories - 1
    # An id the tenant does not hold (already forgotten) is named, and the exit is not 0.
    assert main([*url, "forget", "--tenant", "acme", "--memory", str(memory_id)]) == 1
    said = capsys.readouterr()
    assert (
        "0 memories" in said.out and f"not found in tenant 'acme': memory {memory_id}" in said.err
    )
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


def _chains(database: PgDatabase, tenant: str) -> list[tuple[str, str | None, bool]]:
    # Each memory's text, the text of the memory that superseded it, and whether it expires.
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT m.content, s.content, m.expires_at IS NOT NULL FROM retrieval.memories m "
                "LEFT JOIN retrieval.memories s ON s.tenant_id = m.tenant_id "
                "AND s.id = m.superseded_by WHERE m.tenant_id = :t ORDER BY m.created_at, m.id"
            ),
            {"t": tenant},
        ).all()
    return [tuple(row) for row in rows]  # type: ignore[misc]


def test_corrections_expiry_and_copies_through_the_cli_export_and_ingest(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    say = [*url, "remember", "--tenant", "acme"]
    assert main([*say, "Staging runs PostgreSQL 16."]) == 0
    first = int(capsys.readouterr().out.strip())
    assert main([*say, "Staging runs PostgreSQL 17.", "--supersedes", str(first)]) == 0
    out = capsys.readouterr()
    second = int(out.out.strip())
    assert f"superseded (retired) memory {first}: Staging runs PostgreSQL 16." in out.err
    assert main([*say, "Staging runs PostgreSQL 18.", "--supersedes", str(second)]) == 0
    assert main([*say, "Staging runs PostgreSQL 16."]) == 0  # told again after its retirement
    assert main([*say, "Door code 4411.", "--expires-at", "2030-01-01T00:00Z"]) == 0
    assert main([*say, "Door code 4411."]) == 0
    assert "already stored: told once more" in capsys.readouterr().err
    assert main([*say, "x", "--supersedes", str(first)]) == 1
    assert "was already superseded by memory" in capsys.readouterr().err
    chains = _chains(database, "acme")
    exported = tmp_path / "acme.jsonl"
    assert main([*url, "export", "--tenant", "acme", "--output", str(exported)]) == 0
    copy = tmp_path / "copy.jsonl"
    lines = exported.read_text("utf-8").splitlines()
    copy.write_text("".join(line.replace('"acme"', '"copy"') + "\n" for line in lines))
    assert main([*url, "ingest", str(copy)]) == 0
    assert _chains(database, "copy") == chains
    again = tmp_path / "again.jsonl"
    assert main([*url, "export", "--tenant", "copy", "--output", str(again)]) == 0
    records = _without_tenant(again.read_text("utf-8").splitlines())
    assert [r.get("supersedes_ref") is not None for r in records] == [
        r.get("supersedes_ref") is not None for r in _without_tenant(lines)
    ]
    twice = tmp_path / "twice.jsonl"
    line = json.dumps({"type": "memory", "tenant_id": "t", "text": "Backups run at 02:00."})
    twice.write_text(f"{line}\n{line}\n")
    capsys.readouterr()
    assert main([*url, "ingest", str(twice)]) == 0
    assert "1 memory already stored (refreshed, not stored again)" in capsys.readouterr().out
    assert _rows(database, "t")["memories"] == 1


def test_forget_expired(database: PgDatabase, capsys: pytest.CaptureFixture[str]) -> None:
    url = ["--database-url", database.url]
    say = [*url, "remember", "--tenant", "acme"]
    old = ["--created-at", "2025-12-01", "--expires-at", "2026-01-01T00:00Z"]
    assert main([*say, "An old door code.", *old]) == 0
    assert main([*say, "Stays."]) == 0
    assert main([*say, "Not yet.", "--expires-at", "2099-01-01T00:00+01:00"]) == 0
    with pytest.raises(SystemExit):  # argparse: a time without its zone
        main([*say, "x", "--expires-at", "2099-01-01T00:00"])
    capsys.readouterr()  # an expiry that has passed, told now: refused, nothing stored
    assert main([*say, "Already expired.", "--expires-at", "2026-11-28T00:00Z"]) == 1
    said = capsys.readouterr().err
    assert "error: expires_at: 2026-11-28T00:00:00+00:00 has passed" in said
    assert main([*url, "forget", "--tenant", "acme", "--expired"]) == 0
    assert "forgot from tenant 'acme': 1 memory" in capsys.readouterr().out
    assert _rows(database, "acme")["memories"] == 2


def test_search_and_timeline_print_ids_and_a_mistyped_supersedes_is_refused(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    say = [*url, "remember", "--tenant", "ops"]
    assert main([*say, "The production database was upgraded to PostgreSQL 17."]) == 0
    upgraded = int(capsys.readouterr().out.strip())
    assert main([*say, "Bob is on call this week."]) == 0
    on_call = int(capsys.readouterr().out.strip())
    assert main([*url, "search", "who is on call?", "--tenant", "ops"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["#", "source", "id"]
    assert table[2].split()[2:4] == ["memory", str(on_call)]
    assert main([*url, "timeline", "--tenant", "ops"]) == 0
    assert f" {upgraded}  The production database" in capsys.readouterr().out
    # The text after the id (one id per flag), an unrelated memory named: refused, nothing written.
    assert main([*say, "--supersedes", str(upgraded), "Erin is on call this week."]) == 1
    said = capsys.readouterr().err
    assert f"memory {upgraded} ('The production database was upgraded" in said
    assert "unrelated to the new text" in said and "--force" in said
    assert _rows(database, "ops")["memories"] == 2
    assert main([*say, "--supersedes", str(on_call), "Erin is on call this week."]) == 0
    err = capsys.readouterr().err
    assert f"superseded (retired) memory {on_call}: Bob is on call this week." in err
    assert main([*say, "A release note.", "--supersedes", str(upgraded), "--force"]) == 0
    with database.engine.connect() as connection:
        retired = connection.execute(
            text("SELECT count(*) FROM retrieval.memories WHERE retired_at IS NOT NULL")
        ).scalar_one()
    assert retired == 2


def test_the_timeline_marks_a_version_as_it_stood_then(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    say = [*url, "remember", "--tenant", "ops"]
    assert main([*say, "Standup is at 9:30.", "--created-at", "2026-11-01"]) == 0
    old = int(capsys.readouterr().out.strip())
    assert main([*say, "Standup is at 10:00.", "--created-at", "2026-11-10",
                 "--supersedes", str(old)]) == 0  # fmt: skip
    new = int(capsys.readouterr().out.strip())
    show = [*url, "timeline", "--tenant", "ops", "--include-retired"]
    assert main([*show, "--as-of", "2026-11-05"]) == 0
    then = capsys.readouterr().out
    assert "Standup is at 9:30." in then and "[superseded" not in then
    assert main(show) == 0
    assert f"Standup is at 9:30.  [superseded by {new}]" in capsys.readouterr().out
    assert main([*show, "--json"]) == 0
    events = json.loads(capsys.readouterr().out)
    assert all("T" in event["created_at"] for event in events)


def test_namespaces_and_keys_through_the_cli(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    say = [*url, "remember", "--tenant", "acme", "--namespace", "users/u1"]
    assert main([*say, "The user likes the dark theme.", "--key", "theme"]) == 0
    first = int(capsys.readouterr().out.strip())
    assert main([*say, "The user likes the light theme.", "--key", "theme"]) == 0
    second = int(capsys.readouterr().out.strip())
    assert main([*url, "remember", "--tenant", "acme", "--namespace", '["u/2"]',
                 "Another user likes the blue theme."]) == 0  # fmt: skip
    capsys.readouterr()
    search = [*url, "search", "theme", "--tenant", "acme", "--json"]
    assert main([*search, "--namespace", "users"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["metadata"]["id"] for r in found["results"]] == [second] and first != second
    with pytest.raises(SystemExit):
        main([*search, "--namespace", "users//u1"])
    assert "not a namespace" in capsys.readouterr().err
    assert main([*url, "forget", "--tenant", "acme", "--namespace", "users"]) == 0
    assert "2 memories" in capsys.readouterr().out
    assert main([*search]) == 0
    left = json.loads(capsys.readouterr().out)
    assert [r["content"] for r in left["results"]] == ["Another user likes the blue theme."]
    # A metadata filter as JSON, with its logical operators; bad JSON is said in words.
    assert main([*url, "remember", "--tenant", "acme", "The user likes the red theme.",
                 "--metadata", '{"colour": "red"}']) == 0  # fmt: skip
    capsys.readouterr()
    either = '{"$or": [{"colour": "red"}, {"colour": "blue"}]}'
    assert main([*url, "search", "theme", "--tenant", "acme", "--json", "--filter", either]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["content"] for r in found["results"]] == ["The user likes the red theme."]
    assert main([*url, "search", "theme", "--tenant", "acme", "--filter", "{colour: red}"]) == 1
    assert "--filter" in capsys.readouterr().err
    # Spaces around the names of a namespace written as text are not part of them.
    assert main([*url, "remember", "--tenant", "acme", "--namespace", "users / u3",
                 "The user likes the green theme."]) == 0  # fmt: skip
    capsys.readouterr()
    assert main([*url, "search", "green", "--tenant", "acme", "--json", "--namespace",
                 "users/u3"]) == 0  # fmt: skip
    found = json.loads(capsys.readouterr().out)
    assert [r["metadata"]["namespace"] for r in found["results"]] == [["users", "u3"]]
