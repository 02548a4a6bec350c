"""The text key computed for a batch is the server's for every text: Python's where it agrees,
the server's for the characters a newer Unicode added (retrieval.memory.text_key)."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from retrieval.memory.store import MemoryStore
from retrieval.memory.text_key import PYTHON_UNICODE, TextKeys, python_knows
from tests.conftest import PgDatabase

KIRAT_RAI = "code \U00016d67\U00016d67"  # "code \U00016D68" in Unicode 16's NFC


def _server_keys(database: PgDatabase, texts: list[str]) -> list[bytes]:
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT retrieval.text_key(t) FROM unnest(CAST(:texts AS text[])) "
                "WITH ORDINALITY AS u(t, n) ORDER BY n"
            ),
            {"texts": texts},
        ).scalars()
        return [bytes(key) for key in rows]


def _keys(database: PgDatabase, texts: list[str]) -> list[bytes]:
    with database.engine.connect() as connection:
        return TextKeys("retrieval").keys(connection, texts)


def _new_to_python(database: PgDatabase) -> list[str]:
    # The characters the server's Unicode assigns and Python's does not (PostgreSQL 17+).
    with database.engine.connect() as connection:
        if connection.dialect.server_version_info < (17,):
            pytest.skip("PostgreSQL before 17 cannot say which characters it has assigned")
        candidates = [
            chr(c)
            for c in range(0x80, sys.maxunicode + 1)
            if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) == "Cn"
        ]
        assigned = connection.execute(
            text("SELECT unicode_assigned(c) FROM unnest(CAST(:cs AS text[])) AS u(c)"),
            {"cs": candidates},
        ).scalars()
        return [char for char, known in zip(candidates, assigned, strict=True) if known]


def test_the_characters_unicode_added_since_pythons_are_keyed_as_the_server_keys_them(
    database: PgDatabase,
) -> None:
    new = _new_to_python(database)
    assert len(new) > 1000 and "\U00016d67" in new  # Python 3.11 knows Unicode 14
    texts = [
        form
        for index, char in enumerate(new)
        for form in (char, f"a{char}", char * 2, f"{char}{new[index - 1]}", f"{char}\u0301")
    ]
    texts += [KIRAT_RAI, "code \U00016d68", "unassigned \u0378 and \U000e0080 here"]
    assert _keys(database, texts) == _server_keys(database, texts)


def test_python_keys_alone_what_it_knows(database: PgDatabase) -> None:
    with database.engine.connect() as connection:
        server = TextKeys("retrieval").server_unicode(connection)
    assert python_knows("plain text", None)
    assert python_knows("Caf\u00e9", server) == (server is not None and server >= PYTHON_UNICODE)
    assert not python_knows(KIRAT_RAI, server)
    assert not python_knows("Caf\u00e9", (PYTHON_UNICODE[0] - 1, 0, 0))  # an older server


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12),
        min_size=1,
        max_size=8,
    )
)
def test_every_text_gets_the_servers_key(database: PgDatabase, texts: list[str]) -> None:
    assert _keys(database, texts) == _server_keys(database, texts)


def test_copies_of_a_text_python_cannot_normalize_collapse(store: MemoryStore) -> None:
    first = store.remember(KIRAT_RAI, tenant_id="acme")
    assert store.remember(KIRAT_RAI, tenant_id="acme") == first
    assert store.remember("code \U00016d68", tenant_id="acme") == first  # its NFC form
    ids = store.remember_many(
        [
            {"text": "other \U00016d67\U00016d67", "tenant_id": "acme"},
            {"text": "other \U00016d68", "tenant_id": "acme"},
            {"text": KIRAT_RAI, "tenant_id": "acme"},
        ]
    )
    assert ids[0] == ids[1] != first and ids[2] == first and ids.duplicates == 2
