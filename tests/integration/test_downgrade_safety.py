"""A downgrade that drops stored data asks first; a migration behind a lock names its holder."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from retrieval.cli.commands import main
from retrieval.db import migrate
from retrieval.db.downgrade_losses import downgrade_losses
from retrieval.errors import DatabaseError
from retrieval.memory.store import MemoryStore
from tests.conftest import PgDatabase


def _revision(database: PgDatabase) -> str | None:
    return migrate.current_revision(database.engine, database.settings)


def test_a_downgrade_that_drops_memories_needs_yes(
    database: PgDatabase, store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    store.remember("The deploy key lives in the vault.", tenant_id="acme")
    store.remember("Ann prefers tea.", tenant_id="acme", entities=["ann"])
    head = _revision(database)

    assert main(["--database-url", database.url, "db", "downgrade", "base"]) == 1
    err = capsys.readouterr().err
    assert "2 memories (undoing revision 0001)" in err
    assert "1 entity links of memories (undoing revision 0002)" in err
    assert "nothing was changed: pass --yes" in err
    assert _revision(database) == head
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar() == 2

    assert main(["--database-url", database.url, "db", "downgrade", "base", "--yes"]) == 0
    assert "base (no tables)" in capsys.readouterr().out
    assert _revision(database) is None


def test_a_step_down_asks_only_when_it_drops_the_users_data(
    database: PgDatabase, store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    store.remember("No thread here.", tenant_id="acme")
    losses = downgrade_losses(database.engine, database.settings, "0009")
    assert [(loss.revision, loss.derived) for loss in losses] == [("0010", True)]
    store.remember("Ann: hello", tenant_id="acme", kind="message", thread_id="s1", position=0)

    assert main(["--database-url", database.url, "db", "downgrade", "0009"]) == 1
    err = capsys.readouterr().err
    assert "1 memories' threads and positions (undoing revision 0010)" in err
    assert "BM25 statistics of memories (undoing revision 0010; made again by the next" in err
    assert _revision(database) == migrate.head_revision()

    with database.engine.begin() as connection:
        connection.execute(text("UPDATE retrieval.memories SET thread_id = NULL, position = NULL"))
    assert main(["--database-url", database.url, "db", "downgrade", "0009"]) == 0
    captured = capsys.readouterr()
    assert "dropping 1 tenants' BM25 statistics of memories" in captured.err
    assert _revision(database) == "0009"


def test_a_migration_behind_a_lock_gives_up_and_names_the_holder(
    database: PgDatabase, store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    store.remember("Held.", tenant_id="acme")
    with database.engine.connect() as holder:
        holder.execute(text("SET application_name = 'long-report'"))
        holder.execute(text("SELECT count(*) FROM retrieval.memories"))  # keeps its lock
        pid = holder.execute(text("SELECT pg_backend_pid()")).scalar_one()

        code = main(
            # Down to 0010: undoing row-level security locks every table, memories among them.
            [
                "--database-url",
                database.url,
                "db",
                "downgrade",
                "0010",
                "--yes",
                "--lock-timeout",
                "1",
            ]
        )
        assert code == 1
        err = capsys.readouterr().err
        assert "waited 1 s for a lock on a table of schema 'retrieval' and gave up" in err
        assert f"pid {pid} (idle in transaction, long-report) on memories" in err
        assert "--lock-timeout" in err

        settings = database.settings.__class__(
            schema="retrieval", embedding_dim=384, lock_timeout=0.5
        )
        with pytest.raises(DatabaseError, match="nothing was changed"):
            migrate.downgrade(database.engine, settings, "0010")
        holder.rollback()
    assert _revision(database) == migrate.head_revision()
    assert main(["--database-url", database.url, "db", "downgrade", "0009", "--yes"]) == 0
    assert _revision(database) == "0009"
