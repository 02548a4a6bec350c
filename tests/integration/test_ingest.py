"""`retrieval ingest`, `stats` and `reembed` on files committed under tests/data/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from retrieval.cli.commands import main
from retrieval.errors import ValidationError
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.reembed import pending, reembed
from retrieval.memory.store import MemoryStore
from tests.conftest import SETTINGS, CountingEmbedder, PgDatabase, as_stored

DATA = Path(__file__).resolve().parents[1] / "data"


def _count(database: PgDatabase, table: str) -> int:
    with database.engine.connect() as connection:
        return int(connection.execute(text(f"SELECT count(*) FROM retrieval.{table}")).scalar_one())


def test_ingest_jsonl_links_tool_calls_to_decisions_of_the_file(
    database: PgDatabase, store: MemoryStore
) -> None:
    records = read_file(DATA / "agent_history.jsonl", store)
    summary = ingest(store, records, batch_size=4)
    assert (summary.memories, summary.decisions, summary.tool_calls) == (5, 3, 4)
    assert summary.rows == 12
    with database.engine.connect() as connection:
        links = connection.execute(
            text(
                "SELECT t.tool_name, d.content FROM retrieval.tool_calls t "
                "JOIN retrieval.decisions d ON d.tenant_id = t.tenant_id AND d.id = t.decision_id "
                "ORDER BY t.created_at"
            )
        ).all()
    assert [name for name, _ in links] == ["run_sql", "run_migration", "run_sql", "send_email"]
    assert links[1][1].startswith("Retry migration 0042")
    assert _count(database, "memory_entities") == 5


def test_ingest_csv_with_json_and_list_cells(database: PgDatabase, store: MemoryStore) -> None:
    summary = ingest(store, read_file(DATA / "memories.csv", store))
    assert summary.memories == 3
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT m.kind, m.importance, m.metadata, "
                "array(SELECT entity_id FROM retrieval.memory_entities e "
                "      WHERE e.tenant_id = m.tenant_id AND e.memory_id = m.id ORDER BY 1) "
                "FROM retrieval.memories m ORDER BY m.created_at"
            )
        ).all()
    assert rows[0] == ("directive", 0.9, {"source": "wiki"}, ["on-call", "rotation"])
    assert rows[1] == ("fact", None, {}, ["grafana", "orders-service"])
    assert rows[2][3] == ["billing-service"]


def test_a_bad_line_is_named_and_nothing_is_written(
    database: PgDatabase, store: MemoryStore
) -> None:
    with pytest.raises(ValidationError, match=r"bad_line.jsonl line 3: created_at: .* time zone"):
        read_file(DATA / "bad_line.jsonl", store)
    assert _count(database, "memories") == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"tenant_id": "a", "text": "ok"}\n{not json}\n', "line 2, column 2: not valid JSON"),
        ('{"tenant_id": "a", "text": "ok"}\n[1, 2]\n', "line 2: expected a JSON object"),
        ('{"type": "memo", "tenant_id": "a", "text": "x"}\n', "line 1: type 'memo' is not one of"),
        ('{"text": "no tenant"}\n', "line 1: tenant_id is missing: add it to the line or pass"),
        (
            '{"type": "tool_call", "tenant_id": "a", "tool_name": "x", "decision_ref": "nope"}\n',
            "line 1: decision_ref 'nope' names no decision on an earlier line",
        ),
        (  # JSON lets a string hold half of a surrogate pair; UTF-8 (and PostgreSQL) cannot
            '{"tenant_id": "a", "text": "ok"}\n{"tenant_id": "a", "text": "half \\ud800"}\n',
            r"line 2: text: contains an unpaired surrogate \(U\+D800\) at position 5",
        ),
    ],
)
def test_malformed_lines_are_named(
    tmp_path: Path, store: MemoryStore, content: str, message: str
) -> None:
    path = tmp_path / "input.jsonl"
    path.write_text(content)
    with pytest.raises(ValidationError, match=message):
        read_file(path, store)


def test_every_bad_line_is_named_up_to_a_cap_and_nothing_is_written(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = '{"tenant_id": "a", "text": "ok"}\n'
    path = tmp_path / "input.jsonl"
    path.write_text(good + "{not json}\n" + good + '{"text": "no tenant"}\n'
                    + '{"tenant_id": "a", "text": "x", "kind": "prefrence"}\n')  # fmt: skip
    code = main(["--database-url", database.url, "ingest", str(path)])
    said = capsys.readouterr().err
    assert code == 1 and "3 lines are not records (nothing was stored)" in said
    assert "line 2, column 2: not valid JSON" in said and "line 4: tenant_id is missing" in said
    assert "line 5: kind: 'prefrence' is not a memory kind; did you mean 'preference'?" in said
    assert _count(database, "memories") == 0
    # Past the cap, the rest are counted.
    csv = tmp_path / "many.csv"
    csv.write_text("tenant_id,text,importance\n" + "".join(f"a,t{n},high\n" for n in range(25)))
    assert main(["--database-url", database.url, "ingest", str(csv)]) == 1
    said = capsys.readouterr().err
    assert "25 lines are not records" in said and "... and 5 more" in said
    assert said.count("importance") >= 20 and _count(database, "memories") == 0


def test_cli_ingest_prints_a_summary_and_stats_shows_it(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "12 rows (5 memories, 3 decisions, 4 tool calls)" in out
    assert "rows/s" in out and "5 texts embedded" in out

    assert main([*url, "ingest", str(DATA / "memories.csv"), "--batch-size", "2"]) == 0
    assert "3 rows (3 memories" in capsys.readouterr().out

    assert main([*url, "stats"]) == 0
    stats = capsys.readouterr().out
    assert f"{SETTINGS.vector_type}(384)" in stats
    assert "sentence-transformers/all-MiniLM-L6-v2: 8" in stats
    assert "acme: critique 1, directive 2, episteme 1, fact 1, synthesized_insight 1" in stats
    assert "embedding cache: 8 entries" in stats
    lines = {line.split()[0]: line.split()[1:] for line in stats.splitlines() if line.strip()}
    assert lines["globex"] == ["2", "1", "1", "1", "2"]


def test_cli_ingest_names_the_speakers_it_cannot_read_and_stores_them_all(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "chat.jsonl"
    speakers = ["Maria Lopez", "maria lopez", "Tom", "+44 7700 900123", "maria lopez"]
    transcript.write_text(
        "".join(
            json.dumps({"speaker": who, "text": f"turn {n}", "session": "s1"}) + "\n"
            for n, who in enumerate(speakers)
        )
    )
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(transcript), "--tenant", "acme"]) == 0
    captured = capsys.readouterr()
    assert "5 rows (5 memories" in captured.out
    note = captured.err
    assert "note: 2 speakers not read as a name ('maria lopez', '+44 7700 900123')" in note
    assert "'Maria Lopez'" not in note and "'Tom'" not in note
    # A transcript whose every speaker reads says nothing.
    transcript.write_text(json.dumps({"speaker": "Ana", "text": "hi", "session": "s2"}) + "\n")
    assert main([*url, "ingest", str(transcript), "--tenant", "acme"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_cli_ingest_exits_1_with_the_line_and_writes_nothing(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--database-url", database.url, "ingest", str(DATA / "bad_line.jsonl")])
    assert code == 1
    assert "bad_line.jsonl line 3: created_at" in capsys.readouterr().err
    assert _count(database, "memories") == 0


def test_the_tenant_option_fills_missing_tenants(tmp_path: Path, store: MemoryStore) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps({"text": "a note"}) + "\n")
    records = read_file(path, store, tenant_id="solo")
    assert ingest(store, records).memories == 1


def test_reembed_is_resumable_after_an_interruption(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    old = MemoryStore(database.engine, embedder=counting_embedder)
    rng = np.random.default_rng(7)
    texts = [f"memory number {i} about topic {i % 3}" for i in range(7)]
    old.remember_many(
        [
            {
                "text": t,
                "tenant_id": "acme" if i % 2 else "globex",
                "embedding": rng.normal(size=384).astype(np.float32),
                "embedding_model": "old-model-v1",
            }
            for i, t in enumerate(texts)
        ]
    )
    store = MemoryStore(database.engine, embedder=counting_embedder)
    assert pending(store) == 7

    class SimulatedCrashError(Exception):
        pass

    def stop_after_first_batch(done: int) -> None:
        raise SimulatedCrashError

    with pytest.raises(SimulatedCrashError):
        reembed(store, batch_size=3, progress=stop_after_first_batch)
    assert pending(store) == 4  # the first batch was committed

    summary = reembed(store, batch_size=3)
    assert summary.updated == 4
    assert pending(store) == 0
    assert sorted(counting_embedder.embedded) == sorted(texts)  # each text embedded once
    with database.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT content, embedding FROM retrieval.memories ORDER BY id")
        ).all()
    expected = counting_embedder.inner.embed([content for content, _ in rows])
    for (_, stored), vector in zip(rows, expected, strict=True):
        assert np.allclose(stored.to_numpy(), as_stored(vector), atol=1e-6)


def test_cli_reembed_reports_what_it_did(
    database: PgDatabase, store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    store.remember("stale vector", tenant_id="acme", embedding=[0.5] * 384)
    with database.engine.begin() as connection:
        connection.execute(text("UPDATE retrieval.memories SET embedding_model = 'old'"))
    code = main(
        [
            "--database-url",
            database.url,
            "reembed",
            "--model",
            "sentence-transformers/all-MiniLM-L6-v2",
        ]
    )
    assert code == 0
    assert (
        "1 memory re-embedded with sentence-transformers/all-MiniLM-L6-v2"
        in capsys.readouterr().out
    )


def test_defer_index_drops_and_rebuilds_the_hnsw_index(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    from retrieval.db import migrate
    from retrieval.db.vector_index import has_vector_index

    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl"), "--defer-index"]) == 0
    out = capsys.readouterr().out
    assert "HNSW index rebuilt in" in out and "12 rows" in out
    assert has_vector_index(database.engine, "retrieval")
    migrate.check(database.engine, database.settings)  # the same index as the migration's
    assert _count(database, "memories") == 5


def test_defer_index_rebuilds_the_index_even_when_the_load_fails(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from retrieval.db.vector_index import has_vector_index

    path = tmp_path / "orphan.jsonl"
    # Valid lines, but the decision does not exist: the write fails inside its transaction.
    path.write_text(json.dumps({"type": "tool_call", "tenant_id": "a", "tool_name": "x",
                                "decision_id": 999}) + "\n")  # fmt: skip
    code = main(["--database-url", database.url, "ingest", str(path), "--defer-index"])
    assert code == 1
    assert "decision 999 does not exist" in capsys.readouterr().err
    assert has_vector_index(database.engine, "retrieval")


def test_a_missing_decision_late_in_a_file_writes_nothing(
    database: PgDatabase, store: MemoryStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "history.jsonl"
    lines = [json.dumps({"text": f"memory {i}", "embedding": [0.01] * 384}) for i in range(1500)]
    lines.append(json.dumps({"type": "tool_call", "tool_name": "t", "decision_id": 999999999}))
    history.write_text("\n".join(lines) + "\n")
    url = database.url
    code = main(
        ["--database-url", url, "ingest", str(history), "--tenant", "acme", "--batch-size", "1000"]
    )
    assert code == 1
    error = capsys.readouterr().err
    assert "line 1501: decision_id: decision 999999999 does not exist for tenant 'acme'" in error
    assert _count(database, "memories") == 0
