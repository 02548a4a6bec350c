"""Named placeholders converted once to PostgreSQL's $n form (retrieval.db.placeholders)."""

from __future__ import annotations

import pytest

from retrieval.db.placeholders import positional


def test_each_name_gets_one_number_in_order_of_first_use() -> None:
    query = positional("SELECT %(b)s, %(a)s, %(b)s + %(c)s")
    assert query.text == b"SELECT $1, $2, $1 + $3"
    assert query.names == ("b", "a", "c")
    assert query.values({"a": 1, "b": 2, "c": 3, "unused": 4}) == [2, 1, 3]


def test_a_doubled_percent_is_a_literal_percent() -> None:
    query = positional("SELECT 'x' LIKE '%%' || %(word)s || '%%'")
    assert query.text == b"SELECT 'x' LIKE '%' || $1 || '%'"
    assert query.names == ("word",)


def test_a_missing_parameter_is_named() -> None:
    with pytest.raises(KeyError, match="tenant_id"):
        positional("SELECT %(tenant_id)s").values({})


@pytest.mark.parametrize("statement", ["SELECT %s", "SELECT 5 % 2", "SELECT %(name)b"])
def test_other_placeholders_are_refused(statement: str) -> None:
    with pytest.raises(ValueError, match="unsupported placeholder"):
        positional(statement)


def test_a_statement_without_parameters_is_unchanged() -> None:
    query = positional("SELECT 1")
    assert query.text == b"SELECT 1" and query.names == ()
    assert query.values({}) == []
