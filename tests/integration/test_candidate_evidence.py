"""A memory candidate's thread and position read from its evidence as PostgreSQL writes it: a
memory without a thread is told apart without decoding the evidence, and a memory's metadata
that names a thread or a position never stands for its own."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval.search.candidate import Candidate, is_turn_candidate, place
from tests.conftest import PgDatabase

# The evidence's keys in the order the statement writes them (read_semantic.evidence).
EVIDENCE = (
    "SELECT json_build_object('metadata', %s::jsonb, 'importance', 0.5, "
    "'thread_id', %s::text, 'position', %s::int, 'namespace', ARRAY['a']::text[])::text"
)


def _candidate(database: PgDatabase, metadata: str, thread: str | None, position: int | None,
               kind: str = "fact") -> Candidate:  # fmt: skip
    with database.engine.connect() as connection:
        details = connection.exec_driver_sql(EVIDENCE, (metadata, thread, position)).scalar_one()
    return Candidate("semantic", "memory", 1, "The build runs nightly.", kind,
                     datetime(2026, 12, 5, tzinfo=UTC), 0.9, 0.5, 0.5, 0.0, 0.0, 0.4, None,
                     None, details)  # fmt: skip


@pytest.mark.parametrize(
    ("metadata", "thread", "position", "turn", "where"),
    [
        ("{}", None, None, False, None),
        ("{}", "t1", 3, True, ("t1", 3)),
        # The metadata names a thread and a position; the memory has none.
        ('{"thread_id": "t9", "position": 4, "note": "\\"thread_id\\" : null,"}', None, None,
         False, None),
        # The metadata says no thread, in its keys and in a string; the memory has one.
        ('{"thread_id": null, "position": null, "note": "\\"thread_id\\" : null,"}', "t1", 3,
         True, ("t1", 3)),
        ("{}", None, 7, False, None),  # a position alone places nothing
        # A thread named with quotes, a backslash and letters JSON escapes; a negative position.
        ("{}", 'chat "main" \\ caf\u00e9 \u2014 \U0001f338', -2, True,
         ('chat "main" \\ caf\u00e9 \u2014 \U0001f338', -2)),
        # The metadata's string holds the evidence's own words for another thread.
        ('{"note": "\\"thread_id\\" : \\"t9\\", \\"position\\" : 4,"}', "t1", 3, True,
         ("t1", 3)),
    ],
)  # fmt: skip
def test_a_thread_and_position_are_the_memorys_own(
    database: PgDatabase,
    metadata: str,
    thread: str | None,
    position: int | None,
    turn: bool,
    where: tuple[str, int] | None,
) -> None:
    found = _candidate(database, metadata, thread, position)
    assert is_turn_candidate(found) is turn
    assert place(found, untold_sessions=True) == where
    message = _candidate(database, metadata, thread, position, kind="message")
    assert is_turn_candidate(message)
    assert place(message, untold_sessions=True) == (where or (None, None))
