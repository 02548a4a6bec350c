"""A call's plain arguments, checked before any SQL: counts, row ids, names and switches.

Records (a memory, a decision, a document) are checked by :mod:`retrieval.memory.validation`;
these are the other arguments of the public calls (``limit=``, ``memory_id``, ``task_id=``,
``everything=``). Each check raises :class:`~retrieval.errors.ValidationError` naming the
argument and what it accepts, so that a bad value never reaches PostgreSQL (where it would
come back as a :class:`~retrieval.errors.DatabaseError`, which callers treat as an outage).

Names (``task_id``, ``thread_id``, entity ids, kinds) follow one rule on every path, read,
write and forget alike: a string, stripped of surrounding whitespace, not empty, at most
:data:`MAX_NAME_CHARS` characters, and storable in PostgreSQL text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval.errors import ValidationError
from retrieval.memory.validation import MAX_NAME_CHARS, storable_problem

# The largest row id: PostgreSQL's bigint.
MAX_ROW_ID = 2**63 - 1
# The most results of one search: pgvector's hnsw.ef_search takes at most 1,000, and a search
# keeps at least as many candidates as it may return.
MAX_RESULTS = 1000
# The most events of one timeline call.
MAX_TIMELINE_EVENTS = 10_000
_MISSING = object()


def count(field: str, value: object, *, maximum: int, minimum: int = 1) -> int:
    """``value`` if it is an integer (not a bool) from ``minimum`` to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValidationError(
            f"{field} must be an integer from {minimum} to {maximum:,}, got {value!r:.40}",
            field=field,
        )
    return value


def optional_count(field: str, value: object, *, maximum: int) -> int | None:
    """:func:`count`, or ``None``."""
    return None if value is None else count(field, value, maximum=maximum)


def row_id(field: str, value: object) -> int:
    """``value`` if it is an integer id PostgreSQL's bigint holds (an id that was never
    given out simply finds nothing)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not -MAX_ROW_ID - 1 <= value <= MAX_ROW_ID
    ):
        raise ValidationError(
            f"{field} must be an integer id (PostgreSQL bigint), got {value!r:.40}", field=field
        )
    return value


def row_ids(field: str, ids: object) -> list[int]:
    """``ids`` as a list of row ids: a list, tuple or set of integers (a string is not a
    sequence of ids: ``"12"`` is not [1, 2])."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence | set | frozenset):
        raise ValidationError(
            f"{field} must be a list of integer ids, got {type(ids).__name__} {ids!r:.40}",
            field=field,
        )
    bad = next((i for i in ids if isinstance(i, bool) or not isinstance(i, int)), _MISSING)
    if bad is not _MISSING:
        raise ValidationError(f"{field} must hold integer ids, got {bad!r:.40}", field=field)
    if any(not -MAX_ROW_ID - 1 <= i <= MAX_ROW_ID for i in ids):
        raise ValidationError(f"{field} holds an id outside PostgreSQL's bigint", field=field)
    return list(ids)


def flag(field: str, value: object) -> bool:
    """``value`` if it is ``True`` or ``False`` (``"yes"`` or ``1`` is not a switch)."""
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be True or False, got {value!r:.40}", field=field)
    return value


def name(field: str, value: object, *, maximum: int = MAX_NAME_CHARS) -> str:
    """``value`` stripped, if it is a non-empty string of at most ``maximum`` characters that
    PostgreSQL text can hold."""
    if not isinstance(value, str):
        raise ValidationError(
            f"{field} must be a string, got {type(value).__name__} {value!r:.40}", field=field
        )
    clean = value.strip()
    if not clean:
        raise ValidationError(f"{field} is empty or only whitespace", field=field)
    if len(value) > maximum:
        raise ValidationError(
            f"{field} has {len(value):,} characters, over the limit of {maximum:,}", field=field
        )
    problem = storable_problem(clean)
    if problem is not None:
        raise ValidationError(f"{field} {problem}", field=field)
    return clean


def optional_name(field: str, value: object) -> str | None:
    """:func:`name`, or ``None``."""
    return None if value is None else name(field, value)


def names(field: str, value: object) -> tuple[str, ...]:
    """``value`` as a tuple of :func:`name` s: a list, tuple or set of strings (one string is
    not a list of names)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset):
        raise ValidationError(
            f"{field} must be a list of strings, got {type(value).__name__} {value!r:.40}",
            field=field,
        )
    return tuple(name(field, item) for item in value)


def messages(field: str, value: object) -> Sequence[Mapping[str, Any]] | None:
    """``value`` if it is ``None`` or a list of message mappings (``{"role", "content"}``)."""
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ValidationError(
            f"{field} must be a list of messages ({{'role': ..., 'content': ...}}), got "
            f"{type(value).__name__}",
            field=field,
        )
    bad = next((item for item in value if not isinstance(item, Mapping)), _MISSING)
    if bad is not _MISSING:
        raise ValidationError(
            f"{field} must hold messages as mappings, got {type(bad).__name__} {bad!r:.40}",
            field=field,
        )
    return value
