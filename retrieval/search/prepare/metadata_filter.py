"""A call's metadata filter, checked and turned into conditions the statement binds.

``retrieve(..., filter={"user": "u1", "score": {"$gte": 3}})`` keeps the rows whose metadata
holds every condition. A key names a metadata key; a dotted key (``"a.b"``) a nested one (a
part of digits also reads a list's item: ``"tags.0"``). A plain value (a string, number,
boolean, null, list or object) is met when the value at the key equals it, as ``$eq``; an
object of operators compares the value at the key:

* ``$eq`` (equal: ``{"tags": ["x"]}`` is not met by ``{"tags": ["x", "y"]}``), ``$ne`` (not
  equal; a row without the key is not equal): of the rows, ``$eq`` and ``$ne`` of one value
  keep complementary sets, as LangGraph's and Mem0's stores have them;
* ``$all`` with a list: the list at the key holds every item given (``{"tags": {"$all":
  ["x"]}}`` is met by ``{"tags": ["x", "y"]}``);
* ``$gt``, ``$gte``, ``$lt``, ``$lte`` with a number or a string (a value of another JSON type
  at the key does not compare);
* ``$in`` / ``$nin`` with a non-empty list (the value at the key is / is not one of them);
* ``$exists`` with ``true`` or ``false``; the plain value ``"*"`` means any value (the key is
  there; ``{"$eq": "*"}`` for the text "*");
* ``$contains`` / ``$icontains`` with text: the value at the key is text holding it (in its
  case / in any case), as Mem0 has them.

Keys and operators are joined by AND; ``$and`` and ``$or`` take a non-empty list of filters
(``{"$or": [{"user": "u1"}, {"score": {"$gte": 3}}]}``) and ``$not`` one filter (a row meets
it when it does not meet every condition of that filter; a condition on a key a row lacks is
not met), nested at most :data:`MAX_LOGICAL_DEPTH` deep.

The conditions' shape (their operators, in order) chooses the statement; their paths and values
are bound parameters (:mod:`retrieval.search.statement.metadata`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from retrieval.arguments import json_text_problem, storable_problem
from retrieval.errors import ValidationError

# The statement's name of each operator's condition.
OPERATORS = {
    "$eq": "eq",
    "$all": "contains",
    "$ne": "ne",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
    "$in": "in",
    "$nin": "nin",
    "$exists": "exists",
    "$contains": "substring",
    "$icontains": "isubstring",
}
# The equalities that bind the value nested in its path (``filter_within_I``), which the
# metadata must contain.
WITHIN = frozenset({"eq", "eq_json"})
# The $in of strings, numbers, booleans and nulls, which binds each value nested in its path
# (``filter_within_I``, a list): the metadata must contain one of them.
IN_WITHIN = "in_within"
# A plain value that means "any value": the key is there (Mem0's wildcard).
ANY_VALUE = "*"
COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
# The condition of a call's namespace among a call's conditions on the rows it reads (first,
# before the filter's: retrieval.search.prepare.call.PreparedCall.filter_operators).
NAMESPACE = "namespace"
# The condition of a call that reads only the memories stored under a key (a key-value store's
# items: retrieval.integrations.langgraph), after the namespace's.
KEYED = "keyed"
MAX_CONDITIONS = 16
MAX_LIST = 1000
# The most parts of a dotted key ("a.b.c": 3) and the deepest nesting of a value's lists and
# objects: a document's metadata is rarely deeper than a few levels, and a deeper one would only
# make the statement's JSON path long (a value nested 990 deep exhausted Python's recursion).
MAX_KEY_PARTS = 32
MAX_VALUE_DEPTH = 32
MAX_KEY_CHARS = 1000
# The deepest nesting of $and, $or and $not.
MAX_LOGICAL_DEPTH = 8
# The statement-shape tokens of the logical operators: a group opens with its operator and
# closes with ")"; every other token is a condition (in order, the conditions' index).
LOGICAL = {"$and": "and(", "$or": "or(", "$not": "not("}
CLOSE = ")"
_FIELD = "filter"


@dataclass(frozen=True)
class MetadataFilter:
    """A checked filter: its shape in the statement (``operators``: each condition's operator,
    in order, between the tokens of the ``$and``, ``$or`` and ``$not`` that group them), and
    each condition's operator, the path of its key and its value (bound; for ``contains``, the
    nested value the metadata must contain)."""

    operators: tuple[str, ...]
    paths: tuple[tuple[str, ...], ...]
    values: tuple[Any, ...]

    @property
    def conditions(self) -> tuple[str, ...]:
        """Each condition's operator, in order (the shape without its groups)."""
        return tuple(op for op in self.operators if op not in GROUP_TOKENS)

    def parameters(self) -> dict[str, Any]:
        """The bound values: ``filter_path_I`` (a text array) and ``filter_value_I`` (JSON
        text) of each condition ``I``, and for an equality on a path of object keys
        ``filter_within_I``, the value nested in its path (what the metadata must contain: the
        index's part of the condition; for ``$in`` of scalars, each value so)."""
        params: dict[str, Any] = {}
        for index, (operator, path, value) in enumerate(
            zip(self.conditions, self.paths, self.values, strict=True)
        ):
            params[f"filter_path_{index}"] = list(path)
            params[f"filter_value_{index}"] = json.dumps(value, ensure_ascii=False)
            if operator in WITHIN:
                nested = json.dumps(_nested(path, value), ensure_ascii=False)
                params[f"filter_within_{index}"] = nested
            elif operator == IN_WITHIN:
                params[f"filter_within_{index}"] = [
                    json.dumps(_nested(path, item), ensure_ascii=False) for item in value
                ]
        return params


def metadata_filter(value: object) -> MetadataFilter | None:
    """``value`` (``None``, or a mapping of keys to values or operators) checked; a
    :class:`~retrieval.errors.ValidationError` says what is wrong and how to write it."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"filter must be a dict of metadata keys to values, got {type(value).__name__}",
            field=_FIELD,
        )
    built = _Built()
    built.add(value, depth=0)  # refuses more than MAX_CONDITIONS as it reads them
    if not built.paths:
        return None
    return MetadataFilter(tuple(built.tokens), tuple(built.paths), tuple(built.values))


GROUP_TOKENS = frozenset([*LOGICAL.values(), CLOSE])


class _Built:
    """A filter's shape tokens and conditions as they are read, in order."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.paths: list[tuple[str, ...]] = []
        self.values: list[Any] = []

    def add(self, value: Mapping[Any, Any], depth: int) -> None:
        """Every key of ``value`` (joined by AND) at ``depth`` groups deep."""
        for key, condition in value.items():
            if isinstance(key, str) and key in LOGICAL:
                self._group(key, condition, depth + 1)
                continue
            path = _path(key)
            if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
                for operator, operand in condition.items():
                    name, bound = _operator(key, operator, operand)
                    held = _nested(path, bound) if name == "contains" else bound
                    self._condition(_as_written(name, path, held), path, held)
            elif condition == ANY_VALUE:
                self._condition("exists", path, True)
            else:
                value = _json(key, condition)
                self._condition(_as_written("eq", path, value), path, value)

    def _condition(self, operator: str, path: tuple[str, ...], value: Any) -> None:
        if len(self.paths) >= MAX_CONDITIONS:  # counted as read: a huge filter stops early
            raise ValidationError(
                f"filter has more than {MAX_CONDITIONS} conditions; at most {MAX_CONDITIONS}",
                field=_FIELD,
            )
        self.tokens.append(operator)
        self.paths.append(path)
        self.values.append(value)

    def _group(self, operator: str, operand: object, depth: int) -> None:
        if depth > MAX_LOGICAL_DEPTH:
            raise ValidationError(
                f"filter nests $and, $or and $not {depth} deep, over the limit of "
                f"{MAX_LOGICAL_DEPTH}",
                field=_FIELD,
            )
        if operator == "$not":
            if not isinstance(operand, Mapping) or not operand:
                raise ValidationError(
                    f"filter: $not takes one filter, such as {{'$not': {{'user': 'u1'}}}}; got "
                    f"{operand!r:.40}",
                    field=_FIELD,
                )
            parts: list[Mapping[Any, Any]] = [operand]
        else:
            if (
                not isinstance(operand, list | tuple)
                or not operand
                or not all(isinstance(part, Mapping) and part for part in operand)
            ):
                raise ValidationError(
                    f"filter: {operator} takes a non-empty list of filters, such as "
                    f"{{'{operator}': [{{'user': 'u1'}}, {{'score': {{'$gte': 3}}}}]}}; got "
                    f"{operand!r:.40}",
                    field=_FIELD,
                )
            parts = list(operand)
        self.tokens.append(LOGICAL[operator])
        for part in parts:
            self.tokens.append(LOGICAL["$and"])
            self.add(part, depth)
            self.tokens.append(CLOSE)
        self.tokens.append(CLOSE)


def _as_written(name: str, path: tuple[str, ...], value: Any) -> str:
    # The statement's condition for the operator ``name`` on ``path`` with ``value``. An
    # equality whose path reads a list's item ("tags.0") cannot be narrowed by containment
    # (the index's part): it compares the value at the path alone ("eq_at"). One of a list or
    # an object compares the whole value after the containment ("eq_json"); one of a string,
    # number, boolean or null ("eq") needs only that the value there is not a list. So for $in:
    # of strings, numbers, booleans and nulls on a path of object keys, the containment of one
    # of them ("in_within"); else each value compared whole ("in").
    on_an_item = any(part.isdigit() for part in path)
    if name == "in":
        scalars = not any(isinstance(item, list | dict) for item in value)
        return IN_WITHIN if scalars and not on_an_item else name
    if name != "eq":
        return name
    if on_an_item:
        return "eq_at"
    return "eq_json" if isinstance(value, list | dict) else "eq"


def _path(key: object) -> tuple[str, ...]:
    if not isinstance(key, str) or not key.strip():
        raise ValidationError(f"filter key {key!r} must be a non-empty string", field=_FIELD)
    problem = storable_problem(key)
    if problem is not None:
        raise ValidationError(f"filter key {key!r:.40} {problem}", field=_FIELD)
    if len(key) > MAX_KEY_CHARS:
        raise ValidationError(
            f"filter key {key[:40]!r}... has {len(key):,} characters, over the limit of "
            f"{MAX_KEY_CHARS:,}",
            field=_FIELD,
        )
    if key.startswith("$"):
        raise ValidationError(
            f"filter key {key!r} is not an operator of a filter: use $and, $or or $not, or a "
            "metadata key",
            field=_FIELD,
        )
    parts = tuple(key.split("."))
    if len(parts) > MAX_KEY_PARTS:
        raise ValidationError(
            f"filter key {key[:40]!r}... has {len(parts)} dotted parts, over the limit of "
            f"{MAX_KEY_PARTS}: name a key at most {MAX_KEY_PARTS} levels deep",
            field=_FIELD,
        )
    if any(not part for part in parts):
        raise ValidationError(
            f"filter key {key!r} has an empty part: name a nested key as 'outer.inner'",
            field=_FIELD,
        )
    return parts


def _operator(key: str, operator: object, operand: object) -> tuple[str, Any]:
    name = OPERATORS.get(str(operator))
    if name is None:
        known = ", ".join(OPERATORS)
        raise ValidationError(
            f"filter key {key!r}: unknown operator {operator!r}; use one of {known}, or a "
            "plain value for equality",
            field=_FIELD,
        )
    if name in COMPARISONS:
        if isinstance(operand, bool) or not isinstance(operand, int | float | str):
            raise ValidationError(
                f"filter key {key!r}: {operator} compares a number or a string, got "
                f"{type(operand).__name__}",
                field=_FIELD,
            )
        return name, _json(key, operand)
    if name in ("contains", "in", "nin"):
        if not isinstance(operand, list | tuple) or not operand or len(operand) > MAX_LIST:
            what = "items the list at the key must hold" if name == "contains" else "values"
            raise ValidationError(
                f"filter key {key!r}: {operator} takes a non-empty list of at most {MAX_LIST} "
                f"{what}",
                field=_FIELD,
            )
        if name == "contains":
            return name, _json(key, list(operand))
        return name, [_json(key, item) for item in operand]
    if name in ("substring", "isubstring"):
        if not isinstance(operand, str) or not operand:
            raise ValidationError(
                f"filter key {key!r}: {operator} takes non-empty text, got {operand!r:.40}",
                field=_FIELD,
            )
        _json(key, operand)  # what PostgreSQL cannot hold is refused
        return name, "%" + re.sub(r"([\\%_])", r"\\\1", operand) + "%"
    if name == "exists":
        if not isinstance(operand, bool):
            raise ValidationError(
                f"filter key {key!r}: $exists takes true or false, got {operand!r}", field=_FIELD
            )
        return name, operand
    return name, _json(key, operand)


def _json(key: str, value: object) -> Any:
    # The value as JSON holds it: finite numbers, string keys, nothing but JSON types, at most
    # MAX_VALUE_DEPTH deep, and nothing PostgreSQL's jsonb cannot hold (a NUL character).
    depth = _depth(value)
    if depth > MAX_VALUE_DEPTH:
        raise ValidationError(
            f"filter key {key!r:.40}: its value nests lists and objects {depth} deep, over the "
            f"limit of {MAX_VALUE_DEPTH}",
            field=_FIELD,
        )
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValidationError(
            f"filter key {key!r:.40}: its value is not JSON ({error})", field=_FIELD
        ) from None
    problem = json_text_problem(text)
    if problem is not None:
        raise ValidationError(f"filter key {key!r:.40}: its value {problem}", field=_FIELD)
    return json.loads(text)


def _depth(value: object) -> int:
    # How deep lists and objects nest in ``value`` (a scalar: 0), counted without recursion and
    # not past one level beyond the limit.
    deepest, level = 0, [value]
    while level and deepest <= MAX_VALUE_DEPTH:
        inner: list[object] = []
        for item in level:
            if isinstance(item, Mapping):
                inner.extend(item.values())
            elif isinstance(item, list | tuple):
                inner.extend(item)
        if not inner and not any(isinstance(i, Mapping | list | tuple) for i in level):
            break
        deepest += 1
        level = inner
    return deepest


def _nested(path: tuple[str, ...], value: Any) -> Any:
    # {"a": {"b": value}} for the path (a, b): what the metadata must contain.
    for part in reversed(path):
        value = {part: value}
    return value
