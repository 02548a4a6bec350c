"""Messages for the person in front of them: what is wrong and what to do, in their terms."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.cli.commands import main
from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.errors import ConfigurationError, DatabaseUnavailableError, ValidationError
from retrieval.memory.config import WriteConfig
from retrieval.memory.kinds import MEMORY_KINDS
from retrieval.memory.store import MemoryStore
from tests.conftest import CountingEmbedder, PgDatabase


def _memories(database: PgDatabase) -> int:
    with database.engine.connect() as connection:
        return int(connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar_one())


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"text": "hello"}', "line 1: tenant_id is missing: add it to the line or pass --tenant"),
        (
            '{"text": "hello", "tenant_id": "t", "created_at": "2026-01-01T00:00:00"}',
            "created_at: '2026-01-01T00:00:00' has no time zone: add +00:00 or Z",
        ),
        (
            '{"speaker": "ann", "text": "hi", "tenant_id": "t", "time": "2026-01-01 10:00"}',
            "time: '2026-01-01 10:00' has no time zone: add +00:00 or Z",
        ),
        (
            '{"text": "a\tb", "tenant_id": "t"}',
            "line 1, column 12: not valid JSON: a control character (a tab or a line break) "
            "inside a string; write it escaped",
        ),
        (
            '{"text": "hello", "tenant_id": "t"',
            "line 1, column 35: not valid JSON: expecting ',' delimiter",
        ),
        ('{"text": "hello", "tenant_id": "t", "kind": "banana"}', "'banana' is not a memory kind"),
        ('{"type": "decision", "tenant_id": "t"}', "action_type and content and status are"),
    ],
)
def test_ingest_says_what_is_wrong_with_a_line_and_what_to_do(
    database: PgDatabase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    line: str,
    expected: str,
) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    assert main(["--database-url", database.url, "ingest", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path} line 1"), err
    assert expected in err
    assert "MemoryInput" not in err and "positional argument" not in err
    assert _memories(database) == 0


def test_a_missing_field_is_named_in_the_python_api(store: MemoryStore) -> None:
    with pytest.raises(ValidationError, match=r"^item 1: tenant_id is missing") as raised:
        store.remember_many([{"text": "a", "tenant_id": "t"}, {"text": "b"}])
    assert raised.value.field == "tenant_id"


def test_an_unknown_kind_is_refused_unless_the_config_declares_it(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    store = MemoryStore(database.engine, embedder=counting_embedder)
    for kind in MEMORY_KINDS:
        store.remember(f"a memory of kind {kind}", tenant_id="t", kind=kind)
    with pytest.raises(ValidationError, match="'banana' is not a memory kind; known: fact, ") as e:
        store.remember("x", tenant_id="t", kind="banana")
    assert e.value.field == "kind"
    assert _memories(database) == len(MEMORY_KINDS)

    declared = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(extra_kinds={"runbook"})
    )
    declared.remember("Restart the worker with systemctl.", tenant_id="t", kind="runbook")
    assert WriteConfig.from_env({"RETRIEVAL_MEMORY_KINDS": "runbook, faq"}).extra_kinds == {
        "runbook",
        "faq",
    }
    with pytest.raises(ConfigurationError, match="extra_kinds"):
        WriteConfig(extra_kinds={"Bad Kind"})


def test_every_kind_is_documented() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "memory-kinds.md").read_text("utf-8")
    for kind in MEMORY_KINDS:
        assert f"`{kind}`" in page, kind


def test_stats_on_a_database_that_was_never_migrated_says_to_upgrade(
    empty_database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database-url", empty_database.url, "stats"]) == 1
    err = capsys.readouterr().err
    assert "is not migrated" in err and "run `retrieval db upgrade` first" in err
    assert "vector(None)" not in err


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never answers (a host that drops packets)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def test_a_server_that_never_answers_fails_after_the_connect_timeout(silent_port: int) -> None:
    url = f"postgresql://me:secret@127.0.0.1:{silent_port}/db"
    with pytest.raises(DatabaseUnavailableError, match="RETRIEVAL_CONNECT_TIMEOUT") as raised:
        connect(DatabaseConfig(url=url, connect_timeout=2))
    assert "secret" not in str(raised.value)
    assert DatabaseConfig.from_env({"RETRIEVAL_CONNECT_TIMEOUT": "3"}).connect_timeout == 3
    with pytest.raises(ConfigurationError, match="connect_timeout must be an integer >= 2"):
        DatabaseConfig(connect_timeout=0)


def test_the_kinds_page_is_current() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "memory-kinds.md").read_text("utf-8")
    for kind, purpose in MEMORY_KINDS.items():
        assert f"| `{kind}` | {purpose} |" in page, kind
