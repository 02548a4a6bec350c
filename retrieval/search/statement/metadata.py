"""A call's conditions on the rows it reads, in the statement: its namespace (a memory's path
begins with it) and one condition per metadata filter condition, on a row's metadata, their
values bound (:mod:`retrieval.search.prepare.metadata_filter`).

Memories are filtered on their ``metadata`` inside the dense read (the HNSW walk or the exact
read) and the BM25 channel's pool, and their context turns too; document chunks on their
document's metadata merged with their own (``doc_allowed``), inside both channels. Decisions
and tool calls carry no metadata: a filtered call does not read them
(:mod:`retrieval.search.plan.read_plan`). Only memories lie in namespaces: a call that names one
reads memories alone, filtered where they are read.
"""

from __future__ import annotations

from collections.abc import Iterator

from retrieval.search.prepare.metadata_filter import (
    CLOSE,
    COMPARISONS,
    GROUP_TOKENS,
    KEYED,
    NAMESPACE,
)
from retrieval.search.statement.template import template

NOTES = {"doc_allowed": "the tenant's chunks whose metadata meets the call's filter"}
# The template of each operator's condition (the comparisons share one).
_TEMPLATES = {
    "eq": "read_metadata.eq",
    "eq_json": "read_metadata.eq_json",
    "eq_at": "read_metadata.eq_at",
    "contains": "read_metadata.contains",
    "ne": "read_metadata.ne",
    "in": "read_metadata.in",
    "in_within": "read_metadata.in_within",
    "nin": "read_metadata.nin",
    "exists": "read_metadata.exists",
    "substring": "read_metadata.substring",
    "isubstring": "read_metadata.isubstring",
}


def memory_conditions(operators: tuple[str, ...], alias: str) -> list[str]:
    """The SQL conditions of a call's ``operators`` (its namespace first, if any, and whether
    it reads only memories under a key, then its metadata filter's) on the memory ``alias``."""
    scope: list[str] = []
    if operators[:1] == (NAMESPACE,):
        scope.append(template("read_metadata.namespace", alias=alias))
        operators = operators[1:]
    if operators[:1] == (KEYED,):
        scope.append(template("read_metadata.keyed", alias=alias))
        operators = operators[1:]
    return [*scope, *metadata_conditions(operators, f"{alias}.metadata")]


def metadata_conditions(operators: tuple[str, ...], metadata: str) -> list[str]:
    """The SQL conditions of a filter of ``operators`` on the JSON expression ``metadata``
    (each must hold): one per condition, or, when ``$and``, ``$or`` or ``$not`` group them, the
    one condition of the whole tree."""
    if not GROUP_TOKENS.intersection(operators):
        return [_condition(op, index, metadata) for index, op in enumerate(operators)]
    tokens = iter(operators)
    indexes = iter(range(len(operators)))
    return [_joined(tokens, indexes, metadata, "AND")]


def _condition(op: str, index: int, metadata: str) -> str:
    # One condition of the filter, its values bound as the index-th.
    if op in COMPARISONS:
        return template(
            "read_metadata.compare", metadata=metadata, i=index, operator=COMPARISONS[op]
        )
    return template(_TEMPLATES[op], metadata=metadata, i=index)


def _joined(
    tokens: Iterator[str], indexes: Iterator[int], metadata: str, joint: str, negated: bool = False
) -> str:
    # The tokens up to the group's ")" (or the end), joined by ``joint``: a group by its own
    # operator, NOT around the AND of its parts. Under a NOT each condition is made false where
    # it is null (a key the row lacks), so that NOT of it is true; elsewhere a null is as
    # false, and the conditions stay as the GIN index reads them.
    parts: list[str] = []
    for token in tokens:
        if token == CLOSE:
            break
        if token in GROUP_TOKENS:
            inner = "OR" if token == "or(" else "AND"
            within = negated or token == "not("
            group = _joined(tokens, indexes, metadata, inner, within)
            parts.append(f"(NOT {group})" if token == "not(" else group)
        else:
            condition = _condition(token, next(indexes), metadata)
            parts.append(f"COALESCE({condition}, FALSE)" if negated else condition)
    return "(" + f" {joint} ".join(parts) + ")"


def allowed_chunks(schema: str, operators: tuple[str, ...]) -> str:
    """The CTE ``doc_allowed``: the tenant's chunks whose metadata meets the filter (chunks
    lie in no namespace: a call that names one does not read them)."""
    assert NAMESPACE not in operators and KEYED not in operators
    conditions = " AND ".join(metadata_conditions(operators, "(d.metadata || c.metadata)"))
    return template("read_metadata.doc_allowed", schema, conditions=conditions)
