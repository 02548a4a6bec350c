from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from sqlalchemy import inspect, text

from retrieval.cli.commands import build_parser, main
from retrieval.db import migrate
from retrieval.db.schema import ALL_TABLES as TABLES
from retrieval.errors import url_password
from tests.conftest import SETTINGS, PgDatabase

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def test_db_upgrade_current_downgrade(
    empty_database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", empty_database.url]
    head = migrate.head_revision()

    assert main([*url, "db", "current"]) == 0
    assert f"base (not migrated) (newest available: {head})" in capsys.readouterr().out

    assert main([*url, "db", "upgrade"]) == 0
    assert f"at revision {head}" in capsys.readouterr().out
    assert main([*url, "db", "current"]) == 0
    assert f"{head} (up to date)" in capsys.readouterr().out

    assert main([*url, "db", "downgrade", "base"]) == 0
    assert "base (no tables)" in capsys.readouterr().out
    remaining = inspect(empty_database.engine).get_table_names(schema="retrieval")
    assert remaining == ["alembic_version"]


def test_schema_option_migrates_another_schema(
    empty_database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database-url", empty_database.url, "--schema", "team_b", "db", "upgrade"]) == 0
    tables = set(inspect(empty_database.engine).get_table_names(schema="team_b"))
    assert tables == {*TABLES, "alembic_version"}


def test_demo_on_a_url_stores_the_history_and_prints_what_the_database_holds(
    empty_database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", empty_database.url]
    assert main([*url, "demo"]) == 0
    out = capsys.readouterr().out
    assert "extensions: btree_gin 1.3, pg_trgm" in out
    assert f"at revision {migrate.head_revision()}" in out
    assert f"{SETTINGS.vector_type}(384)" in out
    assert "9 memories, 5 decisions, 4 tool calls" in out
    demo_row = next(line for line in out.splitlines() if line.startswith("demo "))
    assert demo_row.split()[1:] == ["9", "14", "5", "4", "9"]
    # Then the ranked context of three questions, with their scores.
    assert out.count("search '") == 3
    assert "search 'Why did the search endpoint get slow?'" in out
    tables = out.split("search 'Why did the search endpoint get slow?'")[1]
    assert "episodic/decision" in tables and "semantic/critique" in tables
    assert "trigram index" in tables
    # docs/development.md shows this output: it must be what the demo prints.
    assert _as_shown(out) == _as_shown(_documented_demo())

    # Run again: the demo tenant is replaced, not doubled.
    assert main([*url, "demo"]) == 0
    again = capsys.readouterr().out
    # 9 memories, 5 decisions, 4 tool calls, 9 cached vectors (a read never caches its question).
    assert "(replaced the 27 rows of the previous demo run)" in again
    demo_row = next(line for line in again.splitlines() if line.startswith("demo "))
    assert demo_row.split()[1:] == ["9", "14", "5", "4", "9"]


def test_an_unreachable_database_exits_1_with_a_clear_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--database-url", "postgresql://me:pw@127.0.0.1:1/x", "db", "current"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Cannot connect to PostgreSQL at")
    assert ":pw@" not in err


def test_a_bad_schema_name_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--schema", "Bad-Name", "db", "current"]) == 1
    assert "not a plain PostgreSQL identifier" in capsys.readouterr().err


def _commands(parser: object, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    found: dict[tuple[str, ...], object] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found[(*prefix, name)] = helps.get(name)
                found.update(_commands(sub, (*prefix, name)))
    return found


def test_every_command_has_help_and_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    reference = (ROOT / "docs" / "cli.md").read_text()
    commands = _commands(build_parser())
    assert ("db", "upgrade") in commands
    for path, help_text in commands.items():
        command = f"retrieval {' '.join(path)}"
        assert help_text, f"`{command}` has no help text"
        assert command in reference, f"docs/cli.md lacks `{command}`"
        assert command in readme, f"the README's table lacks `{command}`"
    from retrieval.settings import variables

    names = [variable.name for variable in variables()]
    assert "RETRIEVAL_EMBEDDING_MODEL" in names
    assert "RETRIEVAL_<SOURCE>_RELEVANCE" in names
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    for name in names:
        assert f"`{name}`" in configuration, f"docs/configuration.md does not document {name}"


def test_the_help_fits_a_screen_and_points_to_the_settings() -> None:
    shown = build_parser().format_help()
    assert len(shown.splitlines()) <= 50
    assert "`retrieval config` lists each" in shown and "RETRIEVAL_DATA_DIR" in shown


def _retrieval(*argv: str, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_")}
    return subprocess.run(
        [sys.executable, "-m", "retrieval", *argv],
        env=env | environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_missing_data_directory_is_said_not_initialised(tmp_path: Path) -> None:
    missing = tmp_path / "memroy"
    for argv in (["stats"], ["search", "x", "--tenant", "acme"], ["timeline", "--tenant", "a"]):
        done = _retrieval("--data-dir", str(missing), *argv)
        assert done.returncode == 1
        assert done.stderr.strip() == (
            f"error: no embedded database in {missing}: the directory does not exist. Run "
            "`retrieval db upgrade` to make one there, or name an existing one with --data-dir "
            "or RETRIEVAL_DATA_DIR (`retrieval config` shows where it looks), or a server with "
            "RETRIEVAL_DATABASE_URL"
        )
    assert not missing.exists()


def test_every_command_warns_of_a_misspelled_variable(database: PgDatabase, tmp_path: Path) -> None:
    warning = (
        "RETRIEVAL_DATABSE_URL is set but retrieval reads no such variable; "
        "did you mean RETRIEVAL_DATABASE_URL?"
    )
    url = ["--database-url", database.url]
    for argv in (["config"], [*url, "stats"], [*url, "search", "x", "--tenant", "a"]):
        done = _retrieval(*argv, RETRIEVAL_DATABSE_URL=database.url)
        assert done.returncode == 0, done.stderr
        assert f"WARNING retrieval.settings: {warning}" in done.stderr
    # `config` says it with the settings, and which database the commands would use.
    shown = _retrieval("--data-dir", str(tmp_path / "m"), "config", RETRIEVAL_DATABSE_URL="x")
    lines = shown.stdout.splitlines()
    assert lines[0] == (
        f"database: the embedded PostgreSQL in {tmp_path / 'm'} (does not exist yet; "
        "schema 'retrieval')"
    )
    assert f"warning: {warning}" in lines
    named = _retrieval("config", RETRIEVAL_DATABASE_URL="postgresql://app:s3cret@db.example/prod")
    assert named.stdout.splitlines()[0] == (
        "database: postgresql://app:***@db.example/prod (schema 'retrieval')"
    )


def test_stats_names_the_database_it_read(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database-url", database.url, "stats"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("database: postgresql") and database.name in first


def test_the_configuration_page_is_generated_from_the_declarations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/configuration.md is what ``retrieval config --markdown`` prints: regenerate it with
    ``retrieval config --markdown > docs/configuration.md`` after changing a setting."""
    assert main(["config", "--markdown"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / "configuration.md").read_text()


def test_config_lists_each_variable_with_its_value(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVAL_DATABASE_URL", "postgresql://app:secret@db.example/prod")
    monkeypatch.setenv("RETRIEVAL_SEMANTIC_LIMIT", "7")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "RETRIEVAL_DATABASE_URL: RETRIEVAL_DATABASE_URL = 'postgresql://app:***@db" in out
    assert "secret" not in out
    assert "RETRIEVAL_<SOURCE>_LIMIT: RETRIEVAL_SEMANTIC_LIMIT = '7'" in out
    assert "RETRIEVAL_FUSION: (unset)\n    default: convex" in out


@pytest.mark.slow
@pytest.mark.embedded_server
def _documented_demo() -> str:
    """The demo's output as docs/development.md shows it (its block after "What `make demo`
    prints")."""
    page = (ROOT / "docs" / "development.md").read_text()
    after = page[page.index("What `make demo` prints") :]
    opening = after.index("```\n") + 4
    return after[opening : after.index("```\n", opening)]


def _as_shown(output: str) -> list[str]:
    """``output`` without what changes between runs and servers: the server's start (or URL) and
    version, the replaced rows, times and row ids; spaces collapsed (an id's digits pad its
    column)."""
    volatile = ("embedded PostgreSQL started", "database: ", "PostgreSQL ", "(replaced the")
    shown = []
    for line in output.splitlines():
        if line.startswith(volatile):
            continue
        line = re.sub(r" in [\d.]+ s \(", " in S s (", line)
        line = re.sub(r"\([\d.]+ ms: embedding [\d.]+, SQL [\d.]+, fusion [\d.]+\)", "(T)", line)
        line = re.sub(r"\b(memory|decision|tool call|chunk) \d+\b", r"\1 N", line)
        shown.append(" ".join(line.split()))
    return shown


def test_the_demo_runs_on_the_embedded_server_by_default() -> None:
    parent = Path(tempfile.mkdtemp(prefix="rtv-"))
    env = {k: v for k, v in os.environ.items() if k != "RETRIEVAL_DATABASE_URL"}
    env["RETRIEVAL_DATA_DIR"] = str(parent / "pg")
    try:
        for expected in ("embedded PostgreSQL started", "replaced the 27 rows"):
            ran = subprocess.run(
                [sys.executable, "-m", "retrieval", "demo"],
                env=env, capture_output=True, text=True, check=False, timeout=120,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr
            # Each run is the only user, so each starts the server and stops it on exit.
            assert expected in ran.stdout
            assert f"at revision {migrate.head_revision()}" in ran.stdout
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_ingest_brings_the_planner_statistics_up_to_date(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    # A table loaded from nothing is planned as nearly empty until it is analyzed: the ingest
    # analyzes what it wrote before it returns.
    before = _last_analyzed(database)
    assert all(analyzed is None for _, analyzed in before)
    assert main(["--database-url", database.url, "ingest", str(DATA / "agent_history.jsonl")]) == 0
    assert "planner statistics refreshed (ANALYZE) in" in capsys.readouterr().out
    after = _last_analyzed(database)
    assert len(after) == 2 and all(analyzed is not None for _, analyzed in after)


def _last_analyzed(database: PgDatabase) -> list[Any]:
    # When the memories and decisions tables were last analyzed by hand (None: never).
    with database.engine.connect() as connection:
        return list(
            connection.execute(
                text(
                    "SELECT relname, last_analyze FROM pg_stat_user_tables "
                    "WHERE schemaname = 'retrieval' AND relname IN ('memories', 'decisions')"
                )
            ).all()
        )


def test_search_prints_a_ranked_table_or_json(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl")]) == 0
    capsys.readouterr()
    assert main([*url, "search", "database migration", "--tenant", "acme"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["#", "source", "id", "final", "rel", "rec", "text"]
    assert "keywords: database, migration" in table

    as_of = "2026-11-25T12:00:00+00:00"
    assert (
        main([*url, "search", "database migration", "--tenant", "acme", "--json", "--as-of", as_of])
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert document["tenant_id"] == "acme" and document["results"]
    finals = [r["final_score"] for r in document["results"]]
    assert finals == sorted(finals, reverse=True)
    assert all(0 <= f <= 1 for f in finals)
    assert document["diagnostics"]["statements"] == 1
    assert document["diagnostics"]["as_of"] == as_of

    # Another tenant sees nothing of acme's: at most its own memories, each a weak match.
    assert main([*url, "search", "database migration", "--tenant", "globex", "--json"]) == 0
    answered = capsys.readouterr()
    weak = json.loads(answered.out)["results"]
    assert all(r["metadata"]["below_threshold"] for r in weak) and "note:" not in answered.err
    acme = {r["content"] for r in document["results"]}
    assert not acme & {r["content"] for r in weak}
    # A tenant that holds nothing is named as such on stderr.
    assert main([*url, "search", "database migration", "--tenant", "initech", "--json"]) == 0
    assert "note: tenant 'initech' holds nothing here" in capsys.readouterr().err
    assert main([*url, "search", "database migration", "--tenant", "initech"]) == 0
    assert "note: tenant 'initech' holds nothing here" in capsys.readouterr().err
    # Bad input exits 1 with the reason.
    assert main([*url, "search", "  ", "--tenant", "acme"]) == 1
    assert "query is empty" in capsys.readouterr().err
    assert main([*url, "search", "x", "--tenant", "acme", "--mode", "nope"]) == 1
    assert "unknown mode 'nope'" in capsys.readouterr().err


def test_timeline_lists_a_window_newest_first(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl")]) == 0
    capsys.readouterr()
    assert main([*url, "timeline", "--tenant", "acme", "--limit", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines == sorted(lines, reverse=True)  # newest first: each line starts with its time
    assert main([*url, "timeline", "--tenant", "acme", "--kind", "decision", "--json"]) == 0
    events = json.loads(capsys.readouterr().out)
    assert events and {e["item"] for e in events} == {"decision"}
    assert main([*url, "timeline", "--tenant", "acme", "--limit", "0"]) == 1
    assert "limit must be an integer from 1 to 10,000" in capsys.readouterr().err
    assert main([*url, "timeline", "--tenant", "acmee"]) == 0
    mistyped = capsys.readouterr()
    assert "(nothing in this window)" in mistyped.out
    assert "note: tenant 'acmee' holds nothing here" in mistyped.err
    assert main([*url, "timeline", "--tenant", "acme", "--until", "2000-01-01T00:00Z"]) == 0
    assert "note:" not in capsys.readouterr().err  # a tenant with nothing in the window


def test_search_with_the_memories_bm25_channel_limit_and_neighbors(
    database: PgDatabase, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(DATA / "agent_history.jsonl")]) == 0
    capsys.readouterr()
    assert main([*url, "stats"]) == 0
    stats = capsys.readouterr().out
    assert "memories with words for the BM25 channel, per tenant:" in stats
    assert re.search(r"  acme: (\d+) of \1 memories \(text search: english\)", stats)
    assert main([*url, "search", "database migration", "--tenant", "acme", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    memories = [r for r in results if r["source"] == "semantic"]
    assert memories and all("bm25_rank" in r["metadata"] for r in memories)
    transcript = tmp_path / "chat.jsonl"
    turns = (
        ("Ana", "Shall we move the standup?"),
        ("Bo", "Yes, to Thursday at ten."),
        ("Ana", "Fine, I will tell the team."),
    )
    transcript.write_text(
        "".join(
            json.dumps(
                {"speaker": who, "text": body, "time": "2026-11-20T09:00:00+00:00", "session": 1}
            )
            + "\n"
            for who, body in turns
        )
    )
    assert main([*url, "ingest", str(transcript), "--tenant", "acme"]) == 0
    capsys.readouterr()
    query = ["search", "When is the standup now?", "--tenant", "acme"]
    assert main([*url, *query, "--limit", "1", "--neighbors", "1", "--json"]) == 0
    (top,) = json.loads(capsys.readouterr().out)["results"]
    assert top["metadata"]["thread_id"] == "1"
    assert top["metadata"]["neighbors"]
    assert main([*url, *query, "--limit", "2", "--neighbors", "1"]) == 0
    assert "» " in capsys.readouterr().out  # the hit among its turns
    assert main([*url, *query, "--neighbors", "21"]) == 1
    assert "neighbors must be an integer from 0 to 20" in capsys.readouterr().err


def _with_a_password(url: str) -> tuple[str, str]:
    """``url`` with a password, and that password: its own where it has one (a server that asks
    for it), else ``password=s3cret`` added to its query (a server that trusts the client, as
    the embedded one trusts its socket, never asks)."""
    own = url_password(url)
    if own:
        return url, unquote(own)
    return f"{url}{'&' if '?' in url else '?'}password=s3cret", "s3cret"


def test_no_password_reaches_the_output(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    url, secret = _with_a_password(database.url)
    assert main(["--database-url", url, "db", "upgrade"]) == 0  # prints the URL it migrated
    out = capsys.readouterr().out
    assert "***" in out and secret not in out
    unreachable = "postgresql://alice:s3cret@/nowhere?host=/nonexistent&password=s3cret"
    assert main(["--database-url", unreachable, "db", "current"]) == 1
    captured = capsys.readouterr()
    assert "s3cret" not in captured.out + captured.err
    assert main(["--database-url", "postgres:/alice:s3cret@host/db", "db", "current"]) == 1
    assert "s3cret" not in capsys.readouterr().err
    from retrieval import connect
    from retrieval.db.config import DatabaseConfig

    connected = connect(DatabaseConfig(url=url))
    try:
        assert secret not in repr(connected) and secret not in repr(connected.config)
        assert secret not in connected.url
    finally:
        connected.dispose()


def test_ingest_tells_its_progress_within_a_transaction(
    database: PgDatabase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from retrieval.cli import terminal

    monkeypatch.setattr(terminal, "LOG_EVERY_SECONDS", 0.0)  # every move: a line
    lines = [
        json.dumps({"text": f"Runbook step {i}: restart worker {i} after the deploy"})
        for i in range(150)
    ]
    (tmp_path / "steps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["--database-url", database.url, "ingest", str(tmp_path / "steps.jsonl")]
    assert main([*argv, "--tenant", "acme"]) == 0
    said = capsys.readouterr()
    told = [line for line in said.err.splitlines() if line.startswith("ingest: ")]
    # One transaction of 150 rows; the model's batches of 64 texts move the count before it.
    assert [line.split(" of ")[0] for line in told] == [
        "ingest: 64",
        "ingest: 128",
        "ingest: 149",
        "ingest: 150",
    ]
    assert all(" rows/s" in line for line in told)
    assert said.out.startswith("150 rows (150 memories")
