"""A call's metadata filter checked (retrieval.search.prepare.metadata_filter): what it binds,
and a clear error for every filter it cannot run."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from retrieval.errors import ValidationError
from retrieval.search.prepare.metadata_filter import (
    MAX_CONDITIONS,
    MAX_KEY_PARTS,
    MAX_VALUE_DEPTH,
    metadata_filter,
)


def test_plain_values_are_equality_and_operators_bind_their_path_and_value() -> None:
    checked = metadata_filter(
        {"user": "u1", "tags": ["a"], "score": {"$gte": 3, "$lt": 9}, "a.b": {"$in": [1, "x"]}}
    )
    assert checked is not None
    # A list or an object is compared whole (eq_json), a scalar by containment alone (eq), and
    # $in of scalars by the containment of one of them (in_within).
    assert checked.operators == ("eq", "eq_json", "gte", "lt", "in_within")
    assert checked.paths == (("user",), ("tags",), ("score",), ("score",), ("a", "b"))
    params = checked.parameters()
    assert json.loads(params["filter_value_0"]) == "u1"
    assert json.loads(params["filter_within_0"]) == {"user": "u1"}
    assert json.loads(params["filter_value_1"]) == ["a"]
    assert json.loads(params["filter_within_1"]) == {"tags": ["a"]}
    assert json.loads(params["filter_value_2"]) == 3 and params["filter_path_2"] == ["score"]
    assert "filter_within_2" not in params
    assert json.loads(params["filter_value_4"]) == [1, "x"]
    assert params["filter_path_4"] == ["a", "b"]
    assert [json.loads(v) for v in params["filter_within_4"]] == [
        {"a": {"b": 1}},
        {"a": {"b": "x"}},
    ]


def test_in_of_a_list_or_an_object_or_on_a_list_s_item_compares_each_value_whole() -> None:
    # Containment finds a list's items: a value that is a list or an object, or a path that
    # reads a list's item, is compared whole, as before.
    checked = metadata_filter(
        {"a": {"$in": [["x"], "y"]}, "b": {"$in": [{"c": 1}]}, "tags.0": {"$in": ["x"]}}
    )
    assert checked is not None and checked.operators == ("in", "in", "in")
    assert not any(name.startswith("filter_within") for name in checked.parameters())


def test_eq_is_equality_all_is_containment_and_no_filter_is_none() -> None:
    checked = metadata_filter(
        {"a.b": {"$eq": {"c": 1}}, "tags": {"$all": ["x"]}, "flag": {"$exists": False}}
    )
    assert checked is not None and checked.operators == ("eq_json", "contains", "exists")
    params = checked.parameters()
    assert json.loads(params["filter_value_0"]) == {"c": 1}
    assert json.loads(params["filter_within_0"]) == {"a": {"b": {"c": 1}}}
    assert json.loads(params["filter_value_1"]) == {"tags": ["x"]}
    assert metadata_filter(None) is None and metadata_filter({}) is None


def test_a_wildcard_is_any_value_and_contains_is_a_substring_with_its_signs_escaped() -> None:
    checked = metadata_filter(
        {"user": "*", "note": {"$contains": "50%_off\\"}, "title": {"$icontains": "Lat"}}
    )
    assert checked is not None and checked.operators == ("exists", "substring", "isubstring")
    params = checked.parameters()
    assert json.loads(params["filter_value_0"]) is True
    assert json.loads(params["filter_value_1"]) == "%50\\%\\_off\\\\%"
    assert json.loads(params["filter_value_2"]) == "%Lat%"
    assert metadata_filter({"user": {"$eq": "*"}}).operators == ("eq",)  # type: ignore[union-attr]


def test_an_equality_on_a_lists_item_compares_the_item_alone() -> None:
    checked = metadata_filter({"tags.0": "ops", "team.name": {"$eq": "web"}})
    assert checked is not None and checked.operators == ("eq_at", "eq")
    assert "filter_within_0" not in checked.parameters()


def _nested_value(depth: int) -> Any:
    # A value whose lists and objects nest ``depth`` deep: {"x": [{"x": [...]}]}.
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"x": value}
    return value


def _nested_not(depth: int) -> Any:
    # {"$not": {"$not": ... {"a": 1}}}, ``depth`` groups deep.
    value: Any = {"a": 1}
    for _ in range(depth):
        value = {"$not": value}
    return value


def test_logical_operators_group_their_conditions_in_the_shape() -> None:
    checked = metadata_filter(
        {"team": "web", "$or": [{"user": "u1"}, {"score": {"$gte": 3}, "tags": {"$all": ["x"]}}],
         "$not": {"flag": True}}
    )  # fmt: skip
    assert checked is not None
    assert checked.operators == (
        "eq", "or(", "and(", "eq", ")", "and(", "gte", "contains", ")", ")",
        "not(", "and(", "eq", ")", ")",
    )  # fmt: skip
    assert checked.conditions == ("eq", "eq", "gte", "contains", "eq")
    assert checked.paths == (("team",), ("user",), ("score",), ("tags",), ("flag",))
    params = checked.parameters()
    assert json.loads(params["filter_value_4"]) is True and "filter_within_4" in params
    assert metadata_filter(_nested_not(8)) is not None


def test_a_deep_value_within_the_limit_is_a_filter() -> None:
    assert metadata_filter({"a": _nested_value(MAX_VALUE_DEPTH)}) is not None
    assert metadata_filter({".".join(["k"] * MAX_KEY_PARTS): 1}) is not None


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (["user"], "must be a dict"),
        ({"": 1}, "non-empty string"),
        ({3: 1}, "non-empty string"),
        ({"$nor": [{"a": 1}]}, "is not an operator of a filter: use $and, $or or $not"),
        ({"$or": {"a": 1}}, "$or takes a non-empty list of filters"),
        ({"$or": []}, "$or takes a non-empty list of filters"),
        ({"$and": [{"a": 1}, 3]}, "$and takes a non-empty list of filters"),
        ({"$not": [{"a": 1}]}, "$not takes one filter"),
        ({"$not": {}}, "$not takes one filter"),
        (_nested_not(9), "nests $and, $or and $not 9 deep, over the limit of 8"),
        ({"$or": [{f"k{i}": i} for i in range(MAX_CONDITIONS + 1)]}, f"at most {MAX_CONDITIONS}"),
        ({"a..b": 1}, "empty part"),
        ({"a": {"$like": "x"}}, "unknown operator '$like'"),
        ({"a": {"$gt": True}}, "compares a number or a string"),
        ({"a": {"$gt": [1]}}, "compares a number or a string"),
        ({"a": {"$in": []}}, "non-empty list"),
        ({"a": {"$nin": "x"}}, "non-empty list"),
        ({"a": {"$all": "x"}}, "$all takes a non-empty list"),
        ({"a": {"$all": []}}, "$all takes a non-empty list"),
        ({"a": {"$contains": 3}}, "$contains takes non-empty text"),
        ({"a": {"$icontains": ""}}, "$icontains takes non-empty text"),
        ({"a": {"$exists": 1}}, "true or false"),
        ({"a": math.nan}, "not JSON"),
        ({"a": {1, 2}}, "not JSON"),
        ({f"k{i}": i for i in range(MAX_CONDITIONS + 1)}, f"at most {MAX_CONDITIONS}"),
        # What PostgreSQL cannot hold, or a depth no metadata has, is refused before any SQL.
        ({"a\x00b": 1}, "NUL byte"),
        ({"a": "x\x00y"}, "NUL character"),
        ({"a": {"$ne": ["x\x00"]}}, "NUL character"),
        ({"a": {"$in": ["ok", "x\x00"]}}, "NUL character"),
        ({".".join(["k"] * 1000): 1}, "over the limit of 1,000"),
        ({".".join(["k"] * (MAX_KEY_PARTS + 1)): 1}, f"over the limit of {MAX_KEY_PARTS}"),
        ({"a": _nested_value(990)}, f"over the limit of {MAX_VALUE_DEPTH}"),
        ({"a": {"$eq": _nested_value(MAX_VALUE_DEPTH + 1)}}, "nests lists and objects"),
    ],
)
def test_a_filter_it_cannot_run_is_a_clear_error(given: Any, says: str) -> None:
    with pytest.raises(ValidationError, match="filter") as raised:
        metadata_filter(given)
    assert says in str(raised.value)
    assert raised.value.field == "filter"
