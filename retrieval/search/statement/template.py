"""The read statement's SQL: named templates, the one way the read path composes it.

A template is a named block of ``retrieval/sql/read_*.sql`` (``-- name: NAME``, its first
comment lines saying what it holds), loaded once by :mod:`retrieval.db.queries`. :func:`template`
fills its ``{placeholders}``: ``{schema}``, quoted once, and fragments the plan chose (other
templates, column lists, the code's constants), never a value: values are bound parameters,
``%(name)s``. Braces that belong to the SQL are doubled (``'{{}}'::json``).
"""

from __future__ import annotations

from retrieval.db.queries import statement


def template(name: str, schema: str | None = None, **fragments: object) -> str:
    """The template ``"FILE.NAME"`` (``"read_semantic.nearest"``) over ``schema``'s tables
    (``None``: one that names no table), its placeholders filled by ``fragments``."""
    return statement(name, schema, **{key: str(value) for key, value in fragments.items()}).strip()
