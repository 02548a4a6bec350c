"""An ``id`` per ingested line makes a re-run of ``retrieval ingest`` a no-op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.cli.commands import main
from retrieval.errors import ValidationError
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.store import MemoryStore
from tests.conftest import PgDatabase

LINES = [
    {"id": "m1", "text": "The deploy failed because the migration timed out"},
    {"id": "m2", "text": "Alice prefers dark mode"},
    {
        "id": "d1",
        "type": "decision",
        "ref": "fix",
        "action_type": "fix",
        "content": "raise the lock timeout",
        "status": "done",
        "task_id": "t1",
    },
    {"id": "c1", "type": "tool_call", "tool_name": "kubectl", "decision_ref": "fix"},
    {"id": 7, "speaker": "Ann", "text": "hello", "session": "s1"},
    {"text": "a line without an id"},
]


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _counts(database: PgDatabase, tenant: str = "acme") -> tuple[int, ...]:
    with database.engine.connect() as connection:
        return tuple(
            int(
                connection.execute(
                    text(f"SELECT count(*) FROM retrieval.{table} WHERE tenant_id = :t"),
                    {"t": tenant},
                ).scalar_one()
            )
            for table in ("memories", "decisions", "tool_calls", "ingest_keys")
        )


def test_a_second_run_of_a_keyed_file_stores_nothing(
    database: PgDatabase, store: MemoryStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "history.jsonl", LINES)
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(path), "--tenant", "acme"]) == 0
    first = _counts(database)
    assert first == (4, 1, 1, 5)  # the line without an id has no key
    capsys.readouterr()

    assert main([*url, "ingest", str(path), "--tenant", "acme"]) == 0
    out = capsys.readouterr().out
    assert "5 lines stored before (by their id) skipped" in out
    # The line without an id is a copy of the memory it stored: refreshed, not stored again.
    assert "1 memory already stored" in out
    assert _counts(database) == (4, 1, 1, 5)

    # New lines beside old ones: only they are stored, and a new tool call finds the decision
    # an earlier run stored through its ref.
    more = [
        *LINES[:4],
        {"id": "c2", "type": "tool_call", "tool_name": "helm", "decision_ref": "fix"},
        {"id": "m3", "text": "Bob owns billing"},
    ]
    records = read_file(_write(tmp_path / "more.jsonl", more), store, tenant_id="acme")
    summary = ingest(store, records)
    assert (summary.skipped, summary.memories, summary.tool_calls) == (4, 1, 1)
    with database.engine.connect() as connection:
        linked = connection.execute(
            text(
                "SELECT d.content FROM retrieval.tool_calls t JOIN retrieval.decisions d "
                "ON d.tenant_id = t.tenant_id AND d.id = t.decision_id "
                "WHERE t.tool_name = 'helm'"
            )
        ).scalar_one()
    assert linked == "raise the lock timeout"

    # The same keys in another tenant are another tenant's records.
    assert main([*url, "ingest", str(path), "--tenant", "beta"]) == 0
    assert _counts(database, "beta") == (4, 1, 1, 5)

    # Forgetting the tenant forgets its keys: the file is stored again.
    store.forget(tenant_id="beta", everything=True)
    assert _counts(database, "beta") == (0, 0, 0, 0)
    assert main([*url, "ingest", str(path), "--tenant", "beta"]) == 0
    assert _counts(database, "beta") == (4, 1, 1, 5)


def test_bad_keys_are_refused_before_anything_is_written(
    database: PgDatabase, store: MemoryStore, tmp_path: Path
) -> None:
    twice = _write(tmp_path / "twice.jsonl", [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}])
    with pytest.raises(ValidationError, match="line 2: id 'a' was already used on line 1"):
        read_file(twice, store, tenant_id="acme")
    empty = _write(tmp_path / "empty.jsonl", [{"id": "", "text": "x"}])
    with pytest.raises(ValidationError, match="line 1: id must be a non-empty string"):
        read_file(empty, store, tenant_id="acme")

    ingest(store, read_file(_write(tmp_path / "m.jsonl", [LINES[0]]), store, tenant_id="acme"))
    clash = [
        {"id": "new", "text": "a new memory"},
        {"id": "m1", "type": "decision", "action_type": "a", "content": "c", "status": "s"},
    ]
    records = read_file(_write(tmp_path / "clash.jsonl", clash), store, tenant_id="acme")
    with pytest.raises(ValidationError, match="id 'm1' was ingested before as a memory"):
        ingest(store, records)
    assert _counts(database) == (1, 0, 0, 1)  # the new memory was not written either


def test_a_keyed_transcript_interrupted_then_run_again_has_no_gap_in_positions(
    database: PgDatabase, store: MemoryStore, tmp_path: Path
) -> None:
    turns = [
        {"id": f"t{i}", "speaker": "Ann" if i % 2 else "Bo", "text": f"turn {i}", "session": "s1"}
        for i in range(60)
    ]
    path = _write(tmp_path / "chat.jsonl", turns)

    class SimulatedKillError(Exception):
        pass

    def stop_after_the_first_batch(_done: int) -> None:
        raise SimulatedKillError

    with pytest.raises(SimulatedKillError):
        ingest(
            store,
            read_file(path, store, tenant_id="acme"),
            batch_size=20,
            progress=stop_after_the_first_batch,
        )
    summary = ingest(store, read_file(path, store, tenant_id="acme"), batch_size=20)
    assert (summary.skipped, summary.memories) == (20, 40)
    with database.engine.connect() as connection:
        stored = connection.execute(
            text(
                "SELECT content, position FROM retrieval.memories WHERE tenant_id = 'acme' "
                "AND thread_id = 's1' ORDER BY position"
            )
        ).all()
    assert [position for _, position in stored] == list(range(60))
    assert [content for content, _ in stored] == [
        f"{turn['speaker']}: turn {i}" for i, turn in enumerate(turns)
    ]
