"""The fixed SQL: named blocks of retrieval/sql/*.sql, one bind style, one way to quote."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from retrieval.db.queries import blocks, quote_schema, statement
from retrieval.errors import ConfigurationError

PACKAGE = Path(__file__).resolve().parents[2] / "retrieval"
SQL_FILES = sorted((PACKAGE / "sql").glob("*.sql"))
CODE = {
    path: path.read_text("utf-8")
    for path in PACKAGE.rglob("*.py")
    if "migrations" not in path.parts
}
# A statement named in the code: statement("file.name", ...), blocks("file")["name"], or a
# read template's name ("read_semantic.nearest", however the code chooses it).
NAMED = re.compile(
    r'statement\(\s*f?"(\w+)\.(\w+)"|blocks\("(\w+)"\)\["(\w+)"\]|"(read_\w+)\.(\w+)"'
)


def _named_in_code() -> set[tuple[str, str]]:
    found = set()
    for text in CODE.values():
        for match in NAMED.finditer(text):
            file, name = next((match[i], match[i + 1]) for i in (1, 3, 5) if match[i] is not None)
            found.add((file, name))
    return found


def test_every_statement_the_code_names_exists_and_every_block_is_used() -> None:
    named = _named_in_code()
    # documents.py asks for its statements through self._sql("name").
    store = (PACKAGE / "documents" / "store.py").read_text("utf-8")
    named |= {("documents", name) for name in re.findall(r'self\._sql\("(\w+)"\)', store)}
    defined = {(path.stem, name) for path in SQL_FILES for name in blocks(path.stem)}
    assert named - defined == set(), "the code names statements no .sql file holds"
    assert defined - named == set(), "blocks of the .sql files that no code uses"


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda path: path.name)
def test_one_bind_style(path: Path) -> None:
    text = path.read_text("utf-8")
    without_casts = text.replace("::", "")
    assert not re.search(r"(?<![\w:]):[a-z_]+\b", without_casts), "a :name placeholder"
    assert not re.search(r"%[sb](?!\w)", text), "a positional %s or %b placeholder"
    assert "CAST(:" not in text


def test_no_module_builds_sql_with_sqlalchemy_text() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path, text in CODE.items()
        if re.search(r"from sqlalchemy import[^\n]*\btext\b", text)
        and path.name != "schema.py"  # server defaults and index expressions of the metadata
    ]
    assert offenders == []


def test_the_schema_is_quoted_once_by_psycopg() -> None:
    assert quote_schema("retrieval") == '"retrieval"'
    assert statement("memory.existing_decisions", "tenant_a").startswith(
        'SELECT id FROM "tenant_a".decisions'
    )
    with pytest.raises(ConfigurationError, match="plain PostgreSQL identifier"):
        quote_schema('x"; DROP TABLE memories; --')
    with pytest.raises(KeyError, match=r"no statement 'memory\.nothing'"):
        statement("memory.nothing", "retrieval")


def test_no_other_quoting_of_the_schema_in_the_code() -> None:
    for path, text in CODE.items():
        assert 'f\'"{schema}"' not in text and '"{schema}".' not in text, path
