"""The versions the library needs: read once, refused below in one line, fallen back from
where a feature is missing (the server's answers simulated here; the integration tests read a
real server's)."""

from __future__ import annotations

import pytest

from retrieval.db.versions import ServerVersions, parse_version
from retrieval.errors import ExtensionError


def _server(postgres: int, pgvector: str | None, installed: bool = True) -> ServerVersions:
    text = f"{postgres // 10_000}.{postgres % 100}"
    row = (postgres, text, pgvector if installed else None, None if installed else pgvector)
    return ServerVersions.from_row(row)


def test_versions_are_parsed_from_the_server_s_row() -> None:
    assert parse_version("0.8.6") == (0, 8, 6) and parse_version("0.7.4") < (0, 8, 0)
    assert parse_version(None) is None and parse_version("devel") is None
    found = _server(150018, "0.7.4")
    assert (found.postgres, found.pgvector, found.pgvector_installed) == (150018, (0, 7, 4), True)
    available = _server(180001, "0.8.6", installed=False)
    assert available.pgvector == (0, 8, 6) and not available.pgvector_installed


@pytest.mark.parametrize(
    ("pgvector", "halfvec", "iterative_scan"),
    [("0.5.1", False, False), ("0.6.2", False, False), ("0.7.4", True, False),
     ("0.8.0", True, True), ("0.8.6", True, True), ("1.0.0", True, True)],
)  # fmt: skip
def test_what_each_pgvector_gives(pgvector: str, halfvec: bool, iterative_scan: bool) -> None:
    found = _server(150018, pgvector)
    assert (found.halfvec, found.iterative_scan) == (halfvec, iterative_scan)
    found.require_supported("the database at postgresql://db/app")


def test_too_old_a_server_or_pgvector_is_refused_in_one_line() -> None:
    with pytest.raises(ExtensionError) as old_server:
        _server(120022, "0.8.6").require_supported("the database at postgresql://db/app")
    assert str(old_server.value) == (
        "the database at postgresql://db/app runs PostgreSQL 12.22; retrieval needs "
        "PostgreSQL 13 or newer: upgrade the server"
    )
    with pytest.raises(ExtensionError) as old_vector:
        _server(160004, "0.4.4", installed=False).require_supported("the database at X")
    assert str(old_vector.value) == (
        "the database at X has pgvector 0.4.4 available; retrieval needs 0.5.0 or newer (HNSW "
        "indexes; 0.8.0 for the iterative scan): install a newer pgvector, then ALTER "
        "EXTENSION vector UPDATE"
    )
    _server(130000, None).require_supported("X")  # no pgvector: the migration names it
