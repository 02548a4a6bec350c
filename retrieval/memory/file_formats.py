"""The rows of a file to ingest, as dicts of its fields: JSON Lines (a JSON object per line)
or CSV (a header, then a row per record; metadata and params as JSON, entities and a namespace
as ``a;b;c``), each with its line number; a malformed row is a :class:`ValidationError` naming
its line."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from typing import Any

from retrieval.errors import ValidationError
from retrieval.memory.json_text import NESTED_TOO_DEEPLY, json_problem, number_too_long, parse_json

_JSON_FIELDS = ("metadata", "params")


# A row as read: its fields, or why the line is not a record (the reading goes on, so that every
# bad line is reported at once).
Row = tuple[int, dict[str, Any] | ValidationError]


def jsonl_rows(handle: Any) -> Iterator[Row]:
    """Each JSON Lines record of ``handle`` with its line number (blank lines skipped), or the
    :class:`ValidationError` of a line that is not one."""
    for line, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        try:
            fields = json.loads(raw.rstrip("\r\n"))
        except json.JSONDecodeError as error:
            problem = json_problem(error)
            yield line, ValidationError(f"line {line}, column {error.colno}: {problem}")
            continue
        except RecursionError:
            yield line, ValidationError(f"line {line}: {NESTED_TOO_DEEPLY}")
            continue
        except ValueError:
            yield line, ValidationError(f"line {line}: {number_too_long()}")
            continue
        if not isinstance(fields, dict):
            got = raw.strip()[:40]
            yield line, ValidationError(f"line {line}: expected a JSON object, got {got}")
            continue
        yield line, fields


def csv_rows(handle: Any) -> Iterator[Row]:
    """Each CSV row of ``handle`` with its line number, empty cells left out, each cell as the
    type its field takes, or the :class:`ValidationError` of a row that is not a record (a
    file that is not CSV past a line stops the reading with an error)."""
    # strict: a quote left open, or text after a closing quote, is an error, not a cell that
    # runs on to the end of the file.
    reader = csv.DictReader(handle, strict=True)
    ended = 1  # the last line of the header or of the last row read
    try:
        _check_header(reader.fieldnames or [])
        for fields in reader:
            line = reader.line_num
            ended = line
            if None in fields:
                yield line, ValidationError(f"line {line}: more cells than the header has columns")
                continue
            cells = {key: value for key, value in fields.items() if value not in (None, "")}
            try:
                yield line, {name: _csv_cell(name, value, line) for name, value in cells.items()}
            except ValidationError as error:
                yield line, error
    except csv.Error as error:
        if "unexpected end of data" in str(error):
            raise ValidationError(
                f'line {ended + 1}: a quoted cell that starts here never ends (a " without '
                'its closing "): close it, and write a " inside a quoted cell as ""'
            ) from None
        raise ValidationError(
            f"line {ended + 1}: not valid CSV ({error}); a field over "
            f"{csv.field_size_limit():,} characters is refused: use JSON Lines for long texts"
        ) from None


def _check_header(names: Sequence[str]) -> None:
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValidationError(
            f"line 1: column {twice[0]!r} appears more than once in the header: name each "
            "column once",
            field=twice[0],
        )


def _csv_cell(name: str, value: str, line: int) -> Any:
    # A cell as the type its field takes: JSON for metadata and params, a list of entities,
    # a number for importance, whole numbers for decision_id and position.
    try:
        listed = name in ("entities", "namespace")
        if name in _JSON_FIELDS or (listed and value.strip().startswith("[")):
            return parse_json(value, name)
        if listed:
            return value.strip().split(";")
        if name == "importance":
            return float(value)
        if name in ("decision_id", "position"):
            return int(value)
    except ValidationError as error:
        raise ValidationError(f"line {line}, {error.reason}", field=name) from None
    except ValueError:
        wanted = "a number" if name == "importance" else "a whole number"
        raise ValidationError(
            f"line {line}, {name}: {value[:40]!r} is not {wanted}", field=name
        ) from None
    return value
