"""`retrieval ingest-docs` on text, Markdown and PDF files, with the real model and database."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.cli.commands import main
from tests.conftest import PgDatabase
from tests.pdf_fixture import pdf_with_pages


def _files(folder: Path) -> None:
    (folder / "notes.txt").write_text("The staging database is restored from backups weekly.")
    (folder / "runbook.md").write_text(
        "# Backups\nNightly pg_basebackup at two.\n## Restore\nUse pg_restore on staging.\n"
    )
    (folder / "report.pdf").write_bytes(
        pdf_with_pages(["Quarterly report on cloud costs", "Storage costs rose by ten percent"])
    )


def _counts(database: PgDatabase) -> tuple[int, int]:
    with database.engine.connect() as connection:
        return (
            connection.execute(text("SELECT count(*) FROM retrieval.documents")).scalar_one(),
            connection.execute(text("SELECT count(*) FROM retrieval.document_chunks")).scalar_one(),
        )


def test_ingest_docs_reads_text_markdown_and_pdf(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _files(tmp_path)
    url = ["--database-url", database.url]
    assert main([*url, "ingest-docs", str(tmp_path), "--tenant", "acme"]) == 0
    assert "3 files: 3 added, 0 replaced, 0 unchanged; 4 chunks written" in capsys.readouterr().out
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT d.filename, c.section_title, c.page_start, c.page_end, c.content "
                "FROM retrieval.document_chunks c JOIN retrieval.documents d "
                "ON d.tenant_id = c.tenant_id AND d.id = c.document_id ORDER BY d.filename, c.id"
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("notes.txt", None, None, None, "The staging database is restored from backups weekly."),
        (
            "report.pdf",
            None,
            1,
            2,
            "Quarterly report on cloud costs Storage costs rose by ten percent",
        ),
        ("runbook.md", "Backups", None, None, "Nightly pg_basebackup at two."),
        ("runbook.md", "Backups > Restore", None, None, "Use pg_restore on staging."),
    ]

    # Unchanged files are skipped; a changed one replaces its chunks.
    assert main([*url, "ingest-docs", str(tmp_path), "--tenant", "acme"]) == 0
    assert "0 added, 0 replaced, 3 unchanged; 0 chunks written" in capsys.readouterr().out
    (tmp_path / "notes.txt").write_text("Backups of staging are now restored daily.")
    assert main([*url, "ingest-docs", str(tmp_path), "--tenant", "acme"]) == 0
    assert "0 added, 1 replaced, 2 unchanged" in capsys.readouterr().out
    assert _counts(database) == (3, 4)
    assert main([*url, "stats"]) == 0
    stats = capsys.readouterr().out
    assert "documents per tenant:\n  acme: 3 documents, 4 chunks (text search: english)" in stats


def test_the_same_folder_by_another_path_is_the_same_documents(
    database: PgDatabase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    _files(folder)
    url = ["--database-url", database.url]
    monkeypatch.chdir(tmp_path)
    assert main([*url, "ingest-docs", "docs", "--tenant", "acme"]) == 0
    assert "3 added" in capsys.readouterr().out
    for same in ("./docs", str(folder), "docs/../docs"):
        assert main([*url, "ingest-docs", same, "--tenant", "acme"]) == 0
        assert "0 added, 0 replaced, 3 unchanged" in capsys.readouterr().out
    # From elsewhere, naming the same root.
    monkeypatch.chdir(folder)
    assert main([*url, "ingest-docs", ".", "--root", "..", "--tenant", "acme"]) == 0
    assert "3 unchanged" in capsys.readouterr().out
    assert _counts(database) == (3, 4)
    with database.engine.connect() as connection:
        ids = connection.execute(text("SELECT doc_id FROM retrieval.documents ORDER BY 1")).all()
    assert [row[0] for row in ids] == ["docs/notes.txt", "docs/report.pdf", "docs/runbook.md"]


def test_a_corrupt_pdf_stops_the_run_and_writes_nothing(
    database: PgDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _files(tmp_path)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a PDF body")
    url = ["--database-url", database.url]
    assert main([*url, "ingest-docs", str(tmp_path), "--tenant", "acme"]) == 1
    err = capsys.readouterr().err
    assert "broken.pdf: not a readable PDF" in err and "nothing was stored" in err
    assert _counts(database) == (0, 0)
    assert main([*url, "ingest-docs", str(tmp_path / "missing.md"), "--tenant", "acme"]) == 1
    assert "no such file or directory" in capsys.readouterr().err


def test_a_chunk_over_the_text_limit_stops_the_run_before_any_write(
    database: PgDatabase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _files(tmp_path)
    (tmp_path / "zz-blob.txt").write_text("x" * 5000)  # one 5,000-letter "word"
    monkeypatch.setenv("RETRIEVAL_MAX_TEXT_CHARS", "4000")
    url = ["--database-url", database.url]
    assert main([*url, "ingest-docs", str(tmp_path), "--tenant", "acme"]) == 1
    err = capsys.readouterr().err
    assert "zz-blob.txt" in err and "over the limit of 4000" in err
    assert _counts(database) == (0, 0)
