"""JSON text read from a file or a command line, with errors that name the field."""

from __future__ import annotations

import json
import sys
from typing import Any

from retrieval.errors import ValidationError


def parse_json(text: str, field: str) -> Any:
    """``text`` parsed as JSON; a :class:`ValidationError` naming ``field`` when it is not JSON,
    is nested too deeply to read, or holds a number too long to read."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationError(f"{field}: {json_problem(error)}", field=field) from None
    except RecursionError:
        raise ValidationError(f"{field}: {NESTED_TOO_DEEPLY}", field=field) from None
    except ValueError:
        raise ValidationError(f"{field}: {number_too_long()}", field=field) from None


def json_problem(error: json.JSONDecodeError) -> str:
    """What :class:`json.JSONDecodeError` ``error`` says, for a person."""
    if error.msg.startswith("Invalid control character"):
        return (
            "not valid JSON: a control character (a tab or a line break) inside a string; "
            "write it escaped, as \\t or \\n"
        )
    return f"not valid JSON: {error.msg[:1].lower()}{error.msg[1:]}"


NESTED_TOO_DEEPLY = "JSON nested too deeply to read: flatten it"


def whole_value_text(value: object) -> str:
    """A JSON value as one text, its keys sorted: what a key-value store's item is embedded
    with when no field of it holds text (retrieval.integrations.langgraph), and how a timeline
    recognises such an item."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def number_too_long() -> str:
    """Why a JSON number of more digits than Python converts was refused."""
    digits = sys.get_int_max_str_digits()
    return f"a JSON number has more than {digits:,} digits: write it as a string"
